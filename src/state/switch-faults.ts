/**
 * The node's 910A3 switch faults as state (spec L.9): the current list after the library's subscription events and
 * query answers. Pure functions over immutable lists; the store (`store.ts`) holds the list and its level table, and
 * the device-info ConfigMap's `SwitchInfoCfg` is a projection of them (`src/kube/device-info-switch.ts`).
 */

/** One current switch fault, as the binding decoded it from an `LqDcmiEvent` (dcmi-abi.md §8). */
export interface SwitchFault {
  /** `eventType`: the alarm id, printed `0x%08x` in the assembled code. */
  readonly eventType: number;
  /** `subType`: the fault id; 0xFFFFFFFF = none (`na`). */
  readonly subType: number;
  readonly peerPortDevice: number;
  readonly peerPortId: number;
  readonly switchChipId: number;
  readonly switchPortId: number;
  readonly severity: number;
  /** 0 recover, 1 occur, 2 once. */
  readonly assertion: number;
  /** Unix ms (the agent's clock when the library gave 0). */
  readonly alarmRaisedTime: number;
}

/** Identity of a fault for its recovery (upstream compares everything but severity, assertion and time). */
export function sameSwitchFault(a: SwitchFault, b: SwitchFault): boolean {
  return (
    a.eventType === b.eventType &&
    a.subType === b.subType &&
    a.peerPortDevice === b.peerPortDevice &&
    a.peerPortId === b.peerPortId &&
    a.switchChipId === b.switchChipId &&
    a.switchPortId === b.switchPortId
  );
}

/**
 * The current faults after one subscription event: a recovery removes the faults it recovers, anything else is
 * added (a repeat of a fault already present keeps the first one: upstream appends duplicates, a deviation
 * documented in docs/super-node.md).
 */
export function applySwitchEvent(current: readonly SwitchFault[], e: SwitchFault): SwitchFault[] {
  if (e.assertion === 0) return current.filter((f) => !sameSwitchFault(f, e));
  if (current.some((f) => sameSwitchFault(f, e))) return [...current];
  return [...current, e];
}

/** A query's answer (`lq_dcmi_get_fault_info`): recoveries dropped, repeats merged (upstream keeps non-recoveries). */
export function switchFaultsOfQuery(listed: readonly SwitchFault[]): SwitchFault[] {
  let out: SwitchFault[] = [];
  for (const f of listed) if (f.assertion !== 0) out = applySwitchEvent(out, f);
  return out;
}

/** A switch event as the library reported it (`alarmRaisedTime` 0 = not stamped). */
export type RawSwitchEvent = SwitchFault;

/** A fault's time: the library's, or `nowMs` when it left 0. */
function stamp(e: RawSwitchEvent, nowMs: number): SwitchFault {
  return e.alarmRaisedTime === 0 ? { ...e, alarmRaisedTime: nowMs } : e;
}

/** The list after subscription events, in order (unstamped times take `nowMs`). */
export function withSwitchEvents(
  current: readonly SwitchFault[],
  events: readonly RawSwitchEvent[],
  nowMs: number,
): SwitchFault[] {
  let next: SwitchFault[] = [...current];
  for (const e of events) next = applySwitchEvent(next, stamp(e, nowMs));
  return next;
}

/**
 * The list after a query's answer, which replaces it (recoveries dropped). A fault the library left unstamped keeps
 * the time it was first seen with, so the periodic query does not change its `fault_time`.
 */
export function withSwitchQuery(
  current: readonly SwitchFault[],
  events: readonly RawSwitchEvent[],
  nowMs: number,
): SwitchFault[] {
  const known = (e: RawSwitchEvent): number | undefined =>
    e.alarmRaisedTime === 0 ? current.find((f) => sameSwitchFault(f, e))?.alarmRaisedTime : undefined;
  return switchFaultsOfQuery(events.map((e) => stamp(e, known(e) ?? nowMs)));
}

/** Same faults in the same order with the same assertions (what a change of the list is measured by). */
export function sameSwitchFaults(a: readonly SwitchFault[], b: readonly SwitchFault[]): boolean {
  return a.length === b.length && a.every((f, i) => sameSwitchFault(f, b[i]!) && f.assertion === b[i]!.assertion);
}
