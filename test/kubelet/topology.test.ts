/** Reset groups per chip kind (spec J.3). */
import { describe, expect, test } from '@jest/globals';
import { resetGroup } from '../../src/kubelet/topology.js';
import { simSnapshot, type SimNodeSpec } from '../../src/sim/kubelet-devices.js';

function groupOf(spec: SimNodeSpec, logicId: number): number[] {
  const s = simSnapshot(spec);
  const chips = Object.values(s.deviceTypes)[0]!;
  return resetGroup(
    chips.find((c) => c.logicId === logicId)!,
    chips,
    s.node,
  );
}

describe('J.3 reset groups', () => {
  test.each<[string, SimNodeSpec, number, number[]]>([
    ['910A: ring of 4', { kind: 'Ascend910', chips: 8 }, 5, [4, 5, 6, 7]],
    ['910B 8 chips: all 8', { kind: 'Ascend910B', chips: 8 }, 3, [0, 1, 2, 3, 4, 5, 6, 7]],
    ['910B 16 chips: all 16', { kind: 'Ascend910B', chips: 16 }, 9, [...Array(16).keys()]],
    ['910B board 0x28: the chip alone', { kind: 'Ascend910B', chips: 8, boardId: 0x28 }, 3, [3]],
    ['910B board 0x3C: the chip alone', { kind: 'Ascend910B', chips: 8, boardId: 0x3c }, 6, [6]],
    ['910A3: both dies of the card and of its brother', { kind: 'Ascend910A3', chips: 16 }, 6, [4, 5, 6, 7]],
    ['310P: the chip alone', { kind: 'Ascend310P', chips: 4 }, 2, [2]],
    [
      '310P with Atlas 300I Duo: the card',
      { kind: 'Ascend310P', chips: 4, chipsPerCard: 2, productTypes: ['Atlas 300I Duo'] },
      3,
      [2, 3],
    ],
  ])('J.3 %s', (_what, spec, logicId, expected) => {
    expect(groupOf(spec, logicId)).toEqual(expected);
  });
});
