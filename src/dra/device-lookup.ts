/**
 * From the device names of a ResourceSlice (the allocation results name them) to the chips of the store's snapshot
 * (issue [DRA] items 1, 5): one reading of the names for both halves of the driver, `parseDraDeviceName` of the
 * shared vocabulary (src/core/dra-devices.ts) — a whole chip is Huawei's name lower-cased (`ascend910-3`, A5
 * `npu-3`), a vNPU partition the chip's name, the template and an index (`ascend910-3-vir05-1c-16g-0`). A name of
 * another chip kind, of a template the kind does not have, or of a phy id no chip of the snapshot has, is not ours.
 */
import { parseDraDeviceName } from '../core/dra-devices.js';
import { templatesOf } from '../kubelet/vnpu-core.js';
import type { NodeState } from '../state/store.js';

/** What an allocated device is on this node. */
export interface DraDeviceTarget {
  /** Logic id of the chip (the whole chip, or the chip a partition is cut from). */
  readonly logicId: number;
  /** Phy id of that chip. */
  readonly phyId: number;
  /**
   * A vNPU partition: the DCMI template (`vir05_1c_16g`, spec B.3) of the vNPU NodePrepare creates on the chip,
   * destroyed again at NodeUnprepare. Absent for a whole chip.
   */
  readonly template?: string;
}

/** Maps a device name to its target in `state`; undefined when the name is not a device of this node. */
export type DeviceLookup = (name: string, state: NodeState) => DraDeviceTarget | undefined;

/** The lookup of this driver's names (see the module comment). */
export const lookupDraDevice: DeviceLookup = (name, state) => {
  const kind = state.node.chipKind;
  const ref = parseDraDeviceName(name, kind);
  if (ref === undefined) return undefined;
  if (ref.template !== undefined && !templatesOf(kind).includes(ref.template)) return undefined;
  const chip = state.chips.find((c) => c.phyId === ref.phyId);
  if (chip === undefined) return undefined;
  return {
    logicId: chip.logicId,
    phyId: chip.phyId,
    ...(ref.template !== undefined ? { template: ref.template } : {}),
  };
};
