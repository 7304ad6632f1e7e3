/**
 * Soft share (spec L.7) die ids: `dcmi_get_device_die_v2` through the binding against the mock, which answers each
 * chip's `dieId` from the scenario (dcmi-abi.md §4.8 text form).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { DIE_TYPE } from '../../src/dcmi/dcmi.js';
import { loadScenario, openMock, scenarioChips, type MockHarness } from '../helpers/mock-dcmi.js';

describe('L.7 die id (dcmi_get_device_die_v2)', () => {
  let h: MockHarness;
  beforeAll(async () => {
    h = await openMock('310p-soft');
  });
  afterAll(() => h.close());

  test('L.7 each chip answers the die id of its scenario entry, five upper-case 8-digit hex words', () => {
    const chips = scenarioChips(h.scenario);
    expect(chips.length).toBe(4);
    for (const c of chips) {
      const want = (c as { dieId?: string }).dieId;
      expect(want).toMatch(/^[0-9A-F]{8}(-[0-9A-F]{8}){4}$/);
      expect(h.dcmi.getDieId(c.cardId, c.deviceId)).toBe(want);
    }
  });

  test('dcmi-abi §4.8 a chip without dieId in its scenario answers the synthetic id (MOCK, type, ids)', async () => {
    const s = loadScenario('310p-4chip');
    const m = await openMock(s);
    try {
      expect(m.dcmi.getDieId(2, 0, DIE_TYPE.VDIE)).toBe('4D4F434B-00000001-00000002-00000000-00000002');
    } finally {
      m.close();
    }
  });

  test('dcmi-abi §4.8 a die type other than NDIE/VDIE is refused by the mock', () => {
    expect(() => h.dcmi.getDieId(0, 0, 2 as 0)).toThrow(/dcmi_get_device_die_v2/);
  });

  test('mock: a malformed dieId makes the scenario invalid (dcmi_init fails with -8005)', async () => {
    const s = loadScenario('310p-soft');
    (s.cards[1]!.chips[0] as { dieId?: string }).dieId = 'C281A66C-80A047F2';
    await expect(openMock(s)).rejects.toMatchObject({ code: -8005, fn: 'dcmi_init' });
  });
});
