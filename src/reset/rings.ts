/**
 * Reset groups ("rings") per chip kind and board (hot-reset.md §1.5, device-plugin.md §J.3) and the node's
 * `deviceUsage` (hot-reset.md §1.3). Pure: everything comes from {@link RingFacts}, fixed at start-up.
 *
 * Two notions of ring exist upstream and both are kept (§1.5 "where each notion of ring is used"):
 * - the *arithmetic* ring of the online engine, `⌊id/size⌋·size … +size−1` with the size of {@link onlineRingSize};
 * - the *reset group* of HEAD's offline engine ({@link resetGroup}, §J.3), which on 910A3 is the 4-chip association
 *   ({@link a3Group}) and on a node with an Atlas 300I Duo card is the card.
 */
import type { ChipKind } from '../core/chips.js';
import type { DeviceUsage, ResetChip, RingFacts } from './types.js';

/** §1.3: 910B boards that make a node an inference node (non-HCCS inference boards and the Atlas 200L A2). */
const INFER_BOARDS_910B: ReadonlySet<number> = new Set([0x28, 0x29, 0x69, 0x3c, 0x33]);

/** §1.5 / §J.3: 910B boards whose chips are reset one at a time (A300I A2, A800I A2 without HCCS). */
const SINGLE_CHIP_BOARDS_910B: ReadonlySet<number> = new Set([0x28, 0x29, 0x3c, 0x33]);

/** §1.3 `deviceUsage`: `infer` on 310-family nodes, with node label `server-usage=infer`, or on 910B infer boards. */
export function deviceUsageOf(
  kind: ChipKind,
  boardId: number,
  nodeLabels: Readonly<Record<string, string>>,
): DeviceUsage {
  if (kind === 'Ascend310' || kind === 'Ascend310B' || kind === 'Ascend310P') return 'infer';
  if (nodeLabels['server-usage'] === 'infer') return 'infer';
  if (kind === 'Ascend910B' && INFER_BOARDS_910B.has(boardId)) return 'infer';
  return 'train';
}

/**
 * §1.5 `resetDevNumOnce`: the online engine's arithmetic ring size; 0 means the kind has no online engine (and no
 * reset-file synchroniser, §2.8).
 */
export function onlineRingSize(facts: RingFacts): number {
  const count = facts.chips.length;
  switch (facts.kind) {
    case 'Ascend910':
      return 4;
    case 'Ascend910B':
      if (facts.usage === 'infer') return SINGLE_CHIP_BOARDS_910B.has(facts.boardId) ? 1 : 8;
      return count > 8 ? 16 : 8; // §1.5: A200T A2 box (16 chips)
    case 'Ascend910A3':
      return count; // §1.5: the arithmetic ring is the whole node
    case 'Ascend910A5':
      return 1;
    default:
      return 0;
  }
}

function chipOf(facts: RingFacts, logicId: number, what: string): ResetChip {
  const chip = facts.chips.find((c) => c.logicId === logicId);
  if (chip === undefined) throw new RangeError(`${what}: logic id ${logicId} is not a chip of this node`);
  return chip;
}

const ascending = (ids: Iterable<number>): number[] => [...new Set(ids)].sort((a, b) => a - b);

/**
 * §1.5 arithmetic ring of `logicId`: logic ids `⌊id/size⌋·size … +size−1` that are chips of this node, ascending.
 * Throws when `size` is not a positive integer or `logicId` is not a chip of the node.
 */
export function arithmeticRing(logicId: number, size: number, facts: RingFacts): number[] {
  if (!Number.isSafeInteger(size) || size <= 0) {
    throw new RangeError(`arithmetic ring: ring size ${size} is not a positive integer`);
  }
  chipOf(facts, logicId, 'arithmetic ring');
  const first = Math.floor(logicId / size) * size;
  return ascending(facts.chips.map((c) => c.logicId).filter((id) => id >= first && id < first + size));
}

/**
 * §1.5 910A3 association (`GetAssociatedLogicIDs`): the chip (card c, die d), the other die `(c, (d+1) mod 2)` and both
 * dies of the brother card `b` (`dcmi_get_netdev_brother_device`); only chips present on the node, ascending.
 * Throws naming the chip when the node is not 910A3, the chip is unknown, or its brother card is unknown.
 */
export function a3Group(facts: RingFacts, logicId: number): number[] {
  if (facts.kind !== 'Ascend910A3') {
    throw new Error(`910A3 association: logic id ${logicId} is on a ${facts.kind} node, not Ascend910A3`);
  }
  const chip = chipOf(facts, logicId, '910A3 association');
  const brother = facts.brotherCardOf?.(chip.cardId);
  if (brother === undefined) {
    throw new Error(
      `910A3 association: brother card of card ${chip.cardId} (logic id ${logicId}) is unknown ` +
        '(dcmi_get_netdev_brother_device failed)',
    );
  }
  const wanted: [number, number][] = [
    [chip.cardId, (chip.deviceId + 1) % 2],
    [brother, 0],
    [brother, 1],
  ];
  const members = facts.chips.filter((c) => wanted.some(([card, dev]) => c.cardId === card && c.deviceId === dev));
  return ascending([logicId, ...members.map((c) => c.logicId)]);
}

/** §1.5 `getResetIndexForA3`: the smallest logic id of the chip's 4-chip group; throws as {@link a3Group}. */
export function a3ResetIndex(facts: RingFacts, logicId: number): number {
  // a3Group always contains the chip itself, so the group is never empty here.
  return a3Group(facts, logicId)[0]!;
}

/**
 * §J.3 reset group of HEAD's offline engine, ascending; `[]` = no group (910A3 chip whose brother card is unknown,
 * the J.2 loop then skips the chip). Throws when `logicId` is not a chip of the node.
 */
export function resetGroup(facts: RingFacts, logicId: number): number[] {
  const chip = chipOf(facts, logicId, 'reset group');
  const count = facts.chips.length;
  switch (facts.kind) {
    case 'Ascend910':
      return arithmeticRing(logicId, 4, facts);
    case 'Ascend910B':
      // §J.3 (HEAD) ignores deviceUsage: only the board decides single-chip reset.
      if (SINGLE_CHIP_BOARDS_910B.has(facts.boardId)) return [logicId];
      return arithmeticRing(logicId, count > 8 ? 16 : 8, facts);
    case 'Ascend910A3':
      if (facts.brotherCardOf?.(chip.cardId) === undefined) return [];
      return a3Group(facts, logicId);
    case 'Ascend310P':
      if (facts.duo === true) {
        return ascending(facts.chips.filter((c) => c.cardId === chip.cardId).map((c) => c.logicId));
      }
      return [logicId];
    default:
      return [logicId];
  }
}
