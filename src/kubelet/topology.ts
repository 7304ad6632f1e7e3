/**
 * Topology groups of chips: the reset groups of spec J.3, and the allocation hierarchy that
 * GetPreferredAllocation keeps a request inside (docs/allocation.md).
 */
import type { KubeletDevice } from './device-source.js';
import type { NodeFacts } from '../core/chips.js';

/** 910B boards whose chips are separate PCIe cards without HCCS between them (spec J.3). */
export const STANDALONE_910B_BOARDS: ReadonlySet<number> = new Set([0x28, 0x29, 0x33, 0x3c]);

type Chip = Pick<KubeletDevice, 'logicId' | 'cardId' | 'deviceId'>;

/**
 * Reset group of a chip (spec J.3) as a list of logic ids, sorted. `chips` are all chips of the node.
 * 910B: 1 on the standalone boards, 16 on nodes with more than 8 chips, else 8; 910A: 4; 910A3: the two dies of
 * the card and of its brother card; 310P with a 300I Duo: the card; other kinds: the chip alone.
 */
export function resetGroup(chip: Chip, chips: readonly Chip[], node: NodeFacts): number[] {
  const ids = (pred: (c: Chip) => boolean): number[] =>
    [...new Set(chips.filter(pred).map((c) => c.logicId))].sort((a, b) => a - b);
  const ring = (n: number): number[] => ids((c) => Math.floor(c.logicId / n) === Math.floor(chip.logicId / n));
  switch (node.chipKind) {
    case 'Ascend910':
      return ring(4);
    case 'Ascend910B': {
      if (STANDALONE_910B_BOARDS.has(node.boardId)) return [chip.logicId];
      const count = new Set(chips.map((c) => c.logicId)).size;
      return ring(count > 8 ? 16 : 8);
    }
    case 'Ascend910A3': {
      const brother = node.brotherCards?.[chip.cardId];
      return ids((c) => c.cardId === chip.cardId || (brother !== undefined && c.cardId === brother));
    }
    case 'Ascend310P':
      if (node.productTypes?.includes('Atlas 300I Duo')) return ids((c) => c.cardId === chip.cardId);
      return [chip.logicId];
    default:
      return [chip.logicId];
  }
}

/**
 * Allocation path of a device: the group keys from the outermost group down to the chip. Devices that share a
 * prefix are closer together. See docs/allocation.md for the rule per kind.
 */
export function allocationPath(device: Chip, node: NodeFacts): string[] {
  const chip = `chip${device.logicId}`;
  switch (node.chipKind) {
    case 'Ascend910':
      return [`ring${Math.floor(device.logicId / 4)}`, chip];
    case 'Ascend910B':
      if (STANDALONE_910B_BOARDS.has(node.boardId)) return [chip];
      return [`ring${Math.floor(device.logicId / 8)}`, chip];
    case 'Ascend910A3': {
      const brother = node.brotherCards?.[device.cardId];
      const pair = brother === undefined ? device.cardId : Math.min(device.cardId, brother);
      return [`pair${pair}`, `card${device.cardId}`, chip];
    }
    case 'Ascend310P':
      return [`card${device.cardId}`, chip];
    default:
      return [chip];
  }
}
