/**
 * The D.5 card-drop tracker: `dcmi_get_device_health` answering -8012 synthesises 0x40F84E00 once, its going away
 * the recovery; other errors are reported and decide nothing.
 */
import { describe, expect, test } from '@jest/globals';
import { DcmiError } from '../../src/dcmi/errors.js';
import { CardDrop } from '../../src/health/card-drop.js';

const CHIP = { logicId: 3, phyId: 3, cardId: 3, deviceId: 0 };

function rig() {
  let answer: number | Error = 0;
  const errors: [number | undefined, string][] = [];
  const drop = new CardDrop({
    getDeviceHealth: () => {
      if (answer instanceof Error) throw answer;
      return answer;
    },
    dcmiError: (err, fn) => errors.push([(err as DcmiError).code, fn]),
  });
  return { drop, errors, set: (a: number | Error) => (answer = a) };
}

const notReady = (): DcmiError => new DcmiError(-8012, 'dcmi_get_device_health');

describe('D.5 card drop', () => {
  test('D.5 -8012 synthesises the occurrence once; later checks while dropped send nothing', () => {
    const r = rig();
    r.set(notReady());
    expect(r.drop.check(CHIP, false)).toEqual({ answered: true, synthesize: 'occur' });
    expect(r.drop.check(CHIP, true)).toEqual({ answered: true });
    expect(r.drop.isDropped(3)).toBe(true);
  });

  test('D.5 the -8012 answer going away synthesises the recovery', () => {
    const r = rig();
    r.set(notReady());
    r.drop.check(CHIP, false);
    r.set(0);
    expect(r.drop.check(CHIP, true)).toEqual({ answered: true, synthesize: 'recover' });
    expect(r.drop.isDropped(3)).toBe(false);
  });

  test('D.5 nothing is synthesised when the store already agrees (e.g. the code was stored before a restart)', () => {
    const r = rig();
    r.set(notReady());
    expect(r.drop.check(CHIP, true)).toEqual({ answered: true });
    r.set(0);
    expect(r.drop.check(CHIP, false)).toEqual({ answered: true });
  });

  test('another DCMI error is reported and leaves the drop state as it was', () => {
    const r = rig();
    r.set(new DcmiError(-8005, 'dcmi_get_device_health'));
    expect([r.drop.check(CHIP, false), r.drop.isDropped(3), r.errors]).toEqual([
      { answered: false },
      false,
      [[-8005, 'dcmi_get_device_health']],
    ]);
  });
});
