/**
 * The DRA vocabulary shared by the API side (ResourceSlices, taints, partitions, DeviceClasses, claim status) and the
 * node side (NodePrepare, CDI, health): the driver name, the device names, the attribute and capacity names, the taint
 * keys and the binding conditions. Pure.
 *
 * Facts taken from Huawei's driver (mind-cluster `component/ascend-dynamic-resource-allocation`): driver
 * `npu.huawei.com`, one pool per node named after the node, device name = the released name and the phy id,
 * lower-cased (`strings.ToLower("Ascend910-3")` → `ascend910-3`, A5 `npu-3`: a device name must be a DNS label), and
 * two attributes, `deviceType` (string, the chip kind as DCMI's device manager names it: `Ascend910B`,
 * `Ascend910A3`, `Ascend910A5`, …) and `physicId` (int). Everything else here is ours (docs/dra.md).
 */
import { managerName } from './device-names.js';
import type { ChipKind } from './chips.js';

/** The DRA driver name (Huawei's `consts.DriverName`). */
export const DRA_DRIVER = 'npu.huawei.com';

/**
 * Attribute names of a device (unqualified: in the driver's domain, so CEL reads
 * `device.attributes['npu.huawei.com'].physicId`). Limits (resource.k8s.io/v1): C identifiers of at most 32 characters.
 */
export const DRA_ATTR = Object.freeze({
  /** Huawei's: the chip kind (string). */
  deviceType: 'deviceType',
  /** Huawei's: the phy id (int). */
  physicId: 'physicId',
  logicId: 'logicId',
  cardId: 'cardId',
  /** DCMI device index on the card: the die of a two-die card (310P Duo, 910A3). */
  deviceId: 'deviceId',
  numaNode: 'numaNode',
  /** The HCCS / ring group of the chip (docs/dra.md): chips with the same value share the fast interconnect. */
  hccsGroup: 'hccsGroup',
  superPodId: 'superPodId',
  serverIndex: 'serverIndex',
  /** B.7 `sdid`: the chip's id in its super pod (the rank-table `super_device_id`). */
  superDeviceId: 'superDeviceId',
  rackId: 'rackId',
  /** The DCMI chip name (`910B3`). */
  chipName: 'chipName',
  /** Parameter-plane (RoCE) health of the chip (bool). */
  networkHealthy: 'networkHealthy',
  /** `chip` for a whole chip; the vNPU template (`vir05_1c_16g`) for a partition. */
  partition: 'partition',
  /** The device name of the chip a partition belongs to (the chip's own name for a whole chip). */
  parentDevice: 'parentDevice',
});

/** {@link DRA_ATTR.partition} of a whole chip. */
export const WHOLE_CHIP = 'chip';

/** Capacity names (quantities). */
export const DRA_CAPACITY = Object.freeze({
  /** AI cores of the device (spec B.6 for a chip; the template's for a partition). */
  aiCore: 'aiCore',
  /** HBM of the device, bytes (`64Gi`). */
  hbm: 'hbm',
});

/** Counter names in a chip's counter set (partitionable devices). DNS labels. */
export const DRA_COUNTER = Object.freeze({ aiCore: 'aicore', hbm: 'hbm' });

/** Prefix of every taint key the agent puts on a device: `npu.huawei.com/<reason>` (a label name). */
export const DRA_TAINT_PREFIX = `${DRA_DRIVER}/`;

/**
 * Binding conditions of a chip under reset (docs/dra.md "Taints"): a claim allocated to it is bound only once the
 * agent sets {@link CHIP_READY_CONDITION} True in the claim's device status, and given up (the scheduler tries
 * again elsewhere) when it sets {@link CHIP_FAILED_CONDITION} True.
 */
export const CHIP_READY_CONDITION = `${DRA_DRIVER}/ChipReady`;
/** The binding-failure condition of a chip under reset (see {@link CHIP_READY_CONDITION}). */
export const CHIP_FAILED_CONDITION = `${DRA_DRIVER}/ChipFailed`;

/** The device-name prefix of a chip kind: the released name lower-cased (`ascend910`, `ascend310p`, A5 `npu`). */
export function draNamePrefix(kind: ChipKind): string {
  return managerName(kind).toLowerCase();
}

/** The device name of a whole chip: `ascend910-3` (Huawei's, lower-cased), A5 `npu-3`. */
export function draChipName(kind: ChipKind, phyId: number): string {
  return `${draNamePrefix(kind)}-${phyId}`;
}

/**
 * The device name of partition `index` of template `template` on chip `phyId`: `ascend910-3-vir05-1c-16g-0` (the
 * template's `_` become `-`: a device name is a DNS label). {@link parseDraDeviceName} reads it back.
 */
export function draPartitionName(kind: ChipKind, phyId: number, template: string, index: number): string {
  return `${draChipName(kind, phyId)}-${template.replaceAll('_', '-')}-${index}`;
}

/** What a device name of this driver denotes. */
export interface DraDeviceRef {
  readonly phyId: number;
  /** The vNPU template of a partition (`vir05_1c_16g`); absent for a whole chip. */
  readonly template?: string;
  /** The partition's index among the chip's partitions of that template. */
  readonly index?: number;
}

const DEVICE_NAME = /^(ascend910|ascend310p|ascend310|npu)-(\d{1,3})(?:-(vir[0-9a-z-]+)-(\d{1,3}))?$/;

/**
 * Parses a device name of this driver (`ascend910-3`, `npu-3`, `ascend910-3-vir05-1c-16g-0`); undefined when the
 * name is not one (another prefix, a phy id over 255, trailing text). `kind` restricts the prefix to the node's.
 */
export function parseDraDeviceName(name: string, kind?: ChipKind): DraDeviceRef | undefined {
  const m = DEVICE_NAME.exec(name);
  if (!m) return undefined;
  if (kind !== undefined && m[1] !== draNamePrefix(kind)) return undefined;
  const phyId = Number(m[2]);
  if (phyId > 255) return undefined;
  if (m[3] === undefined) return { phyId };
  return { phyId, template: m[3].replaceAll('-', '_'), index: Number(m[4]) };
}
