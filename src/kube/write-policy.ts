/**
 * When the device-info ConfigMap is written (spec H.4), as a pure decision over (last written, new, now): on a
 * change, at most once per second; without one, every 5 minutes as a heartbeat; changes of fault times alone do not
 * count as a change.
 */

/** Minimum time between two writes (spec H.4, K.4). */
export const MIN_WRITE_INTERVAL_MS = 1000;
/** Forced rewrite without change (spec H.4 heartbeat, K.4). */
export const HEARTBEAT_INTERVAL_MS = 5 * 60 * 1000;

/** The parts of the ConfigMap compared between writes (spec H.4 `same`). */
export interface DeviceInfoSnapshot {
  /** The DeviceList map (spec H.3). */
  readonly deviceList: Readonly<Record<string, string>>;
  /** `ManuallySeparateNPU` value (spec G.2). */
  readonly manuallySeparate: string;
  /** `UpgradeFaultReason` value (spec G.5): the serialised reason cache. */
  readonly upgradeReasons: string;
  /** `SwitchInfoCfg` value (910A3/A5); compared without its times. */
  readonly switchInfo?: string;
}

/** What was last written successfully, and when. */
export interface WrittenSnapshot extends DeviceInfoSnapshot {
  /** On the monotonic clock, as every time of this rule (issue [T] item 1): the rule only measures intervals. */
  readonly writtenAtMs: number;
}

/** The decision. */
export type WriteDecision =
  /** Write now. */
  | { readonly action: 'write'; readonly why: 'first' | 'changed' | 'heartbeat' }
  /** Changed, but the last write is less than 1 s old: decide again at `atMs`. */
  | { readonly action: 'wait'; readonly atMs: number }
  /** Nothing to write; the heartbeat falls due at `heartbeatAtMs`. */
  | { readonly action: 'skip'; readonly heartbeatAtMs: number };

/** Timing of the rule (spec values by default; tests and `simulate` may shorten them). */
export interface WritePolicyTiming {
  readonly minIntervalMs?: number;
  readonly heartbeatMs?: number;
}

/** Decides whether `next` is written at `nowMs` (monotonic, spec H.4). */
export function decideWrite(
  last: WrittenSnapshot | undefined,
  next: DeviceInfoSnapshot,
  nowMs: number,
  timing: WritePolicyTiming = {},
): WriteDecision {
  if (last === undefined) return { action: 'write', why: 'first' };
  const minInterval = timing.minIntervalMs ?? MIN_WRITE_INTERVAL_MS;
  const heartbeat = timing.heartbeatMs ?? HEARTBEAT_INTERVAL_MS;
  const age = nowMs - last.writtenAtMs;
  const same = sameIgnoringTimes(last, next);
  // spec H.4: "if now - lastWrite < 1 s: wait" — strict, so a write exactly 1 s later is allowed.
  if (age < minInterval) {
    return same
      ? { action: 'skip', heartbeatAtMs: last.writtenAtMs + heartbeat }
      : { action: 'wait', atMs: last.writtenAtMs + minInterval };
  }
  if (same && age < heartbeat) return { action: 'skip', heartbeatAtMs: last.writtenAtMs + heartbeat };
  return { action: 'write', why: same ? 'heartbeat' : 'changed' };
}

/** The `same` test of spec H.4. */
export function sameIgnoringTimes(a: DeviceInfoSnapshot, b: DeviceInfoSnapshot): boolean {
  return (
    equalIgnoringFaultTime(a.deviceList, b.deviceList) &&
    a.manuallySeparate === b.manuallySeparate &&
    a.upgradeReasons === b.upgradeReasons &&
    withoutSwitchTimes(a.switchInfo) === withoutSwitchTimes(b.switchInfo)
  );
}

const FAULT_TIME = /"fault_time":\d+,/g;

/**
 * spec H.4 `equalIgnoringFaultTime`: same key set and, per key, equal values once every `"fault_time":<digits>,`
 * is deleted. Only the fault lists carry that text, so only fault times are ignored.
 */
export function equalIgnoringFaultTime(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    const va = a[k]!;
    const vb = b[k]!;
    if (va !== vb && va.replace(FAULT_TIME, '') !== vb.replace(FAULT_TIME, '')) return false;
  }
  return true;
}

/** Switch info compared without `UpdateTime` and fault times (spec H.4 "switch info equality ignores times"). */
function withoutSwitchTimes(s: string | undefined): string | undefined {
  return s?.replace(/"UpdateTime":-?\d+,?/g, '').replace(/"(?:fault_time|FaultTime)":-?\d+,?/g, '');
}
