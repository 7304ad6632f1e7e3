/**
 * The fault center's I/O shell around the pure {@link FaultCenterCore}: Lease election, watchers (device-info
 * ConfigMaps, pods, Volcano PodGroups, the policy ConfigMap), the 1 s processing cycle, the 15 s manual-info step,
 * the published `cluster-info-device-<m>` ConfigMaps, and the persisted state ConfigMap. Only the leader does work.
 */
import type * as k8s from '@kubernetes/client-node';
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { ReadinessCheck } from '../observability/http-server.js';
import { statusOf } from '../core/errors.js';
import { ApiRecovery, ObjectWriteQueue, type BackoffOptions, type ObjectWriter } from '../kube/write-queue.js';
import { DEVICE_INFO_NAMESPACE } from '../kube/device-info.js';
import type { ConfigMapLike } from './device-info-intake.js';
import type { DeviceViewProcessor } from './device-view.js';
import {
  chunkName,
  ClusterInfoChunks,
  CLUSTER_INFO_LABELS,
  CLUSTER_INFO_NAMESPACE,
  CLUSTER_INFO_PREFIX,
  CONFIGMAP_VALUE_LIMIT_BYTES,
  escapeJsonContent,
} from './cluster-info.js';
import { LeaseElector } from './leader-election.js';
import type { ProtobufListKind } from './list-protobuf.js';
import type { ClusterKube } from './kube.js';
import { RawInformer } from './raw-informer.js';
import { MANUAL_INFO_CONFIGMAP, MANUAL_INFO_NAMESPACE } from './manual-cache.js';
import type { ManualCmAction, ManualCmRead } from './manual-separation.js';
import { FaultCenterMetrics } from './metrics.js';
import { policyFromConfigMapData, POLICY_CONFIGMAP, POLICY_KEY, POLICY_NAMESPACE } from './policy.js';
import { FaultCenterCore } from './processing-center.js';
import { apiStateIo, StateStore, type LoadedState } from './state-store.js';
import {
  bodyWriter,
  prepareEscapedConfigMap,
  prepareRawConfigMap,
  RawConfigMapWriter,
  sameBytes,
  type PreparedConfigMap,
} from './raw-configmap-writer.js';
import type { Registry } from 'prom-client';
import { WholeSecondTime } from '../core/kube-time.js';

/** The public-fault service contract (implemented in src/cluster/public-fault/). */
export interface PublicFaultService {
  processor: DeviceViewProcessor;
  start(): Promise<void>;
  stop(): Promise<void>;
  onChange(listener: () => void): () => void;
}

/** Timings; defaults are upstream's. Tests shorten them. */
export interface FaultCenterTimings {
  cycleMs: number;
  /** an input change runs a cycle this soon (§0.2 "also on demand")… */
  onDemandDelayMs: number;
  /** …but on-demand cycles start at least this far apart */
  onDemandMinIntervalMs: number;
  releaseTickMs: number;
  publishMinIntervalMs: number;
  /** one chunk is written at most once per this many ms (a chunk of 800 KiB changes with every node in it) */
  chunkMinIntervalMs: number;
  publishForceMs: number;
  /** at most one commit of the persisted state per this many ms */
  stateIntervalMs: number;
  leaseDurationSec: number;
  leaseRenewDeadlineMs: number;
  leaseRetryPeriodMs: number;
  startupRetryMs: number;
}

export const DEFAULT_TIMINGS: FaultCenterTimings = {
  cycleMs: 1000,
  onDemandDelayMs: 20,
  onDemandMinIntervalMs: 200,
  releaseTickMs: 15_000,
  publishMinIntervalMs: 200,
  chunkMinIntervalMs: 1000,
  publishForceMs: 5000,
  stateIntervalMs: 1000,
  leaseDurationSec: 15,
  leaseRenewDeadlineMs: 10_000,
  leaseRetryPeriodMs: 2000,
  startupRetryMs: 1000,
};

/** Options of {@link FaultCenter}. */
export interface FaultCenterOptions {
  /** the API server (`builtInKube`, or `clientNodeKube` for the kubeconfigs only client-node serves) */
  readonly kube: ClusterKube;
  readonly identity: string;
  readonly leaseName: string;
  readonly leaseNamespace: string;
  readonly countJoblessFaults: boolean;
  readonly logger: Logger;
  readonly registry: Registry;
  /** local cache of the persisted state (the ConfigMap is authoritative) */
  readonly stateDir?: string;
  /** created when this replica starts leading (public faults) */
  readonly extraServices?: () => PublicFaultService[];
  readonly timings?: Partial<FaultCenterTimings>;
  /**
   * Wall clock (`now()`) for the domain times: receive times, `LastSeparateTime`, the windows of §1.4–§1.6,
   * `UpdateTime`, Lease and Event times. Monotonic clock (`monotonic()`, and the timers) for every spacing, limit
   * and "nothing written for N" check, so that a step of the wall clock neither holds nor hurries a publish
   * (issue [T] item 1). Default: the process clock.
   */
  readonly clock?: Clock;
  /** Backoff of the ConfigMap write queues (default: the queue's, 0.5 s doubling to 30 s); woken by the term's recovery. */
  readonly backoff?: Omit<BackoffOptions, 'recovery'>;
}

/**
 * The fault center's `/readyz` on the shared observability server: one check, `lease`, that passes only on the
 * leader once it has read its inputs, so the Service sends gRPC only to the active replica. Failing, it answers
 * `lease: not leading` (a standby) or `lease: leading, inputs not read yet` (a new leader during start-up).
 */
export function faultCenterReadiness(center: {
  readonly ready: boolean;
  readonly isLeader: boolean;
}): Readonly<Record<string, ReadinessCheck>> {
  return {
    lease: () => {
      if (center.ready) return { ok: true };
      return { ok: false, reason: center.isLeader ? 'leading, inputs not read yet' : 'not leading' };
    },
  };
}

/** Nodes per slice of the first cycle (see `#lead`). */
const FIRST_CYCLE_SLICE_NODES = 1000;
/** The smallest slice of the first cycle's tail. */
const FIRST_CYCLE_LAST_SLICE_NODES = 200;

/**
 * The next slice of the first cycle with `pending` nodes left: full slices, then halves down to
 * {@link FIRST_CYCLE_LAST_SLICE_NODES}. What the API server still has to store when the last slice is done is that
 * slice's chunks: about one instead of the 3–4 of a full slice (issue [P] item 6: the center waited 0.25 s for them
 * at 10,000 nodes with 50,000 public faults).
 */
export function firstCycleSlice(pending: number): number {
  if (pending > 2 * FIRST_CYCLE_SLICE_NODES) return FIRST_CYCLE_SLICE_NODES;
  return Math.max(FIRST_CYCLE_LAST_SLICE_NODES, Math.ceil(pending / 2));
}

/** How long the cycles after the first wait for the first publish's writes at most. */
const FIRST_WRITES_BOUND_MS = 2000;

/** Bound of one `GET /readyz` outage probe. */
const PROBE_TIMEOUT_MS = 2000;

const DEVICE_INFO_SELECTOR = 'mx-consumer-cim=true';

/**
 * The writer of a chunk not found at take-over: its first write is a create (POST), not an update answered 404 and
 * then a create, which sent every 800 KiB body twice at a first start (issue [O]); an object created meanwhile
 * (409) is updated, and every later write is an update.
 */
export function createFirst(raw: ObjectWriter<PreparedConfigMap>): ObjectWriter<PreparedConfigMap> {
  let absent = true;
  return {
    update: async (cm) => {
      if (!absent) return raw.update(cm);
      try {
        await raw.create(cm);
      } catch (e) {
        if (statusOf(e) !== 409) throw e;
        absent = false;
        return raw.update(cm);
      }
      absent = false;
    },
    create: (cm) => raw.create(cm),
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Work of one leadership term; discarded when leadership ends. */
interface Term {
  core: FaultCenterCore;
  stopped: boolean;
  timers: NodeJS.Timeout[];
  informers: { stop(): void }[];
  services: PublicFaultService[];
  unsubscribe: (() => void)[];
  /** the published chunks, kept up to date node by node (issue [O] item 1) */
  chunks: ClusterInfoChunks;
  chunkQueues: Map<number, ObjectWriteQueue<PreparedConfigMap>>;
  /**
   * the last value handed to each chunk's queue (or found in the chunk at take-over), in the writer's form: UTF-8
   * (protobuf bodies) or escaped JSON content (JSON bodies)
   */
  submitted: Map<number, readonly Buffer[]>;
  /** the serialised body of each chunk's last value (the forced rewrite sends it again) */
  prepared: Map<number, PreparedConfigMap>;
  /** indices of the chunks found at take-over (the others are created by their first write) */
  existing: Set<number>;
  /** when each chunk was last handed to its queue (monotonic) */
  chunkSubmitMs: Map<number, number>;
  /** the writer of the chunks and the state objects */
  raw: RawConfigMapWriter;
  /** when a chunk was last handed to its queue (monotonic; the §0.3 forced rewrite after 5 s without writes) */
  lastChunkSubmitMs: number;
  /** when the last publish ran (monotonic) */
  lastPublishMs: number;
  publishTimer: TimerHandle | undefined;
  /** when the armed publish timer fires (monotonic) */
  publishAtMs: number;
  /** the pending on-demand cycle and when the last one started (monotonic) */
  cycleTimer: TimerHandle | undefined;
  lastOnDemandMs: number;
  state: StateStore;
  stateIo: { close(): void };
  /**
   * The "API server back" signal of the term's write queues (the agent's mechanism, docs/agent.md "Outages"): a
   * queue backing off after an outage writes within about a second of the API server answering `/readyz` again,
   * not after its backoff (up to 30 s).
   */
  recovery: ApiRecovery;
  synced: boolean;
  /** while the first publish's writes are under way: cycles are requested, not run (the next cycle runs after) */
  holding: boolean;
  /** object → reason of its current refusal: each refused object is counted and logged once per reason */
  refused: Map<string, string>;
  /** chunk → bytes of its value while that is more than a ConfigMap holds (not written; logged once per size) */
  oversize: Map<number, number>;
}

/** The fault center. */
export class FaultCenter {
  readonly metrics: FaultCenterMetrics;
  readonly #o: FaultCenterOptions;
  readonly #t: FaultCenterTimings;
  readonly #core: ClusterKube['core'];
  readonly #elector: LeaseElector;
  readonly #log: Logger;
  readonly #clock: Clock;
  #term: Term | undefined;
  #termStart: Promise<void> = Promise.resolve();

  constructor(options: FaultCenterOptions) {
    this.#o = options;
    this.#t = { ...DEFAULT_TIMINGS, ...options.timings };
    this.#log = options.logger;
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.metrics = new FaultCenterMetrics(options.registry);
    this.#core = options.kube.core;
    this.#elector = new LeaseElector({
      api: options.kube.leases,
      name: options.leaseName,
      namespace: options.leaseNamespace,
      identity: options.identity,
      leaseDurationSec: this.#t.leaseDurationSec,
      renewDeadlineMs: this.#t.leaseRenewDeadlineMs,
      retryPeriodMs: this.#t.leaseRetryPeriodMs,
      clock: this.#clock,
      onStartedLeading: () => {
        this.#log.info({ identity: options.identity, lease: options.leaseName }, 'started leading');
        this.metrics.leader.set(1);
        this.metrics.leaseTransitions.inc();
        this.#termStart = this.#termStart.then(() => this.#lead());
      },
      onStoppedLeading: () => {
        this.#log.warn({ identity: options.identity }, 'stopped leading');
        this.metrics.leader.set(0);
        this.metrics.leaseTransitions.inc();
        this.#termStart = this.#termStart.then(() => this.#unlead());
      },
      onError: (e) => this.#log.warn({ err: String(e) }, 'lease attempt failed'),
    });
  }

  /** Wall time: domain timestamps only. */
  #now(): number {
    return this.#clock.now();
  }

  /** Monotonic time: every spacing, limit and timeout. */
  #mono(): number {
    return this.#clock.monotonic();
  }

  /** Whether this replica leads and has read its inputs. */
  get ready(): boolean {
    return this.#elector.isLeader && this.#term?.synced === true;
  }

  get isLeader(): boolean {
    return this.#elector.isLeader;
  }

  /** The core of the current term (tests, npuctl status). */
  get core(): FaultCenterCore | undefined {
    return this.#term?.core;
  }

  /** Starts campaigning for the Lease. */
  start(): void {
    this.#elector.start();
  }

  /** Stops; `release` hands the Lease over at once instead of letting it expire. */
  async stop(release = true): Promise<void> {
    await this.#elector.stop(release);
    await this.#termStart;
    await this.#unlead();
  }

  /** Simulates a crash for tests: stops renewing and working without releasing the Lease. */
  async halt(): Promise<void> {
    await this.stop(false);
  }

  async #lead(): Promise<void> {
    const o = this.#o;
    const services = o.extraServices?.() ?? [];
    const core = new FaultCenterCore({
      extraProcessors: services.map((s) => s.processor),
      countJoblessFaults: o.countJoblessFaults,
      listener: {
        separated: (f, fresh) => {
          this.metrics.separations.inc({ new: String(fresh) });
          this.#log.info(
            { node: f.node, dev: f.dev, code: f.code, lastSeparateTime: f.receivedTime, fresh },
            'NPU manually separated',
          );
        },
        released: (node, dev, code, reason) => {
          this.metrics.releases.inc({ reason });
          this.#log.info({ node, dev, code, reason }, 'manual separation released');
        },
      },
    });
    const recovery = new ApiRecovery({ probe: () => o.kube.probe(PROBE_TIMEOUT_MS), clock: this.#clock });
    const raw = new RawConfigMapWriter(o.kube.transport);
    const stateIo = apiStateIo(
      this.#core,
      o.leaseNamespace,
      { ...o.backoff, recovery },
      (name, e) => this.#log.warn({ err: String(e), configMap: name }, 'state ConfigMap write failed'),
      bodyWriter(raw),
      this.#clock,
    );
    const term: Term = {
      core,
      stopped: false,
      timers: [],
      informers: [],
      services,
      unsubscribe: [],
      chunks: new ClusterInfoChunks(),
      chunkQueues: new Map(),
      submitted: new Map(),
      prepared: new Map(),
      chunkSubmitMs: new Map(),
      existing: new Set(),
      raw,
      lastChunkSubmitMs: -Infinity,
      lastPublishMs: -Infinity,
      publishTimer: undefined,
      publishAtMs: Infinity,
      cycleTimer: undefined,
      lastOnDemandMs: -Infinity,
      state: new StateStore({
        leaseName: o.leaseName,
        namespace: o.leaseNamespace,
        io: stateIo,
        logger: this.#log,
        now: () => this.#now(),
        ...(o.stateDir !== undefined ? { stateDir: o.stateDir } : {}),
        minIntervalMs: this.#t.stateIntervalMs,
        onCommit: (what, ok) => this.metrics.stateWrites.inc({ object: what, result: ok ? 'ok' : 'refused' }),
      }),
      stateIo,
      recovery,
      synced: false,
      holding: false,
      refused: new Map(),
      oversize: new Map(),
    };
    this.#term = term;
    try {
      await this.#loadPolicy(term, true);
      const manual = await this.#readManualCm(3);
      if (manual.kind === 'error') {
        this.#log.error({ err: manual.message }, `${MANUAL_INFO_CONFIGMAP} not readable at start`);
      }
      await this.#restore(term, manual);
      await this.#existingChunks(term);
      if (term.stopped) return;
      // The inputs are read concurrently; the first cycle waits for all of them. (Requesting the lists before the
      // restore, to handle them after it, was slower against the single-threaded stand-in: the restore's small
      // reads then waited behind the lists' serialisation, and nothing overlapped.)
      await Promise.all([
        this.#startInformers(term),
        ...services.map(async (s) => {
          term.unsubscribe.push(s.onChange(() => this.#requestCycle(term)));
          await s.start();
        }),
      ]);
      if (term.stopped) return;
      term.synced = true;
      const every = (ms: number, fn: () => Promise<void> | void) => {
        const timer = setInterval(() => {
          if (term.stopped) return;
          Promise.resolve(fn()).catch((e: unknown) => this.#log.error({ err: String(e) }, 'periodic task failed'));
        }, ms);
        timer.unref();
        term.timers.push(timer);
      };
      // The first cycle and its publish right away (issue [O]: start → first complete publish): the chunks' writes
      // are under way before the periodic tasks start, so no second cycle (1 s tick, due by then) runs first
      // (that first cycle leaves the job workers' pass and the persisted state to the next one, below: neither
      // changes what it publishes)
      // The first cycle runs in slices of nodes in name order, packed into the chunks in that order: the chunks a
      // slice filled are written while the next slice is processed, so the API server stores them meanwhile
      // instead of receiving every chunk at the end.
      term.holding = true;
      const publishNow = (below?: number) => {
        if (term.publishTimer === undefined) return;
        this.#clock.clearTimeout(term.publishTimer);
        term.publishTimer = undefined;
        term.publishAtMs = Infinity;
        this.#publish(term, false, below);
      };
      for (let slice = FIRST_CYCLE_SLICE_NODES; ; slice = firstCycleSlice(term.core.pendingNodes)) {
        this.#cycle(term, false, false, slice);
        if (term.stopped) return;
        if (term.core.pendingNodes === 0) break;
        publishNow(term.chunks.sealed);
        // the writes go out (and their answers are read) before the next slice
        await new Promise<void>((r) => setImmediate(r));
        if (term.stopped) return;
      }
      publishNow();
      // …and the next cycle once they are done (bounded): its values could not be written earlier (a chunk is
      // written at most once per chunkMinIntervalMs), and a cycle over thousands of nodes would hold the writes up
      const writes = [...term.chunkQueues.values()].map((q) => q.whenIdle());
      const bound = Math.min(FIRST_WRITES_BOUND_MS, this.#t.publishForceMs, 2 * this.#t.cycleMs);
      let boundTimer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(writes),
        new Promise<void>((r) => {
          boundTimer = setTimeout(r, bound);
          boundTimer.unref();
        }),
      ]);
      clearTimeout(boundTimer);
      term.holding = false;
      if (term.stopped) return;
      this.#cycle(term, true);
      every(this.#t.cycleMs, () => this.#cycle(term, true));
      every(this.#t.releaseTickMs, () => this.#releaseTick(term));
      every(Math.min(1000, this.#t.publishForceMs), () => {
        if (this.#mono() - term.lastChunkSubmitMs >= this.#t.publishForceMs) this.#publish(term, true);
      });
    } catch (e) {
      this.#log.error({ err: String(e) }, 'leader start-up failed; stepping down');
      await this.#elector.stop(true);
      this.#elector.start();
    }
  }

  async #unlead(): Promise<void> {
    const term = this.#term;
    if (term === undefined) return;
    this.#term = undefined;
    term.stopped = true;
    for (const t of term.timers) clearInterval(t);
    if (term.cycleTimer !== undefined) this.#clock.clearTimeout(term.cycleTimer);
    if (term.publishTimer !== undefined) this.#clock.clearTimeout(term.publishTimer);
    for (const u of term.unsubscribe) u();
    for (const i of term.informers) i.stop();
    await Promise.all(term.services.map((s) => s.stop().catch(() => undefined)));
    for (const q of term.chunkQueues.values()) q.close();
    term.state.close();
    term.stateIo.close();
    term.recovery.close();
    term.raw.close();
  }

  async #event(reason: string, message: string, name: string, namespace: string): Promise<void> {
    const now = new WholeSecondTime(this.#now()); // metav1.Time: whole seconds, as the server stores it
    try {
      await this.#core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${name}.`, namespace },
          involvedObject: { kind: 'ConfigMap', name, namespace, apiVersion: 'v1' },
          reason,
          message,
          type: 'Warning',
          source: { component: 'ascend-fault-center' },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (e) {
      this.#log.warn({ err: String(e), reason }, 'event not written');
    }
  }

  /** §1.2 load: validate, then swap; the previous policy stays on any error. */
  async #applyPolicyData(data: Record<string, string> | undefined | null): Promise<void> {
    const term = this.#term;
    if (term === undefined) return;
    try {
      const p = policyFromConfigMapData(data);
      const wiped = term.core.manual.setPolicy(p);
      this.metrics.policyLoads.inc({ result: 'applied' });
      this.#log.info({ policy: p, wiped }, 'manual separation policy applied');
    } catch (e) {
      this.metrics.policyLoads.inc({ result: 'rejected' });
      const message = `${POLICY_NAMESPACE}/${POLICY_CONFIGMAP} key ${POLICY_KEY} rejected, previous policy kept: ${(e as Error).message}`;
      this.#log.error({ key: POLICY_KEY }, message);
      await this.#event('PolicyRejected', message, POLICY_CONFIGMAP, POLICY_NAMESPACE);
    }
  }

  async #loadPolicy(term: Term, startup: boolean): Promise<void> {
    for (let i = 0; i < (startup ? 3 : 1); i++) {
      try {
        const cm = await this.#core.readNamespacedConfigMap({ name: POLICY_CONFIGMAP, namespace: POLICY_NAMESPACE });
        await this.#applyPolicyData(cm.data);
        return;
      } catch (e) {
        if (i < 2 && startup && !term.stopped) await sleep(this.#t.startupRetryMs);
        else {
          this.metrics.policyLoads.inc({ result: 'missing' });
          this.#log.warn(
            { err: String(e) },
            'policy ConfigMap not readable; separation stays off, nothing is released',
          );
        }
      }
    }
  }

  async #readManualCm(tries: number): Promise<ManualCmRead> {
    let last: unknown;
    for (let i = 0; i < tries; i++) {
      try {
        const cm = await this.#core.readNamespacedConfigMap({
          name: MANUAL_INFO_CONFIGMAP,
          namespace: MANUAL_INFO_NAMESPACE,
        });
        return { kind: 'data', data: cm.data };
      } catch (e) {
        if (statusOf(e) === 404) return { kind: 'missing' };
        last = e;
        if (i + 1 < tries) await sleep(500);
      }
    }
    return { kind: 'error', message: String(last) };
  }

  async #reportBadKeys(bad: { key: string; reason: string }[]): Promise<void> {
    for (const b of bad) {
      this.metrics.rejectedInputs.inc({ input: 'manual-info', reason: 'unreadable-key' });
      const message = `${MANUAL_INFO_NAMESPACE}/${MANUAL_INFO_CONFIGMAP} key ${b.key} unreadable (${b.reason}); node kept as last written`;
      this.#log.error({ key: b.key }, message);
      await this.#event('ManualInfoKeyRejected', message, MANUAL_INFO_CONFIGMAP, MANUAL_INFO_NAMESPACE);
    }
  }

  /**
   * Take-over: the persisted state (docs/fault-center.md "Persisted state"; 3 tries when it cannot be read) with
   * what `clusterd-manual-info-cm` holds now. Without a persisted state, the ConfigMap alone is loaded (§1.9).
   */
  async #restore(term: Term, manual: ManualCmRead): Promise<void> {
    const cmData = manual.kind === 'data' ? manual.data : manual.kind === 'missing' ? {} : undefined;
    let loaded: LoadedState = { kind: 'none' };
    for (let i = 0; i < 3 && !term.stopped; i++) {
      try {
        loaded = await term.state.load();
        break;
      } catch (e) {
        this.#log.warn({ err: String(e), attempt: i + 1 }, 'persisted state not readable');
        if (i < 2) await sleep(this.#t.startupRetryMs);
      }
    }
    const core = term.core;
    if (loaded.kind === 'v2') {
      const r = core.restoreRecords(loaded.records, loaded.nextJobSeq, cmData);
      term.state.adopt(core.records);
      for (const p of r.problems.slice(0, 20)) this.#log.warn({ problem: p }, 'persisted state entry skipped');
      await this.#reportBadKeys(r.bad);
      this.#log.info(
        { nodes: loaded.records.size, generation: loaded.generation, source: loaded.source },
        'persisted state restored',
      );
      return;
    }
    const bad = core.manual.load(cmData ?? {});
    await this.#reportBadKeys(bad);
    if (loaded.kind === 'v1') {
      const problems = core.restoreState(loaded.state);
      for (const p of problems.slice(0, 20)) this.#log.warn({ problem: p }, 'persisted state entry skipped');
      this.#log.info({ source: loaded.source }, 'persisted state of version 1 restored');
    }
  }

  /** The `cluster-info-device-<m>` ConfigMaps in use (§0.3: their indices stay in use) and their values. */
  async #existingChunks(term: Term): Promise<void> {
    // as protobuf (or plain JSON): at a restart at 10,000 nodes these are dozens of 800 KiB objects
    const list = (await term.raw.getList(`/api/v1/namespaces/${CLUSTER_INFO_NAMESPACE}/configmaps`, 'ConfigMap')) as {
      items?: k8s.V1ConfigMap[] | null;
    } | null;
    if (!Array.isArray(list?.items))
      throw new Error(`${CLUSTER_INFO_NAMESPACE} ConfigMaps: the list answer is not a list`);
    let n = 0;
    for (const cm of list.items) {
      const name = cm.metadata?.name ?? '';
      const m = new RegExp(`^${CLUSTER_INFO_PREFIX}(\\d+)$`).exec(name);
      if (m === null) continue;
      const i = Number(m[1]);
      n = Math.max(n, i + 1);
      term.existing.add(i);
      const value = cm.data?.[name];
      if (value !== undefined)
        term.submitted.set(i, [term.raw.protobuf ? Buffer.from(value, 'utf8') : escapeJsonContent(value)]);
    }
    term.chunks.ensureChunks(n);
  }

  async #startInformers(term: Term): Promise<void> {
    // lists of built-in kinds are read as protobuf (list-protobuf.ts); the PodGroups (a custom resource, whose
    // metadata alone is read) as a metadata-only list, which a real API server also encodes as protobuf
    const input = <T extends k8s.KubernetesObject>(
      what: string,
      path: string,
      selectors: { labelSelector?: string; fieldSelector?: string },
      h: { add(o: T): void; update(o: T): void; delete(o: T): void },
      kind?: ProtobufListKind,
    ): RawInformer<T> => {
      const inf = new RawInformer<T>(
        {
          what,
          path,
          ...selectors,
          watch: this.#o.kube.watch,
          getJson: (p) => (kind !== undefined ? term.raw.getList(p, kind) : term.raw.getJson(p)),
          logger: this.#log,
          recovery: term.recovery,
        },
        h,
      );
      term.informers.push(inf);
      return inf;
    };
    const offer = (type: 'add' | 'update' | 'delete', cm: ConfigMapLike) => {
      const ref = `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
      // the intake remembers whether each node's last version was valid (§0.1), so no old object is kept here
      const r = term.core.intake.offer(type === 'update' ? { type, old: undefined, cm } : { type, cm });
      if (r.accepted) {
        if (term.refused.delete(ref)) this.#log.info({ configMap: ref }, 'device-info ConfigMap accepted again');
        if (type === 'delete') this.#log.info({ configMap: ref, node: r.node }, 'device-info ConfigMap deleted');
        this.#requestCycle(term);
        return;
      }
      // Bad input is counted and logged once per object and reason (a relist or an identical rewrite is quiet)
      if (term.refused.get(ref) === r.reason) return;
      term.refused.set(ref, r.reason);
      this.metrics.rejectedInputs.inc({ input: 'device-info', reason: r.reason });
      this.#log.warn({ configMap: ref, reason: r.reason, detail: r.detail }, 'device-info ConfigMap event ignored');
    };
    // device-info ConfigMaps (§0.1)
    const di = input<ConfigMapLike & k8s.KubernetesObject>(
      'device-info',
      `/api/v1/namespaces/${DEVICE_INFO_NAMESPACE}/configmaps`,
      { labelSelector: DEVICE_INFO_SELECTOR },
      {
        add: (cm) => offer('add', cm),
        update: (cm) => offer('update', cm),
        delete: (cm) => {
          offer('delete', cm);
          term.refused.delete(`${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`);
        },
      },
      'ConfigMap',
    );
    // pods (§1.3)
    const upsertPod = (p: k8s.KubernetesObject) => {
      const err = term.core.jobIndex.upsertPod(p);
      if (err !== undefined) {
        this.metrics.rejectedInputs.inc({ input: 'pod-annotation', reason: 'malformed' });
        this.#log.warn(err);
      }
    };
    const pods = input(
      'pods',
      '/api/v1/pods',
      {},
      { add: upsertPod, update: upsertPod, delete: (p) => term.core.jobIndex.deletePod(p) },
      'Pod',
    );
    // Volcano PodGroups (§1.4): their namespace, name and controller owner are all the index reads, so the list is
    // asked for as metadata only (issue [P] item 6: a custom resource has no protobuf form, and its JSON list cost
    // the API server more CPU than the pods' at 10,000 nodes); the watch stays JSON
    const pgs = input(
      'podgroups',
      '/apis/scheduling.volcano.sh/v1beta1/podgroups',
      {},
      {
        add: (p) => term.core.jobIndex.upsertPodGroup(p),
        update: (p) => term.core.jobIndex.upsertPodGroup(p),
        delete: (p) => term.core.jobIndex.deletePodGroup(p),
      },
      'Metadata',
    );
    // the policy ConfigMap (§1.2; watched instead of polled every 300 s)
    let lastPolicyText: string | undefined;
    const onPolicy = (c: k8s.V1ConfigMap) => {
      if (c.metadata?.name !== POLICY_CONFIGMAP) return;
      const text = JSON.stringify(c.data ?? null);
      if (text === lastPolicyText) return;
      lastPolicyText = text;
      void this.#applyPolicyData(c.data);
    };
    const pol = input<k8s.V1ConfigMap>(
      'policy',
      `/api/v1/namespaces/${POLICY_NAMESPACE}/configmaps`,
      { fieldSelector: `metadata.name=${POLICY_CONFIGMAP}` },
      { add: onPolicy, update: onPolicy, delete: () => undefined },
      'ConfigMap',
    );
    // listed concurrently (a failed first list is retried in the background with backoff, and logged)
    await Promise.all([di, pods, pgs, pol].map((inf) => inf.start()));
  }

  /** §0.2 "also on demand": a cycle soon after an input changed, at most one per `onDemandMinIntervalMs`. */
  #requestCycle(term: Term): void {
    if (term.stopped || !term.synced || term.cycleTimer !== undefined) return;
    if (term.holding) return;
    const now = this.#mono();
    const delay = Math.max(this.#t.onDemandDelayMs, term.lastOnDemandMs + this.#t.onDemandMinIntervalMs - now);
    term.cycleTimer = this.#clock.setTimeout(() => {
      term.cycleTimer = undefined;
      term.lastOnDemandMs = this.#mono();
      this.#cycle(term, false);
    }, delay);
  }

  /**
   * One processing cycle (with the job workers' pass on the 1 s tick, `full`): re-processes the nodes whose inputs
   * changed, hands changed node values to the chunks and changed node records to the persisted state (unless not
   * `persist`: the first cycle of a term, whose records the next cycle hands over). With `firstFillSlice`: one slice
   * of the first cycle, at most that many nodes, packed into the chunks in name order (`ClusterInfoChunks.apply`).
   */
  #cycle(term: Term, full: boolean, persist = true, firstFillSlice?: number): void {
    if (term.stopped) return;
    const now = this.#now();
    const started = process.hrtime.bigint();
    const r = term.core.cycle(now, {
      jobPass: full,
      ...(firstFillSlice !== undefined ? { maxNodes: firstFillSlice } : {}),
    });
    this.metrics.cycles.inc();
    this.metrics.cycleNodes.inc(r.processedNodes);
    if (r.pass.counted.length > 0) this.metrics.verdicts.inc({ verdict: 'hardware' }, r.pass.counted.length);
    if (r.pass.software.length > 0) {
      this.metrics.verdicts.inc({ verdict: 'software' }, r.pass.software.length);
      this.#log.info({ faults: r.pass.software.length }, 'software faults dropped by the job detector');
    }
    if (r.pass.orphaned.length > 0) this.metrics.verdicts.inc({ verdict: 'orphaned' }, r.pass.orphaned.length);
    if (full) {
      let separated = 0;
      for (const devs of term.core.manual.cache.totals().values()) separated += devs.length;
      this.metrics.separatedDevices.set(separated);
    }
    if (r.published.size > 0) {
      term.chunks.apply(r.published, { sequential: firstFillSlice !== undefined });
      this.#requestPublish(term);
    }
    // a counted fault may have separated a device: its marker is published by a cycle right away (§1.8)
    if (r.pass.counted.length > 0) this.#requestCycle(term);
    if (persist) this.#persist(term);
    this.metrics.cycleSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
  }

  /** Hands the node records changed since the last call to the persisted state (committed at most once a second). */
  #persist(term: Term): void {
    const changes = term.core.stateChanges();
    term.state.update(changes, term.core.nextJobSeq);
  }

  async #releaseTick(term: Term): Promise<void> {
    const read = term.core.manual.cache.isEmpty ? ({ kind: 'missing' } as const) : await this.#readManualCm(3);
    if (term.stopped) return;
    const r = term.core.manual.releaseTick(this.#now(), read);
    await this.#reportBadKeys(r.bad);
    this.#requestCycle(term);
    await this.#writeManual(term, r.action);
    this.#persist(term);
  }

  async #writeManual(term: Term, action: ManualCmAction): Promise<void> {
    const ns = MANUAL_INFO_NAMESPACE;
    try {
      if (action.kind === 'delete') {
        await this.#core
          .deleteNamespacedConfigMap({ name: MANUAL_INFO_CONFIGMAP, namespace: ns })
          .catch((e: unknown) => {
            if (statusOf(e) !== 404) throw e;
          });
      } else {
        const body = { metadata: { name: MANUAL_INFO_CONFIGMAP, namespace: ns }, data: action.data };
        await this.#core
          .replaceNamespacedConfigMap({ name: MANUAL_INFO_CONFIGMAP, namespace: ns, body })
          .catch(async (e: unknown) => {
            if (statusOf(e) !== 404) throw e;
            await this.#core.createNamespacedConfigMap({ namespace: ns, body });
          });
      }
      if (!term.stopped) term.core.manual.written(action);
    } catch (e) {
      // at 10,000 nodes the ConfigMap may outgrow 1 MiB (422): the separations stay in the persisted state
      this.#log.warn(
        { err: String(e), status: statusOf(e) },
        `${MANUAL_INFO_CONFIGMAP} write failed; retried at the next tick`,
      );
    }
  }

  /**
   * Whether chunk `i` is more than a ConfigMap holds (issue [R] item 5, found on the real API server): its one node's
   * published value alone is over 1 MiB, and the server would refuse every write of it (422). It is not written;
   * its nodes are named in an error and counted (`rejected_inputs_total{input="device-info",reason="too-large-to-publish"}`)
   * once per size, and published again as soon as they fit.
   */
  #oversize(term: Term, i: number): boolean {
    const bytes = term.chunks.bytes(i);
    if (bytes <= CONFIGMAP_VALUE_LIMIT_BYTES) {
      term.oversize.delete(i);
      return false;
    }
    if (term.oversize.get(i) === bytes) return true;
    term.oversize.set(i, bytes);
    const nodes = term.chunks.nodesOf(i);
    for (let k = 0; k < nodes.length; k++) {
      this.metrics.rejectedInputs.inc({ input: 'device-info', reason: 'too-large-to-publish' });
    }
    this.#log.error(
      { chunk: chunkName(i), bytes, limit: CONFIGMAP_VALUE_LIMIT_BYTES, nodes: nodes.slice(0, 10) },
      'published value over the 1 MiB a ConfigMap holds: not written (the nodes keep their last published state)',
    );
    return true;
  }

  /**
   * §0.3 cadence: a publish soon after a change, at most one per `publishMinIntervalMs`; or at `atMs` (monotonic), a
   * deferred chunk's turn, kept to the millisecond: its writes are already spaced by `chunkMinIntervalMs`, and a
   * publish that ran just before it (for another chunk's change) held it back by up to `publishMinIntervalMs` more,
   * the tail of the wave's latency (issue [P] item 6). Monotonic: on the wall clock a step back armed this timer for
   * the size of the step (issue [T] item 1).
   */
  #requestPublish(term: Term, atMs?: number): void {
    if (term.stopped) return;
    const now = this.#mono();
    const delay =
      atMs !== undefined
        ? Math.max(0, atMs - now)
        : Math.max(0, term.lastPublishMs + this.#t.publishMinIntervalMs - now);
    if (term.publishTimer !== undefined) {
      // armed for a deferred chunk's turn: a chunk that may be written sooner does not wait for it
      if (term.publishAtMs <= now + delay) return;
      this.#clock.clearTimeout(term.publishTimer);
    }
    term.publishAtMs = now + delay;
    term.publishTimer = this.#clock.setTimeout(() => {
      term.publishTimer = undefined;
      term.publishAtMs = Infinity;
      this.#cycleIfRequested(term);
      this.#publish(term, false);
    }, delay);
  }

  /**
   * Runs a cycle now if an on-demand one is waiting (an input changed since the last cycle), so that the publish
   * about to run carries that change (issue [P] item 6). A chunk changing all the time is written once per
   * `chunkMinIntervalMs`; a change that reached the center just before such a write but waited for its cycle
   * (`onDemandMinIntervalMs`, up to 200 ms) missed it and waited for the next one, a whole interval later. The
   * waiting cycle stays scheduled (it takes what arrives meanwhile, and keeps the on-demand spacing as it was): at
   * most one more cycle per publish, of the nodes changed in between.
   */
  #cycleIfRequested(term: Term): void {
    if (term.cycleTimer !== undefined && !term.stopped) this.#cycle(term, false);
  }

  /**
   * Writes the chunks whose bytes changed (issue [O] item 1), each at most once per `chunkMinIntervalMs` (a later
   * publish takes a deferred one); `force` (§0.3: nothing written for `publishForceMs`) rewrites every chunk with
   * its current bytes.
   */
  #publish(term: Term, force: boolean, below?: number): void {
    if (term.stopped) return;
    const now = this.#mono();
    term.lastPublishMs = now;
    const dirty = term.chunks.takeDirty(below);
    const indices = force ? Array.from({ length: term.chunks.count }, (_, i) => i) : dirty;
    let deferredUntil = Infinity;
    // the value in the form the writer sends: UTF-8 for a protobuf body, escaped for a JSON one
    const protobuf = term.raw.protobuf;
    for (const i of indices) {
      if (this.#oversize(term, i)) continue;
      const value = protobuf ? term.chunks.rawParts(i) : term.chunks.escapedParts(i);
      const before = term.submitted.get(i);
      const unchanged = before !== undefined && sameBytes(before, value);
      if (!force && unchanged) continue;
      const last = term.chunkSubmitMs.get(i);
      const due = (last ?? -Infinity) + this.#t.chunkMinIntervalMs;
      // A chunk written before in this term also waits for its slot among the others (paced: see #chunkGapMs).
      const slot = last === undefined || force ? -Infinity : term.lastChunkSubmitMs + this.#chunkGapMs(term);
      if (!force && (due > now || slot > now)) {
        term.chunks.markDirty(i);
        deferredUntil = Math.min(deferredUntil, Math.max(due, slot));
        continue;
      }
      term.submitted.set(i, value);
      term.chunkSubmitMs.set(i, now);
      term.lastChunkSubmitMs = now;
      const name = chunkName(i);
      let body = term.prepared.get(i);
      if (body === undefined || !unchanged) {
        const metadata = { name, namespace: CLUSTER_INFO_NAMESPACE, labels: { ...CLUSTER_INFO_LABELS } };
        body = protobuf ? prepareRawConfigMap(metadata, name, value) : prepareEscapedConfigMap(metadata, name, value);
        term.prepared.set(i, body);
      }
      let q = term.chunkQueues.get(i);
      if (q === undefined) {
        const inner = term.existing.has(i) ? term.raw : createFirst(term.raw);
        const chunk = i;
        q = new ObjectWriteQueue<PreparedConfigMap>({
          clock: this.#clock,
          // with the chunk's value as it is when the write leaves, timed
          writer: {
            update: (cm) => this.#timed(() => inner.update(this.#latest(term, chunk, cm))),
            create: (cm) => this.#timed(() => inner.create(this.#latest(term, chunk, cm))),
          },
          backoff: { ...this.#o.backoff, recovery: term.recovery },
          onWritten: () => this.metrics.publishedWrites.inc(),
          onError: (e) => this.#log.warn({ err: String(e), chunk: i }, 'cluster-info write failed'),
        });
        term.chunkQueues.set(i, q);
      }
      q.submit(body);
    }
    if (deferredUntil < Infinity) this.#requestPublish(term, deferredUntil);
  }

  /**
   * The least time between two chunk writes that leave for chunks written before in this term: the chunk interval
   * shared out among the chunks (one more than there are, for slack), at most `publishMinIntervalMs` (issue [P]
   * item 6). Without it, chunks that changed together were written together, and so, each exactly one interval
   * after its last write, again every interval: at 100 changes/s all 11 chunks of 10,000 nodes went out in one burst
   * of 8.8 MB a second, and the API server answered the last of them 0.3–0.5 s later. Paced, each write meets an
   * API server that is done with the one before, and a change waits for its chunk's turn plus one write. A chunk's
   * first write in a term (the first publication) and §0.3's forced rewrite are not paced, nor is a change when no
   * chunk was written for a gap (a quiet cluster); a chunk that changed together with others waits at most a gap
   * per chunk before it (91 ms at 10 chunks, 83 ms at 11).
   */
  #chunkGapMs(term: Term): number {
    return Math.min(this.#t.publishMinIntervalMs, this.#t.chunkMinIntervalMs / (term.chunks.count + 1));
  }

  /** One chunk request, timed (`published_write_seconds`, whatever its outcome). */
  async #timed(send: () => Promise<void>): Promise<void> {
    const started = this.#mono();
    try {
      await send();
    } finally {
      this.metrics.publishedWriteSeconds.observe((this.#mono() - started) / 1000);
    }
  }

  /**
   * Chunk `i` as it is now, for a write about to leave: one queued behind the chunk's write in flight, or a retry
   * after a refusal or an outage. The changes that reached the chunk since `queued` was handed over go out with this
   * write instead of a chunk interval later (issue [P] item 6). Nothing else changes: the write counts as the one
   * submitted (the chunk's spacing runs from its submission), and a later publish finds these bytes already
   * submitted. The last body built when nothing changed; `queued` itself when the term ended or the chunk is now
   * over what a ConfigMap holds (the publish reports that).
   */
  #latest(term: Term, i: number, queued: PreparedConfigMap): PreparedConfigMap {
    if (term.stopped || i >= term.chunks.count || term.chunks.bytes(i) > CONFIGMAP_VALUE_LIMIT_BYTES) return queued;
    const protobuf = term.raw.protobuf;
    const value = protobuf ? term.chunks.rawParts(i) : term.chunks.escapedParts(i);
    const before = term.submitted.get(i);
    // unchanged: the last body built (a retry of `queued` may follow a write that already carried newer bytes)
    if (before !== undefined && sameBytes(before, value)) return term.prepared.get(i) ?? queued;
    const name = chunkName(i);
    const metadata = { name, namespace: CLUSTER_INFO_NAMESPACE, labels: { ...CLUSTER_INFO_LABELS } };
    const body = protobuf ? prepareRawConfigMap(metadata, name, value) : prepareEscapedConfigMap(metadata, name, value);
    term.submitted.set(i, value);
    term.prepared.set(i, body);
    return body;
  }
}
