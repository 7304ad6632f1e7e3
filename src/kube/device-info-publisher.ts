/**
 * The device-info ConfigMap as a projection of the state store (spec G.2, H): builds the content from the store's
 * snapshot, decides when to write (H.4), and writes through one {@link ObjectWriteQueue}. Every write attempt
 * reconciles `ManuallySeparateNPU` (G.2) against the newest copy of the live object it knows — the answer to its
 * last write, the watch's list and events — and writes with that copy's resourceVersion, so a name an operator
 * deleted releases the chip and is never written back. The object is read (GET) only when no copy is known (no
 * watch) or the last write answered 409 (issue [P] item 4: no read before each write); the write of a stale copy is
 * refused by the API server, so a copy is never written over an edit it did not reconcile. A watch on the object
 * makes an operator's edit take effect within the 1 s spacing instead of at the next cycle, and hand-edited garbage
 * is reported once and overwritten with a valid ConfigMap. Spacing and heartbeat are timed on the monotonic clock,
 * the content's times on the wall clock.
 */
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import {
  checkManualValue,
  MAX_OPERATOR_VALUE_CHARS,
  parseManualNames,
  parseReasonsJson,
  type Transition,
  type UpgradeReason,
} from '../faults/index.js';
import type { RunMode } from '../core/chips.js';
import { chipName } from '../core/device-names.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { rejectedInputEvent, releaseUpgradeFaultEvent } from './agent-events.js';
import { boundedText } from '../core/text.js';
import {
  buildDeviceInfo,
  buildDeviceInfoSnapshot,
  deviceInfoConfigMap,
  deviceInfoConfigMapName,
  DEVICE_INFO_NAMESPACE,
  KEY_DEVICE_INFO,
  KEY_MANUALLY_SEPARATE,
  KEY_SWITCH_INFO,
  KEY_UPGRADE_REASON,
  verifyDeviceInfoCfg,
  type DeviceInfoContent,
  type DeviceInfoView,
} from './device-info.js';
import type { EventSink } from './event-recorder.js';
import type { StartupValues } from '../state/restore.js';
import type { NodeStateStore } from '../state/store.js';
import { ListWatch, type WatchFn } from './list-watch.js';
import {
  decideWrite,
  HEARTBEAT_INTERVAL_MS,
  MIN_WRITE_INTERVAL_MS,
  type WritePolicyTiming,
  type WrittenSnapshot,
} from './write-policy.js';
import {
  ObjectWriteQueue,
  systemQueueClock,
  type BackoffOptions,
  type QueueClock,
  type WriteQueueStats,
} from './write-queue.js';
import { statusOf } from '../core/errors.js';

/** Field manager of our writes; other managers in `managedFields` name who edited the object. */
export const AGENT_FIELD_MANAGER = 'ascend-npu-agent';
/** Largest ConfigMap value read back (the API server's own limit is 1 MiB for the whole object). */
export const MAX_LIVE_VALUE_CHARS = MAX_OPERATOR_VALUE_CHARS;
/** Characters and JSON bytes of a refused value, and JSON bytes of the reasons, in its log line (under 1.5 KiB). */
const LOGGED_VALUE_CHARS = 200;
const LOGGED_VALUE_BYTES = 400;
const LOGGED_WHY_BYTES = 640;

/** A chip as the separation logic needs it. */
export interface SeparationChip {
  readonly logicId: number;
  readonly phyId: number;
  /** Public device name. */
  readonly name: string;
}

/** What the publisher needs of the state store for G.2 (see {@link storeSeparationHost}). */
export interface SeparationHost {
  /** Every chip of the node. */
  chips(): readonly SeparationChip[];
  /** Logic ids in the manual-separation cache (the current snapshot: every input is published at once). */
  separated(): readonly number[];
  /**
   * Operator release (spec G.2): published in one store cycle before it returns, so the ConfigMap built next is
   * built from the new snapshot; its transitions reach the publisher through the store's change listener
   * ({@link DeviceInfoPublisher.noteTransitions}).
   */
  release(logicId: number): void;
  /**
   * The ConfigMap holds `value` by a successful write (or the start-up read), with the names of these separated
   * chips: the engine's "written once" mark (G.2 `firstHandle`), so the durable state says what the ConfigMap
   * holds, and the confirmed value the state file keeps. Optional: the publisher's own record of the last
   * successful write decides releases either way.
   */
  confirmed?(logicIds: readonly number[], value: string): void;
}

/** The store as {@link storeSeparationHost} uses it. */
export type SeparationStore = Pick<NodeStateStore, 'snapshot' | 'release' | 'confirmWritten'>;

/** A {@link SeparationHost} over the state store. */
export function storeSeparationHost(
  store: SeparationStore,
  runMode: RunMode,
  publicName: (name: string) => string = (n) => n,
): SeparationHost {
  return {
    chips: () =>
      store
        .snapshot()
        .chips.map((c) => ({ logicId: c.logicId, phyId: c.phyId, name: publicName(chipName(runMode, c.phyId)) })),
    separated: () =>
      store
        .snapshot()
        .chips.filter((c) => c.manuallySeparated)
        .map((c) => c.logicId),
    release: (id) => store.release(id),
    confirmed: (ids, value) => store.confirmWritten(ids, value),
  };
}

/** The ConfigMap calls the publisher makes (a `CoreV1Api` has them). */
export type DeviceInfoApi = Pick<
  k8s.CoreV1Api,
  'readNamespacedConfigMap' | 'replaceNamespacedConfigMap' | 'createNamespacedConfigMap' | 'listNamespacedConfigMap'
>;

export type { StartupValues };

/** What {@link DeviceInfoPublisherOptions.lateStartup} returns. */
export interface LateStartupResult {
  /**
   * The `ManuallySeparateNPU` value known to be live (as `confirmedManual` at start): the clean live value, or when
   * the live value was rejected, the value of our last write (state file) or what `UpgradeFaultReason` implies.
   */
  readonly confirmedManual: string;
}

/** Options of a {@link DeviceInfoPublisher}. */
export interface DeviceInfoPublisherOptions {
  readonly api: DeviceInfoApi;
  /**
   * Where a decision due at a timer (the end of the minimum interval, the heartbeat) runs: the agent's output lane
   * (`store.later`), so that the write it starts does not hold up a fault batch of the same turn (issue [P] item 5).
   * Default: in the timer's callback.
   */
  readonly defer?: (run: () => void) => void;
  /** Watch of the object (client-node's, or a kubeconfig to build it); absent: edits are seen at the next write. */
  readonly watch?: WatchFn | k8s.KubeConfig;
  readonly nodeName: string;
  readonly runMode: RunMode;
  /** The view at `nowMs` of the store's snapshot (see `deviceInfoViewOf`); `previousDeviceList` is added here. */
  readonly view: (nowMs: number) => Omit<DeviceInfoView, 'previousDeviceList'>;
  readonly separation: SeparationHost;
  readonly events?: EventSink;
  /**
   * The `ManuallySeparateNPU` value known to be live at start (the G.3 read, or the state file's last written
   * value). Names in it count as written: deleting one releases the chip. Undefined: the start-up read failed; the
   * first successful read calls {@link DeviceInfoPublisherOptions.lateStartup} and takes its value.
   */
  readonly confirmedManual?: string;
  /**
   * Called with the live values when the start-up read had failed (see `confirmedManual`); returns what the
   * restore made of them (`NodeStateStore.restore`, published before it returns): `confirmedManual`, the value whose
   * names count as live from now on — exactly what a start-up read would have given. Without the callback: the live
   * value when the G.2 rule accepts it, else the store's separations.
   */
  readonly lateStartup?: (values: StartupValues) => LateStartupResult;
  readonly clock?: QueueClock;
  readonly timing?: WritePolicyTiming;
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  readonly logger?: Logger;
  /** Called after every successful write (persistence, metrics). */
  readonly onWritten?: (content: DeviceInfoContent, atMs: number) => void;
  /**
   * Public-name customisation (spec L.6): the view is built with public names (its `publicName`), while the
   * separation host, the store and the state file keep the inner ones; these map what the ConfigMap holds (our
   * writes, an operator's edits, the late G.3 read) back before it is parsed. Identity by default.
   */
  readonly innerNames?: { readonly inner: (value: string) => string; readonly innerReasons: (value: string) => string };
}

/** Counters beyond the queue's. */
export interface PublisherStats extends WriteQueueStats {
  /** GETs of the object by write attempts (no copy known, or the last write answered 409). */
  reads: number;
  /** Chips released because an operator deleted their name. */
  operatorReleases: number;
  /** Hand-edited values reported (one Event per distinct key and value). */
  rejectedInputs: number;
  /** Foreign changes of the object seen by the watch. */
  foreignEdits: number;
}

const MAX_REPORTED = 64;
/** resourceVersions remembered as already handled (our writes, and the copies our writes were based on). */
const OWN_RVS = 16;
/** Contents of writes sent since the last success (in flight, or failed: the server may have committed them). */
const SENT_CONTENTS = 8;
/** Decide-and-write rounds of {@link DeviceInfoPublisher.flush}. */
const FLUSH_ROUNDS = 4;

/** Publishes the device-info ConfigMap. */
export class DeviceInfoPublisher {
  readonly #o: DeviceInfoPublisherOptions;
  readonly #clock: QueueClock;
  readonly #log: Logger;
  readonly #name: string;
  readonly #queue: ObjectWriteQueue<number>;
  readonly #watch: ListWatch<k8s.V1ConfigMap> | undefined;
  #last: WrittenSnapshot | undefined;
  #lastDeviceList: Readonly<Record<string, string>> | undefined;
  /** Phy ids whose names are in the live ConfigMap by our last successful write (or the start-up read). */
  #confirmed: Set<number> | undefined;
  /**
   * resourceVersions whose objects need nothing more: our writes' (answered, or seen by content), and those of the
   * copies our writes were based on (reconciled). A watch event carrying one is no news.
   */
  readonly #ownRvs: string[] = [];
  /**
   * The newest copy of the live object known: the answer to our last write, the watch's list or events, a GET.
   * Undefined: none known (read before the next write); null: the object is absent (created by the next write).
   */
  #live: k8s.V1ConfigMap | null | undefined;
  /** Bumped at every change of {@link #live} by the watch: a write's answer does not replace a newer copy. */
  #liveSeq = 0;
  /** The last write answered 409: {@link #live} is stale, the next attempt reads the object first. */
  #stale = false;
  #reads = 0;
  /** Fingerprint ({@link contentFingerprint}) of the content of the last successful write. */
  #writtenContent: string | undefined;
  /** Fingerprints of the contents sent since the last successful write. */
  #sentContents: string[] = [];
  /** Write attempts begun: before the first one, what the watch sees is reconciled by it anyway. */
  #attempts = 0;
  readonly #reported = new Set<string>();
  #pendingRemoved = new Map<string, UpgradeReason[]>();
  #force = false;
  #writing = false;
  /** A decision was asked for while a write ran (or waited in the queue): decide again after it. */
  #dirty = false;
  /** A state was handed to the queue and its attempt has not begun, or a failed attempt waits for its retry. */
  #queued = false;
  #evalQueued = false;
  /** The next decision also builds the content if nothing changed (the one after a successful write). */
  #verify = false;
  /**
   * Counts {@link changed} calls. `#clean` is the count at the last build whose content was written, or found
   * equal (spec H.4 `same`) to what was written: while the two are equal, nothing has changed since, and the
   * decision needs no new build (spec H.4 writes at most once a second, while a fault storm changes the state
   * thousands of times a second).
   */
  #changes = 0;
  #clean = -1;
  #timer: unknown;
  #timerAt: number | undefined;
  #seq = 0;
  #stopped = false;
  /** {@link flush} runs: the 1 s spacing is not waited for. */
  #flushing = false;
  #operatorReleases = 0;
  #rejectedInputs = 0;
  #foreignEdits = 0;

  constructor(options: DeviceInfoPublisherOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemQueueClock;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#name = deviceInfoConfigMapName(options.nodeName);
    if (options.confirmedManual !== undefined) this.#confirm(this.#phys(options.confirmedManual));
    this.#queue = new ObjectWriteQueue<number>({
      clock: this.#clock,
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.random ? { random: options.random } : {}),
      writer: {
        update: () => this.#attempt('update'),
        create: () => this.#attempt('create'),
        // 409: the attempt itself reads the object first (its copy is marked stale) and builds the content then
        reconcile: (t) => Promise.resolve(t),
      },
      onError: (e, info) => {
        // A retry waits in the queue: it reconciles the newest copy (read again after a 409) and builds the content
        // of its time.
        if (info.retryInMs !== undefined) this.#queued = true;
        this.#log.warn(
          { configMap: this.#name, status: info.status, retryInMs: info.retryInMs, error: String(e) },
          info.retryInMs === undefined ? 'device-info write rejected' : 'device-info write failed; retrying',
        );
      },
    });
    if (options.watch !== undefined) {
      this.#watch = new ListWatch<k8s.V1ConfigMap>({
        what: `configmap ${DEVICE_INFO_NAMESPACE}/${this.#name}`,
        path: `/api/v1/namespaces/${DEVICE_INFO_NAMESPACE}/configmaps`,
        fieldSelector: `metadata.name=${this.#name}`,
        watch: options.watch,
        clock: this.#clock,
        ...(options.backoff ? { backoff: options.backoff } : {}),
        ...(options.random ? { random: options.random } : {}),
        logger: this.#log,
        maxItems: 1,
        list: async () => {
          const l = await options.api.listNamespacedConfigMap({
            namespace: DEVICE_INFO_NAMESPACE,
            fieldSelector: `metadata.name=${this.#name}`,
          });
          return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
        },
        onSync: (items) => {
          const cm = items[0];
          this.#observe(cm ?? null);
          if (cm === undefined) this.#foreign('absent');
          else if (!this.#isOwn(cm)) this.#foreign('changed');
        },
        onEvent: (type, cm) => {
          this.#observe(type === 'DELETED' ? null : cm);
          if (type === 'DELETED') this.#foreign('deleted');
          else if (!this.#isOwn(cm)) this.#foreign('changed');
        },
      });
    }
  }

  /** Starts the watch and the first write. */
  async start(): Promise<void> {
    await this.#watch?.start();
    this.changed();
  }

  /**
   * The state changed (after a cycle): decide again whether to write. Returns at once; only notes the change. The
   * content is built when a write can be due (the last write is at least the minimum interval old), not per call.
   */
  changed(): void {
    this.#changes++;
    this.#schedule();
  }

  /** Decides again in a microtask (calls of one tick coalesce). */
  #schedule(): void {
    if (this.#stopped || this.#evalQueued) return;
    this.#evalQueued = true;
    queueMicrotask(() => {
      this.#evalQueued = false;
      this.#evaluate();
    });
  }

  /**
   * Transitions of a cycle: removed upgrade reasons that call for the K.2 Event are collected and reported by one
   * Event after the next successful write.
   */
  noteTransitions(transitions: readonly Transition[]): void {
    // Called for every state snapshot: the chip names are looked up only when a transition asks for the Event.
    if (!transitions.some((t) => t.kind === 'reasons-removed' && t.k8sEvent)) return;
    const names = new Map(this.#o.separation.chips().map((c) => [c.logicId, c.name]));
    for (const t of transitions) {
      if (t.kind !== 'reasons-removed' || !t.k8sEvent) continue;
      const name = names.get(t.logicId) ?? chipName(this.#o.runMode, t.logicId);
      const list = this.#pendingRemoved.get(name) ?? [];
      list.push(...t.reasons);
      this.#pendingRemoved.set(name, list.slice(-64));
    }
  }

  /** The `ManuallySeparateNPU` value of the last successful write (persisted with the engine state). */
  confirmedManualSeparation(): string | undefined {
    if (this.#confirmed === undefined) return undefined;
    const byPhy = new Map(this.#o.separation.chips().map((c) => [c.phyId, c.name]));
    return [...this.#confirmed].map((p) => byPhy.get(p) ?? chipName(this.#o.runMode, p)).join(',');
  }

  /** Queue counters plus the publisher's own. */
  get stats(): PublisherStats {
    return {
      ...this.#queue.stats,
      reads: this.#reads,
      operatorReleases: this.#operatorReleases,
      rejectedInputs: this.#rejectedInputs,
      foreignEdits: this.#foreignEdits,
    };
  }

  /** Resolves when no write waits or runs (a retry waiting for its timer counts as waiting). */
  whenIdle(): Promise<void> {
    return this.#queue.whenIdle();
  }

  /**
   * Shutdown flush: a change (or a foreign edit) still waiting for the end of the 1 s spacing (spec H.4) is not in
   * the write queue yet, so {@link whenIdle} alone would return without it. Writes it now, ignoring the spacing
   * (the process is going away), and resolves when no write waits or runs. The caller bounds the wait (a retry
   * waiting for the API server counts as waiting).
   */
  async flush(): Promise<void> {
    if (this.#stopped) return this.#queue.whenIdle();
    this.#flushing = true;
    try {
      // A write in flight, then what changed during it: a few rounds suffice (no engine cycle runs at shutdown).
      for (let round = 0; round < FLUSH_ROUNDS && !this.#stopped; round++) {
        if (round > 0 && !this.#unwritten()) break;
        this.#evaluate();
        await this.#queue.whenIdle();
      }
    } finally {
      this.#flushing = false;
    }
  }

  /** Whether something noted since the last write (or found equal) may still need a write. */
  #unwritten(): boolean {
    return this.#force || this.#changes !== this.#clean || this.#queued || this.#writing;
  }

  /** Stops watching and writing (a write in flight completes). */
  stop(): void {
    this.#stopped = true;
    this.#watch?.stop();
    this.#disarm();
    this.#queue.close();
  }

  /** A `ManuallySeparateNPU` value as the ConfigMap holds it → inner names (spec L.6). */
  #inner(value: string): string {
    return this.#o.innerNames?.inner(value) ?? value;
  }

  #phys(value: string): Set<number> {
    return new Set(parseManualNames(value, this.#o.runMode).phyIds);
  }

  /** Records the phy ids whose names are live by our write or the start-up read, and tells the store. */
  #confirm(phys: Set<number>): void {
    this.#confirmed = phys;
    const separated = new Set(this.#o.separation.separated());
    const ids = this.#o.separation
      .chips()
      .filter((c) => phys.has(c.phyId) && separated.has(c.logicId))
      .map((c) => c.logicId);
    this.#o.separation.confirmed?.(ids, this.confirmedManualSeparation() ?? '');
  }

  /**
   * Whether the object the watch shows is one of our writes: by its resourceVersion when the write's response has
   * told it, else by its content. The watch event of a write may arrive before the write's response (a real API
   * server orders the two connections in no way), so an object whose content equals what we wrote last or are
   * writing is ours whatever its resourceVersion; its resourceVersion is then remembered as ours. An operator's edit
   * changes the content (a deleted name, a changed key, label or annotation) and is never taken for ours; one that
   * restores exactly our content leaves nothing to reconcile.
   */
  #isOwn(cm: k8s.V1ConfigMap): boolean {
    const rv = cm.metadata?.resourceVersion;
    if (rv !== undefined && this.#ownRvs.includes(rv)) return true;
    if (this.#writtenContent === undefined && this.#sentContents.length === 0) return false;
    const fp = contentFingerprint(cm);
    if (fp !== this.#writtenContent && !this.#sentContents.includes(fp)) return false;
    if (rv !== undefined) this.#ownRv(rv);
    return true;
  }

  /**
   * A copy of the object from the watch (null: absent, deleted): the newest known unless its resourceVersion is one
   * already handled (a late event of our own write, or of a copy a write of ours was based on).
   */
  #observe(cm: k8s.V1ConfigMap | null): void {
    const rv = cm?.metadata?.resourceVersion;
    if (rv !== undefined && this.#ownRvs.includes(rv)) return;
    this.#live = cm;
    this.#liveSeq++;
  }

  #ownRv(rv: string): void {
    if (this.#ownRvs.includes(rv)) return;
    this.#ownRvs.push(rv);
    if (this.#ownRvs.length > OWN_RVS) this.#ownRvs.shift();
  }

  #foreign(what: 'absent' | 'deleted' | 'changed'): void {
    if (this.#stopped) return;
    if (this.#attempts === 0) {
      // Nothing sent yet: the first write is due and its attempt reads the object first (G.2) — not an edit to
      // report (at a restart the object holds the previous process's write, at the first start it is absent).
      this.changed();
      return;
    }
    this.#foreignEdits++;
    this.#log.info({ configMap: this.#name, what }, 'device-info ConfigMap edited by someone else; reconciling');
    this.#force = true;
    // someone else's write went through: a retry waiting after a conflict is tried now (issue [T] item 2)
    this.#queue.retrySoon();
    this.changed();
  }

  /** The view at wall-clock time `wallMs`, with the DeviceList last written (spec H.3: its keys are kept). */
  #view(wallMs: number): DeviceInfoView {
    const view = this.#o.view(wallMs);
    return this.#lastDeviceList ? { ...view, previousDeviceList: this.#lastDeviceList } : view;
  }

  /** The content at wall-clock time `wallMs`. */
  #content(wallMs: number): DeviceInfoContent {
    return buildDeviceInfo(this.#view(wallMs));
  }

  /**
   * spec H.4 as {@link decideWrite} decides it, building the content only when the decision depends on it: a change
   * (or a foreign edit) within the minimum interval is decided when the interval ends; without a change since the
   * last written (or found equal) content, the content is the same; a foreign edit is written regardless.
   */
  #evaluate(): void {
    if (this.#stopped) return;
    const now = this.#clock.monotonic(); // H.4 spacing and heartbeat; the content's times are wall-clock

    const last = this.#last;
    const minInterval = this.#flushing ? 0 : (this.#o.timing?.minIntervalMs ?? MIN_WRITE_INTERVAL_MS);
    const minAt = last === undefined ? now : last.writtenAtMs + minInterval;
    if (this.#writing || this.#queued) {
      // decided again when the write in flight (or waiting in the queue) is done (keeps writes ≥ 1 s apart)
      this.#dirty = true;
      if (this.#queued && this.#force) {
        // The queued write reconciles the copy this edit brought (G.2; read again if it conflicts) and overwrites
        // it: the edit is handled once it may be written (as a submission at that time would have been superseded
        // by the queued one).
        if (now >= minAt) this.#force = false;
        else this.#arm(minAt, now);
      }
      return;
    }
    const verify = this.#verify;
    this.#verify = false;
    if (last === undefined) {
      this.#submit(); // spec H.4: the first write is always due
      return;
    }
    const changed = this.#changes !== this.#clean;
    if (this.#force || changed) {
      // A foreign edit is overwritten, a change written, at the end of the minimum interval at the earliest; a
      // change that turns out the same (flapping) is found so then and not written.
      if (now < minAt) return this.#arm(minAt, now);
      if (this.#force) return this.#submit();
    }
    if (changed || verify) {
      const mark = this.#changes;
      const timing = this.#flushing ? { ...this.#o.timing, minIntervalMs: 0 } : this.#o.timing;
      const d = decideWrite(last, buildDeviceInfoSnapshot(this.#view(this.#clock.now())), now, timing);
      if (d.action === 'skip') {
        this.#clean = mark; // the same as written: nothing to build until the next change
        return this.#arm(d.heartbeatAtMs, now);
      }
      this.#clean = -1; // differs from what was written: decided by a build until written or found the same
      return d.action === 'write' ? this.#submit() : this.#arm(d.atMs, now);
    }
    // Nothing changed since the written content: spec H.4 `same`; the heartbeat decides.
    const heartbeatAt = last.writtenAtMs + (this.#o.timing?.heartbeatMs ?? HEARTBEAT_INTERVAL_MS);
    if (now >= heartbeatAt) return this.#submit();
    this.#arm(heartbeatAt, now);
  }

  #submit(): void {
    this.#disarm();
    this.#force = false;
    this.#queued = true;
    this.#queue.submit(++this.#seq);
  }

  /** Decides again at `at` (kept when already armed for that time, as in a storm of changes). */
  #arm(at: number, now: number): void {
    if (this.#timer !== undefined && this.#timerAt === at) return;
    this.#disarm();
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerAt = undefined;
        if (this.#o.defer) this.#o.defer(() => this.#evaluate());
        else this.#evaluate();
      },
      Math.max(0, at - now),
    );
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = undefined;
  }

  /**
   * One write attempt: the newest known copy (read only when none is known or the last write conflicted), G.2
   * reconcile against it, build, write with its resourceVersion.
   */
  async #attempt(how: 'update' | 'create'): Promise<void> {
    this.#writing = true;
    this.#queued = false;
    this.#attempts++;
    try {
      const ns = DEVICE_INFO_NAMESPACE;
      let rv: string | undefined;
      if (how === 'update') {
        let live = this.#live;
        if (live === undefined || this.#stale) {
          this.#reads++;
          try {
            live = await this.#o.api.readNamespacedConfigMap({ name: this.#name, namespace: ns });
          } catch (e) {
            if (statusOf(e) === 404) {
              this.#live = null;
              this.#stale = false;
              if (this.#confirmed === undefined) this.#lateStartup(undefined);
            }
            throw e; // 404 → the queue creates it
          }
          this.#live = live;
          this.#stale = false;
        }
        if (live === null) {
          // absent by the watch: created without asking (the queue creates on a 404)
          if (this.#confirmed === undefined) this.#lateStartup(undefined);
          throw new AbsentError(`${ns}/${this.#name}`);
        }
        if (this.#stopped) return;
        if (this.#confirmed === undefined) this.#lateStartup(live);
        this.#reconcile(live);
        rv = live.metadata?.resourceVersion;
        if (rv !== undefined) this.#ownRv(rv); // reconciled: its watch event, arriving late, is no news
      } else if (this.#confirmed === undefined) {
        this.#lateStartup(undefined);
      }
      const wall = this.#clock.now();
      const mono = this.#clock.monotonic();
      const mark = this.#changes;
      const content = this.#content(wall);
      const body = deviceInfoConfigMap(this.#o.nodeName, content);
      if (rv !== undefined) body.metadata.resourceVersion = rv;
      const fp = contentFingerprint(body);
      this.#sentContents.push(fp);
      if (this.#sentContents.length > SENT_CONTENTS) this.#sentContents.shift();
      const seq = this.#liveSeq;
      const written =
        how === 'update'
          ? await this.#o.api.replaceNamespacedConfigMap({
              name: this.#name,
              namespace: ns,
              body,
              fieldManager: AGENT_FIELD_MANAGER,
            })
          : await this.#o.api.createNamespacedConfigMap({ namespace: ns, body, fieldManager: AGENT_FIELD_MANAGER });
      // the answer is the newest copy unless the watch brought one meanwhile (ours by content, or a later edit)
      if (this.#liveSeq === seq) this.#live = written;
      this.#written(content, written, wall, mono, mark, fp);
    } catch (e) {
      // The queue tries again at once: CREATE after a 404, a fresh attempt after a 409. Until then a decision must
      // wait for it (a submission now would be written right after it, inside the 1 s spacing, H.4).
      const status = statusOf(e);
      if (status === 409) this.#stale = true; // our copy is older than the object: read it before the next write
      if (status === 404 && how === 'update') this.#live = null;
      if ((status === 404 && how === 'update') || status === 409) this.#queued = true;
      throw e;
    } finally {
      this.#writing = false;
      if (this.#dirty) {
        this.#dirty = false;
        this.#schedule();
      }
    }
  }

  #lateStartup(live: k8s.V1ConfigMap | undefined): void {
    const data = live?.data ?? {};
    const values: StartupValues = {
      found: live !== undefined,
      manuallySeparateNPU: this.#inner(data[KEY_MANUALLY_SEPARATE] ?? ''),
      upgradeFaultReason:
        this.#o.innerNames?.innerReasons(data[KEY_UPGRADE_REASON] ?? '') ?? data[KEY_UPGRADE_REASON] ?? '',
    };
    this.#log.warn({ configMap: this.#name, found: values.found }, 'late G.3 start-up load from the live ConfigMap');
    const restored = this.#o.lateStartup?.(values);
    const check = checkManualValue(values.manuallySeparateNPU, this.#o.runMode, this.#phyIdsOnNode());
    if (restored !== undefined) {
      // Exactly what the restore took as live: with a rejected value, the names of our last write — not every chip
      // separated now (one separated after that write, e.g. just before the last shutdown, was never written).
      this.#confirm(this.#phys(restored.confirmedManual));
    } else if (check.ok) this.#confirm(new Set(check.phyIds));
    else {
      // A value the rule rejects (restoreEngine kept the separations): they count as the live ones, so a release
      // typed over the garbage later is still seen (this attempt's reconcile rejects the same value).
      const separated = new Set(this.#o.separation.separated());
      this.#confirm(
        new Set(
          this.#o.separation
            .chips()
            .filter((c) => separated.has(c.logicId))
            .map((c) => c.phyId),
        ),
      );
    }
  }

  #phyIdsOnNode(): Set<number> {
    return new Set(this.#o.separation.chips().map((c) => c.phyId));
  }

  #written(
    content: DeviceInfoContent,
    live: k8s.V1ConfigMap,
    wallMs: number,
    monoMs: number,
    mark: number,
    fp: string,
  ): void {
    this.#clean = mark; // changes after the build are decided again below
    this.#writtenContent = fp;
    this.#sentContents = [];
    this.#last = {
      deviceList: content.deviceList,
      manuallySeparate: content.data[KEY_MANUALLY_SEPARATE] ?? '',
      upgradeReasons: content.data[KEY_UPGRADE_REASON] ?? '',
      ...(content.data[KEY_SWITCH_INFO] !== undefined ? { switchInfo: content.data[KEY_SWITCH_INFO] } : {}),
      writtenAtMs: monoMs,
    };
    this.#lastDeviceList = content.deviceList;
    // Exactly the names this write carried (not the cache now: a cycle may have separated a chip during the write).
    const value = this.#inner(content.data[KEY_MANUALLY_SEPARATE] ?? '');
    const names = new Set(value === '' ? [] : value.split(','));
    this.#confirm(new Set(this.#o.separation.chips().flatMap((c) => (names.has(c.name) ? [c.phyId] : []))));
    const rv = live.metadata?.resourceVersion;
    if (rv !== undefined) this.#ownRv(rv);
    if (this.#pendingRemoved.size > 0) {
      this.#o.events?.record(releaseUpgradeFaultEvent(this.#pendingRemoved, wallMs)); // spec K.2
      this.#pendingRemoved = new Map();
    }
    this.#o.onWritten?.(content, wallMs);
    // Arms the heartbeat, or writes what changed meanwhile (≥ 1 s later). Compares the state now with the written
    // content even without a change noted since the build, as every decision did before it built lazily.
    this.#verify = true;
    this.#schedule();
  }

  /** spec G.2 against the live object, plus the bad-input rule for hand-edited values. */
  #reconcile(live: k8s.V1ConfigMap): void {
    const data = live.data ?? {};
    const raw = data[KEY_MANUALLY_SEPARATE] ?? '';
    const value = this.#inner(raw);
    const chips = this.#o.separation.chips();
    const byPhy = new Map(chips.map((c) => [c.phyId, c]));
    // The one rule for operator values (shared with restoreEngine at start): all clean, or not used at all.
    const check = checkManualValue(value, this.#o.runMode, new Set(byPhy.keys()));
    if (!check.ok) {
      // Garbage is never adopted and never taken as a release: our state stays and is written over it.
      this.#report(KEY_MANUALLY_SEPARATE, raw, `${check.problems.join('; ')}; nothing released`);
    } else {
      const phyIds = check.phyIds;
      const listed = new Set(phyIds);
      const separated = new Set(this.#o.separation.separated());
      const confirmed = this.#confirmed ?? new Set<number>();
      const released = chips.filter(
        (chip) => separated.has(chip.logicId) && confirmed.has(chip.phyId) && !listed.has(chip.phyId),
      );
      const added = [...listed].filter((p) => !separated.has(byPhy.get(p)!.logicId));
      if (added.length > 0) {
        // spec G.2: names not in the cache are not adopted; they disappear with this write.
        const names = added.map((p) => byPhy.get(p)!.name).join(',');
        this.#report('ManuallySeparateNPU', raw, `names not separated by this agent are not adopted: ${names}`);
      }
      if (released.length > 0) {
        const who = editorOf(live);
        for (const chip of released) {
          this.#operatorReleases++;
          this.#o.separation.release(chip.logicId); // one store cycle each: the snapshot is current when built
          this.#log.info({ chip: chip.name, logicId: chip.logicId, by: who }, 'chip released by an operator');
          this.#o.events?.record({
            type: 'Normal',
            reason: 'ManualSeparationReleased',
            message:
              `${chip.name} (logic id ${chip.logicId}) released from manual separation: its name was deleted ` +
              `from ${KEY_MANUALLY_SEPARATE} of ${DEVICE_INFO_NAMESPACE}/${this.#name}, assumed by ${who}`,
            brief: `ManualSeparationReleased ${chip.name}`,
          });
        }
      }
    }
    const reasons = data[KEY_UPGRADE_REASON];
    if (reasons !== undefined && reasons !== this.#last?.upgradeReasons) {
      const p = parseReasonsJson(reasons).problems; // refuses an over-long value before parsing it
      if (p.length > 0) this.#report(KEY_UPGRADE_REASON, reasons, p.join('; '));
    }
    const cfg = data[KEY_DEVICE_INFO];
    if (cfg !== undefined && (cfg.length > MAX_LIVE_VALUE_CHARS || !verifyDeviceInfoCfg(cfg))) {
      this.#report(KEY_DEVICE_INFO, cfg, 'not a DeviceInfoCfg whose CheckCode verifies');
    }
  }

  #report(key: string, value: string, why: string): void {
    // Remembered by a digest: the values may be up to 1 MiB each.
    const id = createHash('sha256').update(key).update('\u0000').update(value).digest('hex');
    if (this.#reported.has(id)) return;
    if (this.#reported.size >= MAX_REPORTED) this.#reported.clear();
    this.#reported.add(id);
    this.#rejectedInputs++;
    const shown = boundedText(value.slice(0, LOGGED_VALUE_CHARS), LOGGED_VALUE_BYTES, true);
    this.#log.warn(
      { configMap: this.#name, key, value: shown, chars: value.length, why: boundedText(why, LOGGED_WHY_BYTES, true) },
      'hand-edited value not used',
    );
    this.#o.events?.record(
      rejectedInputEvent('DeviceInfoEditRejected', `${DEVICE_INFO_NAMESPACE}/${this.#name}`, key, value, why),
    );
  }
}

/** The object is absent as far as the watch knows: answered like the API server's 404, so the queue creates it. */
class AbsentError extends Error {
  override name = 'AbsentError';
  /** The HTTP status this stands for ({@link statusOf}). */
  readonly code = 404;
  constructor(what: string) {
    super(`${what} is absent (watch): creating it`);
  }
}

/** Who edited the object last, as far as `managedFields` tells; else the documented assumption. */
function editorOf(cm: k8s.V1ConfigMap): string {
  const others = (cm.metadata?.managedFields ?? []).filter((f) => f.manager !== AGENT_FIELD_MANAGER);
  // a Date from client-node, the API server's RFC 3339 string from KubeClient
  const at = (f: k8s.V1ManagedFieldsEntry): number => {
    const t = Date.parse(String((f.time as Date | string | undefined) ?? ''));
    return Number.isNaN(t) ? 0 : t;
  };
  others.sort((a, b) => at(a) - at(b));
  const m = others.at(-1)?.manager;
  return m !== undefined ? `field manager "${m}"` : 'an operator (a client other than this agent)';
}

/**
 * What identifies the content of a ConfigMap for "is this our write" (sha-256 of `data`, `binaryData`, labels,
 * annotations and `immutable`, keys sorted): everything a write of ours sets and an operator's edit can change,
 * nothing the API server adds (resourceVersion, managedFields, timestamps).
 */
export function contentFingerprint(
  cm: Pick<k8s.V1ConfigMap, 'data' | 'binaryData' | 'immutable' | 'metadata'>,
): string {
  const sorted = (m: Readonly<Record<string, string>> | undefined): [string, string][] =>
    Object.entries(m ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const h = createHash('sha256');
  for (const part of [cm.data, cm.binaryData, cm.metadata?.labels, cm.metadata?.annotations]) {
    h.update(JSON.stringify(sorted(part)));
    h.update('\n');
  }
  h.update(String(cm.immutable ?? false));
  return h.digest('hex');
}

/**
 * spec G.3 step 1: reads the live values before serving kubelet. Never throws: `undefined` when the API server
 * could not be asked (the publisher then loads late, see {@link DeviceInfoPublisherOptions.confirmedManual}).
 */
export async function readStartupValues(
  api: Pick<k8s.CoreV1Api, 'readNamespacedConfigMap'>,
  nodeName: string,
  logger: Logger = NOOP_LOGGER,
): Promise<StartupValues | undefined> {
  try {
    const cm = await api.readNamespacedConfigMap({
      name: deviceInfoConfigMapName(nodeName),
      namespace: DEVICE_INFO_NAMESPACE,
    });
    const data = cm.data ?? {};
    // As read: the readers refuse an over-long value themselves (a value cut or emptied here would release chips).
    return {
      found: true,
      manuallySeparateNPU: data[KEY_MANUALLY_SEPARATE] ?? '',
      upgradeFaultReason: data[KEY_UPGRADE_REASON] ?? '',
    };
  } catch (e) {
    if (statusOf(e) === 404) return { found: false, manuallySeparateNPU: '', upgradeFaultReason: '' };
    logger.warn({ error: String(e) }, 'cannot read the device-info ConfigMap at start');
    return undefined;
  }
}
