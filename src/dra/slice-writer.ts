/**
 * Writes the node's ResourceSlices (issue [DRA] item 2) with the device-info discipline (src/kube/device-info-
 * publisher.ts): the store's change only notes that something may have changed; the slices are built from the snapshot
 * when a write can be due, compared with what the live slices hold, and written only when they differ — an idle node
 * writes nothing. Writes go through one {@link ObjectWriteQueue} for the pool (last state wins, backoff with jitter,
 * the agent's `ApiRecovery` wake, 404 → create, 409 → re-read), at least {@link DEFAULT_MIN_INTERVAL_MS} apart, so a
 * fault storm costs a few pool writes a second, not one per event.
 *
 * A pool write (one attempt): list the node's slices when they are not known (first attempt, after a 404/409, after
 * a foreign change), build, and when anything differs: bump the pool's generation past every live slice's, PUT every
 * slice (conditional on its resourceVersion) or POST the ones that do not exist, all with the same generation and
 * `resourceSliceCount`, then DELETE the slices the pool no longer has (the API's rule: a consumer uses only the
 * highest generation of a pool and sees from the count whether it has all of it). One exception, the reference
 * controller's (k8s.io/dynamic-resource-allocation `resourceslice`): when the pool has several slices and only one of
 * them changes, that one is updated at the generation it has — one write that consumers see whole — instead of all
 * of them. A pool of one slice (a node without partitions) gets a new generation with every change. A watch on the
 * node's slices notices a slice an operator (or anyone) changed or deleted, and puts it back.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { SYSTEM_CLOCK } from '../core/clock.js';
import { DRA_DRIVER } from '../core/dra-devices.js';
import { errorMessage, statusOf } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { ListWatch, type WatchFn } from '../kube/list-watch.js';
import { ObjectWriteQueue, type BackoffOptions, type QueueClock, type WriteQueueStats } from '../kube/write-queue.js';
import type { DraApi } from './dra-api.js';
import { TaintTimes } from './device-taints.js';
import { RESOURCE_API_VERSION, RESOURCE_SLICES_PATH, type ResourceSlice, type ResourceSliceSpec } from './dra-types.js';
import { sliceName } from './resource-slices.js';

/** Minimum time between two pool writes (monotonic). The fault → taint target is p99 < 1.2 s. */
export const DEFAULT_MIN_INTERVAL_MS = 200;
/** Most slices of one node's pool listed (a node has at most 16 chips: ≤ 8 slices with partitions). */
const MAX_LISTED = 256;

/** Options of a {@link ResourceSliceWriter}. */
export interface ResourceSliceWriterOptions {
  readonly api: DraApi;
  /** Watch of the node's slices (foreign changes and deletions); absent: noticed at the next write. */
  readonly watch?: WatchFn;
  readonly nodeName: string;
  /**
   * The slices of the current snapshot (`slicesOf(poolOf(store.snapshot(), …, times), node)`), built when a write
   * can be due. `times` keeps the taints' `timeAdded`.
   */
  readonly build: (times: TaintTimes) => ResourceSliceSpec[];
  readonly clock?: Clock;
  readonly minIntervalMs?: number;
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  readonly logger?: Logger;
  /** After every pool write that changed something: the generation written and the slices' names. */
  readonly onWritten?: (info: { readonly generation: number; readonly slices: readonly string[] }) => void;
}

/** Counters (metrics, tests, bench). */
export interface SliceWriterStats extends WriteQueueStats {
  /** Pool writes that changed something (a generation written). */
  poolWrites: number;
  /** Slice PUTs, POSTs and DELETEs that succeeded. */
  sliceWrites: number;
  /** Builds that found the live slices already right (no write). */
  unchanged: number;
  /** Lists of the node's slices. */
  lists: number;
  /** Changes of our slices by someone else, seen by the watch (put back). */
  foreignChanges: number;
}

/**
 * A slice spec in comparable form: keys sorted, empty lists and maps left out (the API server omits them), the
 * pool's generation left out (it is what a write changes).
 */
export function canonicalSpec(spec: ResourceSliceSpec): string {
  const { pool, ...rest } = spec;
  return JSON.stringify(canonical({ ...rest, pool: { ...pool, generation: 0 } }));
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x === undefined || x === null) continue;
      if (Array.isArray(x) && x.length === 0) continue;
      if (typeof x === 'object' && !Array.isArray(x) && Object.keys(x).length === 0) continue;
      out[k] = canonical(x);
    }
    return out;
  }
  return v;
}

/** The pool writer. */
export class ResourceSliceWriter {
  readonly #o: ResourceSliceWriterOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #minInterval: number;
  readonly #queue: ObjectWriteQueue<number>;
  readonly #watch: ListWatch<ResourceSlice> | undefined;
  readonly #fieldSelector: string;
  readonly #times = new TaintTimes();
  /** The node's slices as last listed or written (name → slice); undefined: to be listed first. */
  #live: Map<string, ResourceSlice> | undefined;
  /** Canonical spec of each slice as the live object holds it by our last list or write, or as sent now. */
  readonly #known = new Map<string, string>();
  readonly #sent = new Map<string, string>();
  #generation = 0;
  #seq = 0;
  #evalQueued = false;
  #busy = false;
  #again = false;
  #lastWriteAt: number | undefined;
  #timer: TimerHandle | undefined;
  #stopped = false;
  readonly #stats = { poolWrites: 0, sliceWrites: 0, unchanged: 0, lists: 0, foreignChanges: 0 };
  #idle: (() => void)[] = [];

  constructor(options: ResourceSliceWriterOptions) {
    this.#o = options;
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#minInterval = options.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS;
    this.#fieldSelector = `spec.nodeName=${options.nodeName},spec.driver=${DRA_DRIVER}`;
    // the queue's spacing, backoff and due times run on the clock's monotonic time
    const qclock: QueueClock = this.#clock;
    this.#queue = new ObjectWriteQueue<number>({
      clock: qclock,
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.random ? { random: options.random } : {}),
      writer: {
        update: () => this.#attempt(),
        create: () => this.#attempt(),
        reconcile: (t) => Promise.resolve(t), // the attempt after a 409 lists the slices again
      },
      onError: (e, info) => {
        this.#log.warn(
          { pool: options.nodeName, status: info.status, retryInMs: info.retryInMs, error: errorMessage(e) },
          info.retryInMs === undefined ? 'ResourceSlice write rejected' : 'ResourceSlice write failed; retrying',
        );
      },
    });
    if (options.watch !== undefined) {
      this.#watch = new ListWatch<ResourceSlice>({
        what: `resourceslices of node ${options.nodeName}`,
        path: RESOURCE_SLICES_PATH,
        fieldSelector: this.#fieldSelector,
        watch: options.watch,
        clock: qclock,
        ...(options.backoff ? { backoff: options.backoff } : {}),
        ...(options.random ? { random: options.random } : {}),
        logger: this.#log,
        maxItems: MAX_LISTED,
        list: async () => {
          const l = await options.api.listResourceSlices(this.#fieldSelector);
          return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
        },
        onSync: (items) => {
          const names = new Set(items.map((s) => s.metadata.name ?? ''));
          const missing = [...this.#known.keys()].some((n) => !names.has(n));
          if (missing || items.some((s) => this.#foreign(s))) this.#foreignChange('listed');
        },
        onEvent: (type, s) => {
          const name = s.metadata.name ?? '';
          if (type === 'DELETED' ? this.#known.has(name) && !this.#deleting.has(name) : this.#foreign(s)) {
            this.#foreignChange(type === 'DELETED' ? `deleted ${name}` : `changed ${name}`);
          }
        },
      });
    }
  }

  /** Names being deleted by us (their DELETED events are ours). */
  readonly #deleting = new Set<string>();

  /** Starts the watch and the first pool write. */
  async start(): Promise<void> {
    await this.#watch?.start();
    this.changed();
  }

  /** Stops: no write starts from now on (one in flight completes). */
  stop(): void {
    this.#stopped = true;
    this.#watch?.stop();
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue.close();
    this.#settleIdle();
  }

  /** The state may have changed: decide (in a microtask; calls of one tick coalesce). Never waits, never throws. */
  changed(): void {
    if (this.#stopped || this.#evalQueued) return;
    this.#evalQueued = true;
    queueMicrotask(() => {
      this.#evalQueued = false;
      this.#evaluate();
    });
  }

  /** Resolves when no decision, timer or write is pending (tests, the bench). */
  whenIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Counters. */
  get stats(): SliceWriterStats {
    return { ...this.#queue.stats, ...this.#stats };
  }

  /** The generation of the last pool write (or of the live slices listed). */
  get generation(): number {
    return this.#generation;
  }

  #isIdle(): boolean {
    return !this.#evalQueued && !this.#busy && this.#timer === undefined && !this.#queue.busy;
  }

  #settleIdle(): void {
    if (!this.#isIdle() && !this.#stopped) return;
    const w = this.#idle;
    this.#idle = [];
    for (const f of w) f();
  }

  #evaluate(): void {
    if (this.#stopped) return;
    if (this.#busy || this.#queue.busy) {
      this.#again = true; // decided again once the write in flight is done
      return;
    }
    const now = this.#clock.monotonic();
    const at = this.#lastWriteAt === undefined ? now : this.#lastWriteAt + this.#minInterval;
    if (now < at) {
      if (this.#timer === undefined) {
        this.#timer = this.#clock.setTimeout(() => {
          this.#timer = undefined;
          this.#evaluate();
        }, at - now);
      }
      return;
    }
    this.#busy = true;
    this.#queue.submit(++this.#seq);
    // the queue runs the attempt in a microtask; #busy is cleared by the attempt's end (or by a dropped state)
    void this.#queue.whenIdle().then(() => {
      this.#busy = false;
      if (this.#again) {
        this.#again = false;
        this.#evaluate();
      }
      this.#settleIdle();
    });
  }

  /** Whether a slice from the API server differs from what we know we wrote (or are writing). */
  #foreign(s: ResourceSlice): boolean {
    const name = s.metadata.name ?? '';
    if (s.spec?.driver !== DRA_DRIVER || s.spec.nodeName !== this.#o.nodeName) return false;
    const c = canonicalSpec(s.spec);
    return c !== this.#known.get(name) && c !== this.#sent.get(name);
  }

  #foreignChange(what: string): void {
    if (this.#stopped) return;
    this.#stats.foreignChanges++;
    this.#log.warn({ pool: this.#o.nodeName, what }, 'ResourceSlice changed by someone else: written again');
    this.#live = undefined; // the next attempt lists the slices and compares with what they hold now
    this.changed();
  }

  async #list(): Promise<Map<string, ResourceSlice>> {
    const l = await this.#o.api.listResourceSlices(this.#fieldSelector);
    if (l.items.length > MAX_LISTED) throw new Error(`${l.items.length} ResourceSlices listed, over ${MAX_LISTED}`);
    this.#stats.lists++;
    const live = new Map<string, ResourceSlice>();
    this.#known.clear();
    for (const s of l.items) {
      // a field selector the server ignored must not make us adopt another node's slices
      if (s.spec?.nodeName !== this.#o.nodeName || s.spec.driver !== DRA_DRIVER) continue;
      const name = s.metadata.name ?? '';
      live.set(name, s);
      this.#known.set(name, canonicalSpec(s.spec));
      this.#generation = Math.max(this.#generation, s.spec.pool?.generation ?? 0);
      for (const d of s.spec.devices ?? []) this.#times.adopt(d.name, d.taints);
    }
    return live;
  }

  /** One pool write (see the module comment). Throws the first failed request (the queue retries). */
  async #attempt(): Promise<void> {
    if (this.#stopped) return;
    try {
      this.#live ??= await this.#list();
      const live = this.#live;
      const specs = this.#o.build(this.#times);
      const names = specs.map((_, i) => sliceName(this.#o.nodeName, i));
      const wanted = specs.map(canonicalSpec);
      const extra = [...live.keys()].filter((n) => !names.includes(n));
      const gens = new Set([...live.values()].map((s) => s.spec.pool?.generation ?? 0));
      const changed = names.flatMap((n, i) => (this.#known.get(n) === wanted[i] ? [] : [i]));
      const whole = extra.length === 0 && gens.size <= 1 && names.every((n) => live.has(n));
      if (changed.length === 0 && whole) {
        this.#stats.unchanged++;
        return;
      }
      // A change within one slice of a pool of several is one update that consumers see whole, at the generation
      // they have (k8s.io/dynamic-resource-allocation's resourceslice controller does the same): a fault on a chip
      // with partitions rewrites its slice, not the pool's 10. Anything else bumps the generation of every slice —
      // also every change of a one-slice pool, which costs the same one write.
      const single = whole && names.length > 1 && changed.length === 1;
      const generation = single ? this.#generation : this.#generation + 1;
      const indices = single ? changed : names.map((_, i) => i);
      for (const i of indices) this.#sent.set(names[i]!, wanted[i]!);
      const results = await Promise.allSettled(
        indices.map(async (i) => {
          const spec = specs[i]!;
          const name = names[i]!;
          const prev = live.get(name);
          const body: ResourceSlice = {
            apiVersion: RESOURCE_API_VERSION,
            kind: 'ResourceSlice',
            metadata: {
              name,
              ...(prev?.metadata.resourceVersion ? { resourceVersion: prev.metadata.resourceVersion } : {}),
            },
            spec: { ...spec, pool: { ...spec.pool, generation } },
          };
          const written = prev
            ? await this.#o.api.replaceResourceSlice(body)
            : await this.#o.api.createResourceSlice(body);
          live.set(name, written);
          this.#known.set(name, wanted[i]!);
          this.#stats.sliceWrites++;
        }),
      );
      this.#generation = generation;
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      for (const name of extra) {
        this.#deleting.add(name);
        this.#known.delete(name);
        try {
          await this.#o.api.deleteResourceSlice(name);
          this.#stats.sliceWrites++;
        } catch (e) {
          if (statusOf(e) !== 404) throw e;
        } finally {
          this.#deleting.delete(name);
        }
        live.delete(name);
      }
      this.#stats.poolWrites++;
      this.#lastWriteAt = this.#clock.monotonic();
      this.#log.info(
        { pool: this.#o.nodeName, generation, slices: names.length, written: indices.length },
        'ResourceSlices written',
      );
      this.#o.onWritten?.({ generation, slices: names });
    } catch (e) {
      // what the server holds is not known any more: the retry lists it again and writes everything
      this.#live = undefined;
      this.#lastWriteAt = this.#clock.monotonic();
      throw e;
    } finally {
      this.#sent.clear();
    }
  }
}
