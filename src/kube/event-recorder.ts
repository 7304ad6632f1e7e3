/**
 * Kubernetes Events of the agent (spec K): fault occurrence/recovery/notice (K.1), upgrade-reason release (K.2), and
 * beyond upstream escalations, separations, operator releases and rejected input. All of them go through one
 * `bottleneck` token bucket (upstream: 10 per minute, burst 10). Upstream drops what the bucket refuses; here a
 * refused Event is counted into a summary, and one summary Event per free token says what was left out, so
 * nothing is lost without a trace.
 */
import type * as k8s from '@kubernetes/client-node';
import Bottleneck from 'bottleneck';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';

/** One Event to create. */
export interface AgentEvent {
  readonly type: 'Normal' | 'Warning';
  /** `Occur`, `Recovery`, `Notice`, `EventReleaseUpgradeFault`, or one of ours (see docs/kube.md). */
  readonly reason: string;
  /** Defaults to `reason`. */
  readonly action?: string;
  readonly message: string;
  /** Object name after `<HOSTNAME>.`; default `<ms>`. Fault events use `<ms><logicId>` (K.1). */
  readonly nameSuffix?: string;
  /** Short description used in the drop summary, e.g. `Occur Ascend910-3 80E18402`. */
  readonly brief?: string;
}

/** Where Events are recorded (the recorder, or a test double). */
export interface EventSink {
  record(event: AgentEvent): void;
}

/** Counters. */
export interface EventRecorderStats {
  created: number;
  /** Refused by the rate limit and counted into a summary. */
  limited: number;
  summaries: number;
  /** Create calls the API server refused (after one retry with another name on AlreadyExists). */
  failed: number;
}

/** Options of a {@link KubeEventRecorder}. */
export interface KubeEventRecorderOptions {
  readonly api: Pick<k8s.CoreV1Api, 'createNamespacedEvent'>;
  readonly nodeName: string;
  /** The agent's pod name (`HOSTNAME`): Event name prefix, involvedObject and reportingInstance (K.1). */
  readonly podName: string;
  /** Default `kube-system` (K.1). */
  readonly namespace?: string;
  /** Tokens per interval (default 10) and bucket size (default = perInterval). */
  readonly perInterval?: number;
  readonly burst?: number;
  /** Default 60 000 ms (upstream: 10 per minute). */
  readonly intervalMs?: number;
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Samples named in a summary message (default 10). */
  readonly summarySamples?: number;
}

/** Component name upstream reports (K.1). */
export const EVENT_COMPONENT = 'device-plugin';

/** Local time `YYYY-MM-DD HH:MM:SS` as upstream formats `alarmRaisedTime` (K.1). */
export function localTimeText(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
  );
}

/** Creates Events through one rate limiter. */
export class KubeEventRecorder implements EventSink {
  readonly #o: KubeEventRecorderOptions;
  readonly #limiter: Bottleneck;
  readonly #now: () => number;
  readonly #log: Logger;
  #seq = 0;
  #summaryQueued = false;
  #dropped = new Map<string, number>();
  #samples: string[] = [];
  #droppedTotal = 0;
  #closed = false;
  /** Events handed to the limiter that have neither started nor been refused (see {@link record}). */
  #waiting = 0;
  readonly #maxWaiting: number;
  readonly #stats: EventRecorderStats = { created: 0, limited: 0, summaries: 0, failed: 0 };

  constructor(options: KubeEventRecorderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#log = options.logger ?? NOOP_LOGGER;
    const per = options.perInterval ?? 10;
    const burst = options.burst ?? per;
    this.#maxWaiting = burst + 1;
    this.#limiter = new Bottleneck({
      reservoir: burst,
      reservoirIncreaseAmount: 1,
      reservoirIncreaseInterval: Math.max(1, Math.round((options.intervalMs ?? 60_000) / per)),
      reservoirIncreaseMaximum: burst,
      // One job may wait for the next token (the pending summary, or the Event that found the bucket empty);
      // anything beyond is refused at once, as upstream's bucket does, and counted into the summary.
      highWater: 1,
      strategy: Bottleneck.strategy.OVERFLOW,
    });
  }

  /** A copy of the counters. */
  get stats(): EventRecorderStats {
    return { ...this.#stats };
  }

  /** Offers an Event to the limiter; returns at once. */
  record(event: AgentEvent): void {
    if (this.#closed) return;
    // Bottleneck admits jobs one at a time behind an unbounded internal lock (one timer turn each) and applies
    // highWater only after it: under a fault storm that lock held every Event with its promises and closures
    // (RSS without bound). At most `burst` jobs can take a token and one more may wait; beyond that the limiter
    // would refuse the Event anyway, so it is refused here at once.
    if (this.#waiting >= this.#maxWaiting) {
      this.#limited(event);
      this.#maybeSummarise();
      return;
    }
    this.#waiting++;
    let left = false;
    const leave = (): void => {
      if (left) return;
      left = true;
      this.#waiting--;
    };
    this.#limiter
      .schedule(() => {
        leave();
        return this.#create(event);
      })
      .catch((e: unknown) => {
        leave();
        if (e instanceof Bottleneck.BottleneckError) this.#limited(event);
        else this.#log.error({ error: String(e) }, 'event recorder failed');
      })
      .finally(() => this.#maybeSummarise());
  }

  /** Resolves when nothing waits for a token or is being created. */
  async whenIdle(): Promise<void> {
    while (this.#limiter.counts().QUEUED + this.#limiter.counts().RUNNING + this.#limiter.counts().EXECUTING > 0) {
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Stops: waiting Events are dropped and counted in the log. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#droppedTotal > 0)
      this.#log.warn({ dropped: Object.fromEntries(this.#dropped) }, 'events left unsummarised at shutdown');
    await this.#limiter.stop({ dropWaitingJobs: true }).catch(() => undefined);
    await this.#limiter.disconnect(); // clears the reservoir timer
  }

  #limited(event: AgentEvent): void {
    this.#stats.limited++;
    this.#droppedTotal++;
    this.#dropped.set(event.reason, (this.#dropped.get(event.reason) ?? 0) + 1);
    if (this.#samples.length < (this.#o.summarySamples ?? 10)) this.#samples.push(event.brief ?? event.reason);
    this.#log.debug({ reason: event.reason, brief: event.brief }, 'event over the rate limit; counted in a summary');
  }

  #maybeSummarise(): void {
    if (this.#closed || this.#summaryQueued || this.#droppedTotal === 0) return;
    this.#summaryQueued = true;
    this.#limiter
      .schedule(() => {
        // Read the counts when the token is granted: everything refused until now is in this one Event.
        const counts = [...this.#dropped].map(([r, n]) => `${r}×${n}`).join(', ');
        const total = this.#droppedTotal;
        const more = total > this.#samples.length ? ` …and ${total - this.#samples.length} more` : '';
        const message =
          `${total} events were not created because of the event rate limit: ${counts}; ` +
          `samples: ${this.#samples.join('; ')}${more}`;
        this.#dropped = new Map();
        this.#samples = [];
        this.#droppedTotal = 0;
        this.#stats.summaries++;
        return this.#create({ type: 'Warning', reason: 'EventsRateLimited', message });
      })
      .catch((e: unknown) => {
        if (!(e instanceof Bottleneck.BottleneckError)) this.#log.error({ error: String(e) }, 'summary failed');
      })
      .finally(() => {
        this.#summaryQueued = false;
        this.#maybeSummarise();
      });
  }

  async #create(event: AgentEvent): Promise<void> {
    const now = this.#now();
    const ns = this.#o.namespace ?? 'kube-system';
    const base = `${this.#o.podName}.${event.nameSuffix ?? String(now)}`;
    const time = new Date(now);
    const body = (name: string): k8s.CoreV1Event => ({
      metadata: { name, namespace: ns },
      type: event.type,
      reason: event.reason,
      action: event.action ?? event.reason,
      message: event.message,
      involvedObject: { kind: 'pod', namespace: ns, name: this.#o.podName },
      source: { component: EVENT_COMPONENT, host: this.#o.nodeName },
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: this.#o.podName,
      firstTimestamp: time,
      lastTimestamp: time,
      eventTime: time,
      count: 1,
    });
    try {
      await this.#o.api.createNamespacedEvent({ namespace: ns, body: body(base) });
      this.#stats.created++;
    } catch (first) {
      let e = first;
      if ((e as { code?: number }).code === 409) {
        // Two Events of one chip in one millisecond: upstream loses the second; a suffix keeps it.
        try {
          await this.#o.api.createNamespacedEvent({ namespace: ns, body: body(`${base}.${++this.#seq}`) });
          this.#stats.created++;
          return;
        } catch (e2) {
          e = e2;
        }
      }
      this.#stats.failed++;
      this.#log.warn({ reason: event.reason, error: String(e) }, 'cannot create event');
    }
  }
}
