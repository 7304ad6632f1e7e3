/**
 * The store seen by the kubelet layer: an implementation of [C]'s {@link DeviceSource}. Physical chips (spec B.3
 * first row: `Ascend910-<phy>`, `Ascend310P-<phy>`, `Ascend310-<phy>`, `npu-<phy>`), or, in 310P/310B share mode
 * (`-shareDevCount` N > 1), N copies of each chip (`<name>-<phy>-<i>`, B.3 third row) that all carry the chip's
 * health, level and topology, or, with 310P mixed insert, one device type per product type (B.3 fourth row). Health is the engine's D.7 chip health (kubelet never sees network health). A new
 * device snapshot is published only when something kubelet can see changed.
 */
import { freezeSnapshot, type DeviceSnapshot, type DeviceSource, type KubeletDevice } from './device-source.js';
import { chipName, managerName, shareName } from '../core/device-names.js';
import { sameJson, type ChipState, type NodeState, type NodeStateStore } from '../state/store.js';

/** How the chips are laid out as kubelet devices. */
export interface DeviceLayout {
  /**
   * Copies per chip (spec B.3 share mode); 1 = one device per chip. The caller applies the chip-kind rule
   * (`effectiveShareCount`).
   */
  readonly shareCount?: number;
  /**
   * 310P mixed insert (spec B.3): the device type of each chip by logic id (`Ascend310P-V`, `Ascend310P-VPro`,
   * `Ascend310P-IPro`); the chips are grouped by it, one device type (and server) each, named `<type>-<phy>`. A chip
   * without a type is not advertised.
   */
  readonly mixedTypes?: ReadonlyMap<number, string>;
  /**
   * `-deviceApi=both`: a chip a prepared DRA claim holds (`NodeState.draClaims`, admin access aside) is advertised
   * Unhealthy with the claim named ({@link KubeletDevice.heldBy}), so kubelet hands it to no pod and Allocate
   * refuses it.
   */
  readonly draHolds?: boolean;
}

/** Logic id → the DRA claim holding the chip (the first by uid), admin-access devices aside. */
export function draHeldChips(state: Pick<NodeState, 'draClaims'>): Map<number, string> {
  const held = new Map<number, string>();
  for (const c of state.draClaims) {
    for (const d of c.devices) {
      if (d.adminAccess !== true && !held.has(d.logicId)) held.set(d.logicId, `DRA claim ${c.namespace}/${c.name}`);
    }
  }
  return held;
}

/** Maps one snapshot of the store to the kubelet view. */
export function toDeviceSnapshot(state: NodeState, layout: DeviceLayout = {}): DeviceSnapshot {
  const type = managerName(state.node.chipKind);
  const copies = layout.shareCount ?? 1;
  const devices: KubeletDevice[] = [];
  const mixed = layout.mixedTypes;
  const byType: Record<string, KubeletDevice[]> = {};
  const held = layout.draHolds === true ? draHeldChips(state) : undefined;
  for (const c of state.chips) {
    const heldBy = held?.get(c.logicId);
    const base: Omit<KubeletDevice, 'id'> = {
      logicId: c.logicId,
      phyId: c.phyId,
      cardId: c.cardId,
      deviceId: c.deviceId,
      health: heldBy !== undefined ? 'Unhealthy' : c.health,
      level: c.level,
      manuallySeparated: c.manuallySeparated,
      ...(heldBy !== undefined ? { heldBy } : {}),
      ...(c.numaNode !== undefined ? { numaNode: c.numaNode } : {}),
    };
    if (mixed) {
      const t = mixed.get(c.logicId);
      if (t !== undefined) (byType[t] ??= []).push({ id: chipName(t, c.phyId), ...base });
    } else if (copies <= 1) devices.push({ id: chipName(type, c.phyId), ...base });
    else for (let i = 0; i < copies; i++) devices.push({ id: shareName(type, c.phyId, i), ...base });
  }
  return { node: state.node, deviceTypes: mixed ? byType : { [type]: devices } };
}

function sameDevices(a: DeviceSnapshot, b: DeviceSnapshot): boolean {
  return sameJson(a.deviceTypes, b.deviceTypes);
}

/** True when both lists hold the same chip state objects (the store reuses the object of an unchanged chip). */
function sameChips(a: readonly ChipState[], b: readonly ChipState[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** {@link DeviceSource} over a {@link NodeStateStore}. Listeners are called synchronously from the store's cycle. */
export class StoreDeviceSource implements DeviceSource {
  #current: DeviceSnapshot;
  /** Chips (and DRA claims) of the store snapshot {@link #current} was last compared with. */
  #chips: readonly ChipState[];
  #claims: NodeState['draClaims'];
  readonly #listeners = new Set<(s: DeviceSnapshot) => void>();
  readonly #unsubscribe: () => void;

  constructor(
    store: NodeStateStore,
    readonly layout: DeviceLayout = {},
  ) {
    const first = store.snapshot();
    this.#current = freezeSnapshot(toDeviceSnapshot(first, layout));
    this.#chips = first.chips;
    this.#claims = first.draClaims;
    this.#unsubscribe = store.onChange((state) => {
      // Only the chips (and with DRA holds the claims) are mapped (the node facts never change in a store):
      // nothing to do when none changed.
      const claimsChanged = layout.draHolds === true && state.draClaims !== this.#claims;
      if (sameChips(state.chips, this.#chips) && !claimsChanged) return;
      this.#chips = state.chips;
      this.#claims = state.draClaims;
      const next = toDeviceSnapshot(state, this.layout);
      if (sameDevices(next, this.#current)) return;
      this.#current = freezeSnapshot(next);
      for (const l of [...this.#listeners]) l(this.#current);
    });
  }

  snapshot(): DeviceSnapshot {
    return this.#current;
  }

  onChange(listener: (snapshot: DeviceSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Detaches from the store. */
  close(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }
}
