/**
 * The fault configuration from the ConfigMap `kube-system/mindx-dl-fault-config` (spec F.8), watched instead of
 * polled every PollInterval. Each key (`faultCode.json`, `faultCustomization.json`) is validated by the engine's own
 * parser before it is swapped in; a broken value keeps the last good one (or the local file) and is reported by
 * one Event; an absent key or an absent ConfigMap means the local file (the file source passed in).
 */
import type * as k8s from '@kubernetes/client-node';
import type { FaultConfigReport, FaultConfigSource, FileLoadReport } from '../config/fault-config-source.js';
import {
  makePolicy,
  MAX_CONFIG_BYTES,
  parseCustomizationJson,
  parseFaultCodeJson,
  type Customization,
  type FaultCodeTable,
  type FaultPolicy,
} from '../faults/index.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { rejectedInputEvent } from './agent-events.js';
import type { EventSink } from './event-recorder.js';
import { ListWatch, type WatchFn } from './list-watch.js';
import type { BackoffOptions, QueueClock } from './write-queue.js';

export const FAULT_CONFIG_NAMESPACE = 'kube-system';
export const FAULT_CONFIG_NAME = 'mindx-dl-fault-config';
const KEY_CODES = 'faultCode.json';
const KEY_CUSTOM = 'faultCustomization.json';

/**
 * Log bounds of one value's report (issue 12): a legal 10 MiB `faultCode.json` can hold a million problems, each
 * quoting a value of any length. At most this many entries are logged, one line each, then one line counting the
 * rest; every text in them is cut to {@link LOGGED_CHARS} characters with its length.
 */
export const MAX_LOGGED_PROBLEMS = 20;
/** Fatal reasons named in the rejection line (the rest counted in it). */
export const MAX_LOGGED_FATAL = 10;
const LOGGED_CHARS = 256;

/** `text` cut to {@link LOGGED_CHARS} characters, the cut marked with the full length. */
function logged(text: string): string {
  return text.length > LOGGED_CHARS ? `${text.slice(0, LOGGED_CHARS)}…(${text.length} chars)` : text;
}

/** The first {@link MAX_LOGGED_FATAL} fatal reasons, each cut, plus one entry counting the others. */
function loggedFatal(fatal: readonly string[]): string[] {
  const shown = fatal.slice(0, MAX_LOGGED_FATAL).map(logged);
  if (fatal.length > MAX_LOGGED_FATAL) shown.push(`… and ${fatal.length - MAX_LOGGED_FATAL} more`);
  return shown;
}

/** Options of {@link FaultConfigConfigMapSource}. */
export interface FaultConfigConfigMapOptions {
  readonly api: Pick<k8s.CoreV1Api, 'listNamespacedConfigMap'>;
  readonly watch: WatchFn | k8s.KubeConfig;
  /** The local files (spec F.8: used for every key the ConfigMap does not provide). */
  readonly files: FaultConfigSource;
  readonly events?: EventSink;
  readonly logger?: Logger;
  readonly clock?: QueueClock;
  readonly backoff?: BackoffOptions;
}

interface Slot<T> {
  /** Last good value from the ConfigMap; undefined: the local file applies. */
  value: T | undefined;
  text: string | undefined;
}

/** The ConfigMap over the file source. */
export class FaultConfigConfigMapSource implements FaultConfigSource {
  readonly #o: FaultConfigConfigMapOptions;
  readonly #log: Logger;
  readonly #watch: ListWatch<k8s.V1ConfigMap>;
  readonly #listeners = new Set<(r: FaultConfigReport, p: FaultPolicy) => void>();
  readonly #codes: Slot<FaultCodeTable> = { value: undefined, text: undefined };
  readonly #custom: Slot<Customization> = { value: undefined, text: undefined };
  readonly #unsubscribeFiles: () => void;
  #policy: FaultPolicy;
  #report: FaultConfigReport = { trigger: 'initial', changed: false, files: [] };
  #rv: string | undefined;

  constructor(options: FaultConfigConfigMapOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#policy = options.files.current();
    this.#unsubscribeFiles = options.files.subscribe((report) => {
      if (report.changed) this.#recompute({ ...report, trigger: report.trigger });
    });
    this.#watch = new ListWatch<k8s.V1ConfigMap>({
      what: `configmap ${FAULT_CONFIG_NAMESPACE}/${FAULT_CONFIG_NAME}`,
      path: `/api/v1/namespaces/${FAULT_CONFIG_NAMESPACE}/configmaps`,
      fieldSelector: `metadata.name=${FAULT_CONFIG_NAME}`,
      watch: options.watch,
      maxItems: 1,
      logger: this.#log,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      list: async () => {
        const l = await options.api.listNamespacedConfigMap({
          namespace: FAULT_CONFIG_NAMESPACE,
          fieldSelector: `metadata.name=${FAULT_CONFIG_NAME}`,
        });
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onSync: (items) => this.#apply(items[0]),
      onEvent: (type, cm) => this.#apply(type === 'DELETED' ? undefined : cm),
    });
  }

  /** Starts watching; resolves after the first list attempt. */
  async start(): Promise<void> {
    await this.#watch.start();
  }

  current(): FaultPolicy {
    return this.#policy;
  }

  lastReport(): FaultConfigReport {
    return this.#report;
  }

  subscribe(listener: (report: FaultConfigReport, policy: FaultPolicy) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#watch.stop();
    this.#unsubscribeFiles();
  }

  #apply(cm: k8s.V1ConfigMap | undefined): void {
    const rv = cm?.metadata?.resourceVersion;
    if (cm !== undefined && rv === this.#rv) return; // spec F.8: a change is a new resourceVersion
    this.#rv = rv;
    const data = cm?.data ?? {};
    const files: FileLoadReport[] = [
      this.#key(KEY_CODES, data[KEY_CODES], this.#codes, (t) => {
        const r = parseFaultCodeJson(t);
        return r.ok
          ? { ok: true, value: r.table, problems: r.problems, rules: [] }
          : { ok: false, fatal: r.fatal, problems: r.problems };
      }),
      this.#key(KEY_CUSTOM, data[KEY_CUSTOM], this.#custom, (t) => {
        const r = parseCustomizationJson(t);
        return r.ok
          ? { ok: true, value: r.customization, problems: r.problems, rules: r.rules }
          : { ok: false, fatal: r.fatal, problems: [] };
      }),
    ];
    this.#recompute({
      trigger: 'watch',
      changed: files.some((f) => f.status === 'loaded' || f.status === 'fallback'),
      files,
    });
  }

  #key<T>(
    file: FileLoadReport['file'],
    text: string | undefined,
    slot: Slot<T>,
    parse: (
      t: string,
    ) =>
      | { ok: true; value: T; problems: FileLoadReport['problems']; rules: FileLoadReport['rules'] }
      | { ok: false; fatal: string[]; problems: FileLoadReport['problems'] },
  ): FileLoadReport {
    const where = `configmap ${FAULT_CONFIG_NAMESPACE}/${FAULT_CONFIG_NAME} key ${file}`;
    const base = { file, path: where, problems: [], rules: [] };
    if (text === undefined) {
      const had = slot.value !== undefined;
      slot.value = undefined;
      slot.text = undefined;
      return {
        ...base,
        status: had ? 'fallback' : 'unchanged',
        fatal: had ? ['key absent: using the local file'] : [],
      };
    }
    if (text === slot.text) return { ...base, status: 'unchanged', fatal: [] };
    const r =
      text.length > MAX_CONFIG_BYTES
        ? { ok: false as const, fatal: [`larger than ${MAX_CONFIG_BYTES} characters`], problems: [] }
        : parse(text);
    if (!r.ok) {
      const keeps = slot.value !== undefined ? 'the last good ConfigMap value' : 'the local file';
      this.#log.error({ where, fatal: loggedFatal(r.fatal) }, `fault configuration rejected; keeping ${keeps}`);
      this.#o.events?.record(
        rejectedInputEvent(
          'FaultConfigRejected',
          `${FAULT_CONFIG_NAMESPACE}/${FAULT_CONFIG_NAME}`,
          file,
          text,
          `${r.fatal.join('; ')}; keeping ${keeps}`,
        ),
      );
      return { ...base, status: 'rejected', fatal: r.fatal, problems: r.problems };
    }
    slot.value = r.value;
    slot.text = text;
    for (const p of r.problems.slice(0, MAX_LOGGED_PROBLEMS)) {
      const value = p.value === undefined ? {} : { value: logged(p.value) };
      this.#log.warn({ where, path: logged(p.path), ...value, reason: logged(p.reason) }, 'fault configuration entry');
    }
    if (r.problems.length > MAX_LOGGED_PROBLEMS) {
      this.#log.warn(
        { where, notLogged: r.problems.length - MAX_LOGGED_PROBLEMS, problems: r.problems.length },
        `fault configuration entry: … and ${r.problems.length - MAX_LOGGED_PROBLEMS} more`,
      );
    }
    return { ...base, status: 'loaded', fatal: [], problems: r.problems, rules: r.rules };
  }

  #recompute(report: FaultConfigReport): void {
    const files = this.#o.files.current();
    const next = makePolicy(this.#codes.value ?? files.codes, this.#custom.value ?? files.customization);
    const changed = next.codes !== this.#policy.codes || next.customization !== this.#policy.customization;
    this.#policy = next;
    this.#report = { ...report, changed };
    for (const l of this.#listeners) l(this.#report, this.#policy);
  }
}
