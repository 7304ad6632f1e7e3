/**
 * The agent's Prometheus metrics (prom-client) on a registry passed in (no global registry). The fault path is
 * fed by {@link AgentMetrics.healthObserver} and {@link AgentMetrics.observeState}; the kubelet, ConfigMap and
 * registration metrics are hooks the composition root calls from those layers' callbacks.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import type { HealthObserver } from '../health/monitor.js';
import type { ResetStatus } from '../reset/reset-runtime.js';
import type { ResetEvent } from '../reset/types.js';
import type { NodeState, StateChange } from '../state/store.js';
import { ResetMetrics } from './reset-metrics.js';

const PREFIX = 'ascend_npu_agent_';

/**
 * Sampling period of the event-loop delay monitors, ms. Each monitor is a repeating libuv timer, i.e. one wake-up
 * of an otherwise idle process per period: prom-client's default (10 ms) plus ours at 20 ms made ~150 wake-ups/s,
 * the largest idle cost of the agent (issue [E] idle budget). A stall longer than this is always seen; a shorter
 * one only when a sample falls inside it.
 */
export const EVENT_LOOP_RESOLUTION_MS = 100;

export interface AgentMetricsOptions {
  /** Node.js process metrics (CPU, memory, GC) on the same registry. Default true. */
  readonly defaultMetrics?: boolean;
  /** Clock for "time since the last registration" (seconds); default `Date.now() / 1000`. */
  readonly nowSeconds?: () => number;
}

/** The metric set of one agent. */
export class AgentMetrics {
  readonly chipsByHealth: Gauge<'scope' | 'health'>;
  readonly chipsByLevel: Gauge<'level'>;
  readonly faultEvents: Counter<'code' | 'assertion'>;
  readonly faultLevels: Counter<'level'>;
  readonly escalations: Counter<'level' | 'type'>;
  readonly releases: Counter<'by'>;
  readonly droppedResynced: Counter<'where'>;
  readonly synthesized: Counter<'reason'>;
  readonly dcmiErrors: Counter<'function'>;
  readonly fetchMode: Gauge<'mode'>;
  readonly stateCycles: Counter<'cause'>;
  readonly eventLoopLag: Gauge;
  readonly registrations: Counter<'resource' | 'result'>;
  readonly sinceLastRegistration: Gauge<'resource'>;
  readonly listAndWatchSends: Counter<'resource' | 'result'>;
  readonly allocateLatency: Histogram<'resource'>;
  readonly configMapWrites: Counter<'result'>;
  readonly configMapQueueDepth: Gauge;
  /** The chip-reset layer (issue [F]): state gauges, attempt / outcome counters. */
  readonly reset: ResetMetrics;
  readonly #lastRegistration = new Map<string, number>();
  readonly #loop: IntervalHistogram;
  readonly #now: () => number;

  constructor(registry: Registry, options: AgentMetricsOptions = {}) {
    const registers = [registry];
    this.#now = options.nowSeconds ?? (() => Date.now() / 1000);
    if (options.defaultMetrics ?? true) {
      collectDefaultMetrics({
        register: registry,
        prefix: PREFIX,
        eventLoopMonitoringPrecision: EVENT_LOOP_RESOLUTION_MS,
      });
    }
    this.chipsByHealth = new Gauge({
      name: `${PREFIX}chips`,
      help: 'Chips by scope (chip: kubelet health; network: parameter plane) and health.',
      labelNames: ['scope', 'health'],
      registers,
    });
    this.chipsByLevel = new Gauge({
      name: `${PREFIX}chips_by_level`,
      help: 'Chips by effective chip fault level (spec E.2).',
      labelNames: ['level'],
      registers,
    });
    this.faultEvents = new Counter({
      name: `${PREFIX}fault_events_total`,
      help: 'DCMI fault events received, by code and assertion.',
      labelNames: ['code', 'assertion'],
      registers,
    });
    this.faultLevels = new Counter({
      name: `${PREFIX}fault_level_changes_total`,
      help: 'Chip level changes, by the new level.',
      labelNames: ['level'],
      registers,
    });
    this.escalations = new Counter({
      name: `${PREFIX}escalations_total`,
      help: 'Upgrade reasons raised (FaultFrequency / FaultDuration), by level and type.',
      labelNames: ['level', 'type'],
      registers,
    });
    this.releases = new Counter({
      name: `${PREFIX}releases_total`,
      help: 'Chips released from manual separation, by cause.',
      labelNames: ['by'],
      registers,
    });
    this.droppedResynced = new Counter({
      name: `${PREFIX}events_dropped_resynced_total`,
      help: 'Fault events that did not fit a queue; their chips were re-read from DCMI.',
      labelNames: ['where'],
      registers,
    });
    this.synthesized = new Counter({
      name: `${PREFIX}synthetic_events_total`,
      help: 'Events synthesised by compensation (a difference between DCMI and the store), by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.dcmiErrors = new Counter({
      name: `${PREFIX}dcmi_call_errors_total`,
      help: 'Failed DCMI calls, by C function.',
      labelNames: ['function'],
      registers,
    });
    this.fetchMode = new Gauge({
      name: `${PREFIX}fault_fetch_mode`,
      help: '1 for the current fault-fetch mode (subscribed or polling).',
      labelNames: ['mode'],
      registers,
    });
    this.stateCycles = new Counter({
      name: `${PREFIX}state_snapshots_total`,
      help: 'Snapshots published by the state store, by cause.',
      labelNames: ['cause'],
      registers,
    });
    this.#loop = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
    this.#loop.enable();
    const loop = this.#loop;
    this.eventLoopLag = new Gauge({
      name: `${PREFIX}event_loop_lag_p99_seconds`,
      help: 'p99 event-loop delay since the previous scrape.',
      registers,
      collect() {
        this.set(loop.percentile(99) / 1e9);
        loop.reset();
      },
    });
    this.registrations = new Counter({
      name: `${PREFIX}kubelet_registrations_total`,
      help: 'Register calls to kubelet, by resource and result.',
      labelNames: ['resource', 'result'],
      registers,
    });
    const last = this.#lastRegistration;
    const now = this.#now;
    this.sinceLastRegistration = new Gauge({
      name: `${PREFIX}seconds_since_last_registration`,
      help: 'Seconds since the last successful registration, by resource.',
      labelNames: ['resource'],
      registers,
      collect() {
        for (const [resource, t] of last) this.set({ resource }, Math.max(0, now() - t));
      },
    });
    this.listAndWatchSends = new Counter({
      name: `${PREFIX}list_and_watch_sends_total`,
      help: 'ListAndWatch responses sent, by resource and result (ok / failed).',
      labelNames: ['resource', 'result'],
      registers,
    });
    this.allocateLatency = new Histogram({
      name: `${PREFIX}allocate_seconds`,
      help: 'Allocate latency.',
      labelNames: ['resource'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.configMapWrites = new Counter({
      name: `${PREFIX}configmap_writes_total`,
      help: 'device-info ConfigMap writes, by result (ok / failed).',
      labelNames: ['result'],
      registers,
    });
    this.configMapQueueDepth = new Gauge({
      name: `${PREFIX}configmap_queue_depth`,
      help: 'Writes waiting in the ConfigMap queue.',
      registers,
    });
    this.reset = new ResetMetrics(registry, PREFIX);
    for (const mode of ['subscribed', 'polling']) this.fetchMode.set({ mode }, 0);
  }

  /** Sets the reset gauges from `ResetRuntime.status()` (after a change or every period). */
  observeReset(status: ResetStatus): void {
    this.reset.observe(status);
  }

  /** Refreshes the reset gauges from `source` at every scrape as well. */
  followReset(source: () => ResetStatus): void {
    this.reset.follow(source);
  }

  /** Counts an Event of the reset layer (attempts, outcomes, warnings). */
  resetEvent(event: Pick<ResetEvent, 'reason'>): void {
    this.reset.event(event);
  }

  /** Stops the event-loop sampler. */
  close(): void {
    this.#loop.disable();
  }

  /** Hooks for the health monitor. */
  healthObserver(): HealthObserver {
    return {
      faultEvent: (code, assertion) => this.faultEvents.inc({ code, assertion }),
      droppedResynced: (_ids, count, where) => this.droppedResynced.inc({ where }, count),
      dcmiError: (fn) => this.dcmiErrors.inc({ function: fn }),
      synthesized: (_id, _code, _assertion, reason) => this.synthesized.inc({ reason }),
      modeChanged: (mode) => {
        for (const m of ['subscribed', 'polling']) this.fetchMode.set({ mode: m }, m === mode ? 1 : 0);
      },
    };
  }

  /** Give every store snapshot (the store's `onChange` listener). */
  observeState(state: NodeState, change?: StateChange): void {
    this.chipsByHealth.reset();
    this.chipsByLevel.reset();
    for (const c of state.chips) {
      this.chipsByHealth.inc({ scope: 'chip', health: c.health });
      this.chipsByHealth.inc({ scope: 'network', health: c.networkHealth });
      this.chipsByLevel.inc({ level: c.level });
    }
    if (!change) return;
    this.stateCycles.inc({ cause: change.cause });
    for (const t of change.transitions) {
      if (t.kind === 'level' && t.scope === 'chip') this.faultLevels.inc({ level: t.to });
      else if (t.kind === 'escalated') this.escalations.inc({ level: t.level, type: t.upgradeType });
      else if (t.kind === 'released') this.releases.inc({ by: t.by });
    }
  }

  /** Hook: a Register call finished. */
  registered(resource: string, ok: boolean): void {
    this.registrations.inc({ resource, result: ok ? 'ok' : 'failed' });
    if (ok) this.#lastRegistration.set(resource, this.#now());
  }
}
