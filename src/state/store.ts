/**
 * The node's one state store (architecture §2): it owns the fault engine, applies every batch of events from the
 * health layer at once (event-driven, spec D.2 without the 1 s trigger tick), runs an idle cycle every
 * `listWatchPeriod` for the time-based rules, and publishes immutable snapshots with change notifications. Every
 * output (kubelet stream, ConfigMap, Events, metrics) is a projection of the same snapshot.
 *
 * Inputs: fault-event batches, operator release, the pod-used set, a new policy, the live ManuallySeparateNPU value.
 * Inputs given while listeners run (a listener calling back into the store) are queued and applied right after,
 * in order, so every listener sees every snapshot in sequence.
 */
import type { FaultEngine } from '../faults/engine.js';
import type { ChipView, CycleResult, FaultEvent, Transition } from '../faults/engine-types.js';
import type { FaultPolicy } from '../faults/policy.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { NodeFacts } from '../core/chips.js';
import type { Clock, TimerHandle } from '../core/clock.js';

/** DCMI addressing and placement of one chip. */
export interface StoreChip {
  readonly logicId: number;
  readonly phyId: number;
  readonly cardId: number;
  readonly deviceId: number;
  /** NUMA node when known (spec C.2). */
  readonly numaNode?: number;
}

/** One chip in a snapshot: the engine's published view plus its address. Frozen. */
export interface ChipState extends Readonly<Omit<ChipView, 'faultCodes' | 'networkFaultCodes' | 'reasons'>> {
  readonly cardId: number;
  readonly deviceId: number;
  readonly numaNode?: number;
  readonly faultCodes: readonly string[];
  readonly networkFaultCodes: readonly string[];
  readonly reasons: ChipView['reasons'];
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
}

/** What caused a cycle. */
export type ChangeCause = 'events' | 'tick' | 'release' | 'pod-used' | 'policy' | 'manual-reconcile' | 'input';

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

export interface NodeStateStoreOptions {
  /** Constructed (and restored, G.3) by the composition root; the store is its only user from then on. */
  readonly engine: FaultEngine;
  readonly chips: readonly StoreChip[];
  readonly node: NodeFacts;
  readonly clock: Clock;
  /** Period of the idle cycle (time-based rules), ms: `-listWatchPeriod` × 1000. */
  readonly listWatchPeriodMs: number;
  readonly logger?: Logger;
}

type Op = { cause: ChangeCause; events?: readonly FaultEvent[]; input?: () => Transition[] };

function freezeChip(view: ChipView, chip: StoreChip): ChipState {
  const state: ChipState = {
    ...view,
    faultCodes: Object.freeze([...view.faultCodes]),
    networkFaultCodes: Object.freeze([...view.networkFaultCodes]),
    faultTimes: Object.freeze({ ...view.faultTimes }),
    reasons: Object.freeze(view.reasons.map((r) => Object.freeze({ ...r }))) as ChipView['reasons'],
    cardId: chip.cardId,
    deviceId: chip.deviceId,
    ...(chip.numaNode !== undefined ? { numaNode: chip.numaNode } : {}),
  };
  return Object.freeze(state);
}

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
function sameView(view: ChipView, state: ChipState): boolean {
  for (const key of Object.keys(view) as (keyof ChipView)[]) {
    if (!sameJson(view[key], state[key])) return false;
  }
  return true;
}

/** The one store. */
export class NodeStateStore {
  readonly #engine: FaultEngine;
  readonly #chips: readonly StoreChip[];
  readonly #byLogic = new Map<number, StoreChip>();
  readonly #clock: Clock;
  readonly #period: number;
  readonly #log: Logger;
  readonly #listeners = new Set<StateListener>();
  /** Last engine view object seen per chip (the engine rebuilds a view only when it re-evaluated the chip). */
  readonly #seenViews = new Map<number, ChipView>();
  readonly #chipStates = new Map<number, ChipState>();
  /** §3.10 health filter of the reset layer (hot-reset.md): chips reported Healthy / NetworkHealthy meanwhile. */
  #resetHealthy: ReadonlySet<number> = new Set();
  #resetNetworkHealthy: ReadonlySet<number> = new Set();
  #resetRecovering: ReadonlySet<number> = new Set();
  #overridesChanged = false;
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
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#refreshChips();
    this.#state = Object.freeze({
      seq: 0,
      time: this.#clock.now(),
      node: Object.freeze({ ...options.node }),
      chips: Object.freeze(this.#chips.map((c) => this.#chipStates.get(c.logicId)!)),
      manualSeparation: this.#engine.manualSeparationValue(),
    });
  }

  /**
   * The engine, for the start-up restore (G.3) and read-only projections (ConfigMap view). Change it only through
   * the store's inputs once {@link start} has been called, or the snapshot will lag.
   */
  get engine(): FaultEngine {
    return this.#engine;
  }

  /** The current snapshot; never mutated. */
  snapshot(): NodeState {
    return this.#state;
  }

  /** The chip's state in the current snapshot. */
  chip(logicId: number): ChipState | undefined {
    return this.#chipStates.get(logicId);
  }

  /** Calls `listener` after every new snapshot; returns the unsubscribe function. */
  onChange(listener: StateListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
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
  }

  /** Applies a batch of events in one cycle, now. */
  applyEvents(events: readonly FaultEvent[]): void {
    if (events.length === 0) return;
    this.#submit({ cause: 'events', events });
  }

  /** An idle cycle (time-based rules: durations, release windows, autofill timer). */
  tick(): void {
    this.#submit({ cause: 'tick' });
  }

  /** The operator deleted the chip's name from ManuallySeparateNPU (spec G.2). */
  release(logicId: number): void {
    this.#submit({ cause: 'release', input: () => this.#engine.release(logicId) });
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
    this.#submit({ cause: 'policy', input: () => this.#engine.setPolicy(policy, options) });
  }

  /** Diff against the live ManuallySeparateNPU value (spec G.2); problems are logged. */
  reconcileManualSeparation(liveValue: string): void {
    this.#submit({
      cause: 'manual-reconcile',
      input: () => {
        const r = this.#engine.reconcileManualSeparation(liveValue);
        for (const p of r.problems) this.#log.warn({ problem: p }, 'ManuallySeparateNPU value');
        return r.transitions;
      },
    });
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
      input: () => {
        this.#resetHealthy = new Set(healthy);
        this.#resetNetworkHealthy = new Set(networkHealthy);
        this.#resetRecovering = new Set(recovering);
        this.#overridesChanged = true;
        return [];
      },
    });
  }

  /** The current reset overrides (for metrics and status). */
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

  /** Engine views with the reset overrides applied (the device-info ConfigMap's view). */
  withResetOverrides(views: readonly ChipView[]): ChipView[] {
    return views.map((v) => this.#overridden(v));
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

  /** Any other engine input (e.g. the start-up restore done after `start`); a cycle follows at once. */
  applyInput(fn: (engine: FaultEngine) => Transition[]): void {
    this.#submit({ cause: 'input', input: () => fn(this.#engine) });
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
    const result: CycleResult = this.#engine.cycle({ now, events: op.events ?? [] });
    const transitions = [...before, ...result.transitions];
    const changed = this.#refreshChips();
    const manualSeparation = this.#engine.manualSeparationValue();
    if (changed.length === 0 && transitions.length === 0 && manualSeparation === this.#state.manualSeparation) {
      return;
    }
    this.#state = Object.freeze({
      seq: this.#state.seq + 1,
      time: now,
      node: this.#state.node,
      chips: Object.freeze(this.#chips.map((c) => this.#chipStates.get(c.logicId)!)),
      manualSeparation,
    });
    const change: StateChange = Object.freeze({
      cause: op.cause,
      transitions: Object.freeze(transitions),
      changed: Object.freeze(changed),
      resync: Object.freeze([...result.resync]),
      events: op.events?.length ?? 0,
    });
    for (const l of [...this.#listeners]) {
      try {
        l(this.#state, change);
      } catch (err) {
        this.#log.error({ err }, 'state listener threw');
      }
    }
  }

  /** Rebuilds the frozen chip states whose engine view changed; returns the logic ids that differ. */
  #refreshChips(): number[] {
    const changed: number[] = [];
    const all = this.#overridesChanged;
    this.#overridesChanged = false;
    for (const c of this.#chips) {
      const raw = this.#engine.chipView(c.logicId);
      if (!raw || (!all && this.#seenViews.get(c.logicId) === raw)) continue;
      this.#seenViews.set(c.logicId, raw);
      const view = this.#overridden(raw);
      const published = this.#chipStates.get(c.logicId);
      if (published !== undefined && sameView(view, published)) continue;
      this.#chipStates.set(c.logicId, freezeChip(view, c));
      changed.push(c.logicId);
    }
    return changed;
  }
}
