/** Device-name rules (spec B.3). */
import { describe, expect, test } from '@jest/globals';
import {
  chipName,
  isVirtualName,
  managerName,
  phyIdOfName,
  resourceName,
  vdevIdOfName,
} from '../../src/core/device-names.js';

describe('B.3 device names', () => {
  test('B.3 manager names', () => {
    expect([managerName('Ascend910A3'), managerName('Ascend310B'), managerName('Ascend910A5')]).toEqual([
      'Ascend910',
      'Ascend310',
      'npu',
    ]);
    expect(chipName(managerName('Ascend310P'), 3)).toBe('Ascend310P-3');
  });
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
