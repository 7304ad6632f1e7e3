/** Ascend910A5 vocabulary: the 300I card type (spec I.2 `cardType`), when the rack id is published (H.3, I.2), and
 * the device-info names (L.6 last sentence). */
import { describe, expect, test } from '@jest/globals';
import { a5CardTypeOf, a5PublishesRackId } from '../../src/core/chips.js';
import { A5_INFO_NAMES } from '../../src/core/public-names.js';

describe('spec I.2 the A5 card type', () => {
  test.each([
    [0x1a, 0x68, '300I-A5'],
    [0x1b, 0x68, '300I-A5'],
    [0x1a, 0x6c, '300I-A5-4p'],
  ])('I.2 board 0x%s with main board 0x%s is %s', (board, main, type) => {
    expect(a5CardTypeOf(board, main)).toBe(type);
  });

  test('I.2 another board, another main board or none: no card type', () => {
    expect(a5CardTypeOf(0x30, 0x68)).toBeUndefined();
    expect(a5CardTypeOf(0x1a, 0x44)).toBeUndefined();
    expect(a5CardTypeOf(0x1a, undefined)).toBeUndefined();
  });
});

describe('spec H.3, I.2 the A5 rack id is published in 1D/2D pods only', () => {
  test.each([
    [0, false],
    [1, true],
    [2, true],
    [3, false],
    [4, false],
  ])('H.3 super-pod type %d: %s', (superPodType, published) => {
    expect(a5PublishesRackId({ superPodType })).toBe(published);
  });
});

describe('spec L.6 the A5 device-info names', () => {
  test('L.6 run-mode names and keys become npu names', () => {
    expect(A5_INFO_NAMES.name('Ascend910-0,Ascend910-12')).toBe('npu-0,npu-12');
    expect(A5_INFO_NAMES.resource('huawei.com/Ascend910-Unhealthy')).toBe('huawei.com/npu-Unhealthy');
  });

  test('L.6 an operator-written npu name reads back as the run-mode name', () => {
    expect(A5_INFO_NAMES.inner('npu-3,npu-4')).toBe('Ascend910-3,Ascend910-4');
    expect(A5_INFO_NAMES.innerReasons('{"npu-5":[]}')).toBe('{"Ascend910-5":[]}');
  });

  test('L.6 a name of another prefix is left as written (refused later)', () => {
    expect(A5_INFO_NAMES.inner('Ascend310-1')).toBe('Ascend310-1');
  });
});
