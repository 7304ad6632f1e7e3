/**
 * Contract tests of src/dcmi against the mock library: enumeration and identity (dcmi-abi.md §4.1–§4.4,
 * device-plugin.md B.1), for every shipped scenario. Expectations are derived from the scenario files.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { hex, openMock, SCENARIO_NAMES, scenarioChips, type MockHarness } from '../helpers/mock-dcmi.js';

describe.each(SCENARIO_NAMES)('scenario %s', (name) => {
  let h: MockHarness;
  beforeAll(async () => {
    h = await openMock(name);
  });
  afterAll(() => h.close());

  test('dcmi-abi §4.1 card list is the scenario cards in order', () => {
    const list = h.dcmi.getCardList();
    expect(list.cards).toEqual(h.scenario.cards.map((c) => c.cardId));
    expect(list.complete).toBe(true);
  });

  test('dcmi-abi §4.1 chips per card', () => {
    for (const card of h.scenario.cards) {
      expect(h.dcmi.getDeviceNumInCard(card.cardId)).toBe(card.chips.length);
    }
  });

  test('B.1 enumeration order and logic/phy/card/device ids', () => {
    const expected = scenarioChips(h.scenario).map((c) => ({
      logicId: c.logicId,
      phyId: c.phyId,
      cardId: c.cardId,
      deviceId: c.deviceId,
    }));
    expect(h.dcmi.enumerate()).toEqual(expected);
  });

  test('dcmi-abi §4.1 logic id maps back to card and device, phy id back to logic id', () => {
    for (const c of scenarioChips(h.scenario)) {
      expect(h.dcmi.getCardIdDeviceId(c.logicId)).toEqual({ cardId: c.cardId, deviceId: c.deviceId });
      expect(h.dcmi.getLogicIdFromPhyId(c.phyId)).toBe(c.logicId);
    }
  });

  test('dcmi-abi §4.2 chip info carries the scenario chip name and AI-core count', () => {
    for (const c of scenarioChips(h.scenario)) {
      const info = h.dcmi.getChipInfo(c.cardId, c.deviceId);
      expect(info.chipName).toBe(h.scenario.chipName);
      if (h.scenario.aicoreCount !== undefined) expect(info.aicoreCount).toBe(h.scenario.aicoreCount);
    }
  });

  test('dcmi-abi §4.2 board info carries the scenario board id', () => {
    const c = scenarioChips(h.scenario)[0]!;
    expect(h.dcmi.getBoardInfo(c.cardId, c.deviceId).boardId).toBe(h.scenario.boardId);
  });

  test('dcmi-abi §4.3 health and error codes are the scenario values', () => {
    for (const c of scenarioChips(h.scenario)) {
      expect(h.dcmi.getDeviceHealth(c.cardId, c.deviceId)).toBe(c.health ?? 0);
      const all = h.dcmi.getDeviceAllErrorCodes(c.cardId, c.deviceId);
      expect(all.codes.map(hex)).toEqual((c.errorCodes ?? []).map((x) => x.toUpperCase()));
      expect(all.cardDropped).toBe(false);
    }
  });

  test('dcmi-abi §4.4 device IP is the scenario address (or unsupported without one)', () => {
    for (const c of scenarioChips(h.scenario)) {
      if (c.ip) expect(h.dcmi.getDeviceIp(c.cardId, c.deviceId)).toBe(c.ip);
      else expect(() => h.dcmi.getDeviceIp(c.cardId, c.deviceId)).toThrow(/-8255/);
    }
  });

  test('dcmi-abi §4.5 total AI-core count through the device-info multiplexer', () => {
    const c = scenarioChips(h.scenario)[0]!;
    expect(h.dcmi.getTotalAicore(c.cardId, c.deviceId)).toBe(h.scenario.aicoreCount ?? 20);
  });
});

describe('identity details', () => {
  test('B.7 super-pod info on the A3 scenario, sdid per chip', async () => {
    const h = await openMock('910a3-16chip');
    try {
      const pod = h.scenario.superPod!;
      const chips = scenarioChips(h.scenario);
      const info = h.dcmi.getSuperPodInfo(chips[1]!.cardId, chips[1]!.deviceId);
      expect(info.superPodId).toBe(pod.superPodId);
      expect(info.serverId).toBe(pod.serverId);
      expect(info.sdid).toBe(chips[1]!.logicId);
    } finally {
      h.close();
    }
  });

  test('J.3 brother card of an A3 card is the scenario pairing', async () => {
    const h = await openMock('910a3-16chip');
    try {
      for (const card of h.scenario.cards) {
        expect(h.dcmi.getBrotherCardId(card.cardId, 0)).toBe(card.brotherCardId);
      }
    } finally {
      h.close();
    }
  });

  test('dcmi-abi §4.2 main-board id, DCMI version and product type come from the scenario', async () => {
    const h = await openMock('310p-4chip');
    try {
      const c = scenarioChips(h.scenario)[0]!;
      expect(h.dcmi.getProductType(c.cardId, c.deviceId)).toBe(h.scenario.productType);
      expect(h.dcmi.getDcmiVersion()).toBe(h.scenario.dcmiVersion ?? '24.1.rc3');
    } finally {
      h.close();
    }
  });

  test('dcmi-abi §4.2 an invalid main-board id (0xFFFFFFFF) is an error, a set one is returned', async () => {
    const a3 = await openMock('910a3-16chip');
    try {
      expect(a3.dcmi.getMainboardId(0, 0)).toBe(a3.scenario.mainboardId);
    } finally {
      a3.close();
    }
    const b = await openMock('910b-8chip');
    try {
      expect(() => b.dcmi.getMainboardId(0, 0)).toThrow(/0xFFFFFFFF/);
    } finally {
      b.close();
    }
  });
});
