import { describe, expect, test } from '@jest/globals';
import { detectChipKind } from '../../src/core/chips.js';

describe('B.2 chip kind detection', () => {
  test.each([
    ['910B3', 0x24, 'Ascend910B'],
    ['910ProB', 0x20, 'Ascend910'],
    ['910B3', 0xb0, 'Ascend910A3'],
    ['Ascend950PR', 0x10, 'Ascend910A5'],
    ['310P3', 0, 'Ascend310P'],
    ['I2', 0, 'Ascend310P'],
    ['310B1', 0, 'Ascend310B'],
    ['Ascend310', 0, 'Ascend310'],
    ['A2G1', 0, 'Ascend910B'],
  ])('%s on board %i is %s', (name, board, kind) => {
    expect(detectChipKind(name, board)).toBe(kind);
  });

  test('an unknown chip name is unsupported', () => {
    expect(detectChipKind('x86', 0)).toBeUndefined();
  });
});
