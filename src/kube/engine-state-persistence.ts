/**
 * The engine's durable state in `-stateDir` (beyond upstream, which forgets frequency histories and duration timers
 * on restart): one JSON file written atomically (temporary file with mode 0600, fsync, rename), read with a size
 * limit; a file that cannot be used is moved aside, logged and reported as an Event, and the agent starts as
 * upstream does (G.3).
 *
 * When it is saved (docs/fault-engine.md "Limits and durability"): a change of escalation state (the engine's
 * {@link FaultEngine.durableRevision}, or the confirmed `ManuallySeparateNPU` value) is saved at once; changes that
 * arrive while a save is in flight are folded into one follow-up save, started as soon as that one is done (and
 * no sooner than {@link SAVE_MIN_INTERVAL_MS} after it started). So a count is on disk about one save (one fsync)
 * after the change, and a storm writes at most 1000 / {@link SAVE_MIN_INTERVAL_MS} files a second. Other changes
 * (fault lists, which are re-read from DCMI at start) are saved at most {@link SAVE_DEBOUNCE_MS} later.
 */
import fs from 'node:fs';
import path from 'node:path';
import { exportEngineState, MAX_CONFIG_BYTES, type EngineStateJson, type FaultEngine } from '../faults/index.js';
import { NOOP_LOGGER, type Logger } from '../kubelet/logger.js';
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../state/clock.js';
import type { EventSink } from './event-recorder.js';

/** Name of the file in the state folder. */
export const ENGINE_STATE_FILE = 'engine-state.json';
/** Format marker of the file. */
export const ENGINE_STATE_FORMAT = 'ascend-npu-agent/engine-state';
/**
 * Largest state file written and read, derived from the configuration limit so that whatever the engine holds
 * under a legal configuration can be saved and loaded again: the code spellings, the only part that grows with
 * the configuration, take at most 2.25 bytes of state per byte of configuration (`"f",` becomes `[15,"f"],`), so
 * at most 4.5 × {@link MAX_CONFIG_BYTES} for both files; the remaining 3.5 × is for what events put there (a
 * 16-chip node after 24 h of storms exports ≈ 50 KB). A state that still does not fit is reduced when saved,
 * never written too large (see {@link EngineStatePersistence}).
 */
export const MAX_STATE_BYTES = 8 * MAX_CONFIG_BYTES;
/** Longest a change that does not touch escalation state waits before it is saved. */
export const SAVE_DEBOUNCE_MS = 1000;
/** Shortest time between the starts of two saves (bounds the write rate in a storm of escalation changes). */
export const SAVE_MIN_INTERVAL_MS = 25;

/** What the file holds. */
export interface PersistedState {
  readonly format: typeof ENGINE_STATE_FORMAT;
  readonly savedAtMs: number;
  readonly nodeName: string;
  /** `ManuallySeparateNPU` of the last successful device-info write; null when unknown. */
  readonly confirmedManual: string | null;
  readonly engine: EngineStateJson;
}

/** Options of {@link EngineStatePersistence}. */
export interface EngineStatePersistenceOptions {
  /** `-stateDir`; created (0700) when missing. */
  readonly dir: string;
  readonly nodeName: string;
  /** Wall clock for `savedAtMs` and the name of a file moved aside (default: `clock.now`). */
  readonly now?: () => number;
  /** Timers of the save scheduling (default: the process clock). */
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Largest file written and read (default {@link MAX_STATE_BYTES}). */
  readonly maxBytes?: number;
  /** Where a state file that is not used, or a save that had to be reduced, is reported (a Warning Event). */
  readonly events?: EventSink;
  readonly debounceMs?: number;
  readonly minIntervalMs?: number;
}

/** Counters of {@link EngineStatePersistence}. */
export interface PersistenceStats {
  /** Files written. */
  readonly saves: number;
  /** Saves that failed (I/O). */
  readonly failures: number;
  /** Saves written reduced because the full state was over the limit. */
  readonly reduced: number;
  /** Saves not written at all because even the reduced state was over the limit. */
  readonly oversize: number;
  /** State files moved aside at load. */
  readonly rejected: number;
}

/** Options of {@link SaveScheduler}. */
export interface SaveSchedulerOptions {
  /** One save of the latest state; its rejection is ignored. */
  readonly run: () => Promise<void>;
  readonly clock?: Clock;
  /** Shortest time between the starts of two saves (default {@link SAVE_MIN_INTERVAL_MS}). */
  readonly minIntervalMs?: number;
}

/**
 * When saves run: one at a time; each request names how long it may wait (0 = at once); requests made while a
 * save is in flight are folded into one follow-up save; two saves start at least `minIntervalMs` apart. A request
 * never postpones an earlier one (a throttle, not a trailing debounce).
 */
export class SaveScheduler {
  readonly #run: () => Promise<void>;
  readonly #clock: Clock;
  readonly #minInterval: number;
  /** Time by which the pending save should start; undefined when none is pending. */
  #due: number | undefined;
  #timer: TimerHandle | undefined;
  #timerAt = Infinity;
  #current: Promise<void> | undefined;
  #lastStart = -Infinity;
  #started = 0;

  constructor(o: SaveSchedulerOptions) {
    this.#run = o.run;
    this.#clock = o.clock ?? SYSTEM_CLOCK;
    this.#minInterval = o.minIntervalMs ?? SAVE_MIN_INTERVAL_MS;
  }

  /** Saves started so far. */
  get started(): number {
    return this.#started;
  }

  /** Whether a save is in flight. */
  get inFlight(): boolean {
    return this.#current !== undefined;
  }

  /** Whether a save is pending (requested and not started). */
  get pending(): boolean {
    return this.#due !== undefined;
  }

  /** Asks for a save within `delayMs` (0: at once, or right after the save in flight). */
  request(delayMs: number): void {
    const due = this.#clock.now() + Math.max(0, delayMs);
    this.#due = Math.min(this.#due ?? Infinity, due);
    this.#arm();
  }

  /** Runs a pending save now (no interval) and waits for it and for the one in flight. */
  async flush(): Promise<void> {
    if (this.#current) await this.#current;
    if (this.#due !== undefined) {
      this.#start();
      await this.#current;
    }
  }

  /** Drops a pending save (nothing in flight is stopped). */
  cancel(): void {
    this.#due = undefined;
    this.#clearTimer();
  }

  #arm(): void {
    if (this.#due === undefined || this.#current !== undefined) return; // the save in flight re-arms when done
    const now = this.#clock.now();
    const at = Math.max(this.#due, this.#lastStart + this.#minInterval);
    if (at <= now) {
      this.#start();
      return;
    }
    if (this.#timer !== undefined && this.#timerAt <= at) return;
    this.#clearTimer();
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      this.#arm();
    }, at - now);
  }

  #start(): void {
    this.#clearTimer();
    this.#due = undefined;
    this.#lastStart = this.#clock.now();
    this.#started++;
    const run = (async (): Promise<void> => {
      try {
        await this.#run();
      } catch {
        // the runner logs its own failures
      }
    })();
    this.#current = run.then(() => {
      this.#current = undefined;
      this.#arm();
    });
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }
}

/** What the last capture held, so that a successful save can record what is on disk. */
interface Captured {
  readonly revision: number;
  readonly confirmed: string | null;
}

/** Reads and writes the state file. */
export class EngineStatePersistence {
  readonly #o: EngineStatePersistenceOptions;
  readonly #file: string;
  readonly #log: Logger;
  readonly #max: number;
  readonly #now: () => number;
  readonly #debounceMs: number;
  readonly #scheduler: SaveScheduler;
  #chain: Promise<unknown> = Promise.resolve();
  #producer: (() => PersistedState) | undefined;
  #dirReady = false;
  #lastCapture: Captured | undefined;
  /** What the save in flight or the last successful one holds; undefined before the first. */
  #covered: Captured | undefined;
  #saved: Captured | undefined;
  #failing = false;
  #reducedEpisode = false;
  #stats = { saves: 0, failures: 0, reduced: 0, oversize: 0, rejected: 0 };

  constructor(options: EngineStatePersistenceOptions) {
    this.#o = options;
    this.#file = path.join(options.dir, ENGINE_STATE_FILE);
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#max = options.maxBytes ?? MAX_STATE_BYTES;
    const clock = options.clock ?? SYSTEM_CLOCK;
    this.#now = options.now ?? (() => clock.now());
    this.#debounceMs = options.debounceMs ?? SAVE_DEBOUNCE_MS;
    this.#scheduler = new SaveScheduler({
      run: () => this.#scheduledSave(),
      clock,
      ...(options.minIntervalMs !== undefined ? { minIntervalMs: options.minIntervalMs } : {}),
    });
  }

  /** Path of the state file. */
  get file(): string {
    return this.#file;
  }

  /** Successful saves since construction. */
  get saves(): number {
    return this.#stats.saves;
  }

  /** Counters since construction. */
  get stats(): PersistenceStats {
    return { ...this.#stats };
  }

  /** The state as the engine and the publisher have it now. */
  capture(engine: FaultEngine, confirmedManual: string | undefined): PersistedState {
    this.#lastCapture = { revision: engine.durableRevision, confirmed: confirmedManual ?? null };
    return {
      format: ENGINE_STATE_FORMAT,
      savedAtMs: this.#now(),
      nodeName: this.#o.nodeName,
      confirmedManual: confirmedManual ?? null,
      engine: exportEngineState(engine),
    };
  }

  /**
   * Something in the engine or the publisher may have changed: saves the state at once (or right after the save
   * in flight) when escalation state or the confirmed separation value differs from what is on disk or being
   * written, else within {@link SAVE_DEBOUNCE_MS}. After a failed save, every save waits the debounce (no write
   * loop against a full disk).
   */
  noteChange(engine: FaultEngine, confirmedManual: () => string | undefined): void {
    this.#producer = () => this.capture(engine, confirmedManual());
    const c = this.#covered;
    const durable =
      c === undefined || c.revision !== engine.durableRevision || c.confirmed !== (confirmedManual() ?? null);
    this.#scheduler.request(durable && !this.#failing ? 0 : this.#debounceMs);
  }

  /**
   * Reads the file. Never throws: missing → undefined; unreadable, too large, not JSON, wrong shape or another
   * node's → logged, moved aside as `<file>.corrupt-<ms>`, reported (Event), undefined. The engine import
   * validates the rest.
   */
  load(): PersistedState | undefined {
    let text: string;
    try {
      const st = fs.statSync(this.#file);
      if (!st.isFile()) return this.#reject(`${this.#file} is not a regular file`);
      if (st.size > this.#max) return this.#reject(`${this.#file} is ${st.size} bytes, over the limit ${this.#max}`);
      text = fs.readFileSync(this.#file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      return this.#reject(`cannot read ${this.#file}: ${(e as Error).message}`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      return this.#reject(`${this.#file} is not JSON: ${(e as Error).message}`);
    }
    const d = doc as Partial<PersistedState> | null;
    if (d === null || typeof d !== 'object' || d.format !== ENGINE_STATE_FORMAT)
      return this.#reject(`${this.#file} is not an engine state file`);
    if (d.nodeName !== this.#o.nodeName)
      return this.#reject(`${this.#file} belongs to node ${JSON.stringify(d.nodeName)}`);
    if (typeof d.savedAtMs !== 'number' || typeof d.engine !== 'object' || d.engine === null)
      return this.#reject(`${this.#file} lacks savedAtMs or engine`);
    if (d.confirmedManual !== null && typeof d.confirmedManual !== 'string')
      return this.#reject(`${this.#file}: confirmedManual is not a string`);
    return d as PersistedState;
  }

  /** Moves an unusable file aside so the next start does not trip over it again. */
  reject(why: string): void {
    this.#reject(why);
  }

  #reject(why: string): undefined {
    const shown = why.length > 300 ? `${why.slice(0, 300)}…` : why;
    const aside = `${this.#file}.corrupt-${this.#now()}`;
    let moved = false;
    try {
      fs.renameSync(this.#file, aside);
      moved = true;
    } catch {
      // nothing to move, or no permission: the next save replaces it
    }
    this.#stats.rejected++;
    this.#log.error(
      { file: this.#file, why: shown, ...(moved ? { movedTo: aside } : {}) },
      'engine state file not used; starting from the ConfigMap (G.3): frequency counts and duration timers of the last run are lost',
    );
    this.#o.events?.record({
      type: 'Warning',
      reason: 'EngineStateDiscarded',
      message: `engine state file not used (${shown})${moved ? `; kept as ${path.basename(aside)}` : ''}; started from the ConfigMap (G.3), frequency counts and duration timers of the last run are lost`,
      brief: 'EngineStateDiscarded',
    });
    return undefined;
  }

  /** Writes `state` atomically; saves run one after another. Never rejects (failures are logged). */
  save(state: PersistedState): Promise<void> {
    const p = this.#chain.then(() => this.#write(state));
    this.#chain = p;
    return p.then(() => undefined);
  }

  /**
   * Saves `produce()` within `delayMs` (default {@link SAVE_DEBOUNCE_MS}; 0: at once, or right after the save in
   * flight); later calls replace the producer and never postpone a save already asked for.
   */
  scheduleSave(produce: () => PersistedState, delayMs = this.#debounceMs): void {
    this.#producer = produce;
    this.#scheduler.request(delayMs);
  }

  /** Saves a pending state now and waits for the saves in flight (shutdown). */
  async flush(): Promise<void> {
    await this.#scheduler.flush();
    await this.#chain;
  }

  async #scheduledSave(): Promise<void> {
    const produce = this.#producer;
    if (produce === undefined) return;
    this.#lastCapture = undefined;
    const state = produce();
    const captured = this.#lastCapture as Captured | undefined;
    if (captured) this.#covered = captured;
    const write = this.#chain.then(() => this.#write(state));
    this.#chain = write;
    const ok = await write;
    if (ok) {
      this.#failing = false;
      if (captured) this.#saved = captured;
    } else {
      this.#failing = true;
      this.#covered = this.#saved;
    }
  }

  /** Serialises `state`, reduced when over the limit; undefined when even the reduced state does not fit. */
  #serialise(state: PersistedState): Buffer | undefined {
    const full = Buffer.from(JSON.stringify(state));
    if (full.length <= this.#max) {
      if (this.#reducedEpisode) {
        this.#reducedEpisode = false;
        this.#log.info({ bytes: full.length, limit: this.#max }, 'engine state fits its limit again');
      }
      return full;
    }
    for (const level of [1, 2] as const) {
      const text = Buffer.from(JSON.stringify(reduceState(state, level)));
      if (text.length <= this.#max) {
        this.#stats.reduced++;
        this.#reportReduced(
          `engine state is ${full.length} bytes, over the limit ${this.#max}; saved without ${level === 1 ? 'severities and spellings the configuration gives again' : 'severities, spellings and fault lists (re-read from DCMI at start)'} (${text.length} bytes)`,
        );
        return text;
      }
    }
    this.#stats.oversize++;
    this.#reportReduced(
      `engine state is ${full.length} bytes, over the limit ${this.#max} even reduced; not saved (the previous file stays)`,
    );
    return undefined;
  }

  #reportReduced(why: string): void {
    if (this.#reducedEpisode) return; // once per episode: a storm must not flood the log
    this.#reducedEpisode = true;
    this.#log.error({ file: this.#file, limit: this.#max }, why);
    this.#o.events?.record({
      type: 'Warning',
      reason: 'EngineStateReduced',
      message: why,
      brief: 'EngineStateReduced',
    });
  }

  async #write(state: PersistedState): Promise<boolean> {
    const text = this.#serialise(state);
    if (text === undefined) return false;
    const tmp = `${this.#file}.tmp-${process.pid}`;
    try {
      if (!this.#dirReady) {
        await fs.promises.mkdir(this.#o.dir, { recursive: true, mode: 0o700 });
        this.#dirReady = true;
      }
      const fh = await fs.promises.open(tmp, 'w', 0o600);
      try {
        await fh.writeFile(text);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fs.promises.rename(tmp, this.#file);
      this.#stats.saves++;
      return true;
    } catch (e) {
      this.#dirReady = false;
      this.#stats.failures++;
      this.#log.error({ file: this.#file, error: String(e) }, 'cannot save the engine state');
      await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
      return false;
    }
  }
}

/**
 * A smaller state for a save over the limit; escalation state (frequency histories, duration machines, reasons,
 * manual separation, the autofill timer) is always kept whole. Level 1 drops the severity table (learnt again
 * from the next events) and the spellings of codes no chip carries (the configuration registers them again at
 * start); level 2 also drops the fault lists and held events (every chip is re-read from DCMI at start, D.5).
 */
export function reduceState(state: PersistedState, level: 1 | 2): PersistedState {
  const e = state.engine;
  const chips =
    level === 1 ? e.chips : e.chips.map((c) => ({ ...c, faultCodes: [], networkCodes: [], faultTime: [], held: [] }));
  const used = new Set<number>();
  for (const c of chips) {
    for (const code of c.faultCodes) used.add(code);
    for (const code of c.networkCodes) used.add(code);
    for (const [code] of c.faultTime) used.add(code);
    for (const f of c.frequency) used.add(f.code);
    for (const d of c.duration) used.add(d.code);
    for (const h of c.held) used.add(h.code);
  }
  const spelled = new Set(chips.flatMap((c) => c.reasons.map((r) => r.fault_code.toLowerCase())));
  return {
    ...state,
    engine: {
      ...e,
      severity: [],
      formats: e.formats.filter(([code, text]) => used.has(code) || spelled.has(text)),
      chips,
    },
  };
}
