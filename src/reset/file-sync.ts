/**
 * ConfigMap → host file synchronisation ("file landing", hot-reset.md §2.8, HR-22): mirrors the `reset.json` and
 * `restartType` keys of `reset-config-<job>` and the `profilingSwitch` key of `data-trace-<job>` into host folders
 * that jobs mount (`/user/restore/reset/<ns>.reset-config-<job>/` is mounted at `/user/restore/reset/config`), for
 * every job that has a pod on this node.
 *
 * The agent's pod and ConfigMap watchers call the four notification methods; this class never watches. Work is
 * level-triggered per job: each notification records what changed and (re)runs one reconciliation of that job's
 * folders from the latest known ConfigMaps, so a retry never writes a value older than the newest notification.
 *
 * Deviations from upstream (decided for issue [F], listed in docs/hot-reset.md):
 * - folders are created 0755 and files 0644, not 0666: a world-writable `reset.json` would let any local user forge
 *   a reset instruction to a job that only reads it;
 * - files are written atomically (temporary file + rename), so the training side never reads half a file, and a
 *   symbolic link planted in place of a file is replaced, never followed;
 * - `<ns>` and `<job>` become path components only when they are valid Kubernetes names (DNS-1123), so neither can
 *   contain `/` or `..`;
 * - a value larger than 1 MiB is refused (logged, the previous file is kept);
 * - the folder mirrors the ConfigMap: a key absent from the ConfigMap removes its file (upstream left a stale
 *   `restartType` behind when a later UPDATE dropped the key);
 * - failed writes are retried with a bounded exponential backoff on the injected clock, then logged and dropped
 *   until the next notification for the job (upstream: client-go's unbounded per-item limiter);
 * - with two pods of one job on the node, the folders are removed when the last of them leaves.
 */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ChipKind } from '../core/chips.js';
import { errorMessage } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../core/clock.js';
import { deviceAnnotationKey, taskNameOf } from './tasks.js';
import type { ConfigMapCache, ConfigMapObject, ResetPod } from './types.js';

/** Largest ConfigMap value written to a host file (§2.3 applies the same 1 MiB limit to `reset.json`). */
export const MAX_LANDED_VALUE_BYTES = 1024 * 1024;
/** Mode of the folders this class creates (upstream asks 0666; see the module comment). */
export const LANDED_DIR_MODE = 0o755;
/** Mode of the files this class writes (upstream asks 0666; see the module comment). */
export const LANDED_FILE_MODE = 0o644;

const RESET_PREFIX = 'reset-config-';
const TRACE_PREFIX = 'data-trace-';
const RESET_KEYS = ['reset.json', 'restartType'] as const;
const TRACE_KEY = 'profilingSwitch';

/** DNS-1123 label (namespaces). */
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** DNS-1123 subdomain (the ConfigMap name `reset-config-<job>` must be one, so `<job>` must be too). */
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A label value (where the job name comes from) is at most 63 characters. */
const MAX_JOB_NAME = 63;

/** Retry policy of failed reconciliations. */
export interface FileSyncRetry {
  /** Attempts after the first failure before giving up until the next notification (default 6). */
  readonly attempts: number;
  /** First pause in ms (default 200); doubled after each failure. */
  readonly baseMs: number;
  /** Longest pause in ms (default 30 000). */
  readonly maxMs: number;
}

export const DEFAULT_FILE_SYNC_RETRY: FileSyncRetry = Object.freeze({ attempts: 6, baseMs: 200, maxMs: 30_000 });

export interface ResetFileSyncOptions {
  /** `-hostRoot` (architecture §4): prefix of `/user/restore/reset/…` and `/user/cluster-info/…`. */
  readonly hostRoot: string;
  /** Chip kind of the node: selects the device annotation that marks a pod as ours (D10). */
  readonly kind: ChipKind;
  /**
   * The informer cache of ConfigMaps labelled `reset=true` (§2.8). `dataTrace`, when present, answers for
   * `data-trace-<job>` names instead of `get` (for an agent that caches those separately).
   */
  readonly configMaps: ConfigMapCache & { dataTrace?(namespace: string, name: string): ConfigMapObject | undefined };
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly retry?: Partial<FileSyncRetry>;
}

/** The paths of one job's landed files. */
export interface LandedPaths {
  readonly resetDir: string;
  readonly resetJson: string;
  readonly restartType: string;
  readonly traceDir: string;
  readonly profilingSwitch: string;
}

/** One job on this node: its pods and the ConfigMaps last notified for it. */
interface JobRecord {
  readonly namespace: string;
  readonly job: string;
  readonly paths: LandedPaths;
  readonly pods: Set<string>;
  /** undefined: never notified, read the cache; null: deleted. */
  resetCm: ConfigMapObject | null | undefined;
  traceCm: ConfigMapObject | null | undefined;
  running: boolean;
  dirty: boolean;
  failures: number;
  retryTimer: TimerHandle | undefined;
  missingLogged: boolean;
}

/** Error naming why a namespace or job name cannot become a path component. */
export class LandingNameError extends Error {
  override readonly name = 'LandingNameError';
}

/** Throws {@link LandingNameError} unless `namespace` and `job` are safe, valid Kubernetes names. */
export function checkLandingNames(namespace: string, job: string): void {
  if (namespace.length > 63 || !DNS1123_LABEL.test(namespace))
    throw new LandingNameError(`namespace ${JSON.stringify(namespace)} is not a DNS-1123 label`);
  if (job.length > MAX_JOB_NAME || !DNS1123_SUBDOMAIN.test(job))
    throw new LandingNameError(
      `job name ${JSON.stringify(job)} is not a DNS-1123 subdomain of at most ${MAX_JOB_NAME} characters`,
    );
}

/** §2.8 paths of a job's files under `hostRoot`; throws {@link LandingNameError} on an unsafe name. */
export function landedPaths(hostRoot: string, namespace: string, job: string): LandedPaths {
  checkLandingNames(namespace, job);
  const resetDir = path.join(hostRoot, 'user/restore/reset', `${namespace}.${RESET_PREFIX}${job}`);
  const traceDir = path.join(hostRoot, 'user/cluster-info/datatrace-config', `${namespace}.${TRACE_PREFIX}${job}`);
  return {
    resetDir,
    resetJson: path.join(resetDir, 'reset.json'),
    restartType: path.join(resetDir, 'restartType'),
    traceDir,
    profilingSwitch: path.join(traceDir, TRACE_KEY),
  };
}

function errnoOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

/** Writes `data` to `file` through a temporary file in the same folder and a rename (never a half file). */
async function writeAtomic(file: string, data: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fs.open(tmp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, LANDED_FILE_MODE);
  try {
    try {
      await handle.writeFile(data, 'utf8');
      await handle.chmod(LANDED_FILE_MODE); // the process umask may have narrowed the requested mode
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

async function removeFile(file: string): Promise<void> {
  await fs.rm(file, { force: true });
}

/** mkdir -p with {@link LANDED_DIR_MODE}; refuses a leaf that is a symbolic link or not a folder. */
async function ensureDir(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: LANDED_DIR_MODE });
  const st = await fs.lstat(dir);
  if (!st.isDirectory()) throw new Error(`${dir} exists and is not a folder`);
  if ((st.mode & 0o7777) !== LANDED_DIR_MODE) await fs.chmod(dir, LANDED_DIR_MODE);
}

/**
 * §2.8 file landing over injected notifications. Construct one per agent (on 910-family nodes, every `-hotReset`
 * mode); call {@link close} on shutdown to cancel pending retries.
 */
export class ResetFileSync {
  readonly #hostRoot: string;
  readonly #annotation: string;
  readonly #configMaps: ResetFileSyncOptions['configMaps'];
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #retry: FileSyncRetry;
  /** `<ns>/<job>` → record. */
  readonly #jobs = new Map<string, JobRecord>();
  /** `<ns>/<pod name>` → `<ns>/<job>` (upstream remembers the job of each pod key for the delete). */
  readonly #podJobs = new Map<string, string>();
  readonly #inFlight = new Set<Promise<void>>();
  #closed = false;

  constructor(o: ResetFileSyncOptions) {
    if (!o.hostRoot) throw new Error('ResetFileSync: hostRoot is empty');
    const retry = { ...DEFAULT_FILE_SYNC_RETRY, ...o.retry };
    for (const [k, v] of Object.entries(retry))
      if (!Number.isInteger(v) || v < 0) throw new Error(`ResetFileSync: retry.${k} must be a non-negative integer`);
    this.#hostRoot = path.resolve(o.hostRoot);
    this.#annotation = deviceAnnotationKey(o.kind);
    this.#configMaps = o.configMaps;
    this.#clock = o.clock ?? SYSTEM_CLOCK;
    this.#log = o.logger ?? NOOP_LOGGER;
    this.#retry = retry;
  }

  /** The paths of a job's files (for tests, the demo and `npuctl`); throws on an unsafe name. */
  paths(namespace: string, job: string): LandedPaths {
    return landedPaths(this.#hostRoot, namespace, job);
  }

  /** §2.8 pod add: a pod with the device annotation and a job label gets its job's folders and files. */
  podAdded(pod: ResetPod): void {
    if (this.#closed) return;
    if (!pod.annotations[this.#annotation]) return; // not a device pod: not ours (upstream informer filter)
    const job = taskNameOf(pod); // D10: labels only
    const podKey = `${pod.namespace}/${pod.name}`;
    if (!job) {
      this.#log.debug({ pod: podKey }, 'file landing: pod has no job-name label, skipped');
      return;
    }
    let paths: LandedPaths;
    try {
      paths = this.paths(pod.namespace, job);
    } catch (err) {
      this.#log.warn({ pod: podKey, err: errorMessage(err) }, 'file landing: refused pod');
      return;
    }
    const jobKey = `${pod.namespace}/${job}`;
    const previous = this.#podJobs.get(podKey);
    if (previous !== undefined && previous !== jobKey) this.#detach(podKey, previous);
    this.#podJobs.set(podKey, jobKey);
    let rec = this.#jobs.get(jobKey);
    if (!rec) {
      rec = {
        namespace: pod.namespace,
        job,
        paths,
        pods: new Set(),
        resetCm: undefined,
        traceCm: undefined,
        running: false,
        dirty: false,
        failures: 0,
        retryTimer: undefined,
        missingLogged: false,
      };
      this.#jobs.set(jobKey, rec);
    }
    rec.pods.add(podKey);
    this.#schedule(rec);
  }

  /** §2.8 pod delete: when the job's last pod on the node leaves, its files and folders are removed. */
  podDeleted(pod: ResetPod): void {
    if (this.#closed) return;
    const podKey = `${pod.namespace}/${pod.name}`;
    const jobKey = this.#podJobs.get(podKey);
    if (jobKey === undefined) return; // upstream: unknown pod → drop
    this.#podJobs.delete(podKey);
    this.#detach(podKey, jobKey);
  }

  /** §2.8 ConfigMap add/update: rewrites the files of a job that has a pod here; otherwise nothing (HR-22). */
  configMapChanged(cm: ConfigMapObject): void {
    this.#onConfigMap(cm, cm);
  }

  /** §2.8 ConfigMap delete: removes the ConfigMap's files; the folders stay while the job's pod does. */
  configMapDeleted(cm: ConfigMapObject): void {
    this.#onConfigMap(cm, null);
  }

  /** Resolves once no reconciliation is running (pending retry timers are not waited for). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  /** Jobs with pending retries (for tests and status). */
  pendingRetries(): string[] {
    return [...this.#jobs.entries()].filter(([, r]) => r.retryTimer !== undefined).map(([k]) => k);
  }

  /** Stops accepting notifications and cancels pending retries; files stay as they are. */
  close(): void {
    this.#closed = true;
    for (const rec of this.#jobs.values()) this.#cancelRetry(rec);
  }

  #onConfigMap(cm: ConfigMapObject, value: ConfigMapObject | null): void {
    if (this.#closed) return;
    let job: string;
    let kind: 'reset' | 'trace';
    if (cm.name.startsWith(RESET_PREFIX)) {
      kind = 'reset';
      job = cm.name.slice(RESET_PREFIX.length);
    } else if (cm.name.startsWith(TRACE_PREFIX)) {
      kind = 'trace';
      job = cm.name.slice(TRACE_PREFIX.length);
    } else {
      return; // upstream handler filter: other names are not ours
    }
    const rec = this.#jobs.get(`${cm.namespace}/${job}`);
    if (!rec) return; // no local pod of the job: nothing lands (HR-22); records exist only for valid names
    if (kind === 'reset') rec.resetCm = value;
    else rec.traceCm = value;
    this.#schedule(rec);
  }

  #detach(podKey: string, jobKey: string): void {
    const rec = this.#jobs.get(jobKey);
    if (!rec) return;
    rec.pods.delete(podKey);
    if (rec.pods.size === 0) this.#schedule(rec);
  }

  #cancelRetry(rec: JobRecord): void {
    if (rec.retryTimer !== undefined) this.#clock.clearTimeout(rec.retryTimer);
    rec.retryTimer = undefined;
  }

  /** Runs (or re-runs after the current run) the job's reconciliation; a new notification resets the retry budget. */
  #schedule(rec: JobRecord, fromRetry = false): void {
    if (!fromRetry) {
      this.#cancelRetry(rec);
      rec.failures = 0;
    }
    if (rec.running) {
      rec.dirty = true;
      return;
    }
    rec.running = true;
    const run = this.#run(rec).finally(() => this.#inFlight.delete(run));
    this.#inFlight.add(run);
  }

  async #run(rec: JobRecord): Promise<void> {
    let failed: boolean;
    do {
      rec.dirty = false;
      try {
        await this.#reconcile(rec);
        failed = false;
      } catch (err) {
        failed = true;
        rec.failures += 1;
        this.#log.warn(
          { namespace: rec.namespace, job: rec.job, attempt: rec.failures, err: errorMessage(err) },
          'file landing: sync failed',
        );
      }
    } while (rec.dirty);
    rec.running = false;
    if (failed) this.#retryLater(rec);
    else {
      rec.failures = 0;
      if (rec.pods.size === 0) this.#jobs.delete(`${rec.namespace}/${rec.job}`);
    }
  }

  #retryLater(rec: JobRecord): void {
    if (this.#closed) return;
    if (rec.failures > this.#retry.attempts) {
      this.#log.error(
        { namespace: rec.namespace, job: rec.job, failures: rec.failures },
        'file landing: giving up until the next change of the job or its ConfigMaps',
      );
      if (rec.pods.size === 0) this.#jobs.delete(`${rec.namespace}/${rec.job}`);
      return;
    }
    const delay = Math.min(this.#retry.maxMs, this.#retry.baseMs * 2 ** (rec.failures - 1));
    rec.retryTimer = this.#clock.setTimeout(() => {
      rec.retryTimer = undefined;
      if (!this.#closed) this.#schedule(rec, true);
    }, delay);
  }

  /** Brings the job's folders to the desired state: present and mirroring the ConfigMaps, or gone. */
  async #reconcile(rec: JobRecord): Promise<void> {
    const p = rec.paths;
    if (rec.pods.size === 0) {
      await removeFile(p.resetJson);
      await removeFile(p.restartType);
      try {
        await fs.rmdir(p.resetDir);
      } catch (err) {
        const code = errnoOf(err);
        if (code === 'ENOTEMPTY' || code === 'EEXIST')
          this.#log.warn({ dir: p.resetDir }, 'file landing: reset folder holds other files, left in place');
        else if (code !== 'ENOENT') throw err;
      }
      await fs.rm(p.traceDir, { recursive: true, force: true });
      return;
    }
    await ensureDir(p.resetDir);
    await ensureDir(p.traceDir);
    const resetName = `${RESET_PREFIX}${rec.job}`;
    const resetCm = rec.resetCm === undefined ? this.#configMaps.get(rec.namespace, resetName) : rec.resetCm;
    if (!resetCm && !rec.missingLogged) {
      rec.missingLogged = true;
      this.#log.info({ namespace: rec.namespace, configMap: resetName }, 'file landing: no reset ConfigMap yet');
    }
    if (resetCm && resetCm.data['reset.json'] === undefined)
      this.#log.warn({ namespace: rec.namespace, configMap: resetName }, 'file landing: ConfigMap has no reset.json');
    await this.#mirror(resetCm ?? undefined, RESET_KEYS[0], p.resetJson);
    await this.#mirror(resetCm ?? undefined, RESET_KEYS[1], p.restartType);
    const traceName = `${TRACE_PREFIX}${rec.job}`;
    const traceCm = rec.traceCm === undefined ? this.#cachedTrace(rec.namespace, traceName) : rec.traceCm;
    await this.#mirror(traceCm ?? undefined, TRACE_KEY, p.profilingSwitch);
  }

  #cachedTrace(namespace: string, name: string): ConfigMapObject | undefined {
    const cms = this.#configMaps;
    return cms.dataTrace ? cms.dataTrace(namespace, name) : cms.get(namespace, name);
  }

  /** Writes `cm.data[key]` verbatim to `file`, removes `file` when the key (or the ConfigMap) is absent. */
  async #mirror(cm: ConfigMapObject | undefined, key: string, file: string): Promise<void> {
    const value = cm?.data[key];
    if (value === undefined) {
      await removeFile(file);
      return;
    }
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > MAX_LANDED_VALUE_BYTES) {
      this.#log.error(
        { configMap: `${cm!.namespace}/${cm!.name}`, key, bytes, limit: MAX_LANDED_VALUE_BYTES },
        'file landing: value larger than 1 MiB refused, previous file kept',
      );
      return;
    }
    await writeAtomic(file, value);
  }
}
