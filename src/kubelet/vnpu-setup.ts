/**
 * Dynamic vNPU start-up (spec A.1, A.2 steps 5.1 and 5.5, B.6): the chip-kind and Atlas 300I Duo rules, the AI-core
 * count per chip, the device source that adds the `npu-core` pseudo-devices, and the DCMI driver of the vNPUs.
 */
import type { ChipKind } from '../core/chips.js';
import { freezeSnapshot, type DeviceSnapshot, type DeviceSource } from './device-source.js';
import { DYNAMIC_VNPU_KINDS, MAX_CORES_PER_CHIP, MIN_CORES_PER_CHIP, withCores } from './vnpu-core.js';

/** Product type that cannot run dynamic vNPU (upstream `checkSupportedProductType`). */
export const ATLAS_300I_DUO = 'Atlas 300I Duo';

/** Dynamic vNPU cannot run on this node: the start fails (exit 2) with this message. */
export class DynamicVnpuUnsupportedError extends Error {
  override readonly name = 'DynamicVnpuUnsupportedError';
}

/** What the checks read of the node. */
export interface VnpuNode {
  readonly kind: ChipKind;
  readonly productTypes?: readonly string[];
  /** First chip's card and device id (B.6 reads the AI-core count there). */
  readonly firstChip?: { readonly cardId: number; readonly deviceId: number };
}

/**
 * A.1, A.2 step 5.5, B.6: refuses a kind other than 310P / 910B / 910A3, a node with an Atlas 300I Duo, and an
 * AI-core count (`computing.aic` of main 52 sub 1) outside [8, 36]. Returns the cores per chip.
 */
export function checkDynamicVnpu(node: VnpuNode, totalAicore: () => number): number {
  if (!DYNAMIC_VNPU_KINDS.includes(node.kind)) {
    throw new DynamicVnpuUnsupportedError(
      `-presetVirtualDevice=false needs a ${DYNAMIC_VNPU_KINDS.join(', ')} node; this node is ${node.kind}`,
    );
  }
  if ((node.productTypes ?? []).includes(ATLAS_300I_DUO)) {
    throw new DynamicVnpuUnsupportedError(
      `-presetVirtualDevice=false: ${ATLAS_300I_DUO} is not supported by dynamic vNPU (product types ${JSON.stringify(node.productTypes)})`,
    );
  }
  let cores: number;
  try {
    cores = totalAicore();
  } catch (err) {
    throw new DynamicVnpuUnsupportedError(
      `-presetVirtualDevice=false: the AI-core count of the first chip cannot be read: ${(err as Error).message}`,
    );
  }
  if (!Number.isInteger(cores) || cores < MIN_CORES_PER_CHIP || cores > MAX_CORES_PER_CHIP) {
    throw new DynamicVnpuUnsupportedError(
      `-presetVirtualDevice=false: the chip reports ${cores} AI cores, outside ${MIN_CORES_PER_CHIP}..${MAX_CORES_PER_CHIP} (spec B.6)`,
    );
  }
  return cores;
}

/** A {@link DeviceSource} that adds the `npu-core` pseudo-devices of the chips of `chipType` to every snapshot. */
export class CoreDeviceSource implements DeviceSource {
  #current: DeviceSnapshot;
  readonly #listeners = new Set<(s: DeviceSnapshot) => void>();
  readonly #unsubscribe: () => void;

  constructor(
    inner: DeviceSource,
    readonly chipType: string,
    readonly coresPerChip: number,
  ) {
    this.#current = freezeSnapshot(withCores(inner.snapshot(), chipType, coresPerChip));
    this.#unsubscribe = inner.onChange((s) => {
      this.#current = freezeSnapshot(withCores(s, chipType, coresPerChip));
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

  close(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }
}
