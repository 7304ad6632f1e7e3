/**
 * The `SwitchInfoCfg` value of the device-info ConfigMap (spec H.2, L.9): the 910A3 switch (LingQu bus) faults of
 * the node, serialised as Go's `encoding/json` writes upstream's `SwitchFaultInfo` struct (H.6).
 *
 * Upstream writes the key on every 910A3 (and A5) node. With switch faults off (no `liblingqu-dcmi.so`, or it failed
 * to initialise) the value is the Go zero value of the struct ({@link EMPTY_SWITCH_INFO_CFG}); ClusterD parses a
 * node's switch info only when the key exists. Pure.
 */
import type { ChipKind } from '../core/chips.js';
import { goMap, goSlice, goStruct, marshalGo } from '../core/go-json.js';

/** Spec H.2: the kinds whose device-info ConfigMap carries `SwitchInfoCfg` (upstream: 910A3 and 910A5). */
export function carriesSwitchInfo(kind: ChipKind): boolean {
  return kind === 'Ascend910A3' || kind === 'Ascend910A5';
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
