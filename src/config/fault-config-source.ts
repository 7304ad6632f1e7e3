/**
 * The file source of the fault configuration (`faultCode.json`, `faultCustomization.json`): loads both, watches
 * their folders (editors replace files rather than write them), validates a new version completely before
 * swapping it in, keeps the last good version of a file that turns bad, and reports every load.
 *
 * Parsing and validation are the engine's own (src/faults), so the agent, this source and `npuctl config check`
 * judge a file the same way. The ConfigMap source (`mindx-dl-fault-config`, issue [D]) implements
 * {@link FaultConfigSource} too.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  MAX_CONFIG_BYTES,
  DEFAULT_CUSTOMIZATION,
  EMPTY_FAULT_CODE_TABLE,
  makePolicy,
  parseCustomizationJson,
  parseFaultCodeJson,
  type ConfigProblem,
  type Customization,
  type FaultCodeTable,
  type FaultPolicy,
  type RuleReport,
} from '../faults/index.js';

/** What happened to one file in one load. */
export interface FileLoadReport {
  file: 'faultCode.json' | 'faultCustomization.json';
  path: string;
  /**
   * `loaded`: the new content is in use; `unchanged`: same bytes as the version in use; `rejected`: unusable,
   * the previous version stays; `fallback`: unusable at start, the packaged (or built-in) default is used.
   */
  status: 'loaded' | 'unchanged' | 'rejected' | 'fallback';
  /** Why the document could not be used at all (read error, size, not JSON, wrong type). */
  fatal: string[];
  /** Entries ignored or defaulted, and warnings. */
  problems: ConfigProblem[];
  /** Per-rule report (customization only). */
  rules: RuleReport[];
}

/** One load of the configuration (initial, or after a change was seen). */
export interface FaultConfigReport {
  trigger: 'initial' | 'watch' | 'reload';
  /** True when a new policy was swapped in. */
  changed: boolean;
  files: FileLoadReport[];
}

/** A source of the fault policy. */
export interface FaultConfigSource {
  /** The policy in use. */
  current(): FaultPolicy;
  /** The report of the last load. */
  lastReport(): FaultConfigReport;
  /** Called after every load; returns an unsubscribe function. */
  subscribe(listener: (report: FaultConfigReport, policy: FaultPolicy) => void): () => void;
  /** Stops watching. */
  close(): void;
}

/** Options of {@link FileFaultConfigSource}. */
export interface FileFaultConfigOptions {
  faultCodeFile: string;
  customizationFile: string;
  /** Used when the file is unusable at start (the packaged copy); absent: built-in empty table / defaults. */
  fallbackFaultCodeFile?: string;
  fallbackCustomizationFile?: string;
  /** Quiet time after the last change before reloading (ms). Default 200. */
  debounceMs?: number;
  /** One line per problem. Default: nothing. */
  log?: (level: 'info' | 'warn' | 'error', line: string) => void;
}

type Read = { ok: true; text: string } | { ok: false; error: string };

async function readLimited(file: string): Promise<Read> {
  try {
    const st = await fs.promises.stat(file);
    if (!st.isFile()) return { ok: false, error: `${file} is not a regular file` };
    if (st.size > MAX_CONFIG_BYTES)
      return { ok: false, error: `${file} is ${st.size} bytes, over the ${MAX_CONFIG_BYTES}-byte limit` };
    const text = await fs.promises.readFile(file, 'utf8');
    if (text.length > MAX_CONFIG_BYTES)
      return { ok: false, error: `${file} grew over the ${MAX_CONFIG_BYTES}-byte limit` };
    return { ok: true, text };
  } catch (e) {
    return { ok: false, error: `cannot read ${file}: ${(e as Error).message}` };
  }
}

interface Slot<T> {
  value: T;
  text: string | null;
}

/** Watches the two fault files on disk. Construct with {@link FileFaultConfigSource.open}. */
export class FileFaultConfigSource implements FaultConfigSource {
  private readonly listeners = new Set<(r: FaultConfigReport, p: FaultPolicy) => void>();
  private readonly watchers: fs.FSWatcher[] = [];
  private timer: NodeJS.Timeout | null = null;
  private reloading: Promise<void> = Promise.resolve();
  private policy: FaultPolicy;
  private report: FaultConfigReport = { trigger: 'initial', changed: false, files: [] };
  private closed = false;

  private constructor(
    private readonly opts: FileFaultConfigOptions,
    private codes: Slot<FaultCodeTable>,
    private custom: Slot<Customization>,
  ) {
    this.policy = makePolicy(codes.value, custom.value);
  }

  /** Loads both files (falling back per file when one is unusable) and starts watching when `watch` is true. */
  static async open(opts: FileFaultConfigOptions, watch = true): Promise<FileFaultConfigSource> {
    const src = new FileFaultConfigSource(
      opts,
      { value: EMPTY_FAULT_CODE_TABLE, text: null },
      { value: DEFAULT_CUSTOMIZATION, text: null },
    );
    await src.load('initial');
    if (watch) src.startWatching();
    return src;
  }

  current(): FaultPolicy {
    return this.policy;
  }

  lastReport(): FaultConfigReport {
    return this.report;
  }

  subscribe(listener: (report: FaultConfigReport, policy: FaultPolicy) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reloads now (also what the watcher does after the debounce). Resolves when the load is done. */
  reload(trigger: 'watch' | 'reload' = 'reload'): Promise<void> {
    this.reloading = this.reloading.then(() => this.load(trigger));
    return this.reloading;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
    this.watchers.length = 0;
  }

  private startWatching(): void {
    const byDir = new Map<string, Set<string>>();
    for (const f of [this.opts.faultCodeFile, this.opts.customizationFile]) {
      const dir = path.dirname(path.resolve(f));
      const set = byDir.get(dir) ?? new Set<string>();
      set.add(path.basename(f));
      byDir.set(dir, set);
    }
    for (const [dir, names] of byDir) {
      try {
        const w = fs.watch(dir, { persistent: false }, (_event, name) => {
          if (name === null || names.has(name.toString())) this.schedule();
        });
        w.on('error', (e) => this.opts.log?.('warn', `fault config: watching ${dir} failed: ${e.message}`));
        this.watchers.push(w);
      } catch (e) {
        this.opts.log?.('warn', `fault config: cannot watch ${dir}: ${(e as Error).message}; changes need a restart`);
      }
    }
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.reload('watch');
    }, this.opts.debounceMs ?? 200);
    this.timer.unref();
  }

  private async load(trigger: FaultConfigReport['trigger']): Promise<void> {
    if (this.closed && trigger !== 'initial') return;
    const initial = trigger === 'initial';
    const codeReport = await this.loadOne(
      'faultCode.json',
      this.opts.faultCodeFile,
      this.opts.fallbackFaultCodeFile,
      initial,
      this.codes,
      (text) => {
        const r = parseFaultCodeJson(text);
        return r.ok
          ? { ok: true, value: r.table, problems: r.problems, rules: [] }
          : { ok: false, fatal: r.fatal, problems: r.problems };
      },
    );
    const customReport = await this.loadOne(
      'faultCustomization.json',
      this.opts.customizationFile,
      this.opts.fallbackCustomizationFile,
      initial,
      this.custom,
      (text) => {
        const r = parseCustomizationJson(text);
        return r.ok
          ? { ok: true, value: r.customization, problems: r.problems, rules: r.rules }
          : { ok: false, fatal: r.fatal, problems: [] };
      },
    );
    const changed = initial || [codeReport, customReport].some((r) => r.status === 'loaded' || r.status === 'fallback');
    if (changed) this.policy = makePolicy(this.codes.value, this.custom.value);
    this.report = { trigger, changed, files: [codeReport, customReport] };
    for (const r of this.report.files) this.logFile(r);
    for (const l of this.listeners) l(this.report, this.policy);
  }

  private async loadOne<T>(
    file: FileLoadReport['file'],
    filePath: string,
    fallback: string | undefined,
    initial: boolean,
    slot: Slot<T>,
    parse: (
      text: string,
    ) =>
      | { ok: true; value: T; problems: ConfigProblem[]; rules: RuleReport[] }
      | { ok: false; fatal: string[]; problems: ConfigProblem[] },
  ): Promise<FileLoadReport> {
    const base = { file, path: filePath, problems: [] as ConfigProblem[], rules: [] as RuleReport[] };
    const read = await readLimited(filePath);
    if (read.ok && read.text === slot.text) return { ...base, status: 'unchanged', fatal: [] };
    const parsed: ReturnType<typeof parse> = read.ok
      ? parse(read.text)
      : { ok: false, fatal: [read.error], problems: [] };
    if (parsed.ok && read.ok) {
      slot.value = parsed.value;
      slot.text = read.text;
      return { ...base, status: 'loaded', fatal: [], problems: parsed.problems, rules: parsed.rules };
    }
    const fatal = parsed.ok ? [] : parsed.fatal;
    if (!initial) return { ...base, status: 'rejected', fatal, problems: parsed.problems };
    // Start-up: use the packaged default of this file, else the built-in one.
    if (fallback && path.resolve(fallback) !== path.resolve(filePath)) {
      const fb = await readLimited(fallback);
      const fp = fb.ok ? parse(fb.text) : undefined;
      if (fp?.ok) {
        slot.value = fp.value;
        slot.text = null;
        return {
          ...base,
          status: 'fallback',
          fatal: [...fatal, `using the packaged ${fallback}`],
          problems: parsed.problems,
        };
      }
    }
    return {
      ...base,
      status: 'fallback',
      fatal: [...fatal, 'using the built-in default (no codes / no rules)'],
      problems: parsed.problems,
    };
  }

  private logFile(r: FileLoadReport): void {
    const log = this.opts.log;
    if (!log || r.status === 'unchanged') return;
    for (const f of r.fatal)
      log('error', `fault config ${r.path}: ${f}${r.status === 'rejected' ? '; keeping the last good version' : ''}`);
    for (const p of r.problems) {
      log(
        p.kind === 'warning' ? 'warn' : 'error',
        `fault config ${r.path}: ${p.path}${p.value !== undefined ? ` = ${p.value}` : ''}: ${p.reason} [${p.kind}, spec ${p.spec}]`,
      );
    }
    if (r.status === 'loaded') log('info', `fault config ${r.path}: loaded`);
  }
}
