/**
 * The engine's durable state in `-stateDir` (beyond upstream, which forgets frequency histories and duration timers
 * on restart): one JSON file, read with a size limit; a file that cannot be used is moved aside, logged and
 * reported as an Event, and the agent starts as upstream does (G.3).
 *
 * A save has two phases. First, in the caller's turn of the event loop, the state is serialised, written to a
 * temporary file (mode 0600) and renamed over the file, all with synchronous calls: from then on it survives a
 * crash of the agent (kill -9, OOM kill; the data is in the kernel's page cache). That is before the agent takes
 * in the next event, and the outputs of the cycle are sent after that turn (HTTP/2 frames to kubelet, API writes
 * and Events all go out asynchronously). Then, asynchronously, the file and the folder are fsynced: from then on it
 * also survives a power loss.
 *
 * When it is saved (docs/fault-engine.md "Limits and durability"): a change of escalation state (the
 * store's `durableRevision`, or the confirmed `ManuallySeparateNPU` value) at once; beyond
 * {@link SAVE_BURST} saves in quick succession, at most one per {@link SAVE_MIN_INTERVAL_MS}, the changes in between
 * folded into it. So a storm writes at most 1000 / {@link SAVE_MIN_INTERVAL_MS} files a second and each change is on
 * disk within that interval; fsync passes run one at a time, each covering every write before it. Other changes
 * (fault lists, which are re-read from DCMI at start) are saved at most {@link SAVE_DEBOUNCE_MS} later.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MAX_CONFIG_BYTES, type EngineStateJson } from '../faults/index.js';
import type { DurableState } from '../state/restore.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../core/clock.js';
import type { EventSink } from './event-recorder.js';

/** Name of the file in the state folder. */
export const ENGINE_STATE_FILE = 'engine-state.json';
/** Format marker of the file. */
export const ENGINE_STATE_FORMAT = 'ascend-npu-agent/engine-state';
/**
 * Largest state file written and read: 8 × the configuration limit. The state holds nothing the configuration
 * gives again (code spellings are exported only where they differ from it), so its size does not depend on the
 * configuration: it comes from events, mostly frequency histories, ≈ 85 bytes per (chip, code) pair that occurred.
 * A 16-chip node exports ≈ 3 KB at rest and ≈ 50 KB after 24 h of storms; the limit holds ≈ 98,000 such pairs,
 * about as many as a configuration at its limit can name rules for. A state over it is reduced when saved,
 * never written too large (see {@link EngineStatePersistence}), so whatever was saved can be loaded.
 */
export const MAX_STATE_BYTES = 8 * MAX_CONFIG_BYTES;
/** Longest a change that does not touch escalation state waits before it is saved. */
export const SAVE_DEBOUNCE_MS = 1000;
/** Sustained save rate in a storm of escalation changes: one save per this many ms. */
export const SAVE_MIN_INTERVAL_MS = 10;
/** Saves allowed back to back before {@link SAVE_MIN_INTERVAL_MS} applies (a few changes in quick succession). */
export const SAVE_BURST = 4;

/** What the file holds: the store's durable state (what `restoreEngine` takes back) and where it came from. */
export interface PersistedState extends DurableState {
  readonly format: typeof ENGINE_STATE_FORMAT;
  readonly savedAtMs: number;
  readonly nodeName: string;
}

/**
 * Where the durable state is read from: the state store (`NodeStateStore`, which owns the engine). Nothing else
 * reads the engine for persistence.
 */
export interface DurableSource {
  /** Increases with every change of escalation state (the engine's `durableRevision`). */
  readonly durableRevision: number;
  /** The engine's exportable state (`exportEngineState`). */
  exportDurableState(): EngineStateJson;
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
  /** Where a save due at a timer starts (SaveSchedulerOptions.defer); default: in the timer's callback. */
  readonly defer?: (run: () => void) => void;
}

/** Counters of {@link EngineStatePersistence}. */
export interface PersistenceStats {
  /** Files written (each survives a crash of the agent). */
  readonly saves: number;
  /** fsync passes done (everything written before one survives a power loss). */
  readonly syncs: number;
  /** Writes or fsync passes that failed (I/O). */
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
  /** One save of the latest state: synchronous, or a promise (then no other save starts before it settles). */
  readonly run: () => Promise<void> | void;
  /** Its monotonic clock and timers pace the saves (issue [T] item 1); default: the process clock. */
  readonly clock?: Clock;
  /** Sustained rate: one save per this many ms (default {@link SAVE_MIN_INTERVAL_MS}). */
  readonly minIntervalMs?: number;
  /** Saves allowed back to back (default {@link SAVE_BURST}). */
  readonly burst?: number;
  /**
   * Where a save due at a timer (the debounce, the rate) starts: the agent's output lane (`store.later`), so that it
   * does not hold up a fault batch of the same turn (issue [P] item 5). A save asked for at once (escalation state)
   * never goes through it. Default: in the timer's callback.
   */
  readonly defer?: (run: () => void) => void;
}

/**
 * When saves run: one at a time; each request names how long it may wait (0 = at once); requests made while a
 * save is in flight are folded into one follow-up save; a token bucket lets `burst` saves run back to back and
 * then one per `minIntervalMs`. A request never postpones an earlier one (a throttle, not a trailing debounce).
 */
export class SaveScheduler {
  readonly #run: () => Promise<void> | void;
  readonly #defer: ((run: () => void) => void) | undefined;
  readonly #clock: Clock;
  readonly #minInterval: number;
  /** Monotonic time by which the pending save should start; undefined when none is pending. */
  #due: number | undefined;
  #timer: TimerHandle | undefined;
  #timerAt = Infinity;
  #current: Promise<void> | undefined;
  readonly #burst: number;
  #tokens: number;
  #tokensAt = -Infinity;
  #started = 0;

  constructor(o: SaveSchedulerOptions) {
    this.#run = o.run;
    this.#defer = o.defer;
    this.#clock = o.clock ?? SYSTEM_CLOCK;
    this.#minInterval = o.minIntervalMs ?? SAVE_MIN_INTERVAL_MS;
    this.#burst = Math.max(1, o.burst ?? SAVE_BURST);
    this.#tokens = this.#burst;
  }

  /** Tokens now (refilled one per interval, at most `burst`). */
  #refill(now: number): number {
    if (this.#tokensAt !== -Infinity && this.#minInterval > 0)
      this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#tokensAt) / this.#minInterval);
    else if (this.#minInterval <= 0) this.#tokens = this.#burst;
    this.#tokensAt = now;
    return this.#tokens;
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
    const due = this.#clock.monotonic() + Math.max(0, delayMs);
    this.#due = Math.min(this.#due ?? Infinity, due);
    this.#arm();
  }

  /** Runs a pending save now (no interval) and waits for it and for the one in flight. */
  async flush(): Promise<void> {
    if (this.#current) await this.#current;
    if (this.#due !== undefined) {
      this.#start();
      if (this.#current) await this.#current;
    }
  }

  /** Drops a pending save (nothing in flight is stopped). */
  cancel(): void {
    this.#due = undefined;
    this.#clearTimer();
  }

  #arm(): void {
    if (this.#due === undefined || this.#current !== undefined) return; // the save in flight re-arms when done
    const now = this.#clock.monotonic();
    const tokens = this.#refill(now);
    const at = Math.max(this.#due, tokens >= 1 ? now : now + Math.ceil((1 - tokens) * this.#minInterval));
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
      if (this.#defer) this.#defer(() => this.#arm());
      else this.#arm();
    }, at - now);
  }

  #start(): void {
    this.#clearTimer();
    this.#due = undefined;
    this.#refill(this.#clock.monotonic());
    this.#tokens = Math.max(0, this.#tokens - 1); // flush() may start without a token
    this.#started++;
    let r: Promise<void> | void;
    try {
      r = this.#run();
    } catch {
      r = undefined; // the runner logs its own failures
    }
    if (r === undefined) return; // a synchronous save: nothing in flight
    this.#current = r
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
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

/** The file as read: its text, why it cannot be used, or that there is none. */
type FileText = { text: string } | { bad: string } | { missing: true };

/** What the last capture held, so that a successful save can record what is on disk. */
interface Captured {
  readonly revision: number;
  readonly confirmed: string | null;
}

/** Reads and writes the state file. */
export class EngineStatePersistence {
  readonly #o: EngineStatePersistenceOptions;
  readonly #file: string;
  readonly #tmp: string;
  readonly #log: Logger;
  readonly #max: number;
  readonly #now: () => number;
  readonly #debounceMs: number;
  readonly #scheduler: SaveScheduler;
  #producer: (() => PersistedState) | undefined;
  /** Whether the file has been read or written by this process. */
  #touched = false;
  /** The file's text as it was before this process first wrote it, until load() takes it. */
  #beforeFirstWrite: FileText | undefined;
  #dirReady = false;
  #lastCapture: Captured | undefined;
  /** What the file holds (written, maybe not yet fsynced); undefined before the first save. */
  #saved: Captured | undefined;
  /** The fsync pass in flight, and whether a write came after it began. */
  #syncing: Promise<boolean> | undefined;
  #unsynced = false;
  #failing = false;
  #reducedEpisode = false;
  #stats = { saves: 0, syncs: 0, failures: 0, reduced: 0, oversize: 0, rejected: 0 };

  constructor(options: EngineStatePersistenceOptions) {
    this.#o = options;
    this.#file = path.join(options.dir, ENGINE_STATE_FILE);
    this.#tmp = `${this.#file}.tmp-${process.pid}`;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#max = options.maxBytes ?? MAX_STATE_BYTES;
    const clock = options.clock ?? SYSTEM_CLOCK;
    this.#now = options.now ?? (() => clock.now());
    this.#debounceMs = options.debounceMs ?? SAVE_DEBOUNCE_MS;
    this.#scheduler = new SaveScheduler({
      run: () => this.#scheduledSave(),
      clock,
      ...(options.minIntervalMs !== undefined ? { minIntervalMs: options.minIntervalMs } : {}),
      ...(options.defer ? { defer: options.defer } : {}),
    });
  }

  /** Path of the state file. */
  get file(): string {
    return this.#file;
  }

  /** Files written since construction. */
  get saves(): number {
    return this.#stats.saves;
  }

  /** Counters since construction. */
  get stats(): PersistenceStats {
    return { ...this.#stats };
  }

  /** The state as the store and the publisher have it now. */
  capture(source: DurableSource, confirmedManual: string | undefined): PersistedState {
    this.#lastCapture = { revision: source.durableRevision, confirmed: confirmedManual ?? null };
    return {
      format: ENGINE_STATE_FORMAT,
      savedAtMs: this.#now(),
      nodeName: this.#o.nodeName,
      confirmedManual: confirmedManual ?? null,
      engine: source.exportDurableState(),
    };
  }

  /**
   * Something in the store or the publisher may have changed: saves the state at once (within the rate of
   * {@link SaveScheduler}) when escalation state or the confirmed separation value
   * differs from what the file holds, else within {@link SAVE_DEBOUNCE_MS}. After a failed save, every save waits
   * the debounce (no write loop against a full disk).
   */
  noteChange(source: DurableSource, confirmedManual: () => string | undefined): void {
    this.#producer = () => this.capture(source, confirmedManual());
    const c = this.#saved;
    const durable =
      c === undefined || c.revision !== source.durableRevision || c.confirmed !== (confirmedManual() ?? null);
    this.#scheduler.request(durable && !this.#failing ? 0 : this.#debounceMs);
  }

  /**
   * The state the previous run left. Never throws: missing → undefined; unreadable, too large, not JSON, wrong
   * shape or another node's → logged, moved aside as `<file>.corrupt-<ms>`, reported (Event), undefined. The
   * engine import validates the rest. The file is read at the first call, or just before this process first
   * writes it, whichever comes first: a restore that has to wait for the API server (the publisher's late start-up)
   * still gets the previous run's state although the agent has saved meanwhile. Later calls read the file again.
   */
  load(): PersistedState | undefined {
    const before = this.#beforeFirstWrite;
    this.#beforeFirstWrite = undefined;
    this.#touched = true;
    return this.#parse(before ?? this.#readText());
  }

  #readText(): FileText {
    try {
      const st = fs.statSync(this.#file);
      if (!st.isFile()) return { bad: `${this.#file} is not a regular file` };
      if (st.size > this.#max) return { bad: `${this.#file} is ${st.size} bytes, over the limit ${this.#max}` };
      return { text: fs.readFileSync(this.#file, 'utf8') };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { missing: true };
      return { bad: `cannot read ${this.#file}: ${(e as Error).message}` };
    }
  }

  #parse(read: FileText): PersistedState | undefined {
    const c = this.#check(read);
    return 'state' in c ? c.state : 'bad' in c ? this.#reject(c.bad) : undefined;
  }

  /** Judges what was read; no side effects. */
  #check(read: FileText): { state: PersistedState } | { bad: string } | { missing: true } {
    if (!('text' in read)) return read;
    let doc: unknown;
    try {
      doc = JSON.parse(read.text);
    } catch (e) {
      return { bad: `${this.#file} is not JSON: ${(e as Error).message}` };
    }
    const d = doc as Partial<PersistedState> | null;
    if (d === null || typeof d !== 'object' || d.format !== ENGINE_STATE_FORMAT)
      return { bad: `${this.#file} is not an engine state file` };
    if (d.nodeName !== this.#o.nodeName) return { bad: `${this.#file} belongs to node ${JSON.stringify(d.nodeName)}` };
    if (typeof d.savedAtMs !== 'number' || typeof d.engine !== 'object' || d.engine === null)
      return { bad: `${this.#file} lacks savedAtMs or engine` };
    if (d.confirmedManual !== null && typeof d.confirmedManual !== 'string')
      return { bad: `${this.#file}: confirmedManual is not a string` };
    return { state: d as PersistedState };
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

  /**
   * Writes `state` now (the synchronous phase, done when this returns) and resolves once it is fsynced; true when
   * both worked. Never rejects (failures are logged).
   */
  save(state: PersistedState): Promise<boolean> {
    return this.#write(state) ? this.#syncSoon() : Promise.resolve(false);
  }

  /**
   * Saves `produce()` within `delayMs` (default {@link SAVE_DEBOUNCE_MS}; 0: at once, within the rate of
   * {@link SaveScheduler}); later calls replace the producer and never postpone a
   * save already asked for.
   */
  scheduleSave(produce: () => PersistedState, delayMs = this.#debounceMs): void {
    this.#producer = produce;
    this.#scheduler.request(delayMs);
  }

  /** Saves a pending state now and waits until everything written is fsynced (shutdown). */
  async flush(): Promise<void> {
    await this.#scheduler.flush();
    while (this.#syncing) await this.#syncing;
  }

  #scheduledSave(): void {
    const produce = this.#producer;
    if (produce === undefined) return;
    this.#lastCapture = undefined;
    const state = produce();
    const captured = this.#lastCapture as Captured | undefined;
    if (this.#write(state)) {
      this.#failing = false;
      if (captured) this.#saved = captured;
      void this.#syncSoon();
    } else {
      this.#failing = true;
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

  /**
   * The synchronous phase: the temporary file (mode 0600) written and renamed over the file. From here on the
   * state survives a crash of the agent (kill -9, OOM kill): the data is in the kernel's page cache.
   */
  #write(state: PersistedState): boolean {
    if (!this.#touched) {
      // The previous run's state, for a load() still to come: kept as text (parsed again then); a file that
      // cannot be used is moved aside (logged, Event) now, before this write replaces it.
      this.#touched = true;
      const read = this.#readText();
      const c = this.#check(read);
      if ('bad' in c) this.#reject(c.bad);
      this.#beforeFirstWrite = 'state' in c ? read : { missing: true };
    }
    const text = this.#serialise(state);
    if (text === undefined) return false;
    try {
      if (!this.#dirReady) {
        fs.mkdirSync(this.#o.dir, { recursive: true, mode: 0o700 });
        this.#dirReady = true;
      }
      const fd = fs.openSync(this.#tmp, 'w', 0o600);
      try {
        fs.fchmodSync(fd, 0o600); // a file left by someone else keeps its mode through 'w'
        fs.writeFileSync(fd, text);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(this.#tmp, this.#file);
      this.#stats.saves++;
      return true;
    } catch (e) {
      this.#dirReady = false;
      this.#stats.failures++;
      this.#log.error({ file: this.#file, error: String(e) }, 'cannot save the engine state');
      try {
        fs.rmSync(this.#tmp, { force: true });
      } catch {
        // the next save truncates it
      }
      return false;
    }
  }

  /**
   * The asynchronous phase: fsync of the file and of the folder, so that the state also survives a power loss.
   * One pass at a time; a write during a pass gets one more pass. Resolves true when the pass covering the
   * latest write worked.
   */
  #syncSoon(): Promise<boolean> {
    this.#unsynced = true;
    this.#syncing ??= (async (): Promise<boolean> => {
      let ok = true;
      while (this.#unsynced) {
        this.#unsynced = false;
        ok = await this.#fsync();
      }
      this.#syncing = undefined;
      return ok;
    })();
    return this.#syncing;
  }

  async #fsync(): Promise<boolean> {
    try {
      for (const p of [this.#file, this.#o.dir]) {
        const fh = await fs.promises.open(p, 'r');
        try {
          await fh.sync();
        } finally {
          await fh.close();
        }
      }
      this.#stats.syncs++;
      return true;
    } catch (e) {
      this.#stats.failures++;
      this.#log.error({ file: this.#file, error: String(e) }, 'cannot fsync the engine state');
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
