/**
 * Reading and hot-reloading the level/sender file (spec cluster-faults.md §2.3). The directory is watched (so an
 * editor's or a ConfigMap volume's atomic replace is seen); a change is retried up to 3 times 1 s apart, then
 * validate-then-swap: a file that does not parse keeps the previous configuration, with a log line naming the
 * problem. Upstream instead falls back to its built-in file (docs/public-faults.md "Deviations").
 */
import type { Logger } from '../../core/logger.js';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../core/paths.js';
import { MAX_CONFIG_BYTES, parsePublicFaultConfig, type PublicFaultConfig } from './config.js';
import type { PublicFaultMetrics } from './metrics.js';

/** The packaged default (`-publicFaultConfig` default, architecture §4). */
export const PACKAGED_PUBLIC_FAULT_CONFIG = path.join(PROJECT_ROOT, 'publicFaultConfig.json');

/** Reads and parses one file; throws `PublicFaultConfigError` or the read error (with the path in the message). */
export function loadPublicFaultConfigFile(file: string): PublicFaultConfig {
  // §2.3: upstream's path check rejects symlinks; we follow them (ConfigMap volumes are symlinks) but want a file
  const st = fs.statSync(file);
  if (!st.isFile()) throw new Error(`${file}: not a regular file`);
  if (st.size > MAX_CONFIG_BYTES) throw new Error(`${file}: larger than ${MAX_CONFIG_BYTES} bytes`);
  try {
    return parsePublicFaultConfig(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    (e as Error).message = `${file}: ${(e as Error).message}`;
    throw e;
  }
}

/** Options of a source. */
export interface PublicFaultConfigSourceOptions {
  file: string;
  logger: Logger;
  metrics: PublicFaultMetrics;
  /** tries after a change event (default 3) and the pause between them (default 1000 ms) */
  attempts?: number;
  retryDelayMs?: number;
  /** coalescing of bursts of change events (default 100 ms) */
  debounceMs?: number;
}

/** One watched file. */
export class PublicFaultConfigSource {
  readonly #o: PublicFaultConfigSourceOptions;
  #watcher: fs.FSWatcher | undefined;
  #debounce: NodeJS.Timeout | undefined;
  #reloading: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: PublicFaultConfigSourceOptions) {
    this.#o = options;
  }

  /**
   * The configuration at start: the file, else the packaged default (logged as an error naming the problem), else
   * an empty configuration that refuses every sender until a good file appears. Never throws.
   */
  initial(): PublicFaultConfig {
    const { file, logger, metrics } = this.#o;
    try {
      const c = loadPublicFaultConfigFile(file);
      metrics.configReload('ok');
      this.#logLoaded(c, file);
      return c;
    } catch (e) {
      metrics.configReload('error');
      logger.error({ file, err: (e as Error).message }, 'public fault configuration unusable');
    }
    if (path.resolve(file) !== PACKAGED_PUBLIC_FAULT_CONFIG) {
      try {
        const c = loadPublicFaultConfigFile(PACKAGED_PUBLIC_FAULT_CONFIG);
        this.#logLoaded(c, PACKAGED_PUBLIC_FAULT_CONFIG);
        return c;
      } catch (e) {
        logger.error({ err: (e as Error).message }, 'packaged public fault configuration unusable');
      }
    }
    logger.error({ file }, 'no public fault configuration: every sender is refused until the file is fixed');
    return { senders: [], levels: new Map(), warnings: [] };
  }

  #logLoaded(c: PublicFaultConfig, file: string): void {
    this.#o.logger.info(
      { file, senders: c.senders, codes: c.levels.size, warnings: c.warnings },
      'public fault configuration loaded',
    );
  }

  /** Watches the file's folder; `apply` gets every new valid configuration. */
  watch(apply: (config: PublicFaultConfig) => void): void {
    const dir = path.dirname(path.resolve(this.#o.file));
    const base = path.basename(this.#o.file);
    try {
      this.#watcher = fs.watch(dir, (_event, name) => {
        // ConfigMap volumes swap a `..data` symlink: react to that as well as to the file itself
        if (name !== null && name !== base && name !== '..data') return;
        clearTimeout(this.#debounce);
        this.#debounce = setTimeout(() => this.#reload(apply), this.#o.debounceMs ?? 100);
        this.#debounce.unref();
      });
      this.#watcher.on('error', (e) => this.#o.logger.error({ dir, err: e.message }, 'config folder watch failed'));
    } catch (e) {
      // §2.3: upstream has no hot reload when the folder cannot be watched; same, but say so
      this.#o.logger.error({ dir, err: (e as Error).message }, 'cannot watch the public fault configuration');
    }
  }

  #reload(apply: (config: PublicFaultConfig) => void): void {
    if (this.#reloading !== undefined) {
      this.#again = true;
      return;
    }
    this.#reloading = this.#tryLoad(apply).finally(() => {
      this.#reloading = undefined;
      if (this.#again && !this.#stopped) {
        this.#again = false;
        this.#reload(apply);
      }
    });
  }

  async #tryLoad(apply: (config: PublicFaultConfig) => void): Promise<void> {
    const { file, logger, metrics } = this.#o;
    const attempts = this.#o.attempts ?? 3;
    let last: unknown;
    for (let i = 0; i < attempts && !this.#stopped; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, this.#o.retryDelayMs ?? 1000).unref());
      try {
        const c = loadPublicFaultConfigFile(file);
        metrics.configReload('ok');
        this.#logLoaded(c, file);
        apply(c);
        return;
      } catch (e) {
        last = e;
      }
    }
    if (this.#stopped) return;
    metrics.configReload('error');
    logger.error(
      { file, err: (last as Error).message },
      'public fault configuration not reloaded: the previous configuration stays in force',
    );
  }

  /** Waits for a reload in progress (tests). */
  async settled(): Promise<void> {
    while (this.#reloading !== undefined) await this.#reloading;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#debounce);
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
