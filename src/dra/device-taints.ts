/**
 * Faults drive taints (issue [DRA] item 3): a chip's state in the store's snapshot projected onto the device taints of
 * its ResourceSlice device. Pure, apart from {@link TaintTimes}, which remembers since when each taint is on.
 *
 * One taint per fault level the chip has (`npu.huawei.com/<level>`, value = the chip's codes at that level): the
 * effective level, each code's level (device-info H.3 per-code levels) and ManuallySeparateNPU when the chip is in the
 * manual-separation cache, so that a SeparateNPU code on a manually separated chip still evicts. Effects
 * ({@link LEVEL_EFFECTS}): what upstream takes off scheduling (D.7: every level but NormalNPU, NotHandleFault,
 * SubHealthFault is Unhealthy) is `NoSchedule`; what cannot go on running on the chip (RestartNPU: it must be reset;
 * SeparateNPU: it is isolated) is `NoExecute`; SubHealthFault is informational (`None`). A chip being reset carries
 * `npu.huawei.com/Resetting` (`NoSchedule`) and binding conditions; a chip the engine calls Unhealthy for another
 * reason (a card-mate's fault on a 300I Duo, D.7 post-rule) carries `npu.huawei.com/Unhealthy` (`NoSchedule`), so DRA
 * never offers a chip the device plugin would not. Recovery and an operator's release remove the taints with the
 * levels that caused them.
 *
 * Rules of the API (k8s.io/api v0.37.2 resource/v1, `validateDeviceTaint`): the key is a label name, the value a
 * label value (at most 63 characters of `[-A-Za-z0-9_.]`, alphanumeric at both ends), effect `None`, `NoSchedule`
 * or `NoExecute`, at most 16 taints per device; `timeAdded` is set by the API server to its "now" when absent, so the
 * agent always sends the time it remembers (an eviction's toleration seconds count from it).
 */
import { CHIP_FAILED_CONDITION, CHIP_READY_CONDITION, DRA_TAINT_PREFIX } from '../core/dra-devices.js';
import type { FaultLevel } from '../faults/levels.js';
import type { ChipState } from '../state/store.js';
import type { DeviceTaint, DeviceTaintEffect } from './dra-types.js';

/** Effect of the taint of each fault level; a level not listed (NormalNPU, NotHandleFault) has no taint. */
export const LEVEL_EFFECTS: Readonly<Partial<Record<FaultLevel, DeviceTaintEffect>>> = Object.freeze({
  SubHealthFault: 'None',
  RestartRequest: 'NoSchedule',
  RestartBusiness: 'NoSchedule',
  FreeRestartNPU: 'NoSchedule',
  RestartNPU: 'NoExecute',
  PreSeparateNPU: 'NoSchedule',
  SeparateNPU: 'NoExecute',
  ManuallySeparateNPU: 'NoSchedule',
});

/** A chip an offline or task-aware reset is resetting. */
export const RESETTING_TAINT_KEY = `${DRA_TAINT_PREFIX}Resetting`;
/** A chip the fault engine calls Unhealthy without a level that has a taint. */
export const UNHEALTHY_TAINT_KEY = `${DRA_TAINT_PREFIX}Unhealthy`;
/** The most taints a device may carry (`DeviceTaintsMaxLength`). */
export const MAX_TAINTS_PER_DEVICE = 16;
/** A label value's length limit. */
const MAX_VALUE_CHARS = 63;

/** What the taints of a chip are computed from (a {@link ChipState} has it). */
export type TaintChip = Pick<
  ChipState,
  'level' | 'faultCodes' | 'faultCodeLevels' | 'manuallySeparated' | 'health' | 'faultHealth' | 'recovering'
>;

/**
 * Whether a reset is running on the chip: an offline reset reboots it (`recovering`, hot-reset §3.10), or a
 * task-aware reset runs on it — the reset layer then reports the chip Healthy to kubelet while the engine does not
 * (the store's filter, `health` Healthy over `faultHealth` Unhealthy).
 */
export function isResetting(chip: TaintChip): boolean {
  return chip.recovering || (chip.health === 'Healthy' && chip.faultHealth === 'Unhealthy');
}

/** The taint key of a fault level: `npu.huawei.com/<level>`. */
export function levelTaintKey(level: FaultLevel): string {
  return `${DRA_TAINT_PREFIX}${level}`;
}

/**
 * A label value naming the codes: joined with `.`, cut at a code boundary to 63 characters; codes that are not
 * alphanumeric (a configuration's own spelling) are left out.
 */
export function codesValue(codes: readonly string[]): string {
  let out = '';
  for (const c of codes) {
    if (!/^[A-Za-z0-9]{1,63}$/.test(c)) continue;
    const next = out === '' ? c : `${out}.${c}`;
    if (next.length > MAX_VALUE_CHARS) break;
    out = next;
  }
  return out;
}

/**
 * The taints of a chip, sorted by key, without `timeAdded` ({@link TaintTimes.stamp} adds it). `effects` replaces
 * {@link LEVEL_EFFECTS} (tests, a future policy option).
 */
export function chipTaints(
  chip: TaintChip,
  effects: Readonly<Partial<Record<FaultLevel, DeviceTaintEffect>>> = LEVEL_EFFECTS,
): DeviceTaint[] {
  const codesByLevel = new Map<FaultLevel, string[]>();
  const add = (level: FaultLevel, code?: string): void => {
    const list = codesByLevel.get(level) ?? [];
    if (code !== undefined && !list.includes(code)) list.push(code);
    codesByLevel.set(level, list);
  };
  add(chip.level);
  chip.faultCodes.forEach((code, i) => add(chip.faultCodeLevels[i] ?? chip.level, code));
  if (chip.manuallySeparated) add('ManuallySeparateNPU');
  const taints: DeviceTaint[] = [];
  for (const [level, codes] of codesByLevel) {
    const effect = effects[level];
    if (effect === undefined) continue;
    const value = codesValue(codes);
    taints.push({ key: levelTaintKey(level), ...(value !== '' ? { value } : {}), effect });
  }
  if (isResetting(chip)) taints.push({ key: RESETTING_TAINT_KEY, effect: 'NoSchedule' });
  const blocked = taints.some((t) => t.effect !== 'None');
  // D.7: never offer what the engine calls Unhealthy (a health group, a rule without a taint of its own)
  if (!blocked && chip.faultHealth === 'Unhealthy') taints.push({ key: UNHEALTHY_TAINT_KEY, effect: 'NoSchedule' });
  taints.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return taints.slice(0, MAX_TAINTS_PER_DEVICE);
}

/** Binding conditions of a device (API: both lists or neither, at most 4 each, disjoint). */
export interface BindingConditions {
  readonly bindingConditions: readonly string[];
  readonly bindingFailureConditions: readonly string[];
}

/**
 * A chip under reset carries binding conditions: a claim allocated to it (one that tolerates the Resetting taint, or
 * one the scheduler allocated from a view older than the taint) is bound only when the agent sets ChipReady, and
 * retried elsewhere when it sets ChipFailed (src/dra/claim-status.ts). Undefined when the chip is not resetting.
 */
export function bindingConditionsOf(chip: TaintChip): BindingConditions | undefined {
  if (!isResetting(chip)) return undefined;
  return { bindingConditions: [CHIP_READY_CONDITION], bindingFailureConditions: [CHIP_FAILED_CONDITION] };
}

/** RFC 3339 with whole seconds, as `metav1.Time` is written. */
export function metaTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Since when each taint of each device is on: the wall-clock time of the first projection that had it (with the same
 * effect; an effect change is a new taint, as the API server's DeviceTaintRule strategy treats it). Taints found on
 * the live slices at start keep their time ({@link adopt}), so an agent restart does not restart an eviction's
 * toleration seconds. Entries of taints no longer projected are dropped at each {@link commit}.
 */
export class TaintTimes {
  #times = new Map<string, string>();
  #used = new Map<string, string>();

  /** `taints` with `timeAdded`; `nowMs` is the wall-clock time of the snapshot. */
  stamp(device: string, taints: readonly DeviceTaint[], nowMs: number): DeviceTaint[] {
    return taints.map((t) => {
      const k = entryKey(device, t);
      const time = this.#used.get(k) ?? this.#times.get(k) ?? metaTime(nowMs);
      this.#used.set(k, time);
      return { ...t, timeAdded: time };
    });
  }

  /** Takes the times of taints already on a live device (kept only if the next projection has the same taint). */
  adopt(device: string, taints: readonly DeviceTaint[] | undefined): void {
    for (const t of taints ?? []) {
      if (typeof t.timeAdded !== 'string' || Number.isNaN(Date.parse(t.timeAdded))) continue;
      const k = entryKey(device, t);
      if (!this.#times.has(k)) this.#times.set(k, metaTime(Date.parse(t.timeAdded)));
    }
  }

  /** Ends a projection: the taints it stamped are the ones remembered from now on. */
  commit(): void {
    this.#times = this.#used;
    this.#used = new Map();
  }

  /** Taints remembered. */
  get size(): number {
    return this.#times.size;
  }
}

function entryKey(device: string, t: DeviceTaint): string {
  return `${device}\u0000${t.key}\u0000${t.effect}`;
}
