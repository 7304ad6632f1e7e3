/**
 * Task discovery from the node's pods (hot-reset.md §1.3, `setTaskDevInfoCache` / `GenerateTaskDevFaultInfoList`):
 * which pods are tasks, which chips they hold and which rank each chip carries. Pure; the phy → logic conversion
 * comes in as a function. Rebuilt every cycle by the online engine.
 */
import type { ChipKind } from '../core/chips.js';
import { phyIdOfName } from '../core/device-names.js';
import { ProblemList, quoted } from '../faults/upgrade-reasons.js';
import type { DeviceUsage, ResetPod } from './types.js';

/** One rank of a task on this node (§1.3 step 5). */
export interface TaskRank {
  readonly logicId: number;
  readonly rankId: number;
}

/** A task found on this node (§1.3). */
export interface ResetTask {
  readonly name: string;
  readonly namespace: string;
  readonly pod: ResetPod;
  /** Ascending. */
  readonly logicIds: readonly number[];
  /** §1.3 step 5, logic-id order. */
  readonly ranks: readonly TaskRank[];
  /** Annotation `distributed-job` == "true" (§3.4.5: also wait for network health). */
  readonly distributed: boolean;
}

/** What {@link discoverTasks} reads. */
export interface TaskDiscoveryInput {
  /** The node's pods (any phase; Succeeded/Failed are skipped here). */
  readonly pods: readonly ResetPod[];
  readonly kind: ChipKind;
  readonly usage: DeviceUsage;
  /** §1.5 arithmetic ring size (the partial-pod filter of step 2); 0 disables the filter. */
  readonly ringSize: number;
  /** `dcmi_get_device_logicid_from_phyid`; undefined when the call failed. */
  readonly logicIdOfPhy: (phyId: number) => number | undefined;
}

/** §1.3 step 1: largest device annotation read (bytes). */
export const MAX_DEVICE_ANNOTATION_BYTES = 1024 * 1024;

/** §1.3 step 4 annotation holding the pod's rank index. */
export const RANK_INDEX_ANNOTATION = 'hccl/rankIndex';

/** §1.3 annotation marking a multi-node task. */
export const DISTRIBUTED_JOB_ANNOTATION = 'distributed-job';

/** D10 / §7.9: task-name labels, in order of preference. */
const TASK_NAME_LABELS = ['volcano.sh/job-name', 'training.kubeflow.org/job-name'] as const;

/**
 * D10 (§7.9): the task name is the pod label `volcano.sh/job-name`, else `training.kubeflow.org/job-name`; the same
 * rule everywhere (discovery, isolation checks, ConfigMap clearing). Empty values count as absent. Not namespaced.
 */
export function taskNameOf(pod: ResetPod): string | undefined {
  for (const label of TASK_NAME_LABELS) {
    const name = pod.labels[label];
    if (name !== undefined && name !== '') return name;
  }
  return undefined;
}

/** D10 (§7.10): the pod annotation listing a task's chips: `huawei.com/npu` on 910A5, else `huawei.com/Ascend910`. */
export function deviceAnnotationKey(kind: ChipKind): string {
  return kind === 'Ascend910A5' ? 'huawei.com/npu' : 'huawei.com/Ascend910';
}

/**
 * A share-mode copy name `<type>-<phy>-<i>` (spec B.3, `-shareDevCount`): three fields, the last two decimal. Its phy
 * id is the middle field, not the last one (`Ascend310P-3-7` is chip 3). Static vNPU names have four fields.
 */
const COPY_NAME = /^[^-]+-\d{1,3}-\d{1,3}$/;

/** Characters of a pod's name, namespace or task name quoted in a problem (the API server allows 253). */
const NAME_CHARS = 253;
/** Characters of a device name quoted in a problem. */
const QUOTED_CHARS = 64;

/** `text` cut to `max` characters with its length, for names that are short unless the source is broken. */
function short(text: string, max = NAME_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
}

const podRef = (pod: ResetPod): string => `pod ${short(pod.namespace)}/${short(pod.name)}`;

/** Go `strconv.Atoi` syntax (optional sign, decimal digits), limited to safe integers. */
function parseGoInt(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

type Step<T> = { ok: true; value: T } | { ok: false; problem?: string };

/** §1.3 step 1: the pod's logic ids, ascending; a dropped pod carries a problem unless it simply holds no chips. */
function logicIdsOf(pod: ResetPod, input: TaskDiscoveryInput): Step<number[]> {
  const key = deviceAnnotationKey(input.kind);
  const text = pod.annotations[key];
  if (text === undefined || text === '') return { ok: false };
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_DEVICE_ANNOTATION_BYTES) {
    return {
      ok: false,
      problem: `${podRef(pod)}: annotation ${key} is ${bytes} bytes, over the 1 MiB limit; pod ignored`,
    };
  }
  const logicIds = new Set<number>();
  const names = new Set<string>();
  for (const name of text.split(',')) {
    const phyId = phyIdOfName(name, COPY_NAME.test(name));
    if (phyId === undefined) {
      return {
        ok: false,
        problem: `${podRef(pod)}: annotation ${key} has unparsable device name ${quoted(name)}; pod ignored`,
      };
    }
    const logicId = input.logicIdOfPhy(phyId);
    if (logicId === undefined) {
      return {
        ok: false,
        problem: `${podRef(pod)}: no logic id for phy id ${phyId} (${short(name, QUOTED_CHARS)}); pod ignored`,
      };
    }
    // several copies of one shared chip are that chip once; the same name twice is still a broken annotation
    if (logicIds.has(logicId) && (names.has(name) || !COPY_NAME.test(name))) {
      return {
        ok: false,
        problem: `${podRef(pod)}: annotation ${key} lists chip ${short(name, QUOTED_CHARS)} twice; pod ignored`,
      };
    }
    logicIds.add(logicId);
    names.add(name);
  }
  return { ok: true, value: [...logicIds].sort((a, b) => a - b) };
}

/** §1.3 step 4: the pod's rank index. */
function rankIndexOf(pod: ResetPod, input: TaskDiscoveryInput): Step<number> {
  if (input.kind === 'Ascend910B' && input.usage === 'infer') return { ok: true, value: -1 };
  const text = pod.annotations[RANK_INDEX_ANNOTATION];
  if (text === undefined) {
    return { ok: false, problem: `${podRef(pod)}: annotation ${RANK_INDEX_ANNOTATION} is missing; pod ignored` };
  }
  const value = parseGoInt(text);
  // Upstream aborts the whole cache rebuild for this cycle on a non-integer rank index (§1.3 step 4,
  // TestSetTaskDevInfoCache), which takes every other task of the node down with it. We report the problem naming
  // the pod and skip only that pod. A rank index below -1 would give negative rank ids: also reported and skipped.
  if (value === undefined || value < -1) {
    return {
      ok: false,
      problem: `${podRef(pod)}: annotation ${RANK_INDEX_ANNOTATION} ${quoted(text)} is not an integer ≥ -1; pod ignored`,
    };
  }
  return { ok: true, value };
}

/** §1.3 step 5 (`GenerateTaskDevFaultInfoList`): `RankId = rankIndex·n + k`, or -1 for every chip with index -1. */
function ranksOf(logicIds: readonly number[], rankIndex: number): TaskRank[] {
  const n = logicIds.length;
  return logicIds.map((logicId, k) => ({ logicId, rankId: rankIndex === -1 ? -1 : rankIndex * n + k }));
}

/**
 * §1.3 `setTaskDevInfoCache`: the tasks of this node by task name, plus one message per pod that was dropped for a
 * reason worth reporting (bad annotation, failed phy → logic conversion, bad rank index, two pods of one task).
 * Pods that simply are not tasks (no device annotation, no task-name label) and partial pods on a training node
 * (step 2, HR-03) are ignored silently. Bounded (they reach the log and `/status`): every value quoted is cut to a
 * few dozen characters with its length, and only the first `MAX_KEPT_PROBLEMS` problems are kept, plus one entry
 * counting the rest.
 */
export function discoverTasks(input: TaskDiscoveryInput): { tasks: Map<string, ResetTask>; problems: string[] } {
  const tasks = new Map<string, ResetTask>();
  const problems = new ProblemList();
  for (const pod of input.pods) {
    if (pod.phase === 'Succeeded' || pod.phase === 'Failed') continue; // §1.3: active pods only
    const ids = logicIdsOf(pod, input);
    if (!ids.ok) {
      if (ids.problem !== undefined) problems.add(ids.problem);
      continue;
    }
    // Step 2: a pod holding fewer chips than a ring is assumed to be partially rescheduled (HR-03).
    if (input.usage === 'train' && ids.value.length < input.ringSize) continue;
    const name = taskNameOf(pod);
    if (name === undefined) continue;
    const rankIndex = rankIndexOf(pod, input);
    if (!rankIndex.ok) {
      if (rankIndex.problem !== undefined) problems.add(rankIndex.problem);
      continue;
    }
    // Step 6: one pod per task per node is assumed; like upstream the last pod processed wins, but we say so.
    const previous = tasks.get(name);
    if (previous !== undefined) {
      problems.add(
        () =>
          `task ${short(name)}: ${podRef(pod)} replaces ${podRef(previous.pod)} (one pod per task per node is assumed)`,
      );
    }
    tasks.set(name, {
      name,
      namespace: pod.namespace,
      pod,
      logicIds: ids.value,
      ranks: ranksOf(ids.value, rankIndex.value),
      distributed: pod.annotations[DISTRIBUTED_JOB_ANNOTATION] === 'true',
    });
  }
  return { tasks, problems: problems.list() };
}
