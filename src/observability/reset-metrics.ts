/**
 * Metrics of the chip-reset layer (issue [F] item 4: the per-task and per-chip state machines are visible in
 * metrics). Gauges mirror {@link ResetStatus} (from `ResetRuntime.status()`); counters follow the reset layer's
 * Events, which the engines emit exactly once per attempt and per outcome (a status sampled every period would miss
 * a short attempt).
 *
 * State gauges carry only the current state (value 1) of each task / chip: a state that is not current has no
 * series, which keeps the cardinality at one series per task and per chip and engine. Chips are labelled as every
 * per-chip series is (issue [J] item 2): `chip` is the chip's name (`Ascend910-3`), with `logic_id` and `phy_id`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ResetStatus } from '../reset/reset-runtime.js';
import type { ResetEvent } from '../reset/types.js';
import type { ChipNames } from './chip-names.js';

type ChipLabel = 'chip' | 'logic_id' | 'phy_id';

/** Which engine an Event reason belongs to, and what it counts (reasons emitted by src/reset, docs/hot-reset.md). */
const EVENT_COUNTS: Readonly<
  Record<string, { engine: 'online' | 'offline'; attempt?: true; result?: string; warning?: string }>
> = {
  // offline engine (device-plugin.md §J.2): one Event per finished reset, so the attempt is counted at its end
  OfflineResetSucceeded: { engine: 'offline', attempt: true, result: 'succeeded' },
  OfflineResetFailed: { engine: 'offline', attempt: true, result: 'failed' },
  OfflineResetLimitReached: { engine: 'offline', warning: 'limit_reached' },
  // online engine (hot-reset.md §3): one ResetStarted per episode, one outcome per episode
  ResetStarted: { engine: 'online', attempt: true },
  ResetRecovered: { engine: 'online', result: 'recovered' },
  ResetFailed: { engine: 'online', result: 'failed' },
  ResetIsolated: { engine: 'online', result: 'isolated' },
  ResetChipFailed: { engine: 'online', warning: 'chip_failed' },
  ResetTaskSkipped: { engine: 'online', warning: 'task_skipped' },
};

/** The reset metric set, on the agent's registry. */
export class ResetMetrics {
  /** 1 for the current state of each online task (`hot-reset.md` §3.9 task machine). */
  readonly taskState: Gauge<'task' | 'namespace' | 'state'>;
  /** 1 for the current state of each chip, per engine (online §3.9 chip machine; offline §J.2). */
  readonly chipState: Gauge<ChipLabel | 'engine' | 'state'>;
  /**
   * 1 for the reset state of each chip of the node, one series per chip (issue [J] item 2): the online engine's
   * state while the chip is in a task-aware reset episode (§3.9: inReset, resetting, booting, isolated), else the
   * offline engine's (§J.2: idle, debouncing, resetting, waitingBoot, outOfBand, exhausted).
   */
  readonly chipResetState: Gauge<ChipLabel | 'state'>;
  /** Offline reset tokens left per chip (§J.2: 3 per 6 h). */
  readonly tokens: Gauge<ChipLabel>;
  /** Chips held in the reset coordinator, by owner (a task name or `offline`). */
  readonly held: Gauge<'owner'>;
  /** `-hotReset` mode, and whether the task-aware engine runs on this node. */
  readonly mode: Gauge<'online'>;
  /** Reset attempts: offline resets run (counted when they end), online episodes started. */
  readonly attempts: Counter<'engine'>;
  /** Outcomes: offline succeeded / failed; online recovered / failed / isolated (§3.8). */
  readonly results: Counter<'engine' | 'result'>;
  /** Warnings that are not outcomes: tokens used up, a chip's DCMI reset failed, a task skipped. */
  readonly warnings: Counter<'engine' | 'reason'>;
  #source: (() => ResetStatus) | undefined;
  /** A status was given by {@link observe}. */
  #observed = false;

  constructor(
    registry: Registry,
    prefix: string,
    private readonly names: ChipNames,
  ) {
    const registers = [registry];
    // prom-client calls each gauge's collect() before it reads the gauge (one status per gauge and scrape)
    const collect = (fill: (s: ResetStatus) => void) => (): void => {
      const source = this.#source;
      if (source === undefined) return;
      let status: ResetStatus;
      try {
        status = source();
      } catch {
        return; // a status that cannot be taken keeps the last values; /metrics must not fail for it
      }
      fill(status);
    };
    this.taskState = new Gauge({
      name: `${prefix}reset_task_state`,
      help: 'Online reset: 1 for the current state of each task (hot-reset.md §3.9).',
      labelNames: ['task', 'namespace', 'state'],
      registers,
      collect: collect((s) => this.#fillTasks(s)),
    });
    this.chipState = new Gauge({
      name: `${prefix}reset_chip_state`,
      help: 'Chip reset: 1 for the current state of each chip per engine (online §3.9, offline §J.2).',
      labelNames: ['chip', 'logic_id', 'phy_id', 'engine', 'state'],
      registers,
      collect: collect((s) => this.#fillChips(s)),
    });
    this.chipResetState = new Gauge({
      name: `${prefix}chip_reset_state`,
      help: "1 for the chip's current reset state (the online engine's during a task-aware episode, else the offline's).",
      labelNames: ['chip', 'logic_id', 'phy_id', 'state'],
      registers,
      collect: () => {
        // before the reset layer runs (start-up) every chip is idle
        if (this.#source === undefined) {
          if (!this.#observed) this.#fillChipResetState({ offline: [], online: null });
        } else collect((s) => this.#fillChipResetState(s))();
      },
    });
    this.tokens = new Gauge({
      name: `${prefix}reset_tokens`,
      help: 'Offline reset tokens left per chip, device-plugin.md §J.2.',
      labelNames: ['chip', 'logic_id', 'phy_id'],
      registers,
      collect: collect((s) => this.#fillTokens(s)),
    });
    this.held = new Gauge({
      name: `${prefix}reset_chips_held`,
      help: 'Chips held by a reset, by owner (a task name, or "offline").',
      labelNames: ['owner'],
      registers,
      collect: collect((s) => this.#fillHeld(s)),
    });
    this.mode = new Gauge({
      name: `${prefix}reset_mode`,
      help: '-hotReset mode (-1, 0, 1, 2); label online="true" when the task-aware engine runs on this node.',
      labelNames: ['online'],
      registers,
      collect: collect((s) => this.#fillMode(s)),
    });
    this.attempts = new Counter({
      name: `${prefix}reset_attempts_total`,
      help: 'Reset attempts by engine (offline: resets run, counted when they end; online: episodes started).',
      labelNames: ['engine'],
      registers,
    });
    this.results = new Counter({
      name: `${prefix}reset_results_total`,
      help: 'Reset outcomes by engine and result (offline: succeeded/failed; online: recovered/failed/isolated).',
      labelNames: ['engine', 'result'],
      registers,
    });
    this.warnings = new Counter({
      name: `${prefix}reset_warnings_total`,
      help: 'Reset warnings that are not outcomes (limit_reached, chip_failed, task_skipped), by engine.',
      labelNames: ['engine', 'reason'],
      registers,
    });
    for (const engine of ['online', 'offline']) this.attempts.inc({ engine }, 0);
  }

  /** The gauges are also refreshed from `source` at every scrape (the composition root passes `reset.status`). */
  follow(source: () => ResetStatus): void {
    this.#source = source;
  }

  /** Sets every reset gauge from one status (call after every change and every period, or rely on {@link follow}). */
  observe(status: ResetStatus): void {
    this.#observed = true;
    this.#fillTasks(status);
    this.#fillChips(status);
    this.#fillChipResetState(status);
    this.#fillTokens(status);
    this.#fillHeld(status);
    this.#fillMode(status);
  }

  /** Counts one Event of the reset layer; reasons that are not reset reasons are ignored. */
  event(e: Pick<ResetEvent, 'reason'>): void {
    const c = Object.hasOwn(EVENT_COUNTS, e.reason) ? EVENT_COUNTS[e.reason] : undefined;
    if (c === undefined) return;
    if (c.attempt) this.attempts.inc({ engine: c.engine });
    if (c.result !== undefined) this.results.inc({ engine: c.engine, result: c.result });
    if (c.warning !== undefined) this.warnings.inc({ engine: c.engine, reason: c.warning });
  }

  #fillTasks(s: ResetStatus): void {
    this.taskState.reset();
    for (const t of s.online?.tasks ?? [])
      this.taskState.set({ task: t.task, namespace: t.namespace, state: t.state }, 1);
  }

  #fillChips(s: ResetStatus): void {
    this.chipState.reset();
    const l = (id: number): Record<ChipLabel, string> => ({ ...this.names.labels(id) });
    for (const c of s.offline) this.chipState.set({ ...l(c.logicId), engine: 'offline', state: c.state }, 1);
    for (const c of s.online?.chips ?? []) {
      this.chipState.set({ ...l(c.logicId), engine: 'online', state: c.state }, 1);
    }
  }

  #fillChipResetState(s: Pick<ResetStatus, 'offline' | 'online'>): void {
    this.chipResetState.reset();
    const state = new Map<number, string>();
    for (const id of this.names.logicIds()) state.set(id, 'idle');
    for (const c of s.offline) state.set(c.logicId, c.state);
    for (const c of s.online?.chips ?? []) if (c.state !== 'normal') state.set(c.logicId, c.state);
    for (const [id, st] of state) this.chipResetState.set({ ...this.names.labels(id), state: st }, 1);
  }

  #fillTokens(s: ResetStatus): void {
    this.tokens.reset();
    for (const c of s.offline) this.tokens.set({ ...this.names.labels(c.logicId) }, c.tokens);
  }

  #fillHeld(s: ResetStatus): void {
    this.held.reset();
    const byOwner = new Map<string, number>();
    for (const owner of Object.values(s.resetting)) byOwner.set(owner, (byOwner.get(owner) ?? 0) + 1);
    for (const [owner, n] of byOwner) this.held.set({ owner }, n);
  }

  #fillMode(s: ResetStatus): void {
    this.mode.reset();
    this.mode.set({ online: String(s.online !== null) }, s.mode);
  }
}
