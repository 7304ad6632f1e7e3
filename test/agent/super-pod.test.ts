/** Spec B.7: the node's super-pod facts from the first chip that answers (A5: a negative rack id does not count). */
import { describe, expect, test } from '@jest/globals';
import { readSuperPod } from '../../src/agent/wire-dcmi.js';
import { NOOP_LOGGER } from '../../src/core/logger.js';
import type { ChipAddress } from '../../src/dcmi/dcmi.js';

const chips: ChipAddress[] = [0, 1, 2].map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
const info = (chassisId: number, superPodId: number) => ({
  sdid: 0,
  scaleType: 64,
  superPodId,
  serverId: 2,
  chassisId,
  superPodType: 1,
  rackId: chassisId,
  superPodSize: 64,
});

function dcmiOf(answers: (ReturnType<typeof info> | undefined)[]) {
  return {
    getSuperPodInfo: (cardId: number) => {
      const a = answers[cardId];
      if (!a) throw new Error('DCMI error -8255');
      return a;
    },
  };
}

describe('spec B.7 super-pod facts', () => {
  test('B.7 the first chip that answers gives the values', () => {
    const sp = readSuperPod(dcmiOf([undefined, info(3, 7), info(4, 8)]), chips, 'Ascend910A5', NOOP_LOGGER);
    expect(sp).toEqual({ superPodId: 7, serverIndex: 2, rackId: 3, superPodType: 1, superPodSize: 64 });
  });

  test('B.7 on A5 a chip with a negative rack id does not count', () => {
    const sp = readSuperPod(dcmiOf([info(-1, 5), info(3, 7)]), chips, 'Ascend910A5', NOOP_LOGGER);
    expect(sp?.superPodId).toBe(7);
  });

  test('B.7 on 910A3 the rack id is not looked at', () => {
    const sp = readSuperPod(dcmiOf([info(-1, 5)]), chips, 'Ascend910A3', NOOP_LOGGER);
    expect(sp?.superPodId).toBe(5);
  });

  test('B.7 no chip answering gives undefined (the callers write -2)', () => {
    expect(readSuperPod(dcmiOf([info(-1, 5)]), chips, 'Ascend910A5', NOOP_LOGGER)).toBeUndefined();
  });
});
