/**
 * Policy vocabulary of the reset engines (hot-reset.md §1.4): the mapping from fault levels (device-plugin.md §E.2)
 * to policies and policy levels, a task's policy, and the `GraceToleranceOn` gate of §1.2. Pure.
 */
import type { FaultLevel } from '../faults/levels.js';
import { type ChipKind, runModeOf } from '../core/chips.js';
import type { HotResetMode, PolicyLevel, ResetPolicy } from './types.js';

/** §1.4 policy → policy level. */
export const POLICY_LEVEL: Readonly<Record<ResetPolicy, PolicyLevel>> = Object.freeze({
  empty: 0,
  ignore: 1,
  restart_request: 2,
  restart: 3,
  free_reset: 4,
  reset: 5,
  isolate: 6,
});

/** §1.4 table (`GetDevProcessPolicy`); `ignore` is never produced. */
const POLICY_OF_LEVEL: Readonly<Record<FaultLevel, ResetPolicy>> = Object.freeze({
  NormalNPU: 'empty',
  NotHandleFault: 'empty',
  SubHealthFault: 'empty',
  RestartRequest: 'restart_request',
  RestartBusiness: 'restart',
  FreeRestartNPU: 'free_reset',
  RestartNPU: 'reset',
  PreSeparateNPU: 'isolate',
  SeparateNPU: 'isolate',
  ManuallySeparateNPU: 'isolate',
});

/** §1.4 policy of a chip's fault level; a level outside the table ("any other") is `isolate`. */
export function policyOfLevel(level: FaultLevel): ResetPolicy {
  return Object.hasOwn(POLICY_OF_LEVEL, level) ? POLICY_OF_LEVEL[level] : 'isolate';
}

/** True when `policy` is one of the seven policy strings of §1.4 (exact spelling). */
export function isResetPolicy(policy: string): policy is ResetPolicy {
  return Object.hasOwn(POLICY_LEVEL, policy);
}

/** §1.4 level of a policy string; throws `unknown reset policy "x"` for anything outside the vocabulary. */
export function policyLevel(policy: string): PolicyLevel {
  if (!isResetPolicy(policy)) throw new Error(`unknown reset policy ${JSON.stringify(policy)}`);
  return POLICY_LEVEL[policy];
}

/**
 * §1.4 `GetTaskProcessPolicy`: the policy of the chip with the highest level; on ties the lowest logic id wins
 * (whatever the input order); all chips at level 0 (or none) → `{ policy: '', level: 0 }`. An unknown policy string
 * on any chip throws an error naming the chip (HR-18: the caller skips the task this cycle).
 */
export function taskPolicy(chips: readonly { logicId: number; policy: string }[]): {
  policy: ResetPolicy | '';
  level: PolicyLevel;
} {
  let best: { logicId: number; policy: ResetPolicy; level: PolicyLevel } | undefined;
  for (const chip of chips) {
    if (!isResetPolicy(chip.policy)) {
      throw new Error(
        `task policy: chip logic id ${chip.logicId} has unknown reset policy ${JSON.stringify(chip.policy)}`,
      );
    }
    const level = POLICY_LEVEL[chip.policy];
    if (level === 0) continue;
    if (best === undefined || level > best.level || (level === best.level && chip.logicId < best.logicId)) {
      best = { logicId: chip.logicId, policy: chip.policy, level };
    }
  }
  return best === undefined ? { policy: '', level: 0 } : { policy: best.policy, level: best.level };
}

/**
 * §1.4 `GetNeedResetDevMap`: true for policy levels 2, 3 and 5 (not `free_reset`, not `isolate`). Throws for an
 * unknown policy string, as {@link policyLevel}.
 */
export function needsReset(policy: string): boolean {
  const level = policyLevel(policy);
  return level === 2 || level === 3 || level === 5;
}

/**
 * §1.2 `GraceToleranceOn` (`TestIsSupportGraceTolerance`, HR-01): `-hotReset` is 1 or 2, the run mode is
 * `Ascend910` (910A, 910B, 910A3, 910A5) and, on 910A, the chip work mode is SMP.
 */
export function isGraceToleranceSupported(kind: ChipKind, workModeSmp: boolean, mode: HotResetMode): boolean {
  if (mode !== 1 && mode !== 2) return false;
  if (runModeOf(kind) !== 'Ascend910') return false;
  return kind !== 'Ascend910' || workModeSmp;
}
