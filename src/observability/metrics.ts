/**
 * The agent's Prometheus metrics (prom-client) on a registry passed in (no global registry); docs/metrics.md lists
 * every series. They exist from the first second (issue [J] item 1: `/metrics` is served before DCMI is open): the
 * chips are named once DCMI has enumerated them ({@link AgentMetrics.attachChips}). The fault path is fed by
 * {@link AgentMetrics.healthObserver} and {@link AgentMetrics.observeState} (a projection of the store's snapshot:
 * the aggregate gauges and the per-chip series of {@link ChipMetrics}); the kubelet, ConfigMap and registration
 * metrics are hooks the composition root calls from those layers' callbacks.
 *
 * prom-client's default metrics keep their standard names (`process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`, ...; issue [J] item 3), so stock Node.js
 * dashboards find them; everything of the agent's own starts with `ascend_npu_agent_`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { HealthObserver } from '../health/monitor.js';
import type { ResetStatus } from '../reset/reset-runtime.js';
import type { ResetEvent } from '../reset/types.js';
import type { NodeState, StateChange } from '../state/store.js';
import { ChipMetrics } from './chip-metrics.js';
import { ChipNames } from './chip-names.js';
import { DraMetrics } from './dra-metrics.js';
import { collectNodeMetrics, EventLoopDelay } from './node-metrics.js';
import { ResetMetrics } from './reset-metrics.js';

const PREFIX = 'ascend_npu_agent_';

export interface AgentMetricsOptions {
  /** Node.js process metrics (CPU, memory, GC) on the same registry, under their standard names. Default true. */
  readonly defaultMetrics?: boolean;
  /** Clock of the registration timestamp (seconds since the epoch); default `Date.now() / 1000`. */
  readonly nowSeconds?: () => number;
}

/** The labels of `ascend_npu_agent_build_info`. */
export interface BuildInfo {
  readonly version: string;
  readonly node: string;
  /** The DCMI library opened ("" until DCMI is open). */
  readonly dcmiLibrary: string;
  /** Spec B.2 chip kind ("" until DCMI is open). */
  readonly chipKind: string;
}

/** What `ascend_npu_agent_kubelet_registered` reads: the kubelet layer's per-resource state. */
export type KubeletRegistrationSource = () => readonly {
  readonly registered: boolean;
  readonly activeStreams: number;
}[];

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
  /** Unix time (s) of the last successful Register per resource (replaces `seconds_since_last_registration`). */
  readonly lastRegistration: Gauge<'resource'>;
  /** 1 when every resource is registered with kubelet and its ListAndWatch streams, else 0 (also before start). */
  readonly kubeletRegistered: Gauge;
  /** Always 1; the labels say what runs (issue [J] item 3). */
  readonly buildInfo: Gauge<'version' | 'node' | 'dcmi_library' | 'chip_kind'>;
  readonly listAndWatchSends: Counter<'resource' | 'result'>;
  readonly allocateLatency: Histogram<'resource'>;
  readonly configMapWrites: Counter<'result'>;
  readonly configMapQueueDepth: Gauge;
  /**
   * Writes of non-essential objects the API server refused or did not answer (issue [R] item 1: they are retried,
   * never fatal), by object (`node`: labels and annotations, `pod`: annotations, `event`) and HTTP status (`none`:
   * no answer). Feed it with {@link AgentMetrics.writeRefused}.
   */
  readonly kubeWritesRefused: Counter<'object' | 'status'>;
  /** The chip-reset layer (issue [F]): state gauges, attempt / outcome counters. */
  readonly reset: ResetMetrics;
  /** Per-chip series (issue [J] item 2). */
  readonly chips: ChipMetrics;
  /** The DRA driver (issue [DRA]): slice writes, republished slices, NodePrepare latency, prepared claims. */
  readonly dra: DraMetrics;
  /** The chips' labels, attached once DCMI has enumerated them. */
  readonly names = new ChipNames();
  /** The process's one event-loop delay monitor (node-metrics.ts), shared with the `nodejs_eventloop_lag_*` series. */
  readonly #loop = new EventLoopDelay();
  readonly #now: () => number;
  #kubelet: KubeletRegistrationSource | undefined;

  constructor(registry: Registry, options: AgentMetricsOptions = {}) {
    const registers = [registry];
    this.#now = options.nowSeconds ?? (() => Date.now() / 1000);
    if (options.defaultMetrics ?? true) {
      collectNodeMetrics(registry, this.#loop);
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
    const loop = this.#loop;
    this.eventLoopLag = new Gauge({
      name: `${PREFIX}event_loop_lag_p99_seconds`,
      help: 'p99 event-loop delay since the previous scrape.',
      registers,
      collect() {
        this.set(loop.snapshot().p99);
      },
    });
    this.registrations = new Counter({
      name: `${PREFIX}kubelet_registrations_total`,
      help: 'Register calls to kubelet, by resource and result.',
      labelNames: ['resource', 'result'],
      registers,
    });
    this.lastRegistration = new Gauge({
      name: `${PREFIX}last_registration_timestamp_seconds`,
      help: 'Unix time of the last successful Register call to kubelet, by resource.',
      labelNames: ['resource'],
      registers,
    });
    const kubeletOf = (): KubeletRegistrationSource | undefined => this.#kubelet;
    this.kubeletRegistered = new Gauge({
      name: `${PREFIX}kubelet_registered`,
      help: '1 when every resource is registered with kubelet and its ListAndWatch streams, else 0.',
      registers,
      collect() {
        const status = kubeletOf()?.() ?? [];
        const ok = status.length > 0 && status.every((s) => s.registered && s.activeStreams > 0);
        this.set(ok ? 1 : 0);
      },
    });
    this.buildInfo = new Gauge({
      name: `${PREFIX}build_info`,
      help: 'Always 1: the agent version, node, DCMI library and chip kind.',
      labelNames: ['version', 'node', 'dcmi_library', 'chip_kind'],
      registers,
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
    this.kubeWritesRefused = new Counter({
      name: `${PREFIX}kube_writes_refused_total`,
      help:
        'Refused or unanswered writes of node labels/annotations, pod annotations and Events (retried), by object ' +
        'and HTTP status (none: no answer).',
      labelNames: ['object', 'status'],
      registers,
    });
    this.reset = new ResetMetrics(registry, PREFIX, this.names);
    this.chips = new ChipMetrics(registry, PREFIX, this.names);
    this.dra = new DraMetrics(registry, PREFIX);
    for (const mode of ['subscribed', 'polling']) this.fetchMode.set({ mode }, 0);
  }

  /** Counts one refused write of `object` (`status` undefined: no HTTP answer); the status label stays bounded. */
  writeRefused(object: 'node' | 'pod' | 'event', status: number | undefined): void {
    const label = status === undefined ? 'none' : status >= 100 && status <= 599 ? String(status) : 'other';
    this.kubeWritesRefused.inc({ object, status: label });
  }

  /** Names the chips (B.3 `deviceType`, DCMI's list) in every per-chip series; call once DCMI has enumerated them. */
  attachChips(deviceType: string, chips: readonly { readonly logicId: number; readonly phyId: number }[]): void {
    this.names.attach(deviceType, chips);
  }

  /** Sets `build_info` (its one series is replaced: the DCMI labels are known only once DCMI is open). */
  setBuildInfo(info: BuildInfo): void {
    this.buildInfo.reset();
    this.buildInfo.set(
      { version: info.version, node: info.node, dcmi_library: info.dcmiLibrary, chip_kind: info.chipKind },
      1,
    );
  }

  /** `kubelet_registered` reads `source` at every scrape (0 until it is given). */
  followKubelet(source: KubeletRegistrationSource): void {
    this.#kubelet = source;
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
    this.#loop.stop();
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
    this.chips.observe(state);
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
    if (ok) this.lastRegistration.set({ resource }, this.#now());
  }
}
