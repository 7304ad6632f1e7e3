/**
 * Node.js process metrics under prom-client's standard names (`process_cpu_seconds_total`,
 * `nodejs_eventloop_lag_seconds`, ...; issue [J] item 3), with one event-loop delay monitor for the whole process
 * (issue [P] item 2).
 *
 * A delay monitor is a repeating libuv timer: every period it wakes an otherwise idle process. prom-client's
 * `collectDefaultMetrics` starts a monitor of its own (10 ms unless told otherwise) and the agent had a second one for
 * `ascend_npu_agent_event_loop_lag_p99_seconds`; at 100 ms each they made 10–20 wake-ups a second, about half the idle
 * agent's CPU (bench/README.md "idle CPU"). Here prom-client's collectors run one by one, except its event-loop
 * collector, whose series ({@link EVENT_LOOP_SERIES}) are fed from the one {@link EventLoopDelay} that every reader
 * shares.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';
import gc from 'prom-client/lib/metrics/gc.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processCpuTotal from 'prom-client/lib/metrics/processCpuTotal.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import version from 'prom-client/lib/metrics/version.js';

/**
 * Sampling period of the event-loop delay monitor, ms: one wake-up of the idle process per period (≈ 85 µs of CPU
 * each on the bench machine, so 0.017 % of a core at this period). A stall longer than the period is always seen;
 * a shorter one only when a sample falls inside it.
 */
export const EVENT_LOOP_RESOLUTION_MS = 500;

/** The event-loop series of prom-client's default metrics, in seconds. */
export const EVENT_LOOP_SERIES = [
  'nodejs_eventloop_lag_seconds',
  'nodejs_eventloop_lag_min_seconds',
  'nodejs_eventloop_lag_max_seconds',
  'nodejs_eventloop_lag_mean_seconds',
  'nodejs_eventloop_lag_stddev_seconds',
  'nodejs_eventloop_lag_p50_seconds',
  'nodejs_eventloop_lag_p90_seconds',
  'nodejs_eventloop_lag_p99_seconds',
] as const;

/** One scrape's view of the event-loop delay histogram, in seconds. */
export interface LagSnapshot {
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly stddev: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

/**
 * The process's one event-loop delay monitor. Every gauge read in one scrape sees the same {@link snapshot}; the
 * histogram starts over after that scrape ("since the previous scrape", as prom-client's own collector does).
 */
export class EventLoopDelay {
  readonly #h: IntervalHistogram;
  #snap: LagSnapshot | undefined;

  constructor(resolutionMs = EVENT_LOOP_RESOLUTION_MS) {
    this.#h = monitorEventLoopDelay({ resolution: resolutionMs });
    this.#h.enable();
  }

  /** The histogram since the previous scrape; the first read of a scrape takes it and restarts the histogram. */
  snapshot(): LagSnapshot {
    if (this.#snap) return this.#snap;
    const h = this.#h;
    const snap: LagSnapshot = {
      min: h.min / 1e9,
      max: h.max / 1e9,
      mean: h.mean / 1e9,
      stddev: h.stddev / 1e9,
      p50: h.percentile(50) / 1e9,
      p90: h.percentile(90) / 1e9,
      p99: h.percentile(99) / 1e9,
    };
    h.reset();
    this.#snap = snap;
    // a scrape reads every gauge within one turn of the event loop
    setImmediate(() => (this.#snap = undefined));
    return snap;
  }

  /** Stops the monitor's timer. */
  stop(): void {
    this.#h.disable();
  }
}

/**
 * Registers prom-client's default metrics on `registry` under their standard names, the event-loop series fed from
 * `loop` instead of a monitor of prom-client's own.
 */
export function collectNodeMetrics(registry: Registry, loop: EventLoopDelay): void {
  const collectors = [
    processCpuTotal,
    processStartTime,
    osMemoryHeap,
    processOpenFileDescriptors,
    processMaxFileDescriptors,
    // prom-client registers this one only where the API exists (Node ≥ 17.3)
    ...(typeof process.getActiveResourcesInfo === 'function' ? [processResources] : []),
    processHandles,
    processRequests,
    heapSizeAndUsed,
    heapSpacesSizeAndUsed,
    version,
    gc,
  ];
  for (const collect of collectors) collect(registry, {});
  const registers = [registry];
  const gauge = (name: (typeof EVENT_LOOP_SERIES)[number], help: string, value: (s: LagSnapshot) => number): void =>
    void new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(value(loop.snapshot()));
      },
    });
  // the current delay, as prom-client measures it: how long a callback queued now waits for its turn
  const lag: Gauge = new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Event-loop lag at the scrape: the wait of a callback queued then, seconds.',
    registers,
    collect() {
      const start = process.hrtime.bigint();
      setImmediate(() => lag.set(Number(process.hrtime.bigint() - start) / 1e9));
    },
  });
  gauge('nodejs_eventloop_lag_min_seconds', 'Lowest event-loop delay sampled since the previous scrape.', (s) => s.min);
  gauge(
    'nodejs_eventloop_lag_max_seconds',
    'Highest event-loop delay sampled since the previous scrape.',
    (s) => s.max,
  );
  gauge('nodejs_eventloop_lag_mean_seconds', 'Mean event-loop delay since the previous scrape.', (s) => s.mean);
  gauge('nodejs_eventloop_lag_stddev_seconds', 'Standard deviation of the event-loop delay.', (s) => s.stddev);
  gauge('nodejs_eventloop_lag_p50_seconds', 'Median event-loop delay since the previous scrape.', (s) => s.p50);
  gauge('nodejs_eventloop_lag_p90_seconds', '90th percentile of the event-loop delay.', (s) => s.p90);
  gauge('nodejs_eventloop_lag_p99_seconds', '99th percentile of the event-loop delay.', (s) => s.p99);
}
