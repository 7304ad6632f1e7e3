/**
 * `PubFaultProcessor` (spec cluster-faults.md §2.9): the first step of the device chain (§0.2). For every node that
 * has both a device view and cached public faults, each record's NPUs get a `PublicFault` object through "add fault
 * and fix" (§0.3); the node's `UpdateTime` becomes now when anything was added.
 *
 * The views are rebuilt from the device plugin's data every cycle, so the pass runs on fresh copies each second. At
 * the 50,000-record cap that used to mean one new object per (record, NPU) — 400,000 — per cycle, most of them then
 * rejected as identical. The processor therefore remembers, per node:
 *
 * - the injected objects, per (time, level, code) and NPU id, so records with equal values share them; an object
 *   depends only on those and the node's device type, and is created once while some record of the node needs it;
 * - the outcome of the last pass on that node — the faults added (device, object, in order), the final values of
 *   the two `DeviceList` entries "add fault and fix" writes, and whether anything was added — together with
 *   everything that outcome depended on: the node's entries (the store's per-node version; entries are frozen, a
 *   changed record is a new entry), the device type, the available and `-Unhealthy` entries, and the faults
 *   already present on every NPU the records name.
 *
 * When all of that is unchanged the outcome is replayed onto the fresh view (a handful of pushes per node, nothing
 * read from the records); otherwise the node is recomputed with {@link addFaultAndFix}, reusing the objects. The
 * level configuration is not an input: a record keeps the level it was stored with (docs/public-faults.md). The
 * result is the same as the uncached pass ({@link pubFaultPassUncached}) in content and in every order (fault
 * lists, device map, `DeviceList` keys). Injected objects are shared between cycles' views and are frozen: nothing
 * downstream may mutate them.
 */
import { chipName } from '../../core/device-names.js';
import {
  addFaultAndFix,
  availableKey,
  type DeviceFault,
  type DeviceViewProcessor,
  type FaultObject,
  type NodeDeviceView,
  type TimeAndLevel,
} from '../device-view.js';
import type { PublicFaultCache } from './cache.js';
import type { PublicFaultRecord } from './types.js';

/** The injected fault of one record on one NPU (§2.9). */
export function publicDeviceFault(deviceType: string, id: number, r: PublicFaultRecord): DeviceFault {
  return {
    code: r.faultCode,
    level: r.level,
    faultTime: r.faultTime,
    // §1.10: public faults carry receive time 0
    receivedTime: 0,
    object: {
      fault_type: 'PublicFault',
      npu_name: chipName(deviceType, id),
      large_model_fault_level: r.level,
      fault_level: r.level,
      fault_handling: r.level,
      fault_code: r.faultCode,
      fault_time_and_level_map: timeAndLevelMap(r),
    },
  };
}

/**
 * `{ [code]: { fault_time, fault_level } }` by assignment (issue [O]: the computed-key literal was the largest
 * single cost of the first pass at 50,000 records); a code `__proto__` is defined, so that it stays an own key.
 */
function timeAndLevelMap(r: PublicFaultRecord): Record<string, TimeAndLevel> {
  const map: Record<string, TimeAndLevel> = {};
  const entry: TimeAndLevel = { fault_time: r.faultTime, fault_level: r.level };
  if (r.faultCode === '__proto__') {
    Object.defineProperty(map, r.faultCode, { value: entry, writable: true, enumerable: true, configurable: true });
  } else {
    map[r.faultCode] = entry;
  }
  return map;
}

/**
 * The pass without any caching (the behaviour of §2.9 as written): the reference the cached processor is tested
 * against.
 */
export function pubFaultPassUncached(cache: PublicFaultCache, views: Map<string, NodeDeviceView>, nowMs: number): void {
  if (cache.size === 0) return;
  for (const node of cache.nodes()) {
    const view = views.get(node);
    // §2.8: faults of nodes without a device view are stored but not shown
    if (view === undefined) continue;
    let added = false;
    for (const record of cache.byNode(node).values()) {
      for (const id of record.devIds) {
        const fault = publicDeviceFault(view.deviceType, id, record);
        if (addFaultAndFix(view, fault.object.npu_name, fault)) added = true;
      }
    }
    if (added) view.updateTime = Math.floor(nowMs / 1000);
  }
}

/** Work counters of a {@link PubFaultProcessor} (cumulative; for tests and benches). */
export interface PubFaultProcessorStats {
  /** passes that found entries in the store */
  passes: number;
  /** nodes whose remembered outcome was replayed */
  nodeReplays: number;
  /** nodes computed with "add fault and fix" (first time, or something they depend on changed) */
  nodeRecomputes: number;
  /** injected objects created (the rest were reused) */
  objectsCreated: number;
}

/** A present fault object as seen when the outcome was computed (own copy of the fields "add fault and fix" compares). */
interface SeenObject {
  readonly type: string;
  readonly npu: string;
  readonly lmLevel: string;
  readonly level: string;
  readonly handling: string;
  readonly code: string;
  /** `fault_time_and_level_map` as [key, time, level] in key order */
  readonly map: readonly (readonly [string, number, string])[];
}

/** A `DeviceList` entry as seen: absent, or present with its value. */
interface SeenEntry {
  readonly present: boolean;
  readonly value: string | undefined;
}

/** What a node's outcome depended on and what it was. */
interface NodeMemo {
  // inputs
  /** {@link PublicFaultCache.nodeVersion} */
  readonly version: number;
  readonly deviceType: string;
  readonly available: SeenEntry;
  readonly unhealthy: SeenEntry;
  /** the NPUs the records name that had no fault list before the pass */
  readonly touchedBare: readonly string[];
  /** the other NPUs the records name, with the faults present on them before the pass */
  readonly touchedSeen: readonly (readonly [string, readonly SeenObject[]])[];
  /** false when a present fault could not be copied for comparison: the next pass recomputes */
  readonly cacheable: boolean;
  // outcome
  /** the faults added, in order (each on the NPU its object names) */
  readonly additions: readonly DeviceFault[];
  /** `DeviceList` writes in first-write order (available before `-Unhealthy`), final values */
  readonly listWrites: readonly (readonly [string, string])[];
  readonly added: boolean;
  /** the injected objects of the node's records */
  readonly objects: ObjectTable;
}

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

function seenEntry(list: Record<string, string>, key: string): SeenEntry {
  return { present: hasOwn(list, key), value: list[key] };
}

function sameEntry(list: Record<string, string>, key: string, seen: SeenEntry): boolean {
  return list[key] === seen.value && hasOwn(list, key) === seen.present;
}

/** A copy of what "add fault and fix" compares, or undefined when the map is not data (such a node is never cached). */
function seenObject(o: FaultObject): SeenObject | undefined {
  const m = o.fault_time_and_level_map;
  if (typeof m !== 'object' || m === null) return undefined;
  const map: [string, number, string][] = [];
  for (const k of Object.keys(m)) {
    const v = m[k];
    if (typeof v !== 'object' || v === null) return undefined;
    map.push([k, v.fault_time, v.fault_level]);
  }
  return {
    type: o.fault_type,
    npu: o.npu_name,
    lmLevel: o.large_model_fault_level,
    level: o.fault_level,
    handling: o.fault_handling,
    code: o.fault_code,
    map,
  };
}

/** Whether `o` still equals the copy (strict: NaN never equals, so such inputs are always recomputed). */
function stillSeen(o: FaultObject, s: SeenObject): boolean {
  if (
    o.fault_type !== s.type ||
    o.npu_name !== s.npu ||
    o.large_model_fault_level !== s.lmLevel ||
    o.fault_level !== s.level ||
    o.fault_handling !== s.handling ||
    o.fault_code !== s.code
  ) {
    return false;
  }
  const m = o.fault_time_and_level_map;
  if (typeof m !== 'object' || m === null) return false;
  const keys = Object.keys(m);
  if (keys.length !== s.map.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const [k, t, l] = s.map[i]!;
    const v = m[k];
    if (keys[i] !== k || typeof v !== 'object' || v === null || v.fault_time !== t || v.fault_level !== l) return false;
  }
  return true;
}

/** The injected objects of one (time, level, code): NPU id → object (an array used as a map). */
interface ObjectGroup {
  readonly time: number;
  readonly level: string;
  readonly code: string;
  readonly byId: DeviceFault[];
}

/** Groups searched linearly up to this many; beyond, through a map. */
const LINEAR_GROUPS = 8;

/**
 * Injected objects by what they depend on besides the node's device type: (time, level, code) → NPU id → object.
 * Times compare with `Object.is` (-0 has its own group; NaN times share one, harmless as such objects are offered
 * every time anyway). A node has few groups: they are searched in a list, without a map or a key string per
 * record (issue [O]: three nested maps per node at the first pass, then a string key per record, were most of it);
 * a node with many gets a map by {@link groupKey}.
 */
class ObjectTable {
  readonly #groups: ObjectGroup[] = [];
  #byKey: Map<string, ObjectGroup> | undefined;

  /** The group of `r`, or undefined. */
  find(r: PublicFaultRecord): ObjectGroup | undefined {
    if (this.#byKey !== undefined) return this.#byKey.get(groupKey(r.faultTime, r.level, r.faultCode));
    for (const g of this.#groups) {
      if (Object.is(g.time, r.faultTime) && g.level === r.level && g.code === r.faultCode) return g;
    }
    return undefined;
  }

  /** The group of `r`, created when absent. */
  get(r: PublicFaultRecord): ObjectGroup {
    const found = this.find(r);
    if (found !== undefined) return found;
    const g: ObjectGroup = { time: r.faultTime, level: r.level, code: r.faultCode, byId: [] };
    this.#groups.push(g);
    if (this.#byKey !== undefined) {
      this.#byKey.set(groupKey(g.time, g.level, g.code), g);
    } else if (this.#groups.length > LINEAR_GROUPS) {
      this.#byKey = new Map();
      for (const x of this.#groups) this.#byKey.set(groupKey(x.time, x.level, x.code), x);
    }
    return g;
  }
}

/**
 * The map key of (time, level, code), one-to-one: the time's shortest decimal form (never a NUL; `-0` for -0),
 * NUL, the level's length and `:`, the level, the code.
 */
function groupKey(time: number, level: string, code: string): string {
  return `${Object.is(time, -0) ? '-0' : String(time)}\0${level.length}:${level}${code}`;
}

function freezeFault(f: DeviceFault): DeviceFault {
  const map = f.object.fault_time_and_level_map;
  for (const k in map) Object.freeze(map[k]);
  Object.freeze(map);
  Object.freeze(f.object);
  return Object.freeze(f);
}

/** Merges the cache into the per-cycle views. */
export class PubFaultProcessor implements DeviceViewProcessor {
  readonly name = 'PubFaultProcessor';
  readonly #cache: PublicFaultCache;
  readonly #memo = new Map<string, NodeMemo>();
  readonly #stats: PubFaultProcessorStats = { passes: 0, nodeReplays: 0, nodeRecomputes: 0, objectsCreated: 0 };

  constructor(cache: PublicFaultCache) {
    this.#cache = cache;
  }

  /** Cumulative work counters (a copy). */
  get stats(): PubFaultProcessorStats {
    return { ...this.#stats };
  }

  /** The nodes whose records changed since the previous call (their memos of nodes that left the store go too). */
  changedNodes(): Iterable<string> {
    const changed = this.#cache.drainChangedNodes();
    for (const node of changed) if (this.#cache.nodeVersion(node) === undefined) this.#memo.delete(node);
    return changed;
  }

  process(views: Map<string, NodeDeviceView>, nowMs: number): void {
    if (this.#cache.size === 0) {
      this.#memo.clear();
      return;
    }
    this.#stats.passes++;
    // the views given (the nodes to re-process), or the store's nodes when those are fewer
    const byViews = views.size <= this.#cache.nodeCount;
    if (!byViews) {
      // memos of nodes that have left the store (also dropped by changedNodes, when the centre asks for them)
      for (const node of this.#memo.keys()) if (this.#cache.nodeVersion(node) === undefined) this.#memo.delete(node);
    }
    for (const node of byViews ? views.keys() : this.#cache.nodes()) {
      const view = views.get(node);
      // §2.8: faults of nodes without a device view are stored but not shown
      if (view === undefined) continue;
      const version = this.#cache.nodeVersion(node);
      if (version === undefined) {
        this.#memo.delete(node);
        continue;
      }
      const memo = this.#memo.get(node);
      let added: boolean;
      if (memo !== undefined && fits(memo, version, view)) {
        this.#stats.nodeReplays++;
        added = replay(memo, view);
      } else {
        this.#stats.nodeRecomputes++;
        const next = this.#recompute(memo, version, this.#cache.byNode(node), view);
        this.#memo.set(node, next);
        added = next.added;
      }
      if (added) view.updateTime = Math.floor(nowMs / 1000);
    }
  }

  /** Computes the node with "add fault and fix", reusing the objects that still fit, and remembers the outcome. */
  #recompute(
    previous: NodeMemo | undefined,
    version: number,
    records: ReadonlyMap<string, PublicFaultRecord>,
    view: NodeDeviceView,
  ): NodeMemo {
    const deviceType = view.deviceType;
    const old = previous?.deviceType === deviceType ? previous.objects : undefined;
    const objects = new ObjectTable();
    /**
     * The objects to offer, in record order then `devIds` order, each once: offering the same object again can
     * never add it (it, or what made "add fault and fix" refuse it, is still on the device) — except with a NaN
     * time, which is never equal to itself, so such an object is offered every time, as the uncached pass does.
     * An object is in `objects` exactly when it has been offered in this pass.
     */
    const offered: DeviceFault[] = [];
    for (const r of records.values()) {
      const byId = objects.get(r).byId;
      let previousById: DeviceFault[] | undefined | null = null;
      const ids = r.devIds;
      for (let j = 0; j < ids.length; j++) {
        const id = ids[j]!;
        let f = byId[id];
        if (f === undefined) {
          if (previousById === null) previousById = old?.find(r)?.byId;
          f = previousById?.[id];
          if (f === undefined) {
            f = freezeFault(publicDeviceFault(deviceType, id, r));
            this.#stats.objectsCreated++;
          }
          byId[id] = f;
          offered.push(f);
        } else if (Number.isNaN(f.faultTime)) {
          offered.push(f);
        }
      }
    }

    // inputs, before anything is changed
    const key = availableKey(deviceType);
    const unhealthyKey = `${key}-Unhealthy`;
    const available = seenEntry(view.deviceList, key);
    const unhealthy = seenEntry(view.deviceList, unhealthyKey);
    // (at most 32 NPUs per node: linear lookups, no Set and no pair per NPU without faults)
    const touchedBare: string[] = [];
    const touchedSeen: [string, SeenObject[]][] = [];
    let cacheable = true;
    for (const f of offered) {
      const device = f.object.npu_name;
      const list = view.faults.get(device);
      if (list === undefined) {
        if (!touchedBare.includes(device)) touchedBare.push(device);
        continue;
      }
      if (touchedSeen.some(([d]) => d === device)) continue;
      const seen: SeenObject[] = [];
      for (const x of list) {
        const s = seenObject(x.object);
        if (s === undefined) cacheable = false;
        else seen.push(s);
      }
      touchedSeen.push([device, seen]);
    }

    // the pass itself
    const additions: DeviceFault[] = [];
    for (const f of offered) if (addFaultAndFix(view, f.object.npu_name, f)) additions.push(f);

    const listWrites: [string, string][] = [];
    if (!sameEntry(view.deviceList, key, available)) listWrites.push([key, view.deviceList[key]!]);
    if (!sameEntry(view.deviceList, unhealthyKey, unhealthy)) {
      listWrites.push([unhealthyKey, view.deviceList[unhealthyKey]!]);
    }
    return {
      version,
      deviceType,
      available,
      unhealthy,
      touchedBare,
      touchedSeen,
      cacheable,
      additions,
      listWrites,
      added: additions.length > 0,
      objects,
    };
  }
}

/** Whether everything the node's remembered outcome depended on is unchanged. */
function fits(memo: NodeMemo, version: number, view: NodeDeviceView): boolean {
  if (!memo.cacheable || memo.version !== version || memo.deviceType !== view.deviceType) return false;
  const key = availableKey(view.deviceType);
  if (!sameEntry(view.deviceList, key, memo.available)) return false;
  if (!sameEntry(view.deviceList, `${key}-Unhealthy`, memo.unhealthy)) return false;
  for (const device of memo.touchedBare) if (view.faults.get(device) !== undefined) return false;
  for (const [device, seen] of memo.touchedSeen) {
    const list = view.faults.get(device);
    if (list === undefined || list.length !== seen.length) return false;
    for (let j = 0; j < list.length; j++) if (!stillSeen(list[j]!.object, seen[j]!)) return false;
  }
  return true;
}

/** Applies a remembered outcome to a fresh view whose inputs equal the remembered ones; returns whether anything was added. */
function replay(memo: NodeMemo, view: NodeDeviceView): boolean {
  for (const f of memo.additions) {
    const device = f.object.npu_name;
    let list = view.faults.get(device);
    if (list === undefined) view.faults.set(device, (list = []));
    list.push(f);
  }
  for (const [k, v] of memo.listWrites) view.deviceList[k] = v;
  return memo.added;
}
