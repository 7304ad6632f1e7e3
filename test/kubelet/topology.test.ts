/** Reset groups per chip kind (spec J.3) and device-name parsing (spec B.3). */
import { describe, expect, test } from '@jest/globals';
import { isVirtualName, phyIdOfName, resourceName, vdevIdOfName } from '../../src/kubelet/device-names.js';
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

describe('B.3 device names', () => {
  test('B.3 resource name is huawei.com/<deviceType>', () => {
    expect(resourceName('Ascend910-4c')).toBe('huawei.com/Ascend910-4c');
  });
  test.each<[string, boolean, number | undefined]>([
    ['Ascend910-3', false, 3],
    ['Ascend910-4c-100-3', false, 3],
    ['Ascend310P-12_1', false, 12],
    ['Ascend310P-7-42', true, 7],
    ['Ascend910-x', false, undefined],
  ])('B.3 phy id of %s (share mode %s) is %s', (name, share, phy) => {
    expect(phyIdOfName(name, share)).toBe(phy);
  });
  test('B.3 virtual names and their vNPU id', () => {
    expect(isVirtualName('Ascend910-4c')).toBe(true);
    expect(isVirtualName('Ascend310P-2c-105-1')).toBe(true);
    expect(isVirtualName('Ascend910-3')).toBe(false);
    expect(vdevIdOfName('Ascend910-4c-100-3')).toBe(100);
    expect(vdevIdOfName('Ascend910-3')).toBeUndefined();
  });
});
