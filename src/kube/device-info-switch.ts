/**
 * The `SwitchInfoCfg` value of the device-info ConfigMap (spec H.2, L.9): the 910A3 switch (LingQu bus) faults of
 * the node, serialised as Go's `encoding/json` writes upstream's `SwitchFaultInfo` struct (H.6).
 *
 * Upstream writes the key on every 910A3 (and A5) node. With switch faults off (no `liblingqu-dcmi.so`, or it failed
 * to initialise) the value is the Go zero value of the struct ({@link EMPTY_SWITCH_INFO_CFG}); ClusterD parses a
 * node's switch info only when the key exists. Pure: the current faults and the level table come in, text goes out.
 */
import type { ChipKind } from '../core/chips.js';
import { goMap, goSlice, goStruct, marshalGo, type GoValue } from '../core/go-json.js';
import type { SwitchCodeLevel } from '../faults/index.js';

/** Spec H.2: the kinds whose device-info ConfigMap carries `SwitchInfoCfg` (upstream: 910A3 and 910A5). */
export function carriesSwitchInfo(kind: ChipKind): boolean {
  return kind === 'Ascend910A3' || kind === 'Ascend910A5';
}

/** Switch fault level names, in ascending severity (spec L.9 `FaultLevel`; the SwitchFaultCode.json levels). */
export type SwitchFaultLevel = SwitchCodeLevel;

/** `NodeStatus` of spec L.9. */
export type SwitchNodeStatus = 'Healthy' | 'SubHealthy' | 'PreSeparate' | 'UnHealthy';

/** Severity rank of each level (higher = worse). */
export const SWITCH_LEVEL_RANK: Readonly<Record<SwitchFaultLevel, number>> = Object.freeze({
  NotHandle: 0,
  SubHealthFault: 1,
  RestartRequest: 2,
  PreSeparate: 3,
  Separate: 4,
});

/** The node status a level stands for (spec L.9; upstream's ConfigMap documentation: RestartRequest → UnHealthy). */
export const SWITCH_NODE_STATUS: Readonly<Record<SwitchFaultLevel, SwitchNodeStatus>> = Object.freeze({
  NotHandle: 'Healthy',
  SubHealthFault: 'SubHealthy',
  RestartRequest: 'UnHealthy',
  PreSeparate: 'PreSeparate',
  Separate: 'UnHealthy',
});

/** Peer device of a switch port (LqDcmiEvent `peerportDevice`, dcmi-abi.md §8): 0 cpu, 1 npu, 2 L2. */
export const PEER_L2 = 2;
/** L9: this many simultaneous faults on distinct L2-facing ports of one switch chip force Separate. */
export const L2_PLANE_PORTS = 16;

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

const NA = 0xffffffff;

/** Spec L.9 / dcmi-abi.md §8: `[0x%08x,<subType|na>,<cpu|npu|L2|na>,na]`. */
export function assembleSwitchCode(f: Pick<SwitchFault, 'eventType' | 'subType' | 'peerPortDevice'>): string {
  const alarm = `0x${(f.eventType >>> 0).toString(16).padStart(8, '0')}`;
  const id = f.subType >>> 0 === NA ? 'na' : String(f.subType >>> 0);
  const peer = ['cpu', 'npu', 'L2'][f.peerPortDevice] ?? 'na';
  return `[${alarm},${id},${peer},na]`;
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

/** L.9: some switch chip has faults on {@link L2_PLANE_PORTS} distinct L2-facing ports (counted among occurrences). */
export function l2PlaneDown(faults: readonly SwitchFault[]): boolean {
  const ports = new Map<number, Set<number>>();
  for (const f of faults) {
    if (f.peerPortDevice !== PEER_L2 || f.assertion !== 1) continue;
    let s = ports.get(f.switchChipId);
    if (!s) ports.set(f.switchChipId, (s = new Set()));
    s.add(f.switchPortId);
  }
  return [...ports.values()].some((s) => s.size >= L2_PLANE_PORTS);
}

/** The inputs of one `SwitchInfoCfg` value. */
export interface SwitchInfoInput {
  readonly faults: readonly SwitchFault[];
  /** Assembled code → level (SwitchFaultCode.json); codes absent from it are not reported. */
  readonly levelOf: (assembledCode: string) => SwitchFaultLevel | undefined;
  /** `UpdateTime`, Unix seconds. */
  readonly nowSec: number;
  /** hot-reset.md §3.10: while an online reset runs, NodeStatus Healthy and every code NotHandle. */
  readonly resetting?: boolean;
}

/** What {@link switchInfoOf} decided, beside the text. */
export interface SwitchInfo {
  /** The highest level of the reported faults (raised to Separate by the L2 rule); undefined without faults. */
  readonly level: SwitchFaultLevel | undefined;
  readonly nodeStatus: SwitchNodeStatus;
  /** Assembled codes of current faults missing from the level table (not reported, as upstream). */
  readonly unregistered: readonly string[];
  readonly l2PlaneDown: boolean;
  /** The `SwitchInfoCfg` value. */
  readonly text: string;
}

/** The Go zero value of upstream's `SwitchFaultInfo`: the value while switch faults are off (spec H.2, L.9). */
export const EMPTY_SWITCH_INFO_CFG = marshalGo(
  goStruct([
    ['FaultCode', goSlice(null)],
    ['FaultLevel', ''],
    ['UpdateTime', 0],
    ['NodeStatus', ''],
    ['FaultTimeAndLevelMap', goMap(null)],
  ]),
);

/**
 * The `SwitchInfoCfg` of the current faults (spec L.9): each registered fault as the JSON text of its simple form
 * (member order of upstream's `simpleSwitchFaultInfo`), the highest level, the node status, and the map
 * `<code>_<switchChipId>_<switchPortId>` → `{fault_time, fault_level}`.
 */
export function switchInfoOf(input: SwitchInfoInput): SwitchInfo {
  const codes: GoValue[] = [];
  const map = new Map<string, GoValue>();
  const unregistered: string[] = [];
  let top: SwitchFaultLevel | undefined;
  for (const f of input.faults) {
    const code = assembleSwitchCode(f);
    const configured = input.levelOf(code);
    if (configured === undefined) {
      if (!unregistered.includes(code)) unregistered.push(code);
      continue;
    }
    const level: SwitchFaultLevel = input.resetting === true ? 'NotHandle' : configured;
    if (top === undefined || SWITCH_LEVEL_RANK[level] > SWITCH_LEVEL_RANK[top]) top = level;
    codes.push(
      marshalGo(
        goStruct([
          ['EventType', f.eventType >>> 0],
          ['AssembledFaultCode', code],
          ['PeerPortDevice', f.peerPortDevice],
          ['PeerPortId', f.peerPortId],
          ['SwitchChipId', f.switchChipId],
          ['SwitchPortId', f.switchPortId],
          ['Severity', f.severity],
          ['Assertion', f.assertion],
          ['AlarmRaisedTime', f.alarmRaisedTime],
        ]),
      ),
    );
    const key = `${code}_${f.switchChipId}_${f.switchPortId}`;
    if (!map.has(key)) {
      map.set(
        key,
        goStruct([
          ['fault_time', f.alarmRaisedTime],
          ['fault_level', level],
        ]),
      );
    }
  }
  const planeDown = l2PlaneDown(input.faults);
  if (planeDown && input.resetting !== true) top = 'Separate';
  const nodeStatus: SwitchNodeStatus =
    input.resetting === true || top === undefined ? 'Healthy' : SWITCH_NODE_STATUS[top];
  const text = marshalGo(
    goStruct([
      ['FaultCode', goSlice(codes)],
      ['FaultLevel', top ?? ''],
      ['UpdateTime', input.nowSec],
      ['NodeStatus', nodeStatus],
      ['FaultTimeAndLevelMap', goMap(map)],
    ]),
  );
  return { level: top, nodeStatus, unregistered, l2PlaneDown: planeDown, text };
}

/** A switch event as the library reported it (`alarmRaisedTime` 0 = not stamped). */
export type RawSwitchEvent = SwitchFault;

/**
 * The node's current switch faults and what the device-info ConfigMap shows of them: events from the subscription
 * and answers of the query go in, `SwitchInfoCfg` comes out. Times the library left 0 are stamped with `nowMs`.
 */
export class SwitchFaultState {
  #faults: SwitchFault[] = [];
  #levelOf: (code: string) => SwitchFaultLevel | undefined;
  readonly #listeners = new Set<() => void>();

  constructor(levelOf: (code: string) => SwitchFaultLevel | undefined) {
    this.#levelOf = levelOf;
  }

  /** The current faults. */
  faults(): readonly SwitchFault[] {
    return this.#faults;
  }

  /** Subscription events, in order. */
  applyEvents(events: readonly RawSwitchEvent[], nowMs: number): void {
    let next = this.#faults;
    for (const e of events) next = applySwitchEvent(next, stamp(e, nowMs));
    this.#set(next);
  }

  /**
   * A query's answer replaces the list (recoveries dropped). A fault the library left unstamped keeps the time it
   * was first seen with, so a periodic query does not change its `fault_time`.
   */
  replaceAll(events: readonly RawSwitchEvent[], nowMs: number): void {
    const known = (e: RawSwitchEvent): number | undefined =>
      e.alarmRaisedTime === 0 ? this.#faults.find((f) => sameSwitchFault(f, e))?.alarmRaisedTime : undefined;
    this.#set(switchFaultsOfQuery(events.map((e) => stamp(e, known(e) ?? nowMs))));
  }

  /** A new level table (SwitchFaultCode.json reloaded). */
  setLevels(levelOf: (code: string) => SwitchFaultLevel | undefined): void {
    this.#levelOf = levelOf;
    this.#emit();
  }

  /** The table behind the level function changed (same function): the value is recomputed. */
  relevel(): void {
    this.#emit();
  }

  /** The `SwitchInfoCfg` view now. */
  info(nowMs: number): SwitchInfo {
    return switchInfoOf({ faults: this.#faults, levelOf: this.#levelOf, nowSec: Math.floor(nowMs / 1000) });
  }

  /** Called after every change of the faults or the levels. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #set(next: SwitchFault[]): void {
    const same =
      next.length === this.#faults.length &&
      next.every((f, i) => sameSwitchFault(f, this.#faults[i]!) && f.assertion === this.#faults[i]!.assertion);
    this.#faults = next;
    if (!same) this.#emit();
  }

  #emit(): void {
    for (const l of this.#listeners) l();
  }
}

function stamp(e: RawSwitchEvent, nowMs: number): SwitchFault {
  return e.alarmRaisedTime === 0 ? { ...e, alarmRaisedTime: nowMs } : e;
}
