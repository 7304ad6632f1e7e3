/**
 * Vocabulary of the online (task-aware, `-hotReset=1`) reset engine, hot-reset.md §3: the per-task and per-chip
 * states, the persisted episode record (agent restart mid-reset, issue [F] deliver 6), the engine's options and the
 * JSON-friendly status it reports to metrics and `npuctl status`. Nothing here has behaviour except the validation
 * of a persisted record.
 */
import type { Logger } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import type { ResetCoordinator } from './coordinator.js';
import type { RankSource, ResetConfigMapWriter } from './reset-configmap.js';
import type { ChipStateHooks, ConfigMapCache, OnlineTimings, ResetDcmi, ResetEvent, RingFacts } from './types.js';

/** The task policies that start a flow (§1.4: levels 2, 3, 5 → §3.5, §3.6, §3.7). */
export type FlowPolicy = 'restart_request' | 'restart' | 'reset';

/**
 * Per-task state (§3.9 task-level machine, made explicit):
 * - `idle`: no episode; `starting`: the first `unrecovered` write is in flight (§3.3 preProcess);
 * - `selfHealing`: L2 phase 1, polling for the fault to clear (§3.5); `healingSleep`: L3's WaitFaultSelfHealingTime;
 * - `waitingProcesses`: process count to zero over the ring (§3.4.2);
 * - `resetting`: `dcmi_set_device_reset` attempts (§3.4.4); `waitingBoot`: boot-status / network polling (§3.4.5);
 * - `refreshing`: main-cycle handshake and re-read of levels (§3.4.1);
 * - `readyWait`: WaitNpuReadyTime before a `recovered/reset` write (§2.4); `writingResult`: the final write and the
 *   WaitProcessReadCMTime after it;
 * - `recovered` / `failed`: the last episode's outcome (a `failed` task is not started again until its ConfigMap is
 *   cleared, D5).
 */
export type TaskState =
  | 'idle'
  | 'starting'
  | 'selfHealing'
  | 'waitingProcesses'
  | 'healingSleep'
  | 'resetting'
  | 'waitingBoot'
  | 'refreshing'
  | 'readyWait'
  | 'writingResult'
  | 'recovered'
  | 'failed';

/** States an episode can be persisted in (the outcomes are never persisted: the record is removed at the end). */
export const EPISODE_STATES: readonly TaskState[] = [
  'starting',
  'selfHealing',
  'waitingProcesses',
  'healingSleep',
  'resetting',
  'waitingBoot',
  'refreshing',
  'readyWait',
  'writingResult',
];

/**
 * Per-chip state (§3.9): `normal`; `inReset` (in an episode's RankList or held ring: the §3.10 health filter may
 * apply); `resetting` (DCMI reset attempts on this chip); `booting` (its ring's boot status is being polled);
 * `isolated` (in the RankList of a task whose last episode failed: reported with its real health).
 */
export type ChipState = 'normal' | 'inReset' | 'resetting' | 'booting' | 'isolated';

/** What is persisted for one running episode (written on every state change). */
export interface EpisodeRecord {
  readonly task: string;
  readonly namespace: string;
  readonly podUid: string;
  readonly initialPolicy: FlowPolicy;
  /** Current policy: `reset` once the episode was upgraded (§3.5 phase 2, §3.6). */
  readonly policy: FlowPolicy;
  readonly state: TaskState;
  /** Epoch ms. */
  readonly startedAt: number;
  /** Every rank of the task at the start of the episode (logic-id order): the `recovered` write uses it (§3.5). */
  readonly snapshot: readonly RankSource[];
  /** Logic ids of the RankList (the faulty rings, §2.4). */
  readonly rankChips: readonly number[];
  /** Logic ids held in the coordinator for the episode (D4). */
  readonly ringChips: readonly number[];
  /** Set when the final write started: which one. */
  readonly outcome?: 'recovered' | 'failed';
}

/** Optional persistence port: the agent's state directory, or a test double. */
export interface EpisodeStore {
  /** Records saved by a previous run; undefined when there are none. */
  load(): EpisodeRecord[] | undefined;
  /** Replaces the saved records. */
  save(records: EpisodeRecord[]): void;
}

/** Where the engine records its Events. */
export interface ResetEventSink {
  record(event: ResetEvent): void;
}

/** The chips whose reported health the §3.10 filter overrides, from the engine's view at the time of the call. */
export interface HealthOverrides {
  /** Report Healthy (chips in reset that are not Healthy, while no isolation is decided). */
  readonly healthy: ReadonlySet<number>;
  /** Report NetworkHealthy (the arithmetic ring, 910A3: the 4-chip group, of each chip above). */
  readonly networkHealthy: ReadonlySet<number>;
}

/** Options of the online engine. */
export interface OnlineResetEngineOptions {
  readonly clock: Clock;
  /** §5, derived from GraceTolerance by the composition root. */
  readonly timings: OnlineTimings;
  readonly dcmi: ResetDcmi;
  readonly facts: RingFacts;
  /** `onlineRingSize(facts)`; must be > 0 (0 means the engine is absent and must not be built). */
  readonly ringSize: number;
  /** Writes `reset-config-<task>` / `fault-config-<task>` (§2.4, §2.5). */
  readonly writer: Pick<ResetConfigMapWriter, 'write' | 'writeFaultConfig'>;
  /** Informer cache of the ConfigMaps labelled `reset=true` (§2.1, §2.3). */
  readonly configMaps: ConfigMapCache;
  readonly hooks: ChipStateHooks;
  /** Shared with the offline engine (D4). */
  readonly coordinator: ResetCoordinator;
  readonly events?: ResetEventSink;
  readonly logger?: Logger;
  /** Episodes survive an agent restart when given. */
  readonly store?: EpisodeStore;
}

/** One task in {@link OnlineStatus}. */
export interface OnlineTaskStatus {
  readonly task: string;
  readonly namespace: string;
  readonly state: TaskState;
  /** Epoch ms of the last state change. */
  readonly since: number;
  readonly policy?: FlowPolicy;
  readonly initialPolicy?: FlowPolicy;
  readonly rankChips?: readonly number[];
  /** Why the episode is ending early (pod gone, chips changed). */
  readonly abandoned?: string;
  /** This node is writing its ranks `failed/isolate` because another node resets the task (§3.8). */
  readonly crossNodeIsolation?: boolean;
}

/** One chip in {@link OnlineStatus}. */
export interface OnlineChipStatus {
  readonly logicId: number;
  readonly state: ChipState;
  readonly task?: string;
  /** Online reset sequences counted on this chip (§4.3, D1); absent when 0. */
  readonly resetCount?: number;
}

/** JSON-friendly engine status for metrics and `npuctl status`. */
export interface OnlineStatus {
  readonly tasks: readonly OnlineTaskStatus[];
  readonly chips: readonly OnlineChipStatus[];
  readonly healthOverrides: { readonly healthy: readonly number[]; readonly networkHealthy: readonly number[] };
}

const FLOW_POLICIES: readonly string[] = ['restart_request', 'restart', 'reset'];

/** Validates one persisted record; throws an Error naming the record and the field that is wrong. */
export function parseEpisodeRecord(raw: unknown, index: number): EpisodeRecord {
  const where = `persisted reset episode #${index}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${where}: not an object`);
  const r = raw as Record<string, unknown>;
  const str = (k: string): string => {
    if (typeof r[k] !== 'string' || r[k] === '') throw new Error(`${where}: ${k} must be a non-empty string`);
    return r[k];
  };
  const policy = (k: string): FlowPolicy => {
    const v = str(k);
    if (!FLOW_POLICIES.includes(v)) throw new Error(`${where}: ${k} "${v}" is not restart_request, restart or reset`);
    return v as FlowPolicy;
  };
  const ids = (k: string): number[] => {
    const v = r[k];
    if (!Array.isArray(v) || v.some((x) => !Number.isSafeInteger(x) || (x as number) < 0)) {
      throw new Error(`${where}: ${k} must be an array of logic ids`);
    }
    return v as number[];
  };
  const state = str('state') as TaskState;
  if (!EPISODE_STATES.includes(state)) throw new Error(`${where}: state "${state}" is not an episode state`);
  if (typeof r.startedAt !== 'number' || !Number.isFinite(r.startedAt)) {
    throw new Error(`${where}: startedAt must be a number`);
  }
  if (!Array.isArray(r.snapshot) || r.snapshot.length === 0) {
    throw new Error(`${where}: snapshot must be a non-empty array of ranks`);
  }
  const snapshot = r.snapshot.map((s: unknown, i): RankSource => {
    const o = s as Record<string, unknown> | null;
    if (
      typeof o !== 'object' ||
      o === null ||
      !Number.isSafeInteger(o.logicId) ||
      !Number.isSafeInteger(o.rankId) ||
      typeof o.policy !== 'string' ||
      !Array.isArray(o.codes) ||
      o.codes.some((c) => typeof c !== 'number')
    ) {
      throw new Error(`${where}: snapshot[${i}] must be {logicId, rankId, policy, codes}`);
    }
    return { logicId: o.logicId as number, rankId: o.rankId as number, policy: o.policy, codes: o.codes as number[] };
  });
  const outcome = r.outcome;
  if (outcome !== undefined && outcome !== 'recovered' && outcome !== 'failed') {
    throw new Error(`${where}: outcome must be "recovered" or "failed"`);
  }
  return {
    task: str('task'),
    namespace: str('namespace'),
    podUid: typeof r.podUid === 'string' ? r.podUid : '',
    initialPolicy: policy('initialPolicy'),
    policy: policy('policy'),
    state,
    startedAt: r.startedAt,
    snapshot,
    rankChips: ids('rankChips'),
    ringChips: ids('ringChips'),
    ...(outcome === undefined ? {} : { outcome }),
  };
}
