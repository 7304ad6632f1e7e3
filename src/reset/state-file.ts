/**
 * One JSON file of the reset layer in `-stateDir` (the online episodes, the offline resets in flight and token
 * buckets): what an agent restart must find again. Written atomically (a temporary file renamed over it, mode 0600,
 * in a 0700 folder), so a process killed at any moment leaves the old content or the new one. Read with a size
 * limit; a file that cannot be read or parsed is moved aside (`<file>.corrupt-<time>`) and logged, never trusted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';

/** Options of {@link JsonStateFile}. */
export interface JsonStateFileOptions<T> {
  /** Path of the file. */
  readonly file: string;
  /** Largest file read, in bytes. */
  readonly maxBytes: number;
  /** Validates the parsed JSON; throws an Error naming what is wrong. */
  readonly parse: (raw: unknown) => T;
  /** What the file holds, for log lines ("reset episodes"). */
  readonly what: string;
  readonly logger?: Logger;
  /** Wall-clock ms for the name of a file set aside (default `Date.now`). */
  readonly now?: () => number;
}

/** A JSON document kept in one file. */
export class JsonStateFile<T> {
  readonly #o: JsonStateFileOptions<T>;
  readonly #log: Logger;

  constructor(options: JsonStateFileOptions<T>) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** The file's document; undefined when there is none or it was set aside. */
  load(): T | undefined {
    const { file, maxBytes } = this.#o;
    let text: string;
    try {
      const st = fs.statSync(file);
      if (st.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      this.#setAside(`cannot be read: ${(err as Error).message}`);
      return undefined;
    }
    try {
      return this.#o.parse(JSON.parse(text));
    } catch (err) {
      this.#setAside((err as Error).message);
      return undefined;
    }
  }

  /** Replaces the document; a failure is logged (the next save tries again), never thrown. */
  save(value: T): void {
    const { file } = this.#o;
    const tmp = `${file}.tmp`;
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fs.writeFileSync(tmp, JSON.stringify(value), { mode: 0o600 });
      fs.renameSync(tmp, file);
    } catch (err) {
      this.#log.error({ file, err: (err as Error).message }, `cannot save the ${this.#o.what}`);
    }
  }

  #setAside(why: string): void {
    const { file } = this.#o;
    const aside = `${file}.corrupt-${(this.#o.now ?? Date.now)()}`;
    this.#log.error({ file, why, movedTo: aside }, `${this.#o.what} file ignored`);
    try {
      fs.renameSync(file, aside);
    } catch {
      /* already gone */
    }
  }
}
