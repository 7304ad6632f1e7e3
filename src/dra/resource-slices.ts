/**
 * The node's ResourceSlices as a projection of the state store's snapshot (issue [DRA] item 2): one pool named after
 * the node, one device per chip with Huawei's name and attributes plus what a scheduler needs, its taints (faults,
 * reset, src/dra/device-taints.ts), and with partitions on, a chip's vNPU partitions and counter set
 * (src/dra/partitions.ts); then the pool cut into slices within the API's per-slice limits. Pure (the taint times are
 * the caller's {@link TaintTimes}).
 *
 * Attributes (docs/dra.md "ResourceSlices and attributes"): Huawei's `deviceType` (the chip kind) and `physicId`;
 * `logicId`, `cardId`, `deviceId` (die), `hccsGroup`, `networkHealthy`, `partition`, `parentDevice` on every device;
 * `numaNode`, `superPodId`, `serverIndex`, `superDeviceId`, `rackId`, `chipName` where known. Capacities `aiCore`
 * and `hbm` where known.
 */
import { createHash } from 'node:crypto';
import type { ChipKind, NodeFacts } from '../core/chips.js';
import { DRA_ATTR, DRA_CAPACITY, DRA_DRIVER, WHOLE_CHIP, draChipName } from '../core/dra-devices.js';
import type { FaultLevel } from '../faults/levels.js';
import { allocationPath } from '../kubelet/topology.js';
import type { ChipState, NodeState } from '../state/store.js';
import { bindingConditionsOf, chipTaints, LEVEL_EFFECTS, type TaintTimes } from './device-taints.js';
import type {
  CounterSet,
  Device,
  DeviceAttribute,
  DeviceTaintEffect,
  QuantityValue,
  ResourceSliceSpec,
} from './dra-types.js';
import {
  bytesQuantity,
  chipCounterSet,
  chipPartitions,
  partitionable,
  partitionConsumption,
  wholeChipConsumption,
} from './partitions.js';

/**
 * Per-slice limits of the API (k8s.io/api v0.37.2 resource/v1): `ResourceSliceMaxDevices` 128, but 64
 * (`ResourceSliceMaxDevicesWithAdvancedFeatures`) once a device of the slice has taints or consumes counters — any
 * chip can be tainted at any moment, so the writer always keeps to 64 (a slice never has to be re-cut because a
 * fault arrived); `ResourceSliceMaxCounterSets` 8.
 */
export const SLICE_MAX_DEVICES = 64;
/** Counter sets per slice (`ResourceSliceMaxCounterSets`). */
export const SLICE_MAX_COUNTER_SETS = 8;
/** A slice name is a DNS subdomain. */
const MAX_NAME = 253;

/** What the projection needs beyond the snapshot: the node's facts read at start (and the chips' C.5/B.7 data). */
export interface DraInventory {
  readonly kind: ChipKind;
  /** Board id and brother cards: the HCCS group (src/kubelet/topology.ts). */
  readonly node: NodeFacts;
  /** DCMI chip name (`910B3`). */
  readonly chipName?: string;
  /** AI cores per chip (spec B.6); a value outside 8..36 (the 8255 / 1 markers) is not published. */
  readonly aiCores?: number;
  /** HBM per chip, bytes. */
  readonly hbmBytes?: number;
  /** Spec B.7 (-2: unknown; negative values are not published). */
  readonly superPodId?: number;
  readonly serverIndex?: number;
  /** A5 (spec L.8). */
  readonly rackId?: number;
  /** Per phy id: B.7 super-device id (as of now: the C.5 IP may change, so it is a function). */
  readonly chips?: () => ReadonlyMap<number, { readonly superDeviceId?: number }>;
}

/** Options of {@link poolOf}. */
export interface PoolOptions {
  /** Publish the vNPU templates as partitions with shared counters (issue [DRA] item 5). Default false. */
  readonly partitions?: boolean;
  /**
   * `-deviceApi=both`: phy ids of chips that kubelet has allocated through the device plugin. They (and their
   * partitions) are withdrawn from the slices until released, so the scheduler never allocates them a second time
   * through DRA (docs/dra.md "Today's pods").
   */
  readonly withdrawn?: ReadonlySet<number>;
  /** Effect per level (default {@link LEVEL_EFFECTS}). */
  readonly effects?: Readonly<Partial<Record<FaultLevel, DeviceTaintEffect>>>;
}

/** The pool's content before it is cut into slices. */
export interface DesiredPool {
  readonly devices: readonly Device[];
  readonly counterSets: readonly CounterSet[];
}

const int = (v: number): DeviceAttribute => ({ int: v });
const str = (v: string): DeviceAttribute => ({ string: v });

/** The HCCS / ring group of a chip: the number of its outermost allocation group (src/kubelet/topology.ts). */
export function hccsGroupOf(chip: Pick<ChipState, 'logicId' | 'cardId' | 'deviceId'>, node: NodeFacts): number {
  const outer = allocationPath(chip, node)[0] ?? '';
  const n = /(\d+)$/.exec(outer);
  return n ? Number(n[1]) : chip.logicId;
}

/** Attributes every device of a chip carries. */
function chipAttributes(
  chip: ChipState,
  inv: DraInventory,
  extra: { readonly superDeviceId?: number },
): Record<string, DeviceAttribute> {
  const a: Record<string, DeviceAttribute> = {
    [DRA_ATTR.deviceType]: str(inv.kind),
    [DRA_ATTR.physicId]: int(chip.phyId),
    [DRA_ATTR.logicId]: int(chip.logicId),
    [DRA_ATTR.cardId]: int(chip.cardId),
    [DRA_ATTR.deviceId]: int(chip.deviceId),
    [DRA_ATTR.hccsGroup]: int(hccsGroupOf(chip, inv.node)),
    [DRA_ATTR.networkHealthy]: { bool: chip.networkHealth === 'Healthy' },
  };
  if (chip.numaNode !== undefined && chip.numaNode >= 0) a[DRA_ATTR.numaNode] = int(chip.numaNode);
  if (inv.superPodId !== undefined && inv.superPodId >= 0) a[DRA_ATTR.superPodId] = int(inv.superPodId);
  if (inv.serverIndex !== undefined && inv.serverIndex >= 0) a[DRA_ATTR.serverIndex] = int(inv.serverIndex);
  if (extra.superDeviceId !== undefined && extra.superDeviceId >= 0)
    a[DRA_ATTR.superDeviceId] = int(extra.superDeviceId);
  if (inv.rackId !== undefined && inv.rackId >= 0) a[DRA_ATTR.rackId] = int(inv.rackId);
  // an attribute string is at most 64 characters
  if (inv.chipName !== undefined && inv.chipName !== '' && inv.chipName.length <= 64)
    a[DRA_ATTR.chipName] = str(inv.chipName);
  return a;
}

/**
 * The pool's devices and counter sets for this snapshot. Every taint is stamped with its time through `times`,
 * and `times.commit()` is called: a taint not projected here is forgotten.
 */
export function poolOf(state: NodeState, inv: DraInventory, times: TaintTimes, options: PoolOptions = {}): DesiredPool {
  const devices: Device[] = [];
  const counterSets: CounterSet[] = [];
  const extras = inv.chips?.() ?? new Map<number, { superDeviceId?: number }>();
  const cores = partitionable(inv.kind, inv.aiCores) ? inv.aiCores : undefined;
  const withPartitions = options.partitions === true && cores !== undefined;
  for (const chip of state.chips) {
    const name = draChipName(inv.kind, chip.phyId);
    if (withPartitions) counterSets.push(chipCounterSet(inv.kind, chip.phyId, cores, inv.hbmBytes));
    if (options.withdrawn?.has(chip.phyId) === true) continue;
    const attrs = chipAttributes(chip, inv, extras.get(chip.phyId) ?? {});
    const taints = chipTaints(chip, options.effects ?? LEVEL_EFFECTS);
    const binding = bindingConditionsOf(chip);
    const common = (device: string): Partial<Device> => ({
      ...(taints.length > 0 ? { taints: times.stamp(device, taints, state.time) } : {}),
      ...(binding
        ? {
            bindingConditions: [...binding.bindingConditions],
            bindingFailureConditions: [...binding.bindingFailureConditions],
          }
        : {}),
    });
    const capacity: Record<string, QuantityValue> = {};
    if (cores !== undefined) capacity[DRA_CAPACITY.aiCore] = { value: String(cores) };
    if (inv.hbmBytes !== undefined && inv.hbmBytes > 0)
      capacity[DRA_CAPACITY.hbm] = { value: bytesQuantity(inv.hbmBytes) };
    devices.push({
      name,
      attributes: { ...attrs, [DRA_ATTR.partition]: str(WHOLE_CHIP), [DRA_ATTR.parentDevice]: str(name) },
      ...(Object.keys(capacity).length > 0 ? { capacity } : {}),
      ...(withPartitions
        ? { consumesCounters: [wholeChipConsumption(inv.kind, chip.phyId, cores, inv.hbmBytes)] }
        : {}),
      ...common(name),
    });
    if (!withPartitions) continue;
    for (const p of chipPartitions(inv.kind, chip.phyId, cores, inv.hbmBytes)) {
      devices.push({
        name: p.name,
        attributes: { ...attrs, [DRA_ATTR.partition]: str(p.template), [DRA_ATTR.parentDevice]: str(name) },
        capacity: {
          [DRA_CAPACITY.aiCore]: { value: String(p.cores) },
          ...(p.hbmBytes !== undefined ? { [DRA_CAPACITY.hbm]: { value: bytesQuantity(p.hbmBytes) } } : {}),
        },
        consumesCounters: [partitionConsumption(inv.kind, chip.phyId, p, inv.hbmBytes)],
        ...common(p.name),
      });
    }
  }
  times.commit();
  return { devices, counterSets };
}

/** The parent chip of a device: devices of one chip are kept in one slice. */
function chipOf(d: Device): string {
  const parent = d.attributes?.[DRA_ATTR.parentDevice]?.string;
  return parent ?? d.name;
}

/**
 * The pool cut into slice specs (generation 0: the writer sets it): devices in order, a chip's devices never split,
 * at most {@link SLICE_MAX_DEVICES} per slice; then the counter sets, at most {@link SLICE_MAX_COUNTER_SETS} per
 * slice (a slice has devices or counter sets, never both). A pool with nothing is one slice without devices, so
 * that the pool (and its generation) stays.
 */
export function slicesOf(pool: DesiredPool, nodeName: string): ResourceSliceSpec[] {
  const groups: Device[][] = [];
  for (const d of pool.devices) {
    const last = groups.at(-1);
    if (last !== undefined && chipOf(last[0]!) === chipOf(d)) last.push(d);
    else groups.push([d]);
  }
  const deviceSlices: Device[][] = [];
  for (const g of groups) {
    const cur = deviceSlices.at(-1);
    if (cur !== undefined && cur.length + g.length <= SLICE_MAX_DEVICES) cur.push(...g);
    else {
      // a chip with more devices than a slice holds is cut (never happens: at most 27 per chip)
      for (let i = 0; i < g.length; i += SLICE_MAX_DEVICES) deviceSlices.push(g.slice(i, i + SLICE_MAX_DEVICES));
    }
  }
  const counterSlices: CounterSet[][] = [];
  for (let i = 0; i < pool.counterSets.length; i += SLICE_MAX_COUNTER_SETS) {
    counterSlices.push(pool.counterSets.slice(i, i + SLICE_MAX_COUNTER_SETS));
  }
  const parts: Pick<ResourceSliceSpec, 'devices' | 'sharedCounters'>[] = [
    ...deviceSlices.map((devices) => ({ devices })),
    ...counterSlices.map((sharedCounters) => ({ sharedCounters })),
  ];
  if (parts.length === 0) parts.push({ devices: [] });
  return parts.map((p) => ({
    driver: DRA_DRIVER,
    pool: { name: nodeName, generation: 0, resourceSliceCount: parts.length },
    nodeName,
    ...p,
  }));
}

/**
 * Name of slice `index` of the node's pool: `<node>-npu.huawei.com-<index>`; a node name too long for that is cut
 * and followed by a hash of it, so that the name stays a unique DNS subdomain.
 */
export function sliceName(nodeName: string, index: number): string {
  const suffix = `-${DRA_DRIVER}-${index}`;
  if (nodeName.length + suffix.length <= MAX_NAME) return `${nodeName}${suffix}`;
  const hash = createHash('sha256').update(nodeName).digest('hex').slice(0, 10);
  const head = nodeName.slice(0, MAX_NAME - suffix.length - hash.length - 1).replace(/[-.]+$/, '');
  return `${head}-${hash}${suffix}`;
}
