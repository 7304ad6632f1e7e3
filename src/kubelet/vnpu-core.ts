/**
 * Dynamic vNPU (`-presetVirtualDevice=false`, spec A.1, B.3, C.1, C.3): the pure part. The single `npu-core`
 * resource advertises every chip's AI cores as pseudo-devices `npu-core-<k>` (k = 0.., cores of one chip
 * consecutive); Volcano writes the pod annotation `huawei.com/npu-core` (`<phy>-<template>` for a vNPU,
 * `<phy>,<phy>,…` for whole chips); the vNPU created for a pod is named `<name>-<spec>-<vdevId>-<phy>` (B.3).
 */
import type { ChipKind } from '../core/chips.js';
import { RESOURCE_PREFIX } from '../core/device-names.js';
import type { AdvertisedDevice } from './list-watch-view.js';
import type { DeviceSnapshot, KubeletDevice } from './device-source.js';

/** Device type (socket stem, resource suffix) of the dynamic vNPU server (B.3). */
export const NPU_CORE_TYPE = 'npu-core';
/** The annotation Volcano writes (I.4) and the resource the pods ask for. */
export const NPU_CORE_RESOURCE = `${RESOURCE_PREFIX}${NPU_CORE_TYPE}`;
/** Upstream's error words, which Volcano looks for in the pod's admission Event (C.3 step 4). */
export const NO_NPU_RESOURCE = 'NoNPUResource';
export const NPU_SEGMENT_FAILED = 'NPUSegmentFailed';
/** Longest `huawei.com/npu-core` value read (upstream's pod-annotation limit is far larger; 4 KiB is ample). */
export const MAX_NPU_CORE_ANNOTATION = 4096;
/** Chip kinds that may run dynamic vNPU (A.1, upstream `setAscendManager`). */
export const DYNAMIC_VNPU_KINDS: readonly ChipKind[] = ['Ascend310P', 'Ascend910B', 'Ascend910A3'];
/** B.6: the per-chip AI-core count must lie in this range for dynamic vNPU. */
export const MIN_CORES_PER_CHIP = 8;
export const MAX_CORES_PER_CHIP = 36;

/** B.3: vNPU spec of each DCMI template name. */
const TEMPLATE_SPECS: Readonly<Record<string, string>> = Object.freeze({
  vir16: '16c',
  vir08: '8c',
  vir04: '4c',
  vir02: '2c',
  vir01: '1c',
  vir02_1c: '2c.1cpu',
  vir04_3c: '4c.3cpu',
  vir03_1c_8g: '3c.1cpu.8g',
  vir04_4c_dvpp: '4c.4cpu.dvpp',
  vir04_3c_ndvpp: '4c.3cpu.ndvpp',
  vir05_1c_8g: '5c.1cpu.8g',
  vir05_1c_16g: '5c.1cpu.16g',
  vir06_1c_16g: '6c.1cpu.16g',
  vir10_3c_16g: '10c.3cpu.16g',
  vir10_3c_16g_nm: '10c.3cpu.16g.ndvpp',
  vir10_3c_32g: '10c.3cpu.32g',
  vir10_4c_16g_m: '10c.4cpu.16g.dvpp',
  vir12_3c_32g: '12c.3cpu.32g',
});

/** dcmi-abi.md §4.5: the templates each kind accepts. */
const KIND_TEMPLATES: Readonly<Partial<Record<ChipKind, readonly string[]>>> = Object.freeze({
  Ascend310P: ['vir04', 'vir02', 'vir01', 'vir04_3c', 'vir02_1c', 'vir04_4c_dvpp', 'vir04_3c_ndvpp'],
  Ascend910B: [
    'vir03_1c_8g',
    'vir05_1c_8g',
    'vir05_1c_16g',
    'vir06_1c_16g',
    'vir10_3c_16g',
    'vir10_3c_16g_nm',
    'vir10_3c_32g',
    'vir10_4c_16g_m',
    'vir12_3c_32g',
  ],
  Ascend910A3: ['vir12_3c_32g', 'vir06_1c_16g', 'vir05_1c_16g', 'vir10_3c_32g'],
});

/** The templates of a chip kind (empty for a kind without dynamic vNPU). */
export function templatesOf(kind: ChipKind): readonly string[] {
  return KIND_TEMPLATES[kind] ?? [];
}

/** B.3 spec string of a template (`vir02` → `2c`), undefined for an unknown template. */
export function templateSpec(template: string): string | undefined {
  return Object.hasOwn(TEMPLATE_SPECS, template) ? TEMPLATE_SPECS[template] : undefined;
}

/** AI cores of a template: the number after `vir` (upstream `GetAICore`: `vir04_3c` → 4). */
export function templateCores(template: string): number | undefined {
  const m = /^vir(\d{1,2})(?:_|$)/.exec(template);
  return m ? Number(m[1]) : undefined;
}

/** B.3 name of a vNPU: `<name>-<spec>-<vdevId>-<phy>`, e.g. `Ascend310P-2c-100-1`. */
export function vnpuName(type: string, template: string, vdevId: number, phyId: number): string | undefined {
  const spec = templateSpec(template);
  return spec === undefined ? undefined : `${type}-${spec}-${vdevId}-${phyId}`;
}

/** What Volcano asked for in `huawei.com/npu-core` (C.3 step 2, dynamic mode). */
export type NpuCoreRequest =
  | { readonly kind: 'vnpu'; readonly phyId: number; readonly template: string; readonly cores: number }
  | { readonly kind: 'chips'; readonly phyIds: readonly number[] };

/** Parses the annotation; returns the request or the problem in words (for the error naming the pod). */
export function parseNpuCoreAnnotation(value: string): NpuCoreRequest | { readonly problem: string } {
  if (value.length > MAX_NPU_CORE_ANNOTATION) {
    return { problem: `is ${value.length} characters long, over ${MAX_NPU_CORE_ANNOTATION}` };
  }
  const shown = JSON.stringify(value.slice(0, 60));
  const parts = value.split('-');
  if (parts.length === 2) {
    const [phy, template] = parts as [string, string];
    if (!/^\d{1,3}$/.test(phy) || Number(phy) > 255) return { problem: `${shown}: phy id ${phy} is not 0..255` };
    const cores = templateCores(template);
    if (cores === undefined || cores === 0) return { problem: `${shown}: ${JSON.stringify(template)} is no template` };
    return { kind: 'vnpu', phyId: Number(phy), template, cores };
  }
  if (parts.length !== 1) return { problem: `${shown} is neither <phy>-<template> nor <phy>,<phy>,…` };
  const ids = value.split(',');
  const phyIds: number[] = [];
  for (const id of ids) {
    if (!/^\d{1,3}$/.test(id) || Number(id) > 255) return { problem: `${shown}: ${JSON.stringify(id)} is no phy id` };
    if (phyIds.includes(Number(id))) return { problem: `${shown}: phy id ${id} given twice` };
    phyIds.push(Number(id));
  }
  return { kind: 'chips', phyIds };
}

/** AI cores a request takes (C.3 step 2): the template's, or cores-per-chip for each chip. */
export function requestedCores(req: NpuCoreRequest, coresPerChip: number): number {
  return req.kind === 'vnpu' ? req.cores : req.phyIds.length * coresPerChip;
}

/**
 * B.3, D.7 post-rule: the AI-core pseudo-devices of the chips, `npu-core-<k>`, cores of one chip consecutive in
 * chip order; each copies its chip's health, level and topology.
 */
export function coreDevices(chips: readonly KubeletDevice[], coresPerChip: number): KubeletDevice[] {
  const out: KubeletDevice[] = [];
  for (const c of chips) {
    for (let i = 0; i < coresPerChip; i++) out.push({ ...c, id: `${NPU_CORE_TYPE}-${out.length}` });
  }
  return out;
}

/** The snapshot plus the `npu-core` pseudo-devices of the physical chips of `type` (which stay, for Allocate). */
export function withCores(snapshot: DeviceSnapshot, type: string, coresPerChip: number): DeviceSnapshot {
  const chips = snapshot.deviceTypes[type] ?? [];
  return {
    node: snapshot.node,
    deviceTypes: { ...snapshot.deviceTypes, [NPU_CORE_TYPE]: coreDevices(chips, coresPerChip) },
  };
}

/**
 * C.1 dynamic vNPU health: a core held by a pod is Unhealthy when the chip of the device it was given is
 * Unhealthy; then free cores are marked Unhealthy until the Unhealthy cores number (#Unhealthy chips × cores per
 * chip). Free cores of an Unhealthy chip go first (D.7: a pseudo-device copies its chip), then the others in
 * sorted ID order (upstream takes all free cores in sorted order). `used` maps a held core to the phy id of its
 * real device.
 */
export function advertiseCores(
  cores: readonly KubeletDevice[],
  chips: readonly KubeletDevice[],
  used: ReadonlyMap<string, number>,
  coresPerChip: number,
): AdvertisedDevice[] {
  const unhealthyPhy = new Set(chips.filter((c) => c.health !== 'Healthy').map((c) => c.phyId));
  const unhealthy = new Set<string>();
  for (const [core, phy] of used) if (unhealthyPhy.has(phy)) unhealthy.add(core);
  let left = unhealthyPhy.size * coresPerChip - unhealthy.size;
  const sorted = cores.filter((c) => !used.has(c.id)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const own = sorted.filter((c) => unhealthyPhy.has(c.phyId));
  const free = [...own, ...sorted.filter((c) => !unhealthyPhy.has(c.phyId))].map((c) => c.id);
  for (const id of free) {
    if (left <= 0) break;
    unhealthy.add(id);
    left--;
  }
  return cores.map((c) => ({ id: c.id, real: { ...c, health: unhealthy.has(c.id) ? 'Unhealthy' : 'Healthy' } }));
}

/** The chip named by a phy id in a device list, or undefined. */
export function chipOfPhy(chips: readonly KubeletDevice[], phyId: number): KubeletDevice | undefined {
  return chips.find((c) => c.phyId === phyId);
}

/** C.4 ascend-docker mode, dynamic vNPU: the worker-count variables and `LOCAL_RANK` for `n` visible devices. */
export function dynamicVnpuEnvs(n: number): Record<string, string> {
  const count = String(n);
  return {
    MS_LOCAL_WORKER: count,
    MS_WORKER_NUM: count,
    WORLD_SIZE: count,
    LOCAL_WORLD_SIZE: count,
    CM_WORKER_SIZE: count,
    CM_LOCAL_WORKER: count,
    LOCAL_RANK: Array.from({ length: n }, (_, i) => String(i)).join(','),
  };
}
