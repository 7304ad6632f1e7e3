/**
 * The reset layer as the agent runs it: builds the offline engine (device-plugin.md §J.2, every mode), the online
 * engine (hot-reset.md §3, `-hotReset=1` on kinds that support it, §1.2) and the reset-file landing (§2.8), and feeds
 * them from the state store, the pod cache and the reset-ConfigMap watch. Both engines share one
 * {@link ResetCoordinator}; the online engine's §3.10 health filter goes back into the store as an input, so kubelet
 * and the device-info ConfigMap see it in the same snapshot (architecture §2: outputs are projections).
 *
 * Engine cycles are coalesced: any number of snapshots, pod or ConfigMap changes within one turn of the event loop
 * cause one cycle, and a cycle also runs every `listWatchPeriod` (the timers of the flows run on their own).
 */
import path from 'node:path';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { ResetCoordinator } from './coordinator.js';
import { ResetFileSync } from './file-sync.js';
import { DEFAULT_OFFLINE_TIMINGS, OfflineResetEngine } from './offline-engine.js';
import { OfflineStateFile } from './offline-state.js';
import { defaultOnlineTimings, OnlineResetEngine } from './online-engine.js';
import { parseEpisodeRecord, type EpisodeRecord, type EpisodeStore, type OnlineStatus } from './online-types.js';
import { isGraceToleranceSupported } from './policy.js';
import { ResetConfigMapWriter } from './reset-configmap.js';
import { ResetInfoManager } from './reset-info.js';
import { JsonStateFile } from './state-file.js';
import { onlineRingSize } from './rings.js';
import { deviceAnnotationKey, discoverTasks, taskNameOf, type ResetTask } from './tasks.js';
import type {
  ChipResetView,
  ConfigMapApi,
  ConfigMapCache,
  ConfigMapObject,
  HotResetMode,
  NodeAnnotationApi,
  OfflineTimings,
  OnlineTimings,
  ResetDcmi,
  ResetEvent,
  ResetPod,
  RingFacts,
} from './types.js';

/** GraceTolerance values in seconds (spec F.2), read when a flow sleeps so that a reload applies at once (§5). */
export interface GraceValues {
  readonly WaitProcessReadCMTime: number;
  readonly WaitDeviceResetTime: number;
  readonly WaitFaultSelfHealingTime: number;
}

/** What the runtime needs of the state store and the health monitor. */
export interface ResetStorePort {
  /** Every chip of the latest snapshot, with the fault engine's own health (before the reset filter). */
  chips(): readonly ChipResetView[];
  /** Called after every published snapshot. */
  onChange(listener: () => void): () => void;
  /** §3.10: chips to report Healthy / NetworkHealthy whatever the engine says. */
  /** Also: chips an offline reset is rebooting, reported Unhealthy / NetworkUnhealthy and `-Recovering` meanwhile. */
  setResetOverrides(
    healthy: ReadonlySet<number>,
    networkHealthy: ReadonlySet<number>,
    recovering: ReadonlySet<number>,
  ): void;
  /** D.5 re-sync through the health monitor. */
  markResync(logicIds: readonly number[], why: string): void;
  /** Resolves when the re-sync reads requested so far have been applied to the store. */
  resyncApplied(): Promise<void>;
}

export interface ResetRuntimeOptions {
  readonly mode: HotResetMode;
  readonly clock: Clock;
  readonly logger?: Logger;
  readonly facts: RingFacts;
  /** 910A: the chip work mode is SMP (§1.2 gate); ignored for other kinds. */
  readonly workModeSmp: boolean;
  readonly listWatchPeriodMs: number;
  /** Scales every fixed reset timing (tests and the demo use < 1); 1 in production. */
  readonly timeScale: number;
  readonly grace: () => GraceValues;
  readonly dcmi: ResetDcmi;
  readonly configMapApi: ConfigMapApi;
  readonly configMapCache: ConfigMapCache & {
    dataTrace?(namespace: string, name: string): ConfigMapObject | undefined;
  };
  readonly nodeAnnotations: NodeAnnotationApi;
  readonly events: (e: ResetEvent) => void;
  readonly store: ResetStorePort;
  /** The node's pods (any phase). */
  readonly pods: () => readonly ResetPod[];
  /**
   * Whether the pod cache has listed once (default: always). Before that the engines do not run: every task would
   * look gone (a resumed episode would be abandoned and isolated, §1.6 `UpdateFreeTask`) and every chip free of pods
   * (§J.6), as after an agent restart while the API server is slow.
   */
  readonly podsSynced?: () => boolean;
  /**
   * Whether the reset-ConfigMap cache has listed once (default: always). Before that the online engine does not run:
   * every task's ConfigMap would look missing (a Warning per task at every start) and a resumed episode could not
   * tell whether its task is already isolated.
   */
  readonly configMapsSynced?: () => boolean;
  readonly logicIdOfPhy: (phyId: number) => number | undefined;
  /**
   * Folder for `reset-episodes.json` (online episodes) and `offline-resets.json` (offline resets in flight, token
   * buckets), so that they survive a restart; undefined = not kept.
   */
  readonly stateDir?: string;
  /** Prefix of the host folders of §2.8. */
  readonly hostRoot: string;
}

/** JSON-friendly state of the whole reset layer (metrics, `/status`, `npuctl status`). */
export interface ResetStatus {
  readonly mode: HotResetMode;
  readonly online: OnlineStatus | null;
  readonly offline: ReturnType<OfflineResetEngine['status']>;
  readonly resetting: Record<string, string>;
  readonly tasks: readonly string[];
  readonly problems: readonly string[];
}

const EPISODE_FILE = 'reset-episodes.json';
const MAX_EPISODE_FILE_BYTES = 4 * 1024 * 1024;

/** Online episodes in `<stateDir>/reset-episodes.json`, written atomically; a bad file is set aside, not trusted. */
export class EpisodeFileStore implements EpisodeStore {
  readonly #file: JsonStateFile<EpisodeRecord[]>;

  constructor(stateDir: string, logger: Logger = NOOP_LOGGER) {
    this.#file = new JsonStateFile({
      file: path.join(stateDir, EPISODE_FILE),
      maxBytes: MAX_EPISODE_FILE_BYTES,
      what: 'reset episodes',
      logger,
      parse: (raw) => {
        if (!Array.isArray(raw)) throw new Error('not a JSON array');
        return raw.map((r, i) => parseEpisodeRecord(r, i));
      },
    });
  }

  load(): EpisodeRecord[] | undefined {
    return this.#file.load();
  }

  save(records: EpisodeRecord[]): void {
    this.#file.save(records);
  }
}

/** Online timings from GraceTolerance (§5), each read at use. */
function onlineTimings(o: ResetRuntimeOptions): OnlineTimings {
  const s = o.timeScale;
  const base = defaultOnlineTimings(o.listWatchPeriodMs);
  const scaled = (ms: number): number => Math.max(1, Math.round(ms * s));
  return {
    get waitProcessReadCm() {
      return scaled(o.grace().WaitProcessReadCMTime * 1000);
    },
    get waitDeviceReset() {
      return scaled(o.grace().WaitDeviceResetTime * 1000);
    },
    get waitFaultSelfHealing() {
      return scaled(o.grace().WaitFaultSelfHealingTime * 1000);
    },
    maxResetWaitPolls: base.maxResetWaitPolls,
    waitErrorCodeClean: scaled(base.waitErrorCodeClean),
    waitProcessesToZero: scaled(base.waitProcessesToZero),
    pollInterval: scaled(base.pollInterval),
    waitNpuReady: scaled(base.waitNpuReady),
    cycleHandshake: base.cycleHandshake,
    resetBackoff: base.resetBackoff.map(scaled),
  };
}

function offlineTimings(scale: number): OfflineTimings {
  const d = DEFAULT_OFFLINE_TIMINGS;
  const scaled = (ms: number): number => Math.max(1, Math.round(ms * scale));
  return {
    idle: scaled(d.idle),
    bootLimit: scaled(d.bootLimit),
    pollInterval: scaled(d.pollInterval),
    refill: d.refill,
    tokens: d.tokens,
  };
}

/** Numbers every timing derives from: a bad one would otherwise surface as an obscure engine timing error. */
function checkRuntimeOptions(o: ResetRuntimeOptions): void {
  if (typeof o.timeScale !== 'number' || !Number.isFinite(o.timeScale) || o.timeScale <= 0) {
    throw new RangeError(`reset runtime: timeScale must be a positive number, got ${String(o.timeScale)}`);
  }
  if (typeof o.listWatchPeriodMs !== 'number' || !Number.isFinite(o.listWatchPeriodMs) || o.listWatchPeriodMs <= 0) {
    throw new RangeError(
      `reset runtime: listWatchPeriodMs must be a positive number of ms, got ${String(o.listWatchPeriodMs)}`,
    );
  }
}

/** The reset layer of one agent. */
export class ResetRuntime {
  readonly #o: ResetRuntimeOptions;
  readonly #log: Logger;
  readonly #coordinator = new ResetCoordinator();
  readonly #offline: OfflineResetEngine;
  readonly #online: OnlineResetEngine | undefined;
  readonly #fileSync: ResetFileSync | undefined;
  readonly #knownPods = new Map<string, ResetPod>();
  #tasks: ReadonlyMap<string, ResetTask> = new Map();
  #problems: readonly string[] = [];
  #lastProblems = '';
  #scheduled = false;
  #periodTimer: TimerHandle | undefined;
  #unsubscribe: (() => void) | undefined;
  #stopped = true;
  #lastOverrides = '';
  #recovering: ReadonlySet<number> = new Set();
  #waitingForPodsLogged = false;
  #waitingForConfigMapsLogged = false;
  #writer: ResetConfigMapWriter | undefined;

  constructor(options: ResetRuntimeOptions) {
    checkRuntimeOptions(options);
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
    const resetInfo = new ResetInfoManager({ api: options.nodeAnnotations, clock: options.clock, logger: this.#log });
    const ringSize = onlineRingSize(options.facts);
    const onlineOn =
      options.mode === 1 && ringSize > 0 && isGraceToleranceSupported(options.facts.kind, options.workModeSmp, 1);
    if (options.mode === 1 && !onlineOn) {
      this.#log.warn(
        { kind: options.facts.kind, ringSize },
        'hotReset=1: the task-aware engine does not apply to this node (spec hot-reset.md §1.2); offline resets only',
      );
    }
    const hooks = {
      markNeedsResync: (ids: readonly number[]) => options.store.markResync(ids, 'chip reset finished'),
      chips: () => options.store.chips(),
      waitForCycle: (timeoutMs: number) => this.#waitForCycle(timeoutMs),
    };
    if (onlineOn) {
      this.#online = new OnlineResetEngine({
        clock: options.clock,
        timings: onlineTimings(options),
        dcmi: options.dcmi,
        facts: options.facts,
        ringSize,
        writer: (this.#writer = new ResetConfigMapWriter({
          api: options.configMapApi,
          now: () => options.clock.now(),
        })),
        configMaps: options.configMapCache,
        hooks,
        coordinator: this.#coordinator,
        events: { record: (e) => options.events(e) },
        logger: this.#log,
        ...(options.stateDir !== undefined ? { store: new EpisodeFileStore(options.stateDir, this.#log) } : {}),
      });
      this.#online.onChange(() => this.#schedule());
    }
    this.#offline = new OfflineResetEngine({
      clock: options.clock,
      mode: options.mode,
      timings: offlineTimings(options.timeScale),
      // §J.2: a failed reset is retried in a later cycle, so no sooner than one listWatchPeriod after it failed
      retryAfter: options.listWatchPeriodMs,
      dcmi: options.dcmi,
      facts: options.facts,
      coordinator: this.#coordinator,
      resetInfo,
      hooks,
      events: options.events,
      logger: this.#log,
      isExcluded: (id) => this.#isTaskChip(id),
      onResettingChange: (chips) => {
        this.#recovering = chips;
        this.#pushOverrides();
      },
      ...(options.stateDir !== undefined ? { store: new OfflineStateFile(options.stateDir, this.#log) } : {}),
    });
    // §2.8: the file landing runs on every 910-family node, whatever the mode.
    if (ringSize > 0) {
      this.#fileSync = new ResetFileSync({
        hostRoot: options.hostRoot,
        kind: options.facts.kind,
        configMaps: options.configMapCache,
        clock: options.clock,
        logger: this.#log,
      });
    }
  }

  /** Whether the task-aware engine runs on this node. */
  get onlineEnabled(): boolean {
    return this.#online !== undefined;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#unsubscribe = this.#o.store.onChange(() => this.#schedule());
    // agent restart: resumed episodes and resets in flight are reported from the first snapshot, not from the
    // first cycle (which waits for the pod and ConfigMap lists)
    this.#pushOverrides();
    this.podsChanged();
    this.#armPeriod();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    if (this.#periodTimer !== undefined) this.#o.clock.clearTimeout(this.#periodTimer);
    this.#online?.stop();
    this.#offline.close();
    this.#fileSync?.close();
    await this.#fileSync?.idle();
  }

  /** The pod cache changed: land or remove reset files (§2.8) and re-discover tasks at the next cycle. */
  podsChanged(): void {
    // §2.8: the file landing sees a pod while it is active and carries the device annotation (upstream's informer
    // filter; a filter turning true on an update is an add, turning false a delete). The annotation is often written
    // after the pod first shows up, so a pod seen earlier without it must still be added once it has it.
    const annotation = deviceAnnotationKey(this.#o.facts.kind);
    const present = new Map<string, ResetPod>();
    for (const p of this.#o.pods()) {
      if (p.phase === 'Succeeded' || p.phase === 'Failed' || !p.annotations[annotation]) continue;
      present.set(p.uid || `${p.namespace}/${p.name}`, p);
    }
    // Departures first: the file landing keys pods by namespace/name, so a pod re-created under the same name (new
    // uid) must leave before its successor arrives, or the successor's files would be removed.
    for (const [key, p] of [...this.#knownPods]) {
      if (present.has(key)) continue;
      this.#knownPods.delete(key);
      this.#fileSync?.podDeleted(p);
    }
    for (const [key, p] of present) {
      const known = this.#knownPods.has(key);
      this.#knownPods.set(key, p);
      if (!known) this.#fileSync?.podAdded(p);
    }
    this.#schedule();
  }

  /**
   * §2.6 (mode 1): the agent has just written its annotations (`huawei.com/AscendReal`, spec I.3) on a pod newly
   * placed here — the task was (re)scheduled, so its reset ConfigMap is emptied (RankList [], RetryTime kept), which
   * is how a task leaves the isolated state. A ConfigMap still "initialising" (UpdateTime 0) is left alone. Called
   * by the pod-annotation step, as upstream does it there; a pod merely seen again after an agent restart is not
   * "newly placed".
   */
  podAnnotated(namespace: string, name: string): void {
    const pod = this.#o.pods().find((p) => p.namespace === namespace && p.name === name);
    if (pod) this.#clearAfterReschedule(pod);
  }

  #clearAfterReschedule(pod: ResetPod): void {
    const writer = this.#writer;
    if (!writer) return;
    const task = taskNameOf(pod);
    if (task === undefined) return;
    void writer.clearAfterReschedule(task, pod.namespace).then(
      (written) => {
        if (written)
          this.#log.info({ task, namespace: pod.namespace, pod: pod.name }, 'reset ConfigMap cleared (§2.6)');
      },
      (err: unknown) =>
        this.#log.warn(
          { task, namespace: pod.namespace, err: (err as Error).message },
          'reset ConfigMap not cleared for the rescheduled pod',
        ),
    );
  }

  /** A ConfigMap labelled `reset=true` was added, changed or deleted (the watch's cache is already updated). */
  configMapChanged(cm: ConfigMapObject, deleted: boolean): void {
    if (deleted) this.#fileSync?.configMapDeleted(cm);
    else this.#fileSync?.configMapChanged(cm);
    this.#schedule();
  }

  status(): ResetStatus {
    return {
      mode: this.#o.mode,
      online: this.#online?.status() ?? null,
      offline: this.#offline.status(),
      resetting: Object.fromEntries([...this.#coordinator.resetting()].map(([id, owner]) => [String(id), owner])),
      tasks: [...this.#tasks.keys()].sort(),
      problems: this.#problems,
    };
  }

  /** Resolves when no reset, file write or annotation write is in progress (tests and shutdown). */
  async idle(): Promise<void> {
    await this.#offline.whenIdle();
    await this.#fileSync?.idle();
  }

  #isTaskChip(logicId: number): boolean {
    if (!this.#online) return false;
    for (const t of this.#tasks.values()) if (t.logicIds.includes(logicId)) return true;
    return false;
  }

  #armPeriod(): void {
    if (this.#stopped) return;
    this.#periodTimer = this.#o.clock.setTimeout(() => {
      this.#periodTimer = undefined;
      this.#schedule();
      this.#armPeriod();
    }, this.#o.listWatchPeriodMs);
  }

  #schedule(): void {
    if (this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#stopped) this.#cycle();
    });
  }

  #cycle(): void {
    if (this.#o.podsSynced?.() === false) {
      // the pod cache's first list triggers podsChanged(), which schedules the first real cycle
      if (!this.#waitingForPodsLogged) this.#log.info('reset engines wait for the first list of the node pods');
      this.#waitingForPodsLogged = true;
      return;
    }
    const chips = this.#o.store.chips();
    const configMapsReady = this.#o.configMapsSynced?.() !== false;
    if (this.#online && !configMapsReady && !this.#waitingForConfigMapsLogged) {
      this.#waitingForConfigMapsLogged = true;
      this.#log.info('task-aware reset waits for the first list of the reset ConfigMaps');
    }
    if (this.#online && configMapsReady) {
      const { tasks, problems } = discoverTasks({
        pods: this.#o.pods(),
        kind: this.#o.facts.kind,
        usage: this.#o.facts.usage,
        ringSize: onlineRingSize(this.#o.facts),
        logicIdOfPhy: this.#o.logicIdOfPhy,
      });
      this.#tasks = tasks;
      this.#problems = problems;
      const text = problems.join('\n');
      if (text !== this.#lastProblems) {
        this.#lastProblems = text;
        for (const p of problems) this.#log.warn({ problem: p }, 'reset: pod ignored for task-aware reset');
      }
      try {
        this.#online.cycle(tasks, chips);
      } catch (err) {
        this.#log.error({ err: (err as Error).message }, 'online reset cycle failed');
      }
      this.#pushOverrides();
    }
    void this.#offline.cycle(chips);
  }

  #pushOverrides(): void {
    const none: ReadonlySet<number> = new Set();
    const o = this.#online?.healthOverrides() ?? { healthy: none, networkHealthy: none };
    const text = (set: ReadonlySet<number>): string => [...set].sort((a, b) => a - b).join(',');
    const key = `${text(o.healthy)}|${text(o.networkHealthy)}|${text(this.#recovering)}`;
    if (key === this.#lastOverrides) return;
    this.#lastOverrides = key;
    this.#o.store.setResetOverrides(o.healthy, o.networkHealthy, this.#recovering);
  }

  /** §3.4.1: the re-sync asked for has been read and applied, or the time ran out. */
  async #waitForCycle(timeoutMs: number): Promise<boolean> {
    let timer: TimerHandle | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = this.#o.clock.setTimeout(() => resolve(false), timeoutMs);
    });
    const applied = this.#o.store.resyncApplied().then(() => true);
    const result = await Promise.race([applied, timeout]);
    if (timer !== undefined) this.#o.clock.clearTimeout(timer);
    return result;
  }
}
