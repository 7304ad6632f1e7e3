/**
 * What the kubelet servers read: an immutable snapshot of the node's devices, per device type, and a change
 * notification. The state store (issue [E]) implements {@link DeviceSource}; tests and the simulator use
 * {@link MutableDeviceSource}.
 */
import type { NodeFacts } from '../core/chips.js';

/** Health as kubelet understands it (device-plugin API constants). */
export type DeviceHealth = 'Healthy' | 'Unhealthy';

/** One device as advertised to kubelet (a chip, a static vNPU or one share of a chip). */
export interface KubeletDevice {
  /** Kubelet device ID, e.g. `Ascend910-3`, `Ascend910-4c-100-3`, `Ascend310P-1-7` (spec B.3). */
  readonly id: string;
  readonly logicId: number;
  readonly phyId: number;
  readonly cardId: number;
  readonly deviceId: number;
  /** vNPU id for a static virtual device (spec B.3); absent for physical chips and shares. */
  readonly vdevId?: number;
  readonly health: DeviceHealth;
  /** Effective fault level name (spec E.2), e.g. `NormalNPU`, `SeparateNPU`, `ManuallySeparateNPU`. */
  readonly level: string;
  readonly manuallySeparated: boolean;
  /**
   * `-deviceApi=both`: the DRA claim that holds the chip (`claim default/train`): the device is advertised Unhealthy
   * and Allocate refuses it while the claim is prepared (docs/dra.md "never the same chip twice").
   */
  readonly heldBy?: string;
  /** NUMA node of the chip when known (spec C.2). */
  readonly numaNode?: number;
}

/** An immutable view of the devices at one moment. */
export interface DeviceSnapshot {
  readonly node: NodeFacts;
  /** Device type (socket stem, resource-name suffix, e.g. `Ascend910`, `Ascend910-4c`) → its devices. */
  readonly deviceTypes: Readonly<Record<string, readonly KubeletDevice[]>>;
}

/** Read-only source of device snapshots. */
export interface DeviceSource {
  /** The current snapshot; never mutated after it was returned. */
  snapshot(): DeviceSnapshot;
  /** Calls `listener` after every new snapshot; returns the unsubscribe function. */
  onChange(listener: (snapshot: DeviceSnapshot) => void): () => void;
}

/** Deep-freezes a snapshot so that accidental mutation throws in strict mode. */
export function freezeSnapshot(snapshot: DeviceSnapshot): DeviceSnapshot {
  for (const devices of Object.values(snapshot.deviceTypes)) {
    for (const d of devices) Object.freeze(d);
    Object.freeze(devices);
  }
  Object.freeze(snapshot.deviceTypes);
  if (snapshot.node.brotherCards) Object.freeze(snapshot.node.brotherCards);
  if (snapshot.node.productTypes) Object.freeze(snapshot.node.productTypes);
  Object.freeze(snapshot.node);
  return Object.freeze(snapshot);
}

/** In-memory {@link DeviceSource}: `set()` replaces the snapshot and notifies listeners synchronously. */
export class MutableDeviceSource implements DeviceSource {
  #current: DeviceSnapshot;
  readonly #listeners = new Set<(s: DeviceSnapshot) => void>();

  constructor(initial: DeviceSnapshot) {
    this.#current = freezeSnapshot(initial);
  }

  snapshot(): DeviceSnapshot {
    return this.#current;
  }

  onChange(listener: (snapshot: DeviceSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Publishes a new snapshot. */
  set(snapshot: DeviceSnapshot): void {
    this.#current = freezeSnapshot(snapshot);
    for (const l of [...this.#listeners]) l(this.#current);
  }

  /** Convenience for tests and the simulator: replaces the fields of one device (matched by id). */
  updateDevice(id: string, patch: Partial<Omit<KubeletDevice, 'id'>>): void {
    const types: Record<string, readonly KubeletDevice[]> = {};
    let found = false;
    for (const [type, devices] of Object.entries(this.#current.deviceTypes)) {
      types[type] = devices.map((d) => {
        if (d.id !== id) return d;
        found = true;
        return { ...d, ...patch };
      });
    }
    if (!found) throw new Error(`no device ${id}`);
    this.set({ node: this.#current.node, deviceTypes: types });
  }
}

/** A {@link DeviceSource} whose snapshot never changes. */
export class StaticDeviceSource implements DeviceSource {
  readonly #snapshot: DeviceSnapshot;

  constructor(snapshot: DeviceSnapshot) {
    this.#snapshot = freezeSnapshot(snapshot);
  }

  snapshot(): DeviceSnapshot {
    return this.#snapshot;
  }

  onChange(): () => void {
    return () => undefined;
  }
}

/** Number of distinct physical chips in a snapshot (spec C.3 "number of chips on the node"). */
export function chipCount(snapshot: DeviceSnapshot): number {
  const phy = new Set<number>();
  for (const devices of Object.values(snapshot.deviceTypes)) for (const d of devices) phy.add(d.phyId);
  return phy.size;
}
