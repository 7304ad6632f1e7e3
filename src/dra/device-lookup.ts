/**
 * From the device names of a ResourceSlice (the allocation results name them) to the chips of the store's snapshot
 * (issue [DRA] item 2). Physical chips are named as Huawei's driver names them: the released name and the phy id,
 * lower-cased because a device name is a DNS label (`strings.ToLower("Ascend910-3")` → `ascend910-3`; Ascend910A5
 * `npu-3`; the API side's `draChipName`); other names (vNPU partitions of a chip) come from lookups the API side
 * defines, chained in front with {@link chainLookups}. A lookup reads the snapshot it is given and nothing else.
 */
import type { ChipKind } from '../core/chips.js';
import { chipName, managerName } from '../core/device-names.js';
import type { ChipState, NodeState } from '../state/store.js';

/** The DRA device name of a whole chip: `ascend910-3`, `ascend310p-1`, A5 `npu-3`. */
export function chipDeviceName(kind: ChipKind, phyId: number): string {
  return chipName(managerName(kind), phyId).toLowerCase();
}

/** What an allocated device is on this node. */
export interface DraDeviceTarget {
  /** Logic id of the chip (the whole chip, or the chip a partition is cut from). */
  readonly logicId: number;
  /**
   * A vNPU partition: the DCMI template (`vir04`, `vir02_1c`, … spec B.3) of the vNPU NodePrepare creates on the
   * chip, destroyed again at NodeUnprepare. Absent for a whole chip.
   */
  readonly template?: string;
}

/** Maps a device name to its target in `state`; undefined when the name is not this lookup's. */
export type DeviceLookup = (name: string, state: NodeState) => DraDeviceTarget | undefined;

/**
 * Whole chips by name ({@link chipDeviceName} of every chip of the snapshot). The index is rebuilt only when the
 * snapshot's chip list is another object (the store keeps it while no chip changes).
 */
export class ChipNameLookup {
  #chips: readonly ChipState[] | undefined;
  #byName = new Map<string, number>();

  /** The lookup function (bound). */
  readonly lookup: DeviceLookup = (name, state) => {
    if (state.chips !== this.#chips) {
      const kind = state.node.chipKind;
      this.#byName = new Map(state.chips.map((c) => [chipDeviceName(kind, c.phyId), c.logicId]));
      this.#chips = state.chips;
    }
    const logicId = this.#byName.get(name);
    return logicId === undefined ? undefined : { logicId };
  };
}

/** The first answer of `lookups`, in order. */
export function chainLookups(...lookups: readonly DeviceLookup[]): DeviceLookup {
  return (name, state) => {
    for (const l of lookups) {
      const t = l(name, state);
      if (t !== undefined) return t;
    }
    return undefined;
  };
}
