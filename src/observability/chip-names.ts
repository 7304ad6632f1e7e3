/**
 * The labels every per-chip series carries (issue [J] item 2): `chip` (the chip's name, `Ascend910-3`: the kubelet
 * device id and the name in Events, `chipName()` of spec B.3), `logic_id` and `phy_id` (DCMI's ids, spec B.1). The
 * metrics exist before DCMI is open (probes from the first second), so the names are attached once DCMI has
 * enumerated the chips.
 */
import { chipName } from '../core/device-names.js';

/** Label values of one chip. */
export interface ChipLabels {
  readonly chip: string;
  readonly logic_id: string;
  readonly phy_id: string;
}

/** The chips of the node and their labels; empty until {@link ChipNames.attach}. */
export class ChipNames {
  #type: string | undefined;
  readonly #phyOf = new Map<number, number>();
  readonly #labels = new Map<number, ChipLabels>();

  /** `deviceType`: the B.3 manager name (`Ascend910`, `Ascend310P`, `npu`); `chips`: what DCMI enumerated. */
  attach(deviceType: string, chips: readonly { readonly logicId: number; readonly phyId: number }[]): void {
    this.#type = deviceType;
    this.#phyOf.clear();
    this.#labels.clear();
    for (const c of chips) this.#phyOf.set(c.logicId, c.phyId);
  }

  /** Logic ids of the node's chips, in the order DCMI gave them. */
  logicIds(): number[] {
    return [...this.#phyOf.keys()];
  }

  /** The chip's name (`Ascend910-<phy>`); the logic id as text when the chip is not known (never in practice). */
  nameOf(logicId: number): string {
    return this.labels(logicId).chip;
  }

  /** The labels of chip `logicId`; `phy_id` is "" and `chip` the logic id for a chip DCMI did not list. */
  labels(logicId: number): ChipLabels {
    const cached = this.#labels.get(logicId);
    if (cached) return cached;
    const phy = this.#phyOf.get(logicId);
    const labels: ChipLabels =
      phy === undefined || this.#type === undefined
        ? { chip: String(logicId), logic_id: String(logicId), phy_id: '' }
        : { chip: chipName(this.#type, phy), logic_id: String(logicId), phy_id: String(phy) };
    if (phy !== undefined) this.#labels.set(logicId, labels);
    return labels;
  }
}
