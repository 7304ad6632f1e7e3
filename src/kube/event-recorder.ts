/**
 * Kubernetes Events of the agent (spec K): fault occurrence/recovery/notice (K.1), upgrade-reason release (K.2), and
 * beyond upstream escalations, separations, operator releases and rejected input. All of them go through one
 * `bottleneck` token bucket (upstream: 10 per minute, burst 10). Upstream drops what the bucket refuses; here a
 * refused Event is counted into a summary, and one summary Event per free token says what was left out, so
 * nothing is lost without a trace.
 *
 * An Event the API server could not take because it was not answering (network error, 5xx) or throttling (429) is
 * kept for a retry (issue 12): at most {@link DEFAULT_MAX_RETAINED} of them (K.1's queue capacity), the oldest
 * dropped first, counted and logged once per outage. They are retried one at a time through the same token bucket,
 * after a backoff or as soon as the agent's {@link ApiRecovery} sees the API server back.
 *
 * An Event the API server refused — 403 from RBAC or an admission policy, 422, 404 (namespace missing), a webhook
 * that is down (5xx) — is kept for a retry too (issue [R] item 1, defect 4: a refusal can end when an operator fixes
 * the policy), counted in `refused` and reported to `onRefused` (the agent's /metrics), logged once per streak;
 * it goes to the back of the retry queue, so one Event refused for ever cannot hold the others back. Only a request
 * the server cannot decode or take whatever happens (400, 413, 415; 409 after the second name) is logged and
 * dropped.
 */
import type * as k8s from '@kubernetes/client-node';
import Bottleneck from 'bottleneck';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { statusOf } from '../core/errors.js';
import { MicroTime, WholeSecondTime } from '../core/kube-time.js';
import {
  backoffDelay,
  isOutageStatus,
  RetryTimer,
  systemQueueClock,
  type BackoffOptions,
  type QueueClock,
} from './write-queue.js';

import type { AgentEvent } from '../core/agent-event.js';

export type { AgentEvent } from '../core/agent-event.js';

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
  /** Events created by a retry after a network error, a 5xx or a 429. */
  retried: number;
  /** Events waiting for a retry now. */
  retaining: number;
  /** Events dropped from the retry queue (oldest first) because it was full. */
  retryDropped: number;
  /** Create calls refused (403, 422, 404, …) or unanswered; each is retried. */
  refused: number;
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
  /** Timers of the retries (default: the process clock). */
  readonly clock?: QueueClock;
  /** Backoff of the retries; its `recovery` wakes them when the API server is back (the agent's shared signal). */
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  /** Events kept for a retry at most (default {@link DEFAULT_MAX_RETAINED}). */
  readonly maxRetained?: number;
  /** Called for every refused or unanswered create (`status` undefined: no answer), for the metrics. */
  readonly onRefused?: (status: number | undefined) => void;
}

/** Events kept for a retry while the API server does not answer (spec K.1: the event queue holds 100). */
export const DEFAULT_MAX_RETAINED = 100;
/** Characters of an API error quoted in a log line. */
const LOGGED_ERROR_CHARS = 300;

/** What one create attempt came to: `retry` in an outage or throttled, `refused` by the server (kept too). */
type Outcome = 'created' | 'retry' | 'refused' | 'rejected';

/** Statuses that say the request itself can never be taken (malformed, too large, wrong type): not retried. */
const NOT_RETRIED: ReadonlySet<number> = new Set([400, 409, 413, 415]);

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
  /** Events waiting for a retry, oldest first (bounded by `maxRetained`). */
  #retained: AgentEvent[] = [];
  readonly #retry: RetryTimer;
  #retryFailures = 0;
  /** A retry job is in the limiter or running. */
  #draining = false;
  /** The outage's drop (or failure) was logged: one line each until the retry queue is empty again. */
  #dropLogged = false;
  #failureLogged = false;
  #refusalLogged = false;
  readonly #tokenMs: number;
  readonly #stats: EventRecorderStats = {
    created: 0,
    limited: 0,
    summaries: 0,
    failed: 0,
    retried: 0,
    retaining: 0,
    retryDropped: 0,
    refused: 0,
  };

  constructor(options: KubeEventRecorderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#retry = new RetryTimer(options.clock ?? systemQueueClock, options.backoff?.recovery);
    const per = options.perInterval ?? 10;
    const burst = options.burst ?? per;
    this.#maxWaiting = burst + 1;
    this.#tokenMs = Math.max(1, Math.round((options.intervalMs ?? 60_000) / per));
    this.#limiter = new Bottleneck({
      reservoir: burst,
      reservoirIncreaseAmount: 1,
      reservoirIncreaseInterval: this.#tokenMs,
      reservoirIncreaseMaximum: burst,
      // One job may wait for the next token (the pending summary, or the Event that found the bucket empty);
      // anything beyond is refused at once, as upstream's bucket does, and counted into the summary.
      highWater: 1,
      strategy: Bottleneck.strategy.OVERFLOW,
    });
  }

  /** A copy of the counters. */
  get stats(): EventRecorderStats {
    return { ...this.#stats, retaining: this.#retained.length };
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
      .schedule(async () => {
        leave();
        const outcome = await this.#create(event);
        if (outcome === 'retry' || outcome === 'refused') this.#retain(event);
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
    this.#retry.cancel();
    if (this.#droppedTotal > 0)
      this.#log.warn({ dropped: Object.fromEntries(this.#dropped) }, 'events left unsummarised at shutdown');
    if (this.#retained.length > 0) {
      const reasons = new Map<string, number>();
      for (const e of this.#retained) reasons.set(e.reason, (reasons.get(e.reason) ?? 0) + 1);
      this.#log.warn({ notCreated: Object.fromEntries(reasons) }, 'events still waiting for a retry at shutdown');
      this.#retained = [];
    }
    await this.#limiter.stop({ dropWaitingJobs: true }).catch(() => undefined);
    await this.#limiter.disconnect(); // clears the reservoir timer
  }

  /** Keeps an Event for a retry (bounded: the oldest is dropped first, counted, logged once per outage). */
  #retain(event: AgentEvent, first = false): void {
    if (this.#closed) return;
    if (first) this.#retained.unshift(event);
    else this.#retained.push(event);
    const max = Math.max(1, this.#o.maxRetained ?? DEFAULT_MAX_RETAINED);
    while (this.#retained.length > max) {
      const dropped = this.#retained.shift()!;
      this.#stats.retryDropped++;
      if (!this.#dropLogged) {
        this.#dropLogged = true;
        this.#log.warn(
          { bound: max, reason: dropped.reason, brief: dropped.brief },
          'events kept for a retry over their bound: the oldest are dropped (counted in retryDropped)',
        );
      }
    }
    this.#armRetry();
  }

  #armRetry(): void {
    if (this.#closed || this.#draining || this.#retry.armed || this.#retained.length === 0) return;
    const delay = backoffDelay(Math.max(1, this.#retryFailures), this.#o.backoff, this.#o.random);
    this.#retry.arm(delay, () => this.#drain());
  }

  /** Retries the oldest kept Event through the token bucket; the next one follows when it was created. */
  #drain(): void {
    if (this.#closed || this.#draining || this.#retained.length === 0) return;
    this.#draining = true;
    let refused = false;
    this.#limiter
      .schedule(async () => {
        const event = this.#retained.shift();
        if (event === undefined) return;
        const outcome = await this.#create(event);
        if (outcome === 'retry' || outcome === 'refused') {
          this.#retryFailures++;
          // an outage keeps the order; a refused Event goes to the back (it may be refused for ever)
          this.#retain(event, outcome === 'retry');
          return;
        }
        this.#retryFailures = 0;
        this.#retry.succeeded();
        if (outcome === 'created') this.#stats.retried++;
      })
      .catch((e: unknown) => {
        // the limiter's one waiting place is taken: try again when the next token is due
        if (e instanceof Bottleneck.BottleneckError) refused = true;
        else this.#log.error({ error: String(e) }, 'event retry failed');
      })
      .finally(() => {
        this.#draining = false;
        if (this.#retained.length === 0) {
          if (this.#dropLogged || this.#failureLogged || this.#refusalLogged) {
            this.#log.info({ retried: this.#stats.retried }, 'events kept during the outage created');
          }
          this.#dropLogged = false;
          this.#failureLogged = false;
          this.#refusalLogged = false;
        } else if (refused) {
          if (!this.#closed && !this.#retry.armed) this.#retry.arm(this.#tokenMs, () => this.#drain(), false);
        } else if (this.#retryFailures === 0) {
          queueMicrotask(() => this.#drain());
        } else {
          this.#armRetry();
        }
        this.#maybeSummarise();
      });
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
    let refused = false;
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
        const summary: AgentEvent = { type: 'Warning', reason: 'EventsRateLimited', message };
        return this.#create(summary).then((outcome) => {
          if (outcome === 'retry' || outcome === 'refused') this.#retain(summary);
        });
      })
      .catch((e: unknown) => {
        if (e instanceof Bottleneck.BottleneckError) refused = true;
        else this.#log.error({ error: String(e) }, 'summary failed');
      })
      .finally(() => {
        this.#summaryQueued = false;
        // Refused: the limiter's one waiting place is taken by a job whose end calls this again. Scheduling again
        // at once would spin (one timer turn per refusal) until that job gets its token.
        if (!refused) this.#maybeSummarise();
      });
  }

  async #create(event: AgentEvent): Promise<Outcome> {
    const now = this.#now();
    const about = event.involvedPod;
    const ns = about?.namespace ?? this.#o.namespace ?? 'kube-system';
    const base = `${about?.name ?? this.#o.podName}.${event.nameSuffix ?? String(now)}`;
    // firstTimestamp/lastTimestamp are metav1.Time (whole seconds), eventTime a MicroTime: six fractional digits,
    // or the API server refuses the Event with 400 (issue [R] item 1, src/core/kube-time.ts)
    const time = new WholeSecondTime(now);
    const eventTime = new MicroTime(now);
    const body = (name: string): k8s.CoreV1Event => ({
      metadata: { name, namespace: ns },
      type: event.type,
      reason: event.reason,
      action: event.action ?? event.reason,
      message: event.message,
      involvedObject: about
        ? { kind: 'Pod', namespace: about.namespace, name: about.name, ...(about.uid ? { uid: about.uid } : {}) }
        : { kind: 'pod', namespace: ns, name: this.#o.podName },
      source: { component: EVENT_COMPONENT, host: this.#o.nodeName },
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: this.#o.podName,
      firstTimestamp: time,
      lastTimestamp: time,
      eventTime,
      count: 1,
    });
    const recovery = this.#o.backoff?.recovery;
    try {
      await this.#o.api.createNamespacedEvent({ namespace: ns, body: body(base) });
      this.#stats.created++;
      recovery?.reportSuccess();
      return 'created';
    } catch (first) {
      let e = first;
      if (statusOf(e) === 409) {
        // Two Events of one chip in one millisecond: upstream loses the second; a suffix keeps it.
        try {
          await this.#o.api.createNamespacedEvent({ namespace: ns, body: body(`${base}.${++this.#seq}`) });
          this.#stats.created++;
          recovery?.reportSuccess();
          return 'created';
        } catch (e2) {
          e = e2;
        }
      }
      const status = statusOf(e);
      recovery?.reportFailure(status);
      const error = String(e).slice(0, LOGGED_ERROR_CHARS);
      if (status !== 429 && (status === undefined || !NOT_RETRIED.has(status))) {
        this.#stats.refused++;
        this.#o.onRefused?.(status);
      }
      if (status !== undefined && !isOutageStatus(status) && status !== 429 && !NOT_RETRIED.has(status)) {
        // refused (403, 422, 404, …): kept for a retry, one line per streak of refusals
        if (!this.#refusalLogged && !this.#closed) {
          this.#refusalLogged = true;
          this.#log.warn({ reason: event.reason, status, error }, 'event refused by the API server; kept for a retry');
        }
        return 'refused';
      }
      if (isOutageStatus(status) || status === 429) {
        // kept for a retry: one line per outage, not one per Event and attempt
        if (!this.#failureLogged && !this.#closed) {
          this.#failureLogged = true;
          this.#log.warn({ reason: event.reason, status, error }, 'cannot create event; kept for a retry');
        }
        return 'retry';
      }
      this.#stats.failed++;
      this.#log.warn({ reason: event.reason, status, error }, 'cannot create event; not retried');
      return 'rejected';
    }
  }
}
