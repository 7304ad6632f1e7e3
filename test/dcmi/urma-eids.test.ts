/**
 * The DCMI v2 URMA calls behind the A5 `levelList` (device-plugin.md I.2, I.3, L.8; dcmi-abi v2 table in
 * docs/dcmi.md): `dcmiv2_get_urma_device_cnt` and `dcmiv2_get_eid_list_by_urma_dev_index` against the real mock, and
 * the scenario chip field `urma` (scenarios/README.md).
 */
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { Dcmi } from '../../src/dcmi/dcmi.js';
import { DcmiError } from '../../src/dcmi/errors.js';
import { loadScenario, openMock, type MockHarness, type Scenario, thrown } from '../helpers/mock-dcmi.js';

let h: MockHarness | undefined;
afterEach(() => {
  h?.close();
  h = undefined;
});

type Chip = Record<string, unknown>;
function withUrma(urma: unknown, chip = 0): Scenario {
  const s = loadScenario('950-8chip');
  (s.cards[chip]!.chips[0] as unknown as Chip).urma = urma;
  return s;
}

describe('L.8 Dcmi.getUrmaEids on a v2 library', () => {
  test('I.2 the scenario EIDs come back per URMA device, lower-case, in order', async () => {
    const devs = [
      ['000000000000002000000000030000AB', '00000000000000000000000003000412'],
      ['00000000000000600000000003000000'],
    ];
    h = await openMock(withUrma(devs, 3));
    expect(h.dcmi.getUrmaEids(3, 0)).toEqual(devs.map((d) => d.map((e) => e.toLowerCase())));
  });

  test('I.2 a chip without "urma" has no URMA device', async () => {
    const s = loadScenario('950-8chip');
    delete (s.cards[1]!.chips[0] as unknown as Chip).urma;
    h = await openMock(s);
    expect(h.dcmi.getUrmaEids(1, 0)).toEqual([]);
  });

  test('I.2 each call goes to the v2 functions: one count, one list per device', async () => {
    h = await openMock(withUrma([['00000000000000200000000003000009'], [], ['00000000000000600000000003000000']]));
    const before = (await h.control.state()).counters.callsByName;
    expect(h.dcmi.getUrmaEids(0, 0)).toHaveLength(3);
    const after = (await h.control.state()).counters.callsByName;
    const delta = (fn: string): number => (after[fn] ?? 0) - (before[fn] ?? 0);
    expect(delta('dcmiv2_get_urma_device_cnt')).toBe(1);
    expect(delta('dcmiv2_get_eid_list_by_urma_dev_index')).toBe(3);
  });

  test('L.8 a v1 library: -8255 naming dcmiv2_get_urma_device_cnt', async () => {
    h = await openMock('910b-8chip');
    const err = thrown(() => h!.dcmi.getUrmaEids(0, 0));
    expect(err).toBeInstanceOf(DcmiError);
    expect(err).toMatchObject({ code: -8255, fn: 'dcmiv2_get_urma_device_cnt' });
  });
});

describe('L.8 a v2 library without the URMA functions', () => {
  test('L.8 getUrmaEids throws SYMBOL_MISSING (-99998) naming dcmiv2_get_urma_device_cnt, counted as unsupported', async () => {
    // the older-A5-driver fixture exports only init, the device list and the id mapping of the v2 generation
    const dcmi = Dcmi.open(path.join(PROJECT_ROOT, 'build', 'Release', 'libdcmi_partial_v2.so'));
    try {
      await dcmi.init();
      expect(dcmi.missingSymbols()).toEqual(
        expect.arrayContaining(['dcmiv2_get_urma_device_cnt', 'dcmiv2_get_eid_list_by_urma_dev_index']),
      );
      const err = thrown(() => dcmi.getUrmaEids(0, 0));
      expect(err).toMatchObject({ code: -99998, fn: 'dcmiv2_get_urma_device_cnt' });
      expect((err as DcmiError).isUnsupported).toBe(true);
    } finally {
      dcmi.close();
    }
  });
});

describe('scenarios/README.md the mock rejects a bad "urma" field', () => {
  test.each([
    ['not an array', 'x'],
    ['a device that is not an array', ['00000000000000200000000003000009']],
    ['an EID of 31 digits', [['0000000000000020000000000300000']]],
    ['an EID with a non-hex digit', [['0000000000000020000000000300000g']]],
    ['a number instead of an EID', [[7]]],
    ['nine URMA devices', Array.from({ length: 9 }, () => [])],
    ['33 EIDs on one device', [Array.from({ length: 33 }, () => '00000000000000200000000003000009')]],
  ])('%s makes dcmiv2_init fail with -8005', async (_what, urma) => {
    await expect(openMock(withUrma(urma))).rejects.toMatchObject({ code: -8005 });
  });

  test('a valid "urma" field loads (the refusals above are about the field)', async () => {
    h = await openMock(withUrma([Array.from({ length: 32 }, () => '00000000000000200000000003000009')]));
    expect(h.dcmi.getUrmaEids(0, 0)[0]).toHaveLength(32);
  });
});
