/**
 * The published view `mindx-dl/cluster-info-device-<m>` (cluster-faults §0.3): per-type merge of each device's
 * faults, Go-exact JSON per node, and chunking into ConfigMaps of about 800 KiB whose indices, once used, stay in
 * use. Pure.
 */
import { goMap, goSlice, goStruct, marshalGo, type GoValue } from '../core/go-json.js';
import { DEVICE_INFO_NAME_PREFIX } from '../kube/device-info.js';
import { mostSevere, type DeviceFault, type FaultObject, type NodeDeviceView } from './device-view.js';

export const CLUSTER_INFO_NAMESPACE = 'mindx-dl';
export const CLUSTER_INFO_PREFIX = 'cluster-info-device-';
export const CLUSTER_INFO_LABELS: Readonly<Record<string, string>> = Object.freeze({ 'mx-consumer-volcano': 'true' });
/** §0.3: each chunk about 800 KiB or less. */
export const CHUNK_LIMIT_BYTES = 800 * 1024;

const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** §0.3 fault-list encoding: one object per (device, fault_type), devices and types sorted. */
export function mergeFaults(faults: ReadonlyMap<string, readonly DeviceFault[]>): FaultObject[] {
  const out: FaultObject[] = [];
  for (const dev of [...faults.keys()].sort(byBytes)) {
    const byType = new Map<string, DeviceFault[]>();
    for (const f of faults.get(dev) ?? []) {
      const l = byType.get(f.object.fault_type) ?? [];
      l.push(f);
      byType.set(f.object.fault_type, l);
    }
    for (const type of [...byType.keys()].sort(byBytes)) {
      const members = byType.get(type)!;
      const counted = members.filter((m) => m.level !== 'ManuallySeparateNPU');
      const codes: string[] = [];
      const map: FaultObject['fault_time_and_level_map'] = {};
      for (const m of counted) {
        if (!codes.includes(m.code)) codes.push(m.code);
        Object.assign(map, m.object.fault_time_and_level_map);
      }
      const level = mostSevere(members.map((m) => m.level));
      out.push({
        fault_type: type,
        npu_name: dev,
        large_model_fault_level: level,
        fault_level: level,
        fault_handling: level,
        fault_code: codes.join(','),
        fault_time_and_level_map: map,
      });
    }
  }
  return out;
}

function faultObjectGo(o: FaultObject): GoValue {
  const map = new Map<string, GoValue>();
  for (const [k, v] of Object.entries(o.fault_time_and_level_map)) {
    map.set(
      k,
      goStruct([
        ['fault_time', v.fault_time],
        ['fault_level', v.fault_level],
      ]),
    );
  }
  return goStruct([
    ['fault_type', o.fault_type],
    ['npu_name', o.npu_name],
    ['large_model_fault_level', o.large_model_fault_level],
    ['fault_level', o.fault_level],
    ['fault_handling', o.fault_handling],
    ['fault_code', o.fault_code],
    ['fault_time_and_level_map', goMap(map)],
  ]);
}

/** The published `DeviceList` of a node: the read lists with `-Fault` re-encoded from the processed faults. */
export function publishedDeviceList(view: NodeDeviceView): Record<string, string> {
  const list = { ...view.deviceList };
  const key = `huawei.com/${view.deviceType}-Fault`;
  const merged = mergeFaults(view.faults);
  if (merged.length > 0 || key in list) list[key] = marshalGo(goSlice(merged.map(faultObjectGo)));
  return list;
}

/** The Go JSON of one node's published value (§0.3). */
export function publishedNodeJson(view: NodeDeviceView): string {
  return marshalGo(
    goStruct([
      ['DeviceList', goMap(publishedDeviceList(view))],
      ['UpdateTime', view.updateTime],
      ['CmName', DEVICE_INFO_NAME_PREFIX + view.node],
      ['SuperPodID', view.superPodId],
      ['RackID', view.rackId],
      ['ServerIndex', view.serverIndex],
    ]),
  );
}

/** One ConfigMap's `data` value: `{"mindx-dl-deviceinfo-<node>": <value>, …}` with sorted keys. */
function chunkJson(entries: readonly [string, string][]): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
}

/**
 * Splits the views into chunk values (§0.3): nodes in name order, a new chunk when the next node would take the
 * chunk over {@link CHUNK_LIMIT_BYTES}; at least `minChunks` chunks (earlier indices stay in use, written `{}`).
 */
export function buildChunks(
  views: ReadonlyMap<string, NodeDeviceView>,
  minChunks = 0,
  limit = CHUNK_LIMIT_BYTES,
): string[] {
  const chunks: [string, string][][] = [];
  let current: [string, string][] = [];
  let size = 2;
  for (const node of [...views.keys()].sort(byBytes)) {
    const key = DEVICE_INFO_NAME_PREFIX + node;
    const value = publishedNodeJson(views.get(node)!);
    const add = Buffer.byteLength(key) + 3 + Buffer.byteLength(value) + 1;
    if (current.length > 0 && size + add > limit) {
      chunks.push(current);
      current = [];
      size = 2;
    }
    current.push([key, value]);
    size += add;
  }
  if (current.length > 0) chunks.push(current);
  while (chunks.length < minChunks) chunks.push([]);
  return chunks.map(chunkJson);
}

/** Name of chunk `i`. */
export function chunkName(i: number): string {
  return `${CLUSTER_INFO_PREFIX}${i}`;
}
