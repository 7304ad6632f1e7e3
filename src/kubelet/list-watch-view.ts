/**
 * What ListAndWatch advertises for one device type (spec C.1): one entry per device, or, with `-volcanoType`
 * on static physical devices, kubelet-side IDs paired with the real devices Volcano chose so that the ID kubelet
 * handed to a pod carries the health of the chip the pod actually got.
 */
import type { Device } from '../generated/deviceplugin/v1beta1/Device.js';
import type { KubeletDevice } from './device-source.js';

/** An advertised kubelet ID and the real device whose health and topology it carries. */
export interface AdvertisedDevice {
  readonly id: string;
  readonly real: KubeletDevice;
}

/**
 * The kubelet-ID → real-device map of one server (spec C.3 step 5). Each real device is the target of at most one
 * kubelet ID: recording a pair drops any older pair that points at the same real device.
 */
export class KubeletRealMap {
  readonly #toReal = new Map<string, string>();
  readonly #toKubelet = new Map<string, string>();

  record(kubeletId: string, realId: string): void {
    const oldReal = this.#toReal.get(kubeletId);
    if (oldReal !== undefined) this.#toKubelet.delete(oldReal);
    const oldKubelet = this.#toKubelet.get(realId);
    if (oldKubelet !== undefined) this.#toReal.delete(oldKubelet);
    this.#toReal.set(kubeletId, realId);
    this.#toKubelet.set(realId, kubeletId);
  }

  realOf(kubeletId: string): string | undefined {
    return this.#toReal.get(kubeletId);
  }

  kubeletOf(realId: string): string | undefined {
    return this.#toKubelet.get(realId);
  }

  get size(): number {
    return this.#toReal.size;
  }
}

const goSort = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The advertised list. Without a map (or an empty one) every device is advertised under its own ID. With a map,
 * mapped real devices are advertised under their kubelet ID; the other real devices are paired, in sorted order,
 * with the kubelet IDs the map does not use (spec C.1).
 */
export function advertise(devices: readonly KubeletDevice[], map?: KubeletRealMap): AdvertisedDevice[] {
  if (!map || map.size === 0) return devices.map((d) => ({ id: d.id, real: d }));
  const ids = new Set(devices.map((d) => d.id));
  const out: AdvertisedDevice[] = [];
  const unmappedReal: KubeletDevice[] = [];
  const usedKubelet = new Set<string>();
  for (const d of devices) {
    const k = map.kubeletOf(d.id);
    if (k !== undefined && ids.has(k)) {
      out.push({ id: k, real: d });
      usedKubelet.add(k);
    } else {
      unmappedReal.push(d);
    }
  }
  const freeKubelet = [...ids].filter((id) => !usedKubelet.has(id)).sort(goSort);
  unmappedReal.sort((a, b) => goSort(a.id, b.id));
  unmappedReal.forEach((d, i) => out.push({ id: freeKubelet[i]!, real: d }));
  return out.sort((a, b) => goSort(a.id, b.id));
}

/**
 * The wire form of an advertised list (spec C.1: ID, health, NUMA topology when known); `publicName` gives the ID
 * kubelet sees (spec L.6, identity by default).
 */
export function toWire(list: readonly AdvertisedDevice[], publicName: (id: string) => string = (id) => id): Device[] {
  return list.map(({ id, real }) => ({
    ID: publicName(id),
    health: real.health,
    topology: real.numaNode === undefined ? null : { nodes: [{ ID: real.numaNode }] },
  }));
}

/** A compact key of the wire list, to send only when something kubelet sees has changed. */
export function wireKey(list: readonly AdvertisedDevice[]): string {
  return list.map(({ id, real }) => `${id}:${real.health}:${real.numaNode ?? ''}`).join(',');
}
