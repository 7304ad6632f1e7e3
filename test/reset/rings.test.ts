import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import type { ChipKind } from '../../src/core/chips.js';
import {
  a3Group,
  a3ResetIndex,
  arithmeticRing,
  deviceUsageOf,
  onlineRingSize,
  resetGroup,
} from '../../src/reset/rings.js';
import type { DeviceUsage, ResetChip, RingFacts } from '../../src/reset/types.js';

/** `count` chips, logic id = phy id, `diesPerCard` chips per card (card i·d … ). */
function chips(count: number, diesPerCard = 1): ResetChip[] {
  return Array.from({ length: count }, (_, i) => ({
    logicId: i,
    phyId: i,
    cardId: Math.floor(i / diesPerCard),
    deviceId: i % diesPerCard,
  }));
}

function facts(kind: ChipKind, count: number, o: Partial<RingFacts> = {}): RingFacts {
  return { kind, usage: 'train', boardId: 0, chips: chips(count), ...o };
}

/**
 * A 16-chip 910A3 node: 8 cards of two dies, logic id = 2·card + die, brother cards 0↔3, 1↔2, 4↔5, 6↔7
 * (card 7 has no known brother when `withHole`).
 */
function a3(o: { withHole?: boolean; count?: number } = {}): RingFacts {
  const brothers: Record<number, number> = { 0: 3, 3: 0, 1: 2, 2: 1, 4: 5, 5: 4, 6: 7, 7: 6 };
  if (o.withHole) delete brothers[7];
  return {
    kind: 'Ascend910A3',
    usage: 'train',
    boardId: 0xb0,
    chips: chips(o.count ?? 16, 2),
    brotherCardOf: (card) => brothers[card],
  };
}

/** Board ids as test.each rows labelled in hex. */
const hex = (ids: number[]): [string, number][] => ids.map((id) => [id.toString(16), id]);

describe('§1.3 deviceUsage', () => {
  test.each<ChipKind>(['Ascend310', 'Ascend310B', 'Ascend310P'])('§1.3 %s nodes are always infer', (kind) => {
    expect(deviceUsageOf(kind, 0, {})).toBe('infer');
  });
  test('§1.3 node label server-usage=infer makes a training kind infer', () => {
    expect(deviceUsageOf('Ascend910A3', 0xb0, { 'server-usage': 'infer' })).toBe('infer');
  });
  test('§1.3 another server-usage value does not make a node infer', () => {
    expect(deviceUsageOf('Ascend910B', 0x20, { 'server-usage': 'train' })).toBe('train');
  });
  test.each(hex([0x28, 0x29, 0x69, 0x3c, 0x33]))('§1.3 910B board 0x%s is an inference board', (_, board) => {
    expect(deviceUsageOf('Ascend910B', board, {})).toBe('infer');
  });
  test('§1.3 910B on another board is train', () => {
    expect(deviceUsageOf('Ascend910B', 0x20, {})).toBe('train');
  });
  test('§1.3 the 910B inference boards do not make a 910A node infer', () => {
    expect(deviceUsageOf('Ascend910', 0x28, {})).toBe('train');
  });
  test.each<ChipKind>(['Ascend910', 'Ascend910A3', 'Ascend910A5'])('§1.3 %s without the label is train', (kind) => {
    expect(deviceUsageOf(kind, 0, {})).toBe('train');
  });
});

describe('§1.5 online ring size (resetDevNumOnce)', () => {
  test('§1.5 910A: 4', () => {
    expect(onlineRingSize(facts('Ascend910', 8))).toBe(4);
  });
  test.each(hex([0x28, 0x29, 0x3c, 0x33]))('§1.5 910B infer on board 0x%s: 1 (single-chip reset)', (_, boardId) => {
    expect(onlineRingSize(facts('Ascend910B', 8, { usage: 'infer', boardId }))).toBe(1);
  });
  test('§1.5 910B infer on another board (e.g. 0x69, or by node label): 8', () => {
    expect(onlineRingSize(facts('Ascend910B', 8, { usage: 'infer', boardId: 0x69 }))).toBe(8);
  });
  test('§1.5 910B train with 8 chips: 8', () => {
    expect(onlineRingSize(facts('Ascend910B', 8))).toBe(8);
  });
  test('§1.5 910B train with more than 8 chips (A200T A2 box): 16', () => {
    expect(onlineRingSize(facts('Ascend910B', 16))).toBe(16);
  });
  test.each([16, 8])('§1.5 910A3 with %i chips: the number of chips on the node', (count) => {
    expect(onlineRingSize(a3({ count }))).toBe(count);
  });
  test('§1.5 910A5: 1', () => {
    expect(onlineRingSize(facts('Ascend910A5', 8))).toBe(1);
  });
  test.each<ChipKind>(['Ascend310P', 'Ascend310', 'Ascend310B'])('§1.5 %s: 0 (no engine)', (kind) => {
    expect(onlineRingSize(facts(kind, 4, { usage: 'infer' }))).toBe(0);
  });
});

describe('§1.5 arithmetic ring', () => {
  test('§1.5 ring of a chip is ⌊id/size⌋·size … +size−1', () => {
    expect(arithmeticRing(6, 4, facts('Ascend910', 8))).toEqual([4, 5, 6, 7]);
  });
  test('§1.5 ring of size 8 on a 16-chip node', () => {
    expect(arithmeticRing(9, 8, facts('Ascend910B', 16))).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
  });
  test('§1.5 ring of size 1 is the chip alone', () => {
    expect(arithmeticRing(3, 1, facts('Ascend910A5', 8))).toEqual([3]);
  });
  test('§1.5 only logic ids present on the node are listed, ascending', () => {
    const f: RingFacts = { ...facts('Ascend910', 0), chips: [7, 5, 4, 0].map((i) => chips(8)[i]!) };
    expect(arithmeticRing(5, 4, f)).toEqual([4, 5, 7]);
  });
  test.each([0, -4, 2.5, Number.NaN])('§1.5 ring size %p is rejected with an error naming it', (size) => {
    expect(() => arithmeticRing(0, size, facts('Ascend910', 8))).toThrow(`ring size ${size}`);
  });
  test('§1.5 a logic id that is not a chip of the node is rejected with an error naming it', () => {
    expect(() => arithmeticRing(9, 4, facts('Ascend910', 8))).toThrow('logic id 9 is not a chip of this node');
  });
  test('§1.5 property: the arithmetic rings partition the node into blocks of at most `size` chips', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 63 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 20 }),
        (ids, size) => {
          const f: RingFacts = {
            ...facts('Ascend910B', 0),
            chips: ids.map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 })),
          };
          const rings = new Map<number, number[]>(ids.map((id) => [id, arithmeticRing(id, size, f)]));
          for (const [id, ring] of rings) {
            expect(ring).toContain(id);
            expect(ring.length).toBeLessThanOrEqual(size);
            expect([...ring].sort((a, b) => a - b)).toEqual(ring);
            for (const other of ring) expect(rings.get(other)).toEqual(ring); // same block from every member
            expect(new Set(ring.map((m) => Math.floor(m / size))).size).toBe(1);
          }
          const union = [...new Set([...rings.values()].flat())].sort((a, b) => a - b);
          expect(union).toEqual([...ids].sort((a, b) => a - b));
        },
      ),
    );
  });
});

describe('§1.5 910A3 4-chip association (GetAssociatedLogicIDs)', () => {
  test('§1.5 group = the chip, the other die of its card and both dies of the brother card', () => {
    // chip 1 = (card 0, die 1); other die (0,0) = 0; brother card 3: (3,0) = 6, (3,1) = 7
    expect(a3Group(a3(), 1)).toEqual([0, 1, 6, 7]);
  });
  test('§1.5 the group is the same from every member of it', () => {
    const f = a3();
    for (const id of [0, 1, 6, 7]) expect(a3Group(f, id)).toEqual([0, 1, 6, 7]);
  });
  test('§1.5 group of a chip whose brother card has the higher id', () => {
    expect(a3Group(a3(), 8)).toEqual([8, 9, 10, 11]);
  });
  test('§1.5 members absent from the node are left out', () => {
    const f = a3();
    const g: RingFacts = { ...f, chips: f.chips.filter((c) => c.logicId !== 7) };
    expect(a3Group(g, 1)).toEqual([0, 1, 6]);
  });
  test('§1.5 an unknown brother card is an error naming the chip', () => {
    expect(() => a3Group(a3({ withHole: true }), 14)).toThrow(/brother card of card 7 \(logic id 14\) is unknown/);
  });
  test('§1.5 no brother lookup at all is an error naming the chip', () => {
    const f: RingFacts = { ...a3(), brotherCardOf: undefined };
    expect(() => a3Group(f, 2)).toThrow(/logic id 2/);
  });
  test('§1.5 the association is asked of a non-A3 node: error naming the kind', () => {
    expect(() => a3Group(facts('Ascend910B', 8), 1)).toThrow(/Ascend910B/);
  });
  test('§1.5 an unknown chip is an error naming it', () => {
    expect(() => a3Group(a3(), 20)).toThrow('logic id 20 is not a chip of this node');
  });
  test('§1.5 A3 reset index is the smallest logic id of the group (getResetIndexForA3)', () => {
    expect(a3ResetIndex(a3(), 7)).toBe(0);
    expect(a3ResetIndex(a3(), 11)).toBe(8);
  });
  test('§1.5 A3 reset index of a chip with an unknown brother is an error naming the chip', () => {
    expect(() => a3ResetIndex(a3({ withHole: true }), 15)).toThrow(/logic id 15/);
  });
});

describe('§J.3 reset group (HEAD offline engine)', () => {
  test('§J.3 910A: 4 chips ⌊id/4⌋·4 … +3', () => {
    expect(resetGroup(facts('Ascend910', 8), 5)).toEqual([4, 5, 6, 7]);
  });
  test.each(hex([0x28, 0x29, 0x33, 0x3c]))(
    '§J.3 910B board 0x%s: the chip alone (whatever the usage)',
    (_, boardId) => {
      expect(resetGroup(facts('Ascend910B', 8, { boardId, usage: 'train' }), 3)).toEqual([3]);
    },
  );
  test('§J.3 910B node with more than 8 chips: 16', () => {
    expect(resetGroup(facts('Ascend910B', 16), 3)).toEqual(Array.from({ length: 16 }, (_, i) => i));
  });
  test('§J.3 910B otherwise: 8 (board 0x69 included)', () => {
    expect(resetGroup(facts('Ascend910B', 8, { boardId: 0x69, usage: 'infer' }), 3)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
  test('§J.3 910A3: the 4-chip association', () => {
    expect(resetGroup(a3(), 6)).toEqual([0, 1, 6, 7]);
  });
  test('§J.3 910A3 with an unknown brother card: no group', () => {
    expect(resetGroup(a3({ withHole: true }), 14)).toEqual([]);
  });
  test('§J.3 310P with an Atlas 300I Duo card: all chips with the same card id', () => {
    const f: RingFacts = { kind: 'Ascend310P', usage: 'infer', boardId: 0, chips: chips(8, 2), duo: true };
    expect(resetGroup(f, 5)).toEqual([4, 5]);
  });
  test.each<[ChipKind, DeviceUsage]>([
    ['Ascend910A5', 'train'],
    ['Ascend310P', 'infer'],
    ['Ascend310', 'infer'],
    ['Ascend310B', 'infer'],
  ])('§J.3 %s: the chip alone', (kind, usage) => {
    expect(resetGroup({ kind, usage, boardId: 0, chips: chips(8, 2) }, 5)).toEqual([5]);
  });
  test('§J.3 an unknown chip is an error naming it', () => {
    expect(() => resetGroup(facts('Ascend310', 4), 4)).toThrow('logic id 4 is not a chip of this node');
  });
});
