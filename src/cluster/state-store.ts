/**
 * The persisted state of the fault center in ConfigMaps of any total size (issue [O] item 2; format and guarantees
 * in persisted-state.ts and docs/fault-center.md "Persisted state"): reads it at take-over, and commits the
 * changed node records, at most once per interval, as a new head, or as a new base and then a head (compaction).
 * Commits run one at a time; changes made meanwhile go into the next one. A local copy in `-stateDir` mirrors the
 * objects written and is read when the head ConfigMap cannot be.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../core/logger.js';
import { errorMessage, statusOf } from '../core/errors.js';
import { configMapWriter, type ConfigMapBody } from '../kube/configmap-writer.js';
import { ObjectWriteQueue, type BackoffOptions, type ObjectWriter, type QueueClock } from '../kube/write-queue.js';
import {
  decodeHead,
  decodePart,
  encodeHead,
  encodePart,
  groupRecords,
  HEAD_MAX_BYTES,
  headBytes,
  headName,
  MAX_STATE_PARTS,
  otherSet,
  PART_KEY,
  PART_MAX_INFLATED_BYTES,
  PART_MAX_STORED_BYTES,
  PART_RAW_TARGET_BYTES,
  partDigest,
  partName,
  STATE_KEY,
  StateFormatError,
  type BaseRef,
  type HeadHeader,
  type PartSet,
} from './persisted-state.js';

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

/** What the store reads and writes: ConfigMaps by name in its namespace. */
export interface StateIo {
  /** The object's data, undefined when it does not exist; throws on any other error. */
  read(name: string): Promise<{ data?: Record<string, string>; binaryData?: Record<string, string> } | undefined>;
  /** Writes (replace, create when missing), retrying failures; true once written, false when refused as invalid. */
  write(body: ConfigMapBody): Promise<boolean>;
}

/** What {@link StateStore.load} found. */
export type LoadedState =
  | { kind: 'none' }
  | { kind: 'v1'; state: unknown; source: 'configmap' | 'file' }
  | { kind: 'v2'; records: Map<string, string>; nextJobSeq: number; source: 'configmap' | 'file'; generation: number };

/** Counters (metrics, tests, bench). */
export interface StateStoreStats {
  commits: number;
  compactions: number;
  failedCommits: number;
  headBytes: number;
  baseBytes: number;
  baseParts: number;
}

/** Options of a store. */
export interface StateStoreOptions {
  readonly leaseName: string;
  readonly namespace: string;
  readonly io: StateIo;
  readonly logger: Logger;
  readonly now?: () => number;
  /** local mirror (`-stateDir`), optional */
  readonly stateDir?: string;
  /** at most one commit per this many ms (default 1000) */
  readonly minIntervalMs?: number;
  /** after a failed commit (default 2000 ms, doubling to 30 s) */
  readonly retryMs?: number;
  readonly headMaxBytes?: number;
  readonly partRawTargetBytes?: number;
  readonly partMaxStoredBytes?: number;
  /** called after each commit attempt (metrics) */
  readonly onCommit?: (what: 'head' | 'base', ok: boolean) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** The store of one leadership term. */
export class StateStore {
  readonly #o: StateStoreOptions;
  /** the current record of every node */
  readonly #records = new Map<string, string>();
  /** the records as the durable base has them */
  #baseRecords = new Map<string, string>();
  /** nodes whose current record differs from the base: record, or null (gone) */
  #delta = new Map<string, string | null>();
  #base: BaseRef | null = null;
  #generation = 0;
  #baseGeneration = 0;
  #nextJobSeq = 1;
  #dirty = false;
  #running: Promise<void> | undefined;
  #closed = false;
  #failures = 0;
  readonly #stats: StateStoreStats = {
    commits: 0,
    compactions: 0,
    failedCommits: 0,
    headBytes: 0,
    baseBytes: 0,
    baseParts: 0,
  };

  constructor(options: StateStoreOptions) {
    this.#o = options;
  }

  get stats(): StateStoreStats {
    return { ...this.#stats };
  }

  /** Whether changes wait for a commit, or one runs. */
  get busy(): boolean {
    return this.#dirty || this.#running !== undefined;
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  async #readObject(
    name: string,
    fromFile: boolean,
  ): Promise<{ data?: Record<string, string>; binaryData?: Record<string, string> } | undefined> {
    if (!fromFile) return this.#o.io.read(name);
    const dir = this.#o.stateDir!;
    const text = await fs.readFile(path.join(dir, name), 'utf8').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (text === undefined) return undefined;
    return name === headName(this.#o.leaseName)
      ? { data: { [STATE_KEY]: text } }
      : { binaryData: { [PART_KEY]: text } };
  }

  /**
   * Reads the persisted state (head, then its base parts): from the ConfigMaps, or from the local mirror when the
   * head ConfigMap cannot be read. A state that cannot be decoded, or whose parts do not match the head, is
   * reported and not used. Throws only when neither source can be read (the caller retries).
   */
  async load(): Promise<LoadedState> {
    const { logger } = this.#o;
    const head = headName(this.#o.leaseName);
    let fromFile = false;
    let obj: Awaited<ReturnType<StateIo['read']>>;
    try {
      obj = await this.#o.io.read(head);
    } catch (e) {
      if (this.#o.stateDir === undefined) throw e;
      logger.warn({ err: errorMessage(e), configMap: head }, 'state ConfigMap not readable; reading the local copy');
      fromFile = true;
      obj = await this.#readObject(head, true);
    }
    const text = obj?.data?.[STATE_KEY];
    if (text === undefined) return { kind: 'none' };
    const source = fromFile ? 'file' : 'configmap';
    try {
      const decoded = decodeHead(text);
      if (decoded.kind === 'v1') return { kind: 'v1', state: decoded.state, source };
      const { header, delta } = decoded.head;
      const records = new Map<string, string>();
      if (header.base !== null) {
        for (let i = 0; i < header.base.parts.length; i++) {
          const name = partName(this.#o.leaseName, header.base.set, i);
          const stored = (await this.#readObject(name, fromFile))?.binaryData?.[PART_KEY];
          if (stored === undefined) throw new StateFormatError(`${name} is missing`);
          if (partDigest(stored) !== header.base.parts[i]) {
            throw new StateFormatError(`${name} is not the part the head names (SHA-256 differs)`);
          }
          const raw = await gunzip(Buffer.from(stored, 'base64'), { maxOutputLength: PART_MAX_INFLATED_BYTES }).catch(
            (e: unknown) => {
              throw new StateFormatError(`${name}: ${errorMessage(e)}`);
            },
          );
          decodePart(raw.toString('utf8'), header.base, i, records);
        }
      }
      this.#baseRecords = new Map(records);
      for (const [node, record] of delta) {
        if (record === null) records.delete(node);
        else records.set(node, record);
      }
      this.#records.clear();
      for (const [n, r] of records) this.#records.set(n, r);
      this.#delta = delta;
      this.#base = header.base;
      this.#generation = header.generation;
      this.#baseGeneration = header.base?.generation ?? 0;
      this.#nextJobSeq = header.nextJobSeq;
      this.#stats.headBytes = Buffer.byteLength(text);
      this.#stats.baseParts = header.base?.parts.length ?? 0;
      return { kind: 'v2', records, nextJobSeq: header.nextJobSeq, source, generation: header.generation };
    } catch (e) {
      if (!(e instanceof StateFormatError)) throw e;
      logger.error({ err: e.message, configMap: head, source }, 'persisted state unreadable; not used');
      return { kind: 'none' };
    }
  }

  /** The records a restore started from (after {@link load}, the caller may have dropped invalid ones). */
  adopt(records: ReadonlyMap<string, string>): void {
    for (const n of [...this.#records.keys()]) if (!records.has(n)) this.#set(n, null);
    for (const [n, r] of records) this.#set(n, r);
  }

  #set(node: string, record: string | null): void {
    if (record === null) this.#records.delete(node);
    else this.#records.set(node, record);
    const base = this.#baseRecords.get(node) ?? null;
    if (base === record) this.#delta.delete(node);
    else this.#delta.set(node, record);
  }

  /** Takes changed records (node → record, null when gone) and schedules a commit. */
  update(changes: ReadonlyMap<string, string | null>, nextJobSeq: number): void {
    if (this.#closed) return;
    for (const [node, record] of changes) this.#set(node, record);
    const seqChanged = nextJobSeq !== this.#nextJobSeq;
    this.#nextJobSeq = nextJobSeq;
    if (changes.size === 0 && !seqChanged) return;
    this.#dirty = true;
    this.#running ??= this.#loop().finally(() => {
      this.#running = undefined;
    });
  }

  /** Resolves when nothing waits to be committed (tests; a failing API keeps it waiting). */
  async flush(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Stops committing (a commit in flight completes). */
  close(): void {
    this.#closed = true;
  }

  async #loop(): Promise<void> {
    while (this.#dirty && !this.#closed) {
      this.#dirty = false;
      let ok = false;
      try {
        ok = await this.#commit();
      } catch (e) {
        this.#o.logger.error({ err: errorMessage(e) }, 'persisted state not committed');
      }
      if (ok) {
        this.#failures = 0;
        this.#stats.commits++;
      } else {
        this.#dirty = true;
        this.#stats.failedCommits++;
        this.#failures++;
        await sleep(Math.min(30_000, (this.#o.retryMs ?? 2000) * 2 ** Math.min(4, this.#failures - 1)));
        continue;
      }
      await sleep(this.#o.minIntervalMs ?? 1000);
    }
  }

  #header(base: BaseRef | null): HeadHeader {
    return {
      version: 2,
      generation: this.#generation + 1,
      written: this.#now(),
      nextJobSeq: this.#nextJobSeq,
      base,
    };
  }

  /** One commit; false when a write failed or was refused. */
  async #commit(): Promise<boolean> {
    let base = this.#base;
    let baseRecords = this.#baseRecords;
    let delta: ReadonlyMap<string, string | null> = this.#delta;
    const limit = this.#o.headMaxBytes ?? HEAD_MAX_BYTES;
    if (headBytes(this.#header(base), delta) > limit) {
      const written = await this.#writeBase();
      if (written === undefined) return false;
      base = written.ref;
      baseRecords = written.records;
      delta = diff(this.#records, baseRecords);
    }
    const text = encodeHead(this.#header(base), delta);
    const name = headName(this.#o.leaseName);
    const ok = await this.#o.io.write({
      metadata: { name, namespace: this.#o.namespace },
      data: { [STATE_KEY]: text },
    });
    this.#o.onCommit?.('head', ok);
    if (!ok) {
      this.#o.logger.error({ configMap: name, bytes: Buffer.byteLength(text) }, 'state head refused by the API server');
      return false;
    }
    this.#generation++;
    this.#stats.headBytes = Buffer.byteLength(text);
    if (base !== this.#base) {
      // the new base is durable now: later changes are relative to it
      this.#base = base;
      this.#baseRecords = baseRecords;
      this.#delta = diff(this.#records, baseRecords);
    } else {
      // records changed during the write stay in the delta (it is the live map)
    }
    await this.#mirror(name, text);
    return true;
  }

  /** Compaction: writes every record into the set the durable head does not use; the new base, or undefined. */
  async #writeBase(): Promise<{ ref: BaseRef; records: Map<string, string> } | undefined> {
    const records = new Map(this.#records);
    const set: PartSet = otherSet(this.#base?.set);
    const generation = Math.max(this.#baseGeneration, this.#generation) + 1;
    const parts = await this.#pack(records, set, generation);
    if (parts === undefined) return undefined;
    const names = parts.map((_, i) => partName(this.#o.leaseName, set, i));
    const results = await Promise.all(
      parts.map((stored, i) =>
        this.#o.io.write({
          metadata: { name: names[i]!, namespace: this.#o.namespace },
          binaryData: { [PART_KEY]: stored },
        }),
      ),
    );
    const ok = results.every((r) => r);
    this.#o.onCommit?.('base', ok);
    if (!ok) {
      this.#o.logger.error({ parts: names }, 'state base part refused by the API server');
      return undefined;
    }
    for (let i = 0; i < parts.length; i++) await this.#mirror(names[i]!, parts[i]!);
    this.#baseGeneration = generation;
    this.#stats.compactions++;
    this.#stats.baseParts = parts.length;
    this.#stats.baseBytes = parts.reduce((n, p) => n + p.length, 0);
    this.#o.logger.info(
      { set, generation, parts: parts.length, records: records.size, bytes: this.#stats.baseBytes },
      'persisted state compacted into a new base',
    );
    return { ref: { set, generation, parts: parts.map(partDigest) }, records };
  }

  /** The stored (base64 gzip) parts of a base; undefined when the state does not fit {@link MAX_STATE_PARTS}. */
  async #pack(records: ReadonlyMap<string, string>, set: PartSet, generation: number): Promise<string[] | undefined> {
    const maxStored = this.#o.partMaxStoredBytes ?? PART_MAX_STORED_BYTES;
    const pending = groupRecords(records, this.#o.partRawTargetBytes ?? PART_RAW_TARGET_BYTES);
    const groups: [string, string][][] = [];
    const stored: string[] = [];
    while (pending.length > 0) {
      const g = pending.shift()!;
      const index = groups.length;
      const raw = encodePart({ version: 2, set, generation, index }, g);
      const s = (await gzip(Buffer.from(raw, 'utf8'))).toString('base64');
      if (s.length > maxStored && g.length > 1) {
        // too large once compressed: halve it (the halves are compressed again)
        const half = Math.ceil(g.length / 2);
        pending.unshift(g.slice(0, half), g.slice(half));
        continue;
      }
      if (s.length > maxStored) {
        this.#o.logger.error({ node: g[0]![0], bytes: s.length }, 'a node record alone exceeds a state part');
        return undefined;
      }
      groups.push(g);
      stored.push(s);
      if (stored.length > MAX_STATE_PARTS) {
        this.#o.logger.error(
          { parts: MAX_STATE_PARTS, records: records.size },
          `persisted state exceeds ${MAX_STATE_PARTS} parts; not written`,
        );
        return undefined;
      }
    }
    return stored;
  }

  async #mirror(name: string, text: string): Promise<void> {
    const dir = this.#o.stateDir;
    if (dir === undefined) return;
    try {
      await fs.mkdir(dir, { recursive: true });
      const tmp = path.join(dir, `.${name}.tmp`);
      await fs.writeFile(tmp, text);
      await fs.rename(tmp, path.join(dir, name));
    } catch (e) {
      this.#o.logger.warn({ err: errorMessage(e), file: name }, 'local state copy not written');
    }
  }
}

/** node → record of `current` where it differs from `base` (null: gone). */
function diff(current: ReadonlyMap<string, string>, base: ReadonlyMap<string, string>): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const [n, r] of current) if (base.get(n) !== r) out.set(n, r);
  for (const n of base.keys()) if (!current.has(n)) out.set(n, null);
  return out;
}

/** The client-node calls of {@link apiStateIo}. */
export type StateApi = Pick<
  k8s.CoreV1Api,
  'readNamespacedConfigMap' | 'replaceNamespacedConfigMap' | 'createNamespacedConfigMap'
>;

/**
 * The {@link StateIo} of the fault center: reads with client-node, writes through one {@link ObjectWriteQueue} per
 * object (the agent's backoff and outage recovery, docs/fault-center.md "API outages").
 */
export function apiStateIo(
  api: StateApi,
  namespace: string,
  backoff: BackoffOptions,
  onError: (name: string, e: unknown) => void,
  writer: ObjectWriter<ConfigMapBody> = configMapWriter(api),
  /** timers and waits of the queues (default: the process clock); `now()` is read for intervals only */
  clock?: QueueClock,
): StateIo & { close(): void } {
  const queues = new Map<
    string,
    { queue: ObjectWriteQueue<ConfigMapBody>; waiting: Map<ConfigMapBody, (ok: boolean) => void> }
  >();
  const queueOf = (name: string) => {
    let q = queues.get(name);
    if (q === undefined) {
      const waiting = new Map<ConfigMapBody, (ok: boolean) => void>();
      const settle = (body: ConfigMapBody, ok: boolean): void => {
        const resolve = waiting.get(body);
        waiting.delete(body);
        resolve?.(ok);
      };
      const queue = new ObjectWriteQueue<ConfigMapBody>({
        ...(clock ? { clock } : {}),
        writer,
        backoff,
        onWritten: (body) => settle(body, true),
        onError: (e, info) => {
          onError(name, e);
          // refused as invalid (4xx other than the retried ones): dropped by the queue
          if (info.retryInMs === undefined) for (const body of [...waiting.keys()]) settle(body, false);
        },
      });
      q = { queue, waiting };
      queues.set(name, q);
    }
    return q;
  };
  return {
    async read(name) {
      try {
        const cm = await api.readNamespacedConfigMap({ name, namespace });
        return { ...(cm.data ? { data: cm.data } : {}), ...(cm.binaryData ? { binaryData: cm.binaryData } : {}) };
      } catch (e) {
        if (statusOf(e) === 404) return undefined;
        throw e;
      }
    },
    write(body) {
      const q = queueOf(body.metadata.name);
      return new Promise<boolean>((resolve) => {
        q.waiting.set(body, resolve);
        q.queue.submit(body);
      });
    },
    close() {
      for (const { queue, waiting } of queues.values()) {
        queue.close();
        for (const resolve of waiting.values()) resolve(false);
        waiting.clear();
      }
    },
  };
}
