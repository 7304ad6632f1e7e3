/**
 * The engine's durable state in `-stateDir` (beyond upstream, which forgets frequency histories and duration timers
 * on restart): one JSON file written atomically (temporary file with mode 0600, fsync, rename), read with a size
 * limit; a file that cannot be used is moved aside and logged, and the agent starts as upstream does (G.3).
 */
import fs from 'node:fs';
import path from 'node:path';
import { exportEngineState, type EngineStateJson, type FaultEngine } from '../faults/index.js';
import { NOOP_LOGGER, type Logger } from '../kubelet/logger.js';

/** Name of the file in the state folder. */
export const ENGINE_STATE_FILE = 'engine-state.json';
/** Format marker of the file. */
export const ENGINE_STATE_FORMAT = 'ascend-npu-agent/engine-state';
/** Largest state file read (a 16-chip node after 24 h of storms exports ~50 KB). */
export const MAX_STATE_BYTES = 8 * 1024 * 1024;

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
  readonly now?: () => number;
  readonly logger?: Logger;
  readonly maxBytes?: number;
}

/** Reads and writes the state file. */
export class EngineStatePersistence {
  readonly #o: EngineStatePersistenceOptions;
  readonly #file: string;
  readonly #log: Logger;
  #chain: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #producer: (() => PersistedState) | undefined;
  #saves = 0;

  constructor(options: EngineStatePersistenceOptions) {
    this.#o = options;
    this.#file = path.join(options.dir, ENGINE_STATE_FILE);
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** Path of the state file. */
  get file(): string {
    return this.#file;
  }

  /** Successful saves since construction. */
  get saves(): number {
    return this.#saves;
  }

  /** The state as the engine and the publisher have it now. */
  capture(engine: FaultEngine, confirmedManual: string | undefined): PersistedState {
    return {
      format: ENGINE_STATE_FORMAT,
      savedAtMs: (this.#o.now ?? Date.now)(),
      nodeName: this.#o.nodeName,
      confirmedManual: confirmedManual ?? null,
      engine: exportEngineState(engine),
    };
  }

  /**
   * Reads the file. Never throws: missing → undefined; unreadable, too large, not JSON, wrong shape or another
   * node's → logged, moved aside as `<file>.corrupt-<ms>`, undefined. The engine import validates the rest.
   */
  load(): PersistedState | undefined {
    let text: string;
    try {
      const st = fs.statSync(this.#file);
      const max = this.#o.maxBytes ?? MAX_STATE_BYTES;
      if (!st.isFile()) return this.#reject(`${this.#file} is not a regular file`);
      if (st.size > max) return this.#reject(`${this.#file} is ${st.size} bytes, over the limit ${max}`);
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
    this.#log.error({ file: this.#file, why }, 'engine state file not used; starting from the ConfigMap (G.3)');
    try {
      fs.renameSync(this.#file, `${this.#file}.corrupt-${(this.#o.now ?? Date.now)()}`);
    } catch {
      // nothing to move, or no permission: the next save replaces it
    }
    return undefined;
  }

  /** Writes `state` atomically; saves run one after another. Never rejects (failures are logged). */
  save(state: PersistedState): Promise<void> {
    this.#chain = this.#chain.then(() => this.#write(state));
    return this.#chain;
  }

  /** Saves `produce()` after `delayMs` (default 1 s); later calls within the delay replace the producer. */
  scheduleSave(produce: () => PersistedState, delayMs = 1000): void {
    this.#producer = produce;
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, delayMs);
    this.#timer.unref();
  }

  /** Saves a scheduled state now (shutdown). */
  flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const p = this.#producer;
    this.#producer = undefined;
    return p === undefined ? this.#chain : this.save(p());
  }

  async #write(state: PersistedState): Promise<void> {
    const tmp = `${this.#file}.tmp-${process.pid}`;
    try {
      await fs.promises.mkdir(this.#o.dir, { recursive: true, mode: 0o700 });
      const fh = await fs.promises.open(tmp, 'w', 0o600);
      try {
        await fh.writeFile(JSON.stringify(state));
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fs.promises.rename(tmp, this.#file);
      this.#saves++;
    } catch (e) {
      this.#log.error({ file: this.#file, error: String(e) }, 'cannot save the engine state');
      await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
    }
  }
}
