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
import type { SwitchFault } from '../state/switch-faults.js';

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

const NA = 0xffffffff;

/** Spec L.9 / dcmi-abi.md §8: `[0x%08x,<subType|na>,<cpu|npu|L2|na>,na]`. */
export function assembleSwitchCode(f: Pick<SwitchFault, 'eventType' | 'subType' | 'peerPortDevice'>): string {
  const alarm = `0x${(f.eventType >>> 0).toString(16).padStart(8, '0')}`;
  const id = f.subType >>> 0 === NA ? 'na' : String(f.subType >>> 0);
  const peer = ['cpu', 'npu', 'L2'][f.peerPortDevice] ?? 'na';
  return `[${alarm},${id},${peer},na]`;
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
