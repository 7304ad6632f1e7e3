/**
 * Device-name rules of spec B.3: the device type of a chip kind, a physical chip's name, resource names,
 * virtual-type detection and parsing a device name back to ids. Pure.
 */
import { runModeOf, type ChipKind } from './chips.js';

/** Prefix of every resource this agent registers (spec B.3). */
export const RESOURCE_PREFIX = 'huawei.com/';

const VIRTUAL_TYPE = /^(Ascend910-([2-6]|8|10|12|16)c|Ascend310P-(1|2|4)c)/;

/** B.3 manager name: the device type of a physical chip and the prefix of its device names. */
export function managerName(kind: ChipKind): string {
  if (kind === 'Ascend910A5') return 'npu';
  return runModeOf(kind);
}

/**
 * The name of physical chip `phyId`: `<type>-<phyId>`, e.g. `Ascend910-3`. `type` is the {@link managerName} for
 * the kubelet device id (B.3) and the run mode for the device-info ConfigMap's lists (G.2, H.5).
 */
export function chipName(type: string, phyId: number): string {
  return `${type}-${phyId}`;
}

/**
 * Name of copy `index` of physical chip `phyId` in 310/310P share mode (spec B.3): `<type>-<phyId>-<index>`, e.g.
 * `Ascend310P-3-7`. {@link phyIdOfName} with `shareMode` reads the phy id back.
 */
export function shareName(type: string, phyId: number, index: number): string {
  return `${chipName(type, phyId)}-${index}`;
}

/**
 * The number of copies each chip is advertised as (spec A.1 `-shareDevCount`, B.3): the flag on the kinds upstream
 * shares (`ShareDev()`: real card type Ascend310P or Ascend310B), 1 on every other kind, where upstream ignores
 * the flag (the agent says so in its start-up log).
 */
export function effectiveShareCount(kind: ChipKind, shareDevCount: number): number {
  return kind === 'Ascend310P' || kind === 'Ascend310B' ? Math.max(1, shareDevCount) : 1;
}

/**
 * 310P mixed insert (spec B.3, A.1 `-use310PMixedInsert`): the device type of each product type that may be mixed
 * on one node (upstream `Get310PProductType`). Any other product type (e.g. `Atlas 300I Duo`) refuses the mode.
 */
export const MIXED_INSERT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  'Atlas 300V Pro': 'Ascend310P-VPro',
  'Atlas 300V': 'Ascend310P-V',
  'Atlas 300I Pro': 'Ascend310P-IPro',
});

/** The mixed-insert device type of a DCMI product type, or undefined when the product cannot be mixed. */
export function mixedInsertType(productType: string): string | undefined {
  return Object.hasOwn(MIXED_INSERT_TYPES, productType) ? MIXED_INSERT_TYPES[productType] : undefined;
}

/** `huawei.com/<deviceType>` (public-name customisation, spec L.6, is not applied here). */
export function resourceName(deviceType: string): string {
  return `${RESOURCE_PREFIX}${deviceType}`;
}

/** True when a device type or device name denotes a static vNPU (spec B.3). */
export function isVirtualName(name: string): boolean {
  return VIRTUAL_TYPE.test(name);
}

/**
 * Phy id encoded in a device name (spec B.3): the last `-` field, anything after `_` dropped; in share mode the
 * trailing `-<i>` is removed first. Returns undefined when the field is not a decimal number.
 */
export function phyIdOfName(name: string, shareMode = false): number | undefined {
  const fields = name.split('-');
  if (shareMode) fields.pop();
  const last = fields[fields.length - 1]?.split('_')[0];
  if (last === undefined || !/^\d{1,3}$/.test(last)) return undefined;
  return Number(last);
}

/** vNPU id of a virtual device name with exactly four fields (`Ascend910-4c-100-0` → 100). */
export function vdevIdOfName(name: string): number | undefined {
  const fields = name.split('-');
  if (fields.length !== 4 || !isVirtualName(name)) return undefined;
  const f = fields[2]!;
  return /^\d{1,5}$/.test(f) ? Number(f) : undefined;
}
