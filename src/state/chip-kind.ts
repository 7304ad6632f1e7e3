/**
 * Chip kind detection (spec device-plugin.md B.2), run modes, device-type names (B.3) and which kinds have a
 * parameter plane or fault subscription (B.5). Pure.
 */
import type { RunMode } from '../faults/index.js';
import type { ChipKind } from '../kubelet/device-source.js';

/** B.2 rule 1: these board ids are Ascend910A3 whatever the chip name says. */
export const A3_BOARD_IDS: ReadonlySet<number> = new Set([0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0x81, 0x83, 0xd1, 0xd3]);

/** B.2: the chip kind from the first valid chip name and board id; undefined = unsupported (fatal at start). */
export function detectChipKind(chipName: string, boardId: number): ChipKind | undefined {
  if (A3_BOARD_IDS.has(boardId)) return 'Ascend910A3';
  if (chipName.startsWith('Ascend950') && chipName.length <= 32) return 'Ascend910A5';
  if (/^(310P\d?|I2\d?)/.test(chipName)) return 'Ascend310P';
  if (chipName.includes('310B')) return 'Ascend310B';
  if (chipName.includes('310')) return 'Ascend310';
  if (/^(910B\d|A2G\d)/.test(chipName)) return 'Ascend910B';
  if (/^910/.test(chipName)) return 'Ascend910';
  return undefined;
}

/** B.2 run mode (plugin family). */
export function runModeOf(kind: ChipKind): RunMode {
  if (kind === 'Ascend310' || kind === 'Ascend310B') return 'Ascend310';
  if (kind === 'Ascend310P') return 'Ascend310P';
  return 'Ascend910';
}

/** B.3 manager name: the device type of a physical chip and the prefix of its device names. */
export function managerName(kind: ChipKind): string {
  if (kind === 'Ascend910A5') return 'npu';
  return runModeOf(kind);
}

/** B.3 kubelet device id of a physical chip, e.g. `Ascend910-3`. */
export function physicalDeviceId(kind: ChipKind, phyId: number): string {
  return `${managerName(kind)}-${phyId}`;
}

/** B.5/D.3: 310, 310B and 310P never subscribe to fault events (always polling). */
export function subscribesToFaults(kind: ChipKind): boolean {
  return runModeOf(kind) === 'Ascend910';
}

/** B.5/D.5: RoCE parameter plane (hccn link status). A5's UBoE plane is not supported yet. */
export function hasParameterPlane(kind: ChipKind): boolean {
  return kind === 'Ascend910' || kind === 'Ascend910B' || kind === 'Ascend910A3';
}
