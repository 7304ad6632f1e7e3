/**
 * The fault center's per-node device view (spec cluster-faults.md §0.1–§0.3): what a node's device-info ConfigMap
 * says after parsing and splitting, what the processor chain edits, and the "add fault and fix" rule both features
 * (manual separation §1.8, public faults §2.9) use to inject a fault. Shared by src/cluster/ and
 * src/cluster/public-fault/.
 */
import { LEVELS_BY_SEVERITY } from '../faults/levels.js';

/** Levels, most severe first (§0.3): the agent's order (device-plugin.md E.2) reversed. `NormalNetwork` ranks as `NormalNPU`. */
export const CLUSTER_LEVEL_ORDER: readonly string[] = [...LEVELS_BY_SEVERITY].reverse();

/** Levels whose injected fault leaves the device schedulable (§0.3 rule 3). */
export const HARMLESS_LEVELS: ReadonlySet<string> = new Set([
  'NotHandleFault',
  'SubHealthFault',
  'NormalNPU',
  'NormalNetwork',
]);

/** Rank of a level: 0 is the most severe; unknown levels rank just above `NormalNPU`. */
export function levelRank(level: string): number {
  if (level === 'NormalNetwork') return CLUSTER_LEVEL_ORDER.indexOf('NormalNPU');
  const i = CLUSTER_LEVEL_ORDER.indexOf(level);
  return i >= 0 ? i : CLUSTER_LEVEL_ORDER.length - 1.5;
}

/** The most severe of `levels` (`NormalNPU` for none). */
export function mostSevere(levels: Iterable<string>): string {
  let best = 'NormalNPU';
  for (const l of levels) if (levelRank(l) < levelRank(best)) best = l;
  return best;
}

/** One entry of `fault_time_and_level_map`. */
export interface TimeAndLevel {
  fault_time: number;
  fault_level: string;
}

/** A fault object as the device plugin writes it in `huawei.com/<T>-Fault` (device-plugin.md H.3). */
export interface FaultObject {
  fault_type: string;
  npu_name: string;
  large_model_fault_level: string;
  fault_level: string;
  fault_handling: string;
  fault_code: string;
  fault_time_and_level_map: Record<string, TimeAndLevel>;
}

/**
 * A fault after splitting (§0.1): one code per fault, with the center-local receive time (ms) of that
 * (device, code) pair. `object` is what is published for it (§0.3 merges objects of one type again).
 */
export interface DeviceFault {
  code: string;
  level: string;
  faultTime: number;
  /** ms; when the center first saw this code on this device during its current presence (§0.1) */
  receivedTime: number;
  object: FaultObject;
}

/** One node's device view (§0.1, §0.3). Mutable: processors edit a per-cycle deep copy (§0.2). */
export interface NodeDeviceView {
  /** node name (ConfigMap name without `mindx-dl-deviceinfo-`) */
  node: string;
  /** `Ascend910`, `Ascend310P`, `Ascend310` or `npu` (§0.1 "Device type") */
  deviceType: string;
  /** the `DeviceList` as read, values as strings (`huawei.com/<T>` lists, `-Fault` JSON…) */
  deviceList: Record<string, string>;
  updateTime: number;
  superPodId: number;
  serverIndex: number;
  rackId: number;
  /** faults per device name (`Ascend910-3`), in arrival order */
  faults: Map<string, DeviceFault[]>;
}

/** `huawei.com/<T>` */
export function availableKey(deviceType: string): string {
  return `huawei.com/${deviceType}`;
}

function splitList(value: string | undefined): string[] {
  return value ? value.split(',').filter((s) => s !== '') : [];
}

function sameObject(a: FaultObject, b: FaultObject): boolean {
  if (
    a.fault_type !== b.fault_type ||
    a.npu_name !== b.npu_name ||
    a.large_model_fault_level !== b.large_model_fault_level ||
    a.fault_level !== b.fault_level ||
    a.fault_handling !== b.fault_handling ||
    a.fault_code !== b.fault_code
  ) {
    return false;
  }
  // no allocation here: this runs for every pair of faults on a device (hot at the 50,000-fault cap)
  const ma = a.fault_time_and_level_map;
  const mb = b.fault_time_and_level_map;
  let count = 0;
  for (const k in ma) {
    const x = ma[k];
    const y = mb[k];
    if (x === undefined || y === undefined || x.fault_time !== y.fault_time || x.fault_level !== y.fault_level) {
      return false;
    }
    count++;
  }
  for (const k in mb) if (mb[k] !== undefined) count--;
  return count === 0;
}

/**
 * "Add fault and fix" (§0.3): append `fault` to `device` unless an identical object is already there; a fault
 * whose level is not harmless takes the device out of `huawei.com/<T>` and puts it (once) into `-Unhealthy`
 * (`CardUnhealthy`, `PublicFault`) or `-NetworkUnhealthy` (`CardNetworkUnhealthy`). Returns whether anything was
 * added.
 */
export function addFaultAndFix(view: NodeDeviceView, device: string, fault: DeviceFault): boolean {
  const list = view.faults.get(device) ?? [];
  if (list.some((f) => sameObject(f.object, fault.object))) return false;
  list.push(fault);
  view.faults.set(device, list);
  if (!HARMLESS_LEVELS.has(fault.level)) {
    const key = availableKey(view.deviceType);
    // membership is tested on the string first: most adds find the device already moved (hot at the 50,000 cap)
    const available = view.deviceList[key];
    if (available === undefined) {
      view.deviceList[key] = '';
    } else if (listHas(available, device)) {
      view.deviceList[key] = listWithout(available, device);
    }
    const type = fault.object.fault_type;
    const target =
      type === 'CardNetworkUnhealthy'
        ? `${key}-NetworkUnhealthy`
        : type === 'CardUnhealthy' || type === 'PublicFault'
          ? `${key}-Unhealthy`
          : undefined;
    if (target) {
      const current = view.deviceList[target] ?? '';
      if (!listHas(current, device)) view.deviceList[target] = current === '' ? device : `${current},${device}`;
    }
  }
  return true;
}

/**
 * Whether the comma-separated `list` has the entry `item`: `,list,` contains `,item,`. Searched in place (issue [P]
 * item 6: the two strings built per test were most of what the first pass over 50,000 public faults allocated);
 * an item that is empty or holds a comma takes the built strings.
 */
export function listHas(list: string, item: string): boolean {
  if (item === '' || item.includes(',')) return `,${list},`.includes(`,${item},`);
  return entryAt(list, item, 0) >= 0;
}

const COMMA = 0x2c;

/**
 * `list` without the entries equal to `item`, and without empty entries (the split, filter and join of §0.2's "add
 * fault and fix"). A list without empty entries that has `item` once is cut in place; anything else is split.
 */
export function listWithout(list: string, item: string): string {
  if (item !== '' && !item.includes(',') && list !== '' && !list.includes(',,')) {
    const first = list.charCodeAt(0) !== COMMA && list.charCodeAt(list.length - 1) !== COMMA;
    const i = first ? entryAt(list, item, 0) : -1;
    if (i >= 0 && entryAt(list, item, i + 1) < 0) {
      const end = i + item.length;
      if (i === 0) return end === list.length ? '' : list.slice(end + 1);
      return list.slice(0, i - 1) + list.slice(end);
    }
  }
  return splitList(list)
    .filter((d) => d !== item)
    .join(',');
}

/** The index of the first entry `item` of `list` at or after `from`, or -1 (`item` holds no comma). */
function entryAt(list: string, item: string, from: number): number {
  for (let i = list.indexOf(item, from); i >= 0; i = list.indexOf(item, i + 1)) {
    const end = i + item.length;
    if ((i === 0 || list.charCodeAt(i - 1) === COMMA) && (end === list.length || list.charCodeAt(end) === COMMA)) {
      return i;
    }
  }
  return -1;
}

/**
 * A deep copy of one fault, field by field (issue [P] item 6: `structuredClone` serialised and parsed every fault
 * of every node processed, a tenth of the first cycle's own time with 50,000 public faults). A map key
 * `__proto__` stays an own key.
 */
function cloneFault(f: DeviceFault): DeviceFault {
  const o = f.object;
  const m = o.fault_time_and_level_map;
  const map: Record<string, TimeAndLevel> = {};
  for (const k of Object.keys(m)) {
    const v = m[k]!;
    const e: TimeAndLevel = { fault_time: v.fault_time, fault_level: v.fault_level };
    if (k === '__proto__')
      Object.defineProperty(map, k, { value: e, writable: true, enumerable: true, configurable: true });
    else map[k] = e;
  }
  return {
    code: f.code,
    level: f.level,
    faultTime: f.faultTime,
    receivedTime: f.receivedTime,
    object: {
      fault_type: o.fault_type,
      npu_name: o.npu_name,
      large_model_fault_level: o.large_model_fault_level,
      fault_level: o.fault_level,
      fault_handling: o.fault_handling,
      fault_code: o.fault_code,
      fault_time_and_level_map: map,
    },
  };
}

/** Deep copy for one processing cycle (§0.2 step 2). */
export function cloneView(view: NodeDeviceView): NodeDeviceView {
  const faults = new Map<string, DeviceFault[]>();
  for (const [d, list] of view.faults) faults.set(d, list.map(cloneFault));
  return { ...view, deviceList: { ...view.deviceList }, faults };
}

/**
 * A step of the processor chain of §0.2, applied to the per-cycle copies of the views of the nodes to re-process.
 *
 * The processing centre re-processes only the nodes whose inputs changed (issue [O] item 1): their device info,
 * their manual-separation entry, the policy, or what a processor reports through {@link changedNodes}. A processor
 * must therefore compute each node from that node's view and its own per-node inputs only, and report every node
 * whose inputs it changed; `process` is then given those nodes (and any others due), never necessarily all.
 */
export interface DeviceViewProcessor {
  readonly name: string;
  process(views: Map<string, NodeDeviceView>, nowMs: number): void;
  /** Nodes whose inputs of this processor changed since the previous call (called once per cycle, before `process`). */
  changedNodes?(): Iterable<string>;
}
