/**
 * The SwitchFaultCode.json in use (spec L.9, F.8 "rebuild the switch level table"): loaded at start (the packaged
 * copy when the file is unusable), watched (editors replace files, so the folder is watched), validated completely
 * by the engine's own parser before it is swapped in, the last good table kept when a new version is unusable.
 * Every load is logged with its problems, one line per ignored entry.
 */
import fs from 'node:fs';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import {
  EMPTY_SWITCH_CODE_TABLE,
  MAX_CONFIG_BYTES,
  parseSwitchFaultCodeJson,
  type ConfigProblem,
  type SwitchCodeTable,
} from '../faults/index.js';
import { FAULT_CONFIG_NAME, FAULT_CONFIG_NAMESPACE } from './fault-config-configmap.js';
import { ListWatch, type WatchFn } from './list-watch.js';
import type { BackoffOptions } from './write-queue.js';

/** What one load did. */
export interface SwitchCodeLoad {
  readonly path: string;
  /** `loaded`: in use now; `unchanged`: same text; `rejected`: unusable, the previous table stays; `fallback`: the
   * packaged (or the empty) table is used because the file was unusable at start. */
  readonly status: 'loaded' | 'unchanged' | 'rejected' | 'fallback';
  readonly fatal: readonly string[];
  readonly problems: readonly ConfigProblem[];
}

/** Options of {@link SwitchCodeSource.open}. */
export interface SwitchCodeSourceOptions {
  readonly file: string;
  /** The packaged copy, used when `file` is unusable at start. */
  readonly fallbackFile?: string;
  /** Quiet time after the last change before reloading (ms). Default 200. */
  readonly debounceMs?: number;
  /** One line per finding. */
  readonly log?: (level: 'info' | 'warn' | 'error', line: string) => void;
}

type Read = { ok: true; text: string } | { ok: false; error: string };

async function readLimited(file: string): Promise<Read> {
  try {
    const st = await fs.promises.stat(file);
    if (!st.isFile()) return { ok: false, error: `${file} is not a regular file` };
    if (st.size > MAX_CONFIG_BYTES) {
      return { ok: false, error: `${file} is ${st.size} bytes, over the ${MAX_CONFIG_BYTES}-byte limit` };
    }
    const text = await fs.promises.readFile(file, 'utf8');
    if (text.length > MAX_CONFIG_BYTES) return { ok: false, error: `${file} grew over the limit` };
    return { ok: true, text };
  } catch (e) {
    return { ok: false, error: `cannot read ${file}: ${(e as Error).message}` };
  }
}

const MAX_LOGGED_PROBLEMS = 50;

/** The switch code table, watched on disk. */
export class SwitchCodeSource {
  readonly #opts: SwitchCodeSourceOptions;
  #table: SwitchCodeTable = EMPTY_SWITCH_CODE_TABLE;
  #text: string | null = null;
  #last: SwitchCodeLoad | undefined;
  #watcher: fs.FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  readonly #listeners = new Set<(table: SwitchCodeTable, load: SwitchCodeLoad) => void>();

  private constructor(opts: SwitchCodeSourceOptions) {
    this.#opts = opts;
  }

  /** Loads the file (or the fallback) and starts watching its folder when `watch` is true. */
  static async open(opts: SwitchCodeSourceOptions, watch = true): Promise<SwitchCodeSource> {
    const src = new SwitchCodeSource(opts);
    await src.#load(true);
    if (watch) src.#watch();
    return src;
  }

  /** The table in use. */
  current(): SwitchCodeTable {
    return this.#table;
  }

  /** The last load's report. */
  lastLoad(): SwitchCodeLoad | undefined {
    return this.#last;
  }

  /** Called after each load that swapped a new table in; returns the unsubscribe function. */
  onChange(listener: (table: SwitchCodeTable, load: SwitchCodeLoad) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reloads now; resolves when done. */
  reload(): Promise<void> {
    this.#chain = this.#chain.then(() => this.#load(false));
    return this.#chain;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  #watch(): void {
    const dir = path.dirname(path.resolve(this.#opts.file));
    const name = path.basename(this.#opts.file);
    try {
      this.#watcher = fs.watch(dir, { persistent: false }, (_e, f) => {
        if (f === null || f.toString() === name) this.#schedule();
      });
      this.#watcher.on('error', (e) => this.#opts.log?.('warn', `SwitchFaultCode.json: watching ${dir}: ${e.message}`));
    } catch (e) {
      this.#opts.log?.(
        'warn',
        `SwitchFaultCode.json: cannot watch ${dir}: ${(e as Error).message}; edits need a restart`,
      );
    }
  }

  #schedule(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.reload(), this.#opts.debounceMs ?? 200);
    this.#timer.unref();
  }

  async #load(initial: boolean): Promise<void> {
    if (this.#closed && !initial) return;
    const file = this.#opts.file;
    const read = await readLimited(file);
    if (read.ok && read.text === this.#text) {
      this.#last = { path: file, status: 'unchanged', fatal: [], problems: [] };
      return;
    }
    const parsed = read.ok ? parseSwitchFaultCodeJson(read.text) : undefined;
    if (read.ok && parsed?.ok) {
      this.#swap(parsed.table, read.text, { path: file, status: 'loaded', fatal: [], problems: parsed.problems });
      return;
    }
    const fatal = !read.ok ? [read.error] : parsed && !parsed.ok ? parsed.fatal : [];
    if (!initial) {
      this.#report({ path: file, status: 'rejected', fatal, problems: [] });
      return;
    }
    // start-up: the packaged copy, else the empty table (no switch code is then reported)
    const fb = this.#opts.fallbackFile;
    if (fb !== undefined && path.resolve(fb) !== path.resolve(file)) {
      const r = await readLimited(fb);
      const p = r.ok ? parseSwitchFaultCodeJson(r.text) : undefined;
      if (r.ok && p?.ok) {
        this.#report({ path: file, status: 'fallback', fatal, problems: [] });
        this.#swap(p.table, null, { path: fb, status: 'loaded', fatal: [], problems: p.problems });
        return;
      }
    }
    this.#report({ path: file, status: 'fallback', fatal, problems: [] });
  }

  #swap(table: SwitchCodeTable, text: string | null, load: SwitchCodeLoad): void {
    this.#table = table;
    this.#text = text;
    this.#report(load);
    for (const l of this.#listeners) l(table, load);
  }

  #report(load: SwitchCodeLoad): void {
    this.#last = load;
    const log = this.#opts.log;
    if (!log) return;
    if (load.status === 'loaded') {
      log('info', `SwitchFaultCode.json ${load.path}: loaded, ${this.#table.levels.size} codes`);
    } else if (load.status === 'rejected') {
      log('error', `SwitchFaultCode.json ${load.path}: unusable, the last good table stays: ${load.fatal.join('; ')}`);
    } else if (load.status === 'fallback') {
      log(
        'warn',
        `SwitchFaultCode.json ${load.path}: unusable at start (${load.fatal.join('; ')}); using the packaged copy`,
      );
    }
    for (const p of load.problems.slice(0, MAX_LOGGED_PROBLEMS)) {
      log(
        'warn',
        `SwitchFaultCode.json ${load.path}: ${p.kind} ${p.path}${p.value !== undefined ? ` = ${p.value}` : ''}: ${p.reason} [${p.spec}]`,
      );
    }
    if (load.problems.length > MAX_LOGGED_PROBLEMS) {
      log('warn', `SwitchFaultCode.json ${load.path}: ${load.problems.length - MAX_LOGGED_PROBLEMS} more problems`);
    }
  }
}

/** Spec F.8: the key of the fault-config ConfigMap that overrides SwitchFaultCode.json (910A3 with the switch). */
export const SWITCH_CODES_CONFIGMAP_KEY = 'SwitchFaultCode.json';

/** Options of {@link SwitchCodeConfigMapOverlay}. */
export interface SwitchCodeOverlayOptions {
  readonly api: Pick<k8s.CoreV1Api, 'listNamespacedConfigMap'>;
  readonly watch: WatchFn | k8s.KubeConfig;
  /** The file table, used while the key is absent or unusable (spec F.8 "absent or bad → load the local file"). */
  readonly files: SwitchCodeSource;
  readonly logger?: Logger;
  readonly backoff?: BackoffOptions;
}

/**
 * Spec F.8 for the switch table: the `SwitchFaultCode.json` key of `kube-system/mindx-dl-fault-config` over the
 * file. A usable key is the table; an absent key, or one that is not usable as a whole, gives the file's table (a
 * rejected key is logged with its reasons; its ignored entries are logged one by one, as the file's). The ConfigMap
 * is watched, so an edit counts at once rather than at upstream's next poll.
 */
export class SwitchCodeConfigMapOverlay {
  readonly #o: SwitchCodeOverlayOptions;
  readonly #log: Logger;
  readonly #watch: ListWatch<k8s.V1ConfigMap>;
  #fromKey: SwitchCodeTable | undefined;
  #keyText: string | undefined;
  readonly #listeners = new Set<(table: SwitchCodeTable) => void>();
  readonly #offFiles: () => void;

  constructor(o: SwitchCodeOverlayOptions) {
    this.#o = o;
    this.#log = o.logger ?? NOOP_LOGGER;
    const selector = `metadata.name=${FAULT_CONFIG_NAME}`;
    this.#watch = new ListWatch<k8s.V1ConfigMap>({
      what: `configmap ${FAULT_CONFIG_NAMESPACE}/${FAULT_CONFIG_NAME} (${SWITCH_CODES_CONFIGMAP_KEY})`,
      path: `/api/v1/namespaces/${FAULT_CONFIG_NAMESPACE}/configmaps`,
      fieldSelector: selector,
      watch: o.watch,
      maxItems: 1,
      logger: this.#log,
      ...(o.backoff ? { backoff: o.backoff } : {}),
      list: async () => {
        const l = await o.api.listNamespacedConfigMap({ namespace: FAULT_CONFIG_NAMESPACE, fieldSelector: selector });
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onSync: (items) => this.#apply(items[0]?.data?.[SWITCH_CODES_CONFIGMAP_KEY]),
      onEvent: (type, cm) => this.#apply(type === 'DELETED' ? undefined : cm.data?.[SWITCH_CODES_CONFIGMAP_KEY]),
    });
    this.#offFiles = o.files.onChange(() => {
      if (this.#fromKey === undefined) this.#emit();
    });
  }

  /** The table in use: the key's, else the file's. */
  current(): SwitchCodeTable {
    return this.#fromKey ?? this.#o.files.current();
  }

  /** Called when the table in use changes. */
  onChange(listener: (table: SwitchCodeTable) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts watching; resolves after the first list attempt. */
  start(): Promise<void> {
    return this.#watch.start();
  }

  stop(): void {
    this.#watch.stop();
    this.#offFiles();
  }

  #apply(text: string | undefined): void {
    if (text === this.#keyText) return;
    this.#keyText = text;
    const where = `${FAULT_CONFIG_NAMESPACE}/${FAULT_CONFIG_NAME} key ${SWITCH_CODES_CONFIGMAP_KEY}`;
    if (text === undefined) {
      if (this.#fromKey !== undefined) this.#log.info({}, `${where} absent: the SwitchFaultCode.json file applies`);
      this.#fromKey = undefined;
      this.#emit();
      return;
    }
    const r = parseSwitchFaultCodeJson(text);
    if (!r.ok) {
      this.#log.error({ reasons: r.fatal.slice(0, 10) }, `${where} unusable: the SwitchFaultCode.json file applies`);
      this.#fromKey = undefined;
    } else {
      for (const p of r.problems.slice(0, MAX_LOGGED_PROBLEMS)) {
        this.#log.warn({}, `${where}: ${p.kind} ${p.path}${p.value !== undefined ? ` = ${p.value}` : ''}: ${p.reason}`);
      }
      this.#log.info({ codes: r.table.levels.size }, `${where} loaded`);
      this.#fromKey = r.table;
    }
    this.#emit();
  }

  #emit(): void {
    const t = this.current();
    for (const l of this.#listeners) l(t);
  }
}
