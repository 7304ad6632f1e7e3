/**
 * The node's one state store (architecture §2): the hub every input enters and the one snapshot every output reads.
 * It owns the fault engine (nothing else holds it), applies every batch of events from the health layer at once
 * (event-driven, spec D.2 without the 1 s trigger tick), runs an idle cycle every `listWatchPeriod` for the
 * time-based rules, and publishes immutable snapshots with change notifications. Every output (kubelet stream,
 * device-info ConfigMap, Events, labels, metrics, `/status`) is a projection of the same snapshot.
 *
 * Inputs: fault-event batches ({@link NodeStateStore.applyEvents}), the G.3 start-up restore
 * ({@link NodeStateStore.restore}), operator releases ({@link NodeStateStore.release}), what the ConfigMap holds
 * ({@link NodeStateStore.confirmWritten}), the pod-used set, a new policy, the reset layer's overrides, re-sync
 * requests. Inputs given while listeners run (a listener calling back into the store) are queued and applied right
 * after, in order, so every listener sees every snapshot in sequence.
 *
 * Outputs: {@link NodeStateStore.snapshot} and {@link NodeStateStore.onChange}; the fault events as applied, with
 * their K.1 level ({@link NodeStateStore.onFaultEvents}); the durable state ({@link NodeStateStore.exportDurableState},
 * {@link NodeStateStore.onDurableChange}); re-sync requests to the health layer ({@link NodeStateStore.attachResync}).
 */
import { isNetworkCode, LINK_DOWN_CODE, parseHexCode, type FaultCode } from '../faults/codes.js';
import type { SwitchCodeLevel } from '../faults/switch-codes.js';
import type { DpuState } from '../dpu/monitor.js';
import {
  sameSwitchFaults,
  withSwitchEvents,
  withSwitchQuery,
  type RawSwitchEvent,
  type SwitchFault,
} from './switch-faults.js';
import type { FaultEngine } from '../faults/engine.js';
import type { Assertion, ChipView, CycleResult, FaultEvent, Health, Transition } from '../faults/engine-types.js';
import { mostSevere, type FaultLevel } from '../faults/levels.js';
import type { FaultPolicy } from '../faults/policy.js';
import { exportEngineState, type EngineStateJson } from '../faults/state-io.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { NodeFacts, RunMode } from '../core/chips.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { restoreEngine, type DurableState, type RestoreResult, type StartupValues } from './restore.js';

/** DCMI addressing and placement of one chip. */
export interface StoreChip {
  readonly logicId: number;
  readonly phyId: number;
  readonly cardId: number;
  readonly deviceId: number;
  /** NUMA node when known (spec C.2). */
  readonly numaNode?: number;
}

/**
 * One chip in a snapshot: the engine's published view with the reset layer's filter applied (`health`,
 * `networkHealth`, hot-reset §3.10), its address, and what the outputs derive from the engine. Frozen.
 */
export interface ChipState extends Readonly<Omit<ChipView, 'faultCodes' | 'networkFaultCodes' | 'reasons'>> {
  readonly cardId: number;
  readonly deviceId: number;
  readonly numaNode?: number;
  readonly faultCodes: readonly string[];
  readonly networkFaultCodes: readonly string[];
  readonly reasons: ChipView['reasons'];
  /**
   * Per entry of `faultCodes`, the level the device-info fault map shows (spec H.3): the code's own level
   * (`GetFaultType([code])`) raised by the chip's frequency/duration/reason level (`chipRaisedLevel`).
   */
  readonly faultCodeLevels: readonly FaultLevel[];
  /** The same per entry of `networkFaultCodes` (network table, `networkRaisedLevel`). */
  readonly networkFaultCodeLevels: readonly FaultLevel[];
  /** The fault engine's own chip health, before the reset layer's filter (what the reset engines decide on). */
  readonly faultHealth: Health;
  /** The fault engine's own network health, before the reset layer's filter. */
  readonly faultNetworkHealth: Health;
  /** An offline reset is rebooting the chip (spec H.3 `-Recovering`): reported Unhealthy meanwhile. */
  readonly recovering: boolean;
}

/** An immutable snapshot of the node. */
export interface NodeState {
  /** Increases by one with every published snapshot. */
  readonly seq: number;
  /** Clock time of the cycle that produced it (ms). */
  readonly time: number;
  readonly node: NodeFacts;
  /** In logic-id order of the chip list given at construction. */
  readonly chips: readonly ChipState[];
  /** The engine's ManuallySeparateNPU value (spec G.2). */
  readonly manualSeparation: string;
  /** The node's 910A3 switch faults and their level table (spec L.9); empty where there is no switch library. */
  readonly switch: SwitchState;
  /** A5 DPUs and each NPU's DPU health (docs/super-node.md "DPU faults"); absent while the feature is off. */
  readonly dpu?: DpuState;
  /**
   * The ResourceClaims the DRA driver has prepared on this node (issue [DRA]; input {@link NodeStateStore.setDraClaims}),
   * in claim-uid order; empty while DRA is off or holds nothing. Which chips DRA holds, for every other projection.
   */
  readonly draClaims: readonly DraClaimHold[];
}

/** One device of a prepared ResourceClaim, and the chip it is on. */
export interface DraDeviceHold {
  /** Device name in the driver's ResourceSlice (e.g. `ascend910-3`, a vNPU partition's name). */
  readonly device: string;
  /** Logic id of the chip the device is (or is on). */
  readonly logicId: number;
  /** A vNPU partition: its DCMI template (`vir05_1c_16g`) and the vNPU NodePrepare created for it. */
  readonly vnpu?: { readonly template: string; readonly vdevId: number };
  /** Admin access (monitoring a device another claim may hold): the chip is not held by this claim. */
  readonly adminAccess?: boolean;
}

/** A ResourceClaim prepared by the DRA driver (NodePrepareResources answered, not unprepared yet). */
export interface DraClaimHold {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly devices: readonly DraDeviceHold[];
}

/** Spec L.9: what the switch library reports, and the SwitchFaultCode.json levels the projection applies. */
export interface SwitchState {
  readonly faults: readonly SwitchFault[];
  /** Assembled code → level (the table in use: the file, or the fault-config ConfigMap's key over it). */
  readonly levels: ReadonlyMap<string, SwitchCodeLevel>;
}

const NO_SWITCH: SwitchState = Object.freeze({ faults: Object.freeze([]), levels: new Map() });
const NO_DRA_CLAIMS: readonly DraClaimHold[] = Object.freeze([]);

/** The claims frozen and in uid order (the snapshot's form). */
function freezeDraClaims(claims: Iterable<DraClaimHold>): readonly DraClaimHold[] {
  const list = [...claims].map((c) =>
    Object.freeze({
      uid: c.uid,
      namespace: c.namespace,
      name: c.name,
      devices: Object.freeze(
        c.devices.map((d) => Object.freeze({ ...d, ...(d.vnpu ? { vnpu: Object.freeze({ ...d.vnpu }) } : {}) })),
      ),
    }),
  );
  list.sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
  return Object.freeze(list);
}

/** What caused a cycle. */
export type ChangeCause = 'events' | 'tick' | 'release' | 'pod-used' | 'policy' | 'restore' | 'input' | 'switch';

/** What a published snapshot changed. */
export interface StateChange {
  readonly cause: ChangeCause;
  readonly transitions: readonly Transition[];
  /** Logic ids whose chip state differs from the previous snapshot. */
  readonly changed: readonly number[];
  /** Chips the engine asks to re-read from DCMI (spec D.4 reset finished); give them to the health monitor. */
  readonly resync: readonly number[];
  /** Number of events applied in this cycle. */
  readonly events: number;
}

export type StateListener = (state: NodeState, change: StateChange) => void;

/** A fault event as the store applied it, for the K.1 Event (spec K.1). */
export interface AppliedFaultEvent {
  readonly logicId: number;
  readonly cardId: number;
  readonly deviceId: number;
  /** The code in the engine's spelling (upper-case hex text, or the configuration's own). */
  readonly code: string;
  readonly assertion: Assertion;
  /** The code's own level (GetFaultTypeByCode; network variant for parameter-plane and link-down codes). */
  readonly level: FaultLevel;
  /** Clock time of the cycle that applied it (ms). */
  readonly time: number;
}

/**
 * Where the store sends re-sync requests: the health layer, which re-reads the chips from DCMI (spec D.4/D.5) and
 * feeds what it read back through {@link NodeStateStore.applyEvents}.
 */
export interface ResyncPort {
  markResync(logicIds: readonly number[], why?: string): void;
  /** Resolves when the re-sync reads requested so far have been applied to the store. */
  applied(): Promise<void>;
}

export interface NodeStateStoreOptions {
  /** Constructed (and restored, G.3) by the composition root; the store is its only user from then on. */
  readonly engine: FaultEngine;
  readonly chips: readonly StoreChip[];
  readonly node: NodeFacts;
  readonly clock: Clock;
  /** Period of the idle cycle (time-based rules), ms: `-listWatchPeriod` × 1000. */
  readonly listWatchPeriodMs: number;
  /** Run mode of the node (names in ManuallySeparateNPU, G.3); default `Ascend910`. */
  readonly runMode?: RunMode;
  /** The state the previous run left (the state file), read by {@link NodeStateStore.restore}. */
  readonly loadDurable?: () => DurableState | undefined;
  readonly logger?: Logger;
  /**
   * The output lane's quiet period, ms on the monotonic clock (default 0: off): deferred projections and
   * {@link NodeStateStore.later} tasks wait until no fault batch came for this long, so that a burst of faults
   * reaches kubelet between none of them (issue [P] item 5). Bounded by {@link outputMaxWaitMs}.
   */
  readonly outputQuietMs?: number;
  /**
   * Longest the lane waits for quiet, ms (default 50): from the moment work entered an empty lane; past it, the lane
   * runs without waiting until it is empty again, so a storm delays outputs, never piles them up.
   */
  readonly outputMaxWaitMs?: number;
}

type Op = {
  cause: ChangeCause;
  events?: readonly FaultEvent[];
  input?: () => Transition[];
  all?: boolean;
  /** A switch input (spec L.9): the new switch state, or undefined when it did not change. */
  switch?: () => SwitchState | undefined;
  /** A DPU input: the new DPU state. */
  dpu?: DpuState;
  /** The DRA driver's prepared claims (frozen, in uid order). */
  dra?: readonly DraClaimHold[];
};

/** What a chip state adds to the engine's view (see {@link ChipState}). */
interface Derived {
  readonly faultCodeLevels: readonly FaultLevel[];
  readonly networkFaultCodeLevels: readonly FaultLevel[];
  readonly recovering: boolean;
}

function freezeChip(view: ChipView, raw: ChipView, derived: Derived, chip: StoreChip): ChipState {
  const state: ChipState = {
    ...view,
    faultCodes: Object.freeze([...view.faultCodes]),
    networkFaultCodes: Object.freeze([...view.networkFaultCodes]),
    faultTimes: Object.freeze({ ...view.faultTimes }),
    reasons: Object.freeze(view.reasons.map((r) => Object.freeze({ ...r }))) as ChipView['reasons'],
    faultCodeLevels: Object.freeze([...derived.faultCodeLevels]),
    networkFaultCodeLevels: Object.freeze([...derived.networkFaultCodeLevels]),
    faultHealth: raw.health,
    faultNetworkHealth: raw.networkHealth,
    recovering: derived.recovering,
    cardId: chip.cardId,
    deviceId: chip.deviceId,
    ...(chip.numaNode !== undefined ? { numaNode: chip.numaNode } : {}),
  };
  return Object.freeze(state);
}

function sameLevels(a: readonly FaultLevel[], b: readonly FaultLevel[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Codes parsed from their text, kept at most this many (the codes in use on a node are few). */
const MAX_PARSED_CODES = 4096;

/**
 * True when `a` and `b` would give the same `JSON.stringify` text (plain data: primitives, arrays, objects; key
 * order counts, undefined properties are absent), without building the text.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    // Numbers JSON writes as null (NaN, ±Infinity) are equal to each other and to null.
    const nullish = (v: unknown): boolean => v === null || (typeof v === 'number' && !Number.isFinite(v));
    return nullish(a) && nullish(b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) {
      // JSON writes undefined (and functions) inside arrays as null
      const x: unknown = a[i] === undefined ? null : a[i];
      const y: unknown = bb[i] === undefined ? null : bb[i];
      if (!sameJson(x, y)) return false;
    }
    return true;
  }
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    if (k !== kb[i]) return false;
    if (!sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** True when the view has the same content as the chip state made from an earlier view (its frozen copy). */
function sameView(view: ChipView, raw: ChipView, derived: Derived, state: ChipState): boolean {
  for (const key of Object.keys(view) as (keyof ChipView)[]) {
    if (!sameJson(view[key], state[key])) return false;
  }
  return (
    raw.health === state.faultHealth &&
    raw.networkHealth === state.faultNetworkHealth &&
    derived.recovering === state.recovering &&
    sameLevels(derived.faultCodeLevels, state.faultCodeLevels) &&
    sameLevels(derived.networkFaultCodeLevels, state.networkFaultCodeLevels)
  );
}

/** How a listener is called. */
export interface ListenOptions {
  /**
   * Called after the cycle's turn instead of in it, with every snapshot (or event batch) in order: for the
   * projections that need not go first (metrics, the ConfigMap queue, Events), so the cycle's turn ends with the
   * kubelet send and the durable save (docs/architecture.md "One fault"). One deferred call per `setImmediate`, and
   * none in a turn whose poll phase queued a fault batch ({@link NodeStateStore.inputComing}): a fault that arrives
   * while they run waits for one call, not for all of them.
   */
  readonly deferred?: boolean;
}

/**
 * What waits for the deferred listeners: a snapshot and its change, or a cycle's applied fault events; or a task an
 * output queued itself ({@link NodeStateStore.later}).
 */
interface Later {
  readonly state?: NodeState;
  readonly change?: StateChange;
  readonly events?: readonly AppliedFaultEvent[];
  readonly task?: () => void;
}

/** The one store. */
export class NodeStateStore {
  readonly #engine: FaultEngine;
  readonly #chips: readonly StoreChip[];
  readonly #byLogic = new Map<number, StoreChip>();
  readonly #clock: Clock;
  readonly #period: number;
  readonly #runMode: RunMode;
  readonly #loadDurable: NodeStateStoreOptions['loadDurable'];
  readonly #log: Logger;
  readonly #listeners = new Set<StateListener>();
  readonly #eventListeners = new Set<(events: readonly AppliedFaultEvent[]) => void>();
  /** `deferred` listeners ({@link ListenOptions}) and what waits for them, in the order it happened. */
  readonly #laterListeners = new Set<StateListener>();
  readonly #laterEventListeners = new Set<(events: readonly AppliedFaultEvent[]) => void>();
  #later: Later[] = [];
  /** The deferred calls left of the item being delivered (one per listener). */
  #laterCalls: (() => void)[] = [];
  #laterScheduled = false;
  /** A fault batch is queued for this turn's check phase ({@link inputComing}): the next deferred call waits. */
  #inputComing = false;
  readonly #quietMs: number;
  readonly #maxWaitMs: number;
  /** Monotonic time of the last fault batch (applied or announced). */
  #lastInputAt = -Infinity;
  /** Monotonic time work entered the empty lane (undefined: the lane is empty). */
  #laneSince: number | undefined;
  #laterTimer: TimerHandle | undefined;
  /** Set by {@link stop}: the lane no longer waits for quiet. */
  #laneOpen = false;
  readonly #durableListeners = new Set<() => void>();
  /** Last engine view object seen per chip (the engine rebuilds a view only when it re-evaluated the chip). */
  readonly #seenViews = new Map<number, ChipView>();
  readonly #chipStates = new Map<number, ChipState>();
  #switch: SwitchState = NO_SWITCH;
  #dpu: DpuState | undefined;
  #draClaims: readonly DraClaimHold[] = NO_DRA_CLAIMS;
  readonly #parsed = new Map<string, FaultCode | null>();
  /** §3.10 health filter of the reset layer (hot-reset.md): chips reported Healthy / NetworkHealthy meanwhile. */
  #resetHealthy: ReadonlySet<number> = new Set();
  #resetNetworkHealthy: ReadonlySet<number> = new Set();
  #resetRecovering: ReadonlySet<number> = new Set();
  /** The `ManuallySeparateNPU` value the device-info ConfigMap holds by our last write; undefined: not known. */
  #confirmedManual: string | undefined;
  #resync: ResyncPort | undefined;
  /** Re-sync requests made while no health layer was attached (the start-up restore's). */
  readonly #pendingResync = new Set<number>();
  #state: NodeState;
  #queue: Op[] = [];
  #busy = false;
  #timer: TimerHandle | undefined;
  #stopped = true;

  constructor(options: NodeStateStoreOptions) {
    this.#engine = options.engine;
    this.#chips = [...options.chips];
    for (const c of this.#chips) this.#byLogic.set(c.logicId, c);
    this.#clock = options.clock;
    this.#period = options.listWatchPeriodMs;
    this.#runMode = options.runMode ?? 'Ascend910';
    this.#loadDurable = options.loadDurable;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#quietMs = Math.max(0, options.outputQuietMs ?? 0);
    this.#maxWaitMs = Math.max(0, options.outputMaxWaitMs ?? 50);
    this.#refreshChips(true);
    this.#state = Object.freeze({
      seq: 0,
      time: this.#clock.now(),
      node: Object.freeze({ ...options.node }),
      chips: Object.freeze(this.#chips.map((c) => this.#chipStates.get(c.logicId)!)),
      manualSeparation: this.#engine.manualSeparationValue(),
      switch: NO_SWITCH,
      draClaims: NO_DRA_CLAIMS,
    });
  }

  /** The current snapshot; never mutated. */
  snapshot(): NodeState {
    return this.#state;
  }

  /** The chip's state in the current snapshot. */
  chip(logicId: number): ChipState | undefined {
    return this.#chipStates.get(logicId);
  }

  /**
   * Calls `listener` after every new snapshot (in the cycle's turn, or `deferred`: see {@link ListenOptions});
   * returns the unsubscribe function.
   */
  onChange(listener: StateListener, options: ListenOptions = {}): () => void {
    const set = options.deferred ? this.#laterListeners : this.#listeners;
    set.add(listener);
    return () => void set.delete(listener);
  }

  /**
   * Calls `listener` after every cycle that applied fault events (whether the snapshot changed or not: spec K.1 has
   * an Event per fault event), after the snapshot listeners (or `deferred`, after the deferred snapshot listeners of
   * the same cycle); returns the unsubscribe function.
   */
  onFaultEvents(listener: (events: readonly AppliedFaultEvent[]) => void, options: ListenOptions = {}): () => void {
    const set = options.deferred ? this.#laterEventListeners : this.#eventListeners;
    set.add(listener);
    return () => void set.delete(listener);
  }

  /**
   * Hands what waits for the `deferred` listeners to them now (the shutdown: the last change reaches the ConfigMap
   * queue before its flush).
   */
  flushDeferred(): void {
    for (let call = this.#nextLaterCall(); call; call = this.#nextLaterCall()) call();
    this.#laneSince = undefined;
  }

  /**
   * The health layer's intake has queued a fault batch for this turn's check phase (it runs the cycle there): the
   * next deferred call waits one turn, so that the batch's cycle and kubelet send do not queue behind it (issue [P]
   * item 5). Cleared by the next cycle, or by that one wait: a batch that never comes holds nothing up.
   */
  inputComing(): void {
    this.#inputComing = true;
    if (this.#quietMs > 0) this.#lastInputAt = this.#clock.monotonic();
  }

  /**
   * Runs `task` in the deferred projections' lane: after what is deferred already, in a turn of its own, never in a
   * turn whose poll phase queued a fault batch ({@link inputComing}). For an output's own work that need not go
   * first (one Event, a ConfigMap write whose minimum interval ended, a debounced state save), so that a fault
   * arriving meanwhile waits for one such task at most (issue [P] item 5). A task that throws is logged.
   */
  later(task: () => void): void {
    this.#later.push({ task });
    this.#scheduleLater();
  }

  /** The next deferred call (the next item's listeners are taken when its turn comes), or undefined. */
  #nextLaterCall(): (() => void) | undefined {
    if (this.#laterCalls.length === 0) {
      const item = this.#later.shift();
      if (item === undefined) return undefined;
      if (item.task) return () => this.#call(item.task!, 'deferred task');
      this.#laterCalls = item.state
        ? [...this.#laterListeners].map((l) => () => this.#call(() => l(item.state!, item.change!), 'state listener'))
        : [...this.#laterEventListeners].map((l) => () => this.#call(() => l(item.events!), 'fault-event listener'));
      if (this.#laterCalls.length === 0) return this.#nextLaterCall();
    }
    return this.#laterCalls.shift();
  }

  /**
   * Calls `listener` when the durable state may have changed: after the snapshot listeners of every new snapshot
   * (still in the same turn of the event loop, so a save it makes is on disk before any output of the cycle leaves
   * the process: the outputs send asynchronously), and after {@link confirmWritten}. Returns the unsubscribe function.
   */
  onDurableChange(listener: () => void): () => void {
    this.#durableListeners.add(listener);
    return () => void this.#durableListeners.delete(listener);
  }

  /** Starts the idle cycle every `listWatchPeriod` and runs one now (so the first snapshot is current). */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.tick();
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#laneOpen = true;
    if (this.#laterTimer !== undefined) {
      // what waits for quiet is delivered now, as before the lane (the shutdown still flushes the ConfigMap queue)
      this.#clock.clearTimeout(this.#laterTimer);
      this.#laterTimer = undefined;
      this.#laterScheduled = false;
      this.#scheduleLater();
    }
  }

  /** Applies a batch of events in one cycle, now. */
  applyEvents(events: readonly FaultEvent[]): void {
    this.#inputComing = false;
    if (events.length === 0) return;
    if (this.#quietMs > 0) this.#lastInputAt = this.#clock.monotonic();
    this.#submit({ cause: 'events', events });
  }

  /** An idle cycle (time-based rules: durations, release windows, autofill timer). */
  tick(): void {
    this.#submit({ cause: 'tick' });
  }

  /**
   * Spec G.3: restores the engine from the state the previous run left (`loadDurable`) and the live device-info
   * values, then publishes one cycle; every chip is re-synced with DCMI (through the health layer). Called once at
   * start before the outputs run, or by the publisher at its first successful read when the start-up read failed.
   * Its problems are logged here. Not from inside a listener (the result is needed at once).
   */
  restore(live: StartupValues): RestoreResult {
    const r = restoreEngine(this.#engine, {
      persisted: this.#loadDurable?.(),
      live,
      now: this.#clock.now(),
      runMode: this.#runMode,
    });
    for (const p of r.problems) this.#log.warn({ problem: p }, 'engine restore');
    this.#log.info(
      { source: r.source, releasedWhileDown: r.releasedWhileDown, separated: this.#engine.manualSeparationValue() },
      'engine state restored',
    );
    // The import replaces the engine's chips: every chip state is rebuilt. Its transitions are not published (a
    // start-up load reports through the ConfigMap, not through transition Events).
    this.#submit({ cause: 'restore', all: true });
    this.requestResync(r.resync);
    return r;
  }

  /** The operator deleted the chip's name from ManuallySeparateNPU (spec G.2); published in one cycle at once. */
  release(logicId: number): void {
    this.#submit({ cause: 'release', input: () => this.#engine.release(logicId) });
  }

  /**
   * The device-info ConfigMap holds `value` by a successful write (or the start-up read): the engine's "written
   * once" mark for these separated chips (G.2 `firstHandle`, `FaultEngine.markManualWritten`), so its durable state
   * says what the ConfigMap holds; `value` is what {@link confirmedManual} returns from now on. No cycle.
   */
  confirmWritten(logicIds: readonly number[], value: string): void {
    this.#confirmedManual = value;
    if (logicIds.length > 0) this.#engine.markManualWritten(logicIds);
    this.#notifyDurable();
  }

  /** The `ManuallySeparateNPU` value of the last successful device-info write; undefined when not known yet. */
  confirmedManual(): string | undefined {
    return this.#confirmedManual;
  }

  /** Chips used by an active pod (spec D.2 step 5 / D.7 PreSeparateNPU rule), by logic id. */
  setPodUsed(used: ReadonlySet<number>): void {
    this.#submit({
      cause: 'pod-used',
      input: () => {
        for (const c of this.#chips) this.#engine.setPodUsed(c.logicId, used.has(c.logicId));
        return [];
      },
    });
  }

  /** A new fault policy from the FaultConfig source (spec F.8 / G.6). */
  setPolicy(policy: FaultPolicy, options: { resetHistory?: boolean } = {}): void {
    this.#submit({ cause: 'policy', all: true, input: () => this.#engine.setPolicy(policy, options) });
  }

  /**
   * The reset layer's health filter (hot-reset.md §3.10): while a task-aware reset runs, these chips are reported
   * Healthy (and these NetworkHealthy) whatever the engine says; chips an offline reset is rebooting (`recovering`)
   * are reported Unhealthy and NetworkUnhealthy until it ends. Every output sees it in the same snapshot.
   */
  setResetOverrides(
    healthy: ReadonlySet<number>,
    networkHealthy: ReadonlySet<number>,
    recovering: ReadonlySet<number> = new Set(),
  ): void {
    this.#submit({
      cause: 'input',
      all: true,
      input: () => {
        this.#resetHealthy = new Set(healthy);
        this.#resetNetworkHealthy = new Set(networkHealthy);
        this.#resetRecovering = new Set(recovering);
        return [];
      },
    });
  }

  /** Spec L.9: switch subscription events, in order (a time the library left 0 is stamped with the store's clock). */
  applySwitchEvents(events: readonly RawSwitchEvent[]): void {
    this.#submit({
      cause: 'switch',
      switch: () => this.#switchWith(withSwitchEvents(this.#switch.faults, events, this.#clock.now())),
    });
  }

  /** Spec L.9: a switch query's whole answer replaces the list (an unstamped fault keeps its first time). */
  replaceSwitchFaults(events: readonly RawSwitchEvent[]): void {
    this.#submit({
      cause: 'switch',
      switch: () => this.#switchWith(withSwitchQuery(this.#switch.faults, events, this.#clock.now())),
    });
  }

  /** Spec L.9 / F.8: the SwitchFaultCode.json level table in use (the file, or the fault-config ConfigMap's key). */
  /** A5 DPU poll (docs/super-node.md "DPU faults"): the DPUs' operstates and each NPU's DPU health. */
  setDpuState(state: DpuState): void {
    this.#submit({ cause: 'input', dpu: state });
  }

  /**
   * Issue [DRA]: the ResourceClaims the DRA driver holds prepared on this node now (the whole set, after every
   * NodePrepare/NodeUnprepare and at start from its checkpoint); published as {@link NodeState.draClaims} in one
   * cycle when it differs from the current set.
   */
  setDraClaims(claims: Iterable<DraClaimHold>): void {
    const next = freezeDraClaims(claims);
    this.#submit({ cause: 'input', dra: next });
  }

  setSwitchLevels(levels: ReadonlyMap<string, SwitchCodeLevel>): void {
    this.#submit({
      cause: 'switch',
      switch: () =>
        levels === this.#switch.levels ? undefined : Object.freeze({ faults: this.#switch.faults, levels }),
    });
  }

  #switchWith(faults: SwitchFault[]): SwitchState | undefined {
    if (sameSwitchFaults(faults, this.#switch.faults)) {
      // same faults: keep the stamped list (a query refreshes nothing a reader sees)
      return undefined;
    }
    return Object.freeze({ faults: Object.freeze(faults), levels: this.#switch.levels });
  }

  /** The current reset overrides. */
  resetOverrides(): {
    healthy: ReadonlySet<number>;
    networkHealthy: ReadonlySet<number>;
    recovering: ReadonlySet<number>;
  } {
    return {
      healthy: this.#resetHealthy,
      networkHealthy: this.#resetNetworkHealthy,
      recovering: this.#resetRecovering,
    };
  }

  /**
   * The health layer reads re-sync requests from here (spec D.4/D.5): the engine's (a reset finished, the G.3
   * restore) and the reset layer's ({@link requestResync}). Requests made before it attached are handed over now.
   * Returns the detach function.
   */
  attachResync(port: ResyncPort): () => void {
    this.#resync = port;
    if (this.#pendingResync.size > 0) {
      const ids = [...this.#pendingResync];
      this.#pendingResync.clear();
      port.markResync(ids);
    }
    return () => {
      if (this.#resync === port) this.#resync = undefined;
    };
  }

  /** Asks the health layer to re-read these chips from DCMI (D.5). */
  requestResync(logicIds: readonly number[], why?: string): void {
    if (logicIds.length === 0) return;
    if (this.#resync) this.#resync.markResync(logicIds, why);
    else for (const id of logicIds) this.#pendingResync.add(id);
  }

  /** Resolves when the re-sync reads requested so far have been applied to the store (at once without a health layer). */
  resyncApplied(): Promise<void> {
    return this.#resync?.applied() ?? Promise.resolve();
  }

  /** Increases with every change of escalation state (what persistence saves at once). */
  get durableRevision(): number {
    return this.#engine.durableRevision;
  }

  /** The engine's exportable state, for the state file (docs/fault-engine.md "Limits and durability"). */
  exportDurableState(): EngineStateJson {
    return exportEngineState(this.#engine);
  }

  #overridden(v: ChipView): ChipView {
    if (this.#resetRecovering.has(v.logicId)) {
      if (v.health === 'Unhealthy' && v.networkHealth === 'Unhealthy') return v;
      return { ...v, health: 'Unhealthy', networkHealth: 'Unhealthy' };
    }
    const h = this.#resetHealthy.has(v.logicId) && v.health !== 'Healthy';
    const n = this.#resetNetworkHealthy.has(v.logicId) && v.networkHealth !== 'Healthy';
    if (!h && !n) return v;
    return { ...v, ...(h ? { health: 'Healthy' as const } : {}), ...(n ? { networkHealth: 'Healthy' as const } : {}) };
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.tick();
      this.#schedule();
    }, this.#period);
  }

  #submit(op: Op): void {
    this.#queue.push(op);
    if (this.#busy) return;
    this.#busy = true;
    try {
      while (this.#queue.length > 0) {
        const next = this.#queue.shift()!;
        try {
          this.#run(next);
        } catch (err) {
          this.#log.error({ err, cause: next.cause }, 'state store cycle failed');
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  #run(op: Op): void {
    const now = this.#clock.now();
    const before = op.input ? op.input() : [];
    const events = op.events ?? [];
    const result: CycleResult = this.#engine.cycle({ now, events });
    const transitions = [...before, ...result.transitions];
    const changed = this.#refreshChips(op.all === true);
    const manualSeparation = this.#engine.manualSeparationValue();
    const sw = op.switch?.();
    if (sw) this.#switch = sw;
    if (op.dpu) this.#dpu = op.dpu;
    const draChanged = op.dra !== undefined && !sameJson(op.dra, this.#draClaims);
    if (draChanged) this.#draClaims = op.dra!;
    if (
      changed.length > 0 ||
      transitions.length > 0 ||
      manualSeparation !== this.#state.manualSeparation ||
      sw !== undefined ||
      op.dpu !== undefined ||
      draChanged
    ) {
      this.#publish(op, now, transitions, changed, result.resync, manualSeparation);
    }
    if (events.length > 0 && this.#eventListeners.size + this.#laterEventListeners.size > 0) {
      this.#tellEvents(events, now);
    }
  }

  #publish(
    op: Op,
    now: number,
    transitions: readonly Transition[],
    changed: readonly number[],
    resync: readonly number[],
    manualSeparation: string,
  ): void {
    this.#state = Object.freeze({
      seq: this.#state.seq + 1,
      time: now,
      node: this.#state.node,
      chips: Object.freeze(this.#chips.map((c) => this.#chipStates.get(c.logicId)!)),
      manualSeparation,
      switch: this.#switch,
      ...(this.#dpu ? { dpu: this.#dpu } : {}),
      draClaims: this.#draClaims,
    });
    const change: StateChange = Object.freeze({
      cause: op.cause,
      transitions: Object.freeze(transitions),
      changed: Object.freeze(changed),
      resync: Object.freeze([...resync]),
      events: op.events?.length ?? 0,
    });
    for (const l of [...this.#listeners]) {
      try {
        l(this.#state, change);
      } catch (err) {
        this.#log.error({ err }, 'state listener threw');
      }
    }
    if (this.#laterListeners.size > 0) this.#defer({ state: this.#state, change });
    this.requestResync(change.resync);
    this.#notifyDurable();
  }

  #call(f: () => void, what: string): void {
    try {
      f();
    } catch (err) {
      this.#log.error({ err }, `${what} threw`);
    }
  }

  /**
   * Queues for the deferred listeners, delivered in order, one call per `setImmediate`. It is an event-loop
   * position, not a delay: HTTP/2 queues a stream's frames for the check phase of the turn it was written in, as a
   * native immediate, which Node runs before the JavaScript immediates of the same phase — so the kubelet's
   * ListAndWatch frame has left when the deferred projections run. One call per turn, and none in a turn whose poll
   * phase queued a fault batch: a fault arriving meanwhile waits for at most one projection (issue [P] item 5).
   */
  #defer(item: Later): void {
    this.#later.push(item);
    this.#scheduleLater();
  }

  #scheduleLater(): void {
    if (this.#laterScheduled) return;
    this.#laterScheduled = true;
    const wait = this.#quietWait();
    if (wait > 0) {
      this.#laterTimer = this.#clock.setTimeout(() => {
        this.#laterTimer = undefined;
        this.#laterScheduled = false;
        this.#scheduleLater();
      }, wait);
      return;
    }
    setImmediate(() => {
      this.#laterScheduled = false;
      if (this.#quietWait() > 0) {
        this.#scheduleLater(); // a batch came meanwhile
        return;
      }
      if (this.#inputComing) {
        this.#inputComing = false; // one turn at most: the batch's cycle runs in this check phase
      } else {
        this.#nextLaterCall()?.();
      }
      if (this.#laterCalls.length > 0 || this.#later.length > 0) this.#scheduleLater();
      else this.#laneSince = undefined;
    });
  }

  /** How long the lane still waits for quiet (0: it may run now); see {@link NodeStateStoreOptions.outputQuietMs}. */
  #quietWait(): number {
    if (this.#quietMs === 0 || this.#laneOpen) return 0;
    const now = this.#clock.monotonic();
    this.#laneSince ??= now;
    const quietAt = this.#lastInputAt + this.#quietMs;
    if (quietAt <= now || now - this.#laneSince >= this.#maxWaitMs) return 0;
    return Math.min(quietAt, this.#laneSince + this.#maxWaitMs) - now;
  }

  #notifyDurable(): void {
    for (const l of [...this.#durableListeners]) {
      try {
        l();
      } catch (err) {
        this.#log.error({ err }, 'durable-state listener threw');
      }
    }
  }

  /** The K.1 view of the events of one cycle: the engine's spelling and the code-only level (the Event's action). */
  #tellEvents(events: readonly FaultEvent[], now: number): void {
    const applied: AppliedFaultEvent[] = [];
    for (const ev of events) {
      const chip = this.#byLogic.get(ev.logicId);
      if (!chip) continue;
      const network = isNetworkCode(ev.code) || ev.code === LINK_DOWN_CODE;
      applied.push({
        logicId: ev.logicId,
        cardId: chip.cardId,
        deviceId: chip.deviceId,
        code: this.#engine.formatCode(ev.code),
        assertion: ev.assertion,
        level: network ? this.#engine.networkCodeLevel([ev.code]) : this.#engine.codeLevel([ev.code]),
        time: now,
      });
    }
    for (const l of [...this.#eventListeners]) {
      try {
        l(applied);
      } catch (err) {
        this.#log.error({ err }, 'fault-event listener threw');
      }
    }
    if (this.#laterEventListeners.size > 0) this.#defer({ events: applied });
  }

  /** The code of a text of a view (the engine writes each code's spelling), cached. */
  #codeOf(text: string): FaultCode | null {
    let c = this.#parsed.get(text);
    if (c === undefined) {
      const p = parseHexCode(text);
      c = p.ok ? p.value : null;
      if (this.#parsed.size >= MAX_PARSED_CODES) this.#parsed.clear();
      this.#parsed.set(text, c);
    }
    return c;
  }

  /** Spec H.3 per-code levels: `GetFaultType([code])` raised by the scope's frequency/duration/reason level. */
  #derived(raw: ChipView): Derived {
    const level = (text: string, network: boolean, raised: FaultLevel): FaultLevel => {
      const c = this.#codeOf(text);
      if (c === null) return raised;
      return mostSevere([network ? this.#engine.networkCodeLevel([c]) : this.#engine.codeLevel([c]), raised]);
    };
    return {
      faultCodeLevels: raw.faultCodes.map((t) => level(t, false, raw.chipRaisedLevel)),
      networkFaultCodeLevels: raw.networkFaultCodes.map((t) => level(t, true, raw.networkRaisedLevel)),
      recovering: this.#resetRecovering.has(raw.logicId),
    };
  }

  /** Rebuilds the frozen chip states whose engine view changed (`all`: every chip); returns the ids that differ. */
  #refreshChips(all: boolean): number[] {
    const changed: number[] = [];
    for (const c of this.#chips) {
      const raw = this.#engine.chipView(c.logicId);
      if (!raw) continue;
      // The same engine view object: the same content, per-code levels included (the engine rebuilds the view of
      // every chip whose levels can change: its own events, a severity another chip's event changed, E.4, a policy).
      if (!all && this.#seenViews.get(c.logicId) === raw) continue;
      this.#seenViews.set(c.logicId, raw);
      const view = this.#overridden(raw);
      const derived = this.#derived(raw);
      const published = this.#chipStates.get(c.logicId);
      if (published !== undefined && sameView(view, raw, derived, published)) continue;
      this.#chipStates.set(c.logicId, freezeChip(view, raw, derived, c));
      changed.push(c.logicId);
    }
    return changed;
  }
}
