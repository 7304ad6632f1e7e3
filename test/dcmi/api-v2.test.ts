/**
 * The second DCMI API generation (`dcmiv2_*`, Ascend910A5): detection (dcmi-abi.md §1.3, device-plugin.md A.2 step
 * 4), the routing of every `Dcmi` method to its v2 function against the real mock library, super-pod values for A5
 * (B.7, L.8), fault events through the v2 subscription (§5), per-symbol degradation and the scenario's `apiVersion`.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { loadAddon } from '../../src/dcmi/bindings.js';
import { MOCK_DCMI_LIBRARY, PROJECT_ROOT } from '../../src/core/paths.js';
import { Dcmi, type ChipAddress } from '../../src/dcmi/dcmi.js';
import { DcmiError } from '../../src/dcmi/errors.js';
import {
  EventCollector,
  hex,
  loadScenario,
  openMock,
  scenarioChips,
  tempDir,
  type MockHarness,
  type Scenario,
  thrown,
} from '../helpers/mock-dcmi.js';

const PARTIAL_V2_LIBRARY = path.join(PROJECT_ROOT, 'build', 'Release', 'libdcmi_partial_v2.so');
const ADDON = path.join(PROJECT_ROOT, 'build', 'Release', 'dcmi_addon.node');

async function calls(h: MockHarness, fn: string): Promise<number> {
  return (await h.control.state()).counters.callsByName[fn] ?? 0;
}

/** A v2 scenario derived from the shipped 950 file, with some chips made distinguishable. */
function a5Scenario(): Scenario {
  const s = loadScenario('950-8chip');
  const chip = s.cards[2]!.chips[0]!;
  chip.errorCodes = ['80E01801'];
  chip.health = 1;
  chip.processes = 2;
  s.cards[5]!.chips[0]!.phyId = 13; // logic 5 ↔ phy 13, so a mapping that returns its input fails
  return s;
}

describe('dcmi-abi §1.3 API-version detection', () => {
  test('an apiVersion 2 scenario: dcmi_init fails, dcmiv2_init succeeds, apiVersion() is 2', async () => {
    const h = await openMock('950-8chip');
    try {
      expect(h.dcmi.apiVersion()).toBe(2);
      expect(await calls(h, 'dcmi_init')).toBe(1);
      expect(await calls(h, 'dcmiv2_init')).toBe(1);
    } finally {
      h.close();
    }
  });

  test('a v1 scenario: dcmi_init succeeds, dcmiv2_init is never called, apiVersion() is 1', async () => {
    const h = await openMock('910b-8chip');
    try {
      expect(h.dcmi.apiVersion()).toBe(1);
      expect(await calls(h, 'dcmiv2_init')).toBe(0);
    } finally {
      h.close();
    }
  });

  test('architecture §5 with apiVersion 1 the mock refuses dcmiv2_init with -8255', async () => {
    const dir = tempDir();
    const lib = new (loadAddon().DcmiLibrary)(MOCK_DCMI_LIBRARY);
    try {
      lib.mockConfigure(path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'), path.join(dir, 'ctl.sock'));
      await expect(lib.v2Init()).rejects.toMatchObject({ code: -8255, fn: 'dcmiv2_init' });
    } finally {
      lib.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('both generations failing: the error is dcmi_init’s code and names dcmiv2_init’s result', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, '{"chipName": "Ascend950PR", "apiVersion": 2, "cards": [ }');
    const dcmi = Dcmi.open(MOCK_DCMI_LIBRARY);
    try {
      dcmi.mockConfigure(file, path.join(dir, 'ctl.sock'));
      const err = await dcmi.init().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DcmiError);
      expect(err).toMatchObject({ code: -8005, fn: 'dcmi_init' });
      expect((err as Error).message).toContain('dcmiv2_init failed with -8005');
    } finally {
      dcmi.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Dcmi methods routed to dcmiv2_* on an apiVersion 2 scenario', () => {
  let h: MockHarness;
  let s: Scenario;
  beforeAll(async () => {
    s = a5Scenario();
    h = await openMock(s);
  });
  afterAll(() => h.close());

  test('device-plugin B.1 enumerate(): dev_id = logic id as card id, device 0, phy id from DCMI v2', async () => {
    const expected: ChipAddress[] = scenarioChips(s).map((c) => ({
      logicId: c.logicId,
      phyId: c.phyId,
      cardId: c.logicId,
      deviceId: 0,
    }));
    expect(h.dcmi.enumerate()).toEqual(expected);
    expect(await calls(h, 'dcmi_get_card_list')).toBe(0);
    expect(await calls(h, 'dcmiv2_get_device_list')).toBeGreaterThan(0);
  });

  test('device-plugin A.2 getCardList() is complete when the list and dcmiv2_get_all_device_count agree', () => {
    const r = h.dcmi.getCardList();
    expect(r).toEqual({ cards: scenarioChips(s).map((c) => c.logicId), skipped: [], cardNum: 8, complete: true });
  });

  test('device-plugin B.1 getLogicIdFromPhyId and getCardIdDeviceId under v2', () => {
    expect(h.dcmi.getLogicIdFromPhyId(13)).toBe(5);
    expect(h.dcmi.getCardIdDeviceId(5)).toEqual({ cardId: 5, deviceId: 0 });
  });

  // [method, v2 function, call, expected value from the scenario]
  const routed: [string, string, (d: Dcmi) => unknown, (sc: Scenario) => unknown][] = [
    [
      'getChipInfo',
      'dcmiv2_get_device_chip_info',
      (d) => d.getChipInfo(3, 0),
      (sc) => ({
        chipType: 'Ascend',
        chipName: sc.chipName,
        chipVersion: 'V1',
        aicoreCount: sc.aicoreCount,
        npuName: '',
      }),
    ],
    [
      'getBoardInfo',
      'dcmiv2_get_device_board_info',
      (d) => d.getBoardInfo(3, 0),
      (sc) => ({ boardId: sc.boardId, pcbId: 0, bomId: 0, slotId: 0 }),
    ],
    ['getMainboardId', 'dcmiv2_get_mainboard_id', (d) => d.getMainboardId(3, 0), (sc) => sc.mainboardId],
    ['getDcmiVersion', 'dcmiv2_get_dcmi_version', (d) => d.getDcmiVersion(), (sc) => sc.dcmiVersion],
    ['getDeviceHealth', 'dcmiv2_get_device_health', (d) => d.getDeviceHealth(2, 0), () => 1],
    [
      'getDeviceAllErrorCodes',
      'dcmiv2_get_device_error_code_list',
      (d) => d.getDeviceAllErrorCodes(2, 0),
      () => ({ codes: [0x80e01801], cardDropped: false }),
    ],
    ['getDeviceIp', 'dcmiv2_get_device_ip', (d) => d.getDeviceIp(6, 0), (sc) => sc.cards[6]!.chips[0]!.ip],
    ['getDeviceType', 'dcmiv2_get_device_type', (d) => d.getDeviceType(6, 0), () => 0],
    ['getTotalAicore', 'dcmiv2_get_device_info', (d) => d.getTotalAicore(1, 0), (sc) => sc.aicoreCount],
    [
      'getProcesses',
      'dcmiv2_get_device_proc_mem_info',
      (d) => d.getProcesses(2, 0),
      () => [
        { pid: 10000, memMiB: 1024 },
        { pid: 10001, memMiB: 1024 },
      ],
    ],
    ['getPcieBusId', 'dcmiv2_get_device_pcie_info', (d) => d.getPcieBusId(2, 0), () => '0000:21:00.0'],
    [
      'getHbmInfo',
      'dcmiv2_get_device_hbm_info',
      (d) => d.getHbmInfo(2, 0),
      (sc) => ({ memorySizeMiB: sc.hbmSizeMiB, freq: 1600, usageMiB: 0, temp: 40 }),
    ],
    [
      'getDieId',
      'dcmiv2_get_device_die_id',
      (d) => d.getDieId(4, 0, 0),
      () => '4D4F434B-00000000-00000004-00000000-00000004',
    ],
    ['getUtilizationRate', 'dcmiv2_get_device_utilization_rate', (d) => d.getUtilizationRate(4, 0, 2), () => 0],
    ['getNpuWorkMode', '(none: AMP, as upstream)', (d) => d.getNpuWorkMode(0), () => 0],
    ['getDeviceNumInCard', '(none: one chip per dev id)', (d) => d.getDeviceNumInCard(4), () => 1],
    ['getDeviceLogicId', '(none: the dev id)', (d) => d.getDeviceLogicId(4, 0), () => 4],
  ];

  test.each(routed)('%s returns the scenario value through %s', async (_name, fn, call, want) => {
    const before = fn.startsWith('dcmiv2_') ? await calls(h, fn) : 0;
    expect(call(h.dcmi)).toEqual(want(s));
    if (fn.startsWith('dcmiv2_')) expect(await calls(h, fn)).toBeGreaterThan(before);
  });

  test('device-plugin B.7 getSuperPodInfo carries the A5 rack id, super-pod type and size', () => {
    const sp = s.superPod!;
    expect(h.dcmi.getSuperPodInfo(7, 0)).toEqual({
      sdid: 7,
      scaleType: sp.scaleType,
      superPodId: sp.superPodId,
      serverId: sp.serverId,
      chassisId: sp.chassisId,
      superPodType: sp.superPodType,
      rackId: sp.chassisId,
      superPodSize: sp.scaleType,
    });
  });

  test('upstream DcGetCardElabel getElabel returns the scenario label, the serial number ending in the phy id', () => {
    const el = s.elabel as Record<string, string>;
    expect(h.dcmi.getElabel(5, 0)).toEqual({
      productName: el.productName,
      model: el.model,
      manufacturer: el.manufacturer,
      manufacturerDate: el.manufacturerDate,
      serialNumber: `${el.serialNumber}13`,
    });
  });

  test('dcmi-abi §4.9 getDeviceNetworkHealth goes through dcmiv2_get_device_network_health', async () => {
    const before = await calls(h, 'dcmiv2_get_device_network_health');
    await expect(h.dcmi.getDeviceNetworkHealth(1, 0)).resolves.toBe(0);
    expect(await calls(h, 'dcmiv2_get_device_network_health')).toBe(before + 1);
  });

  test('device-plugin J reset: dcmiv2_reset_device, then the boot status reports 16', async () => {
    await h.control.expectOk({ op: 'silentFault', logicId: 7, eventId: '80C98009', assertion: 'occur' });
    await h.dcmi.setDeviceReset(7, 0);
    await expect(h.dcmi.getDeviceBootStatus(7, 0)).resolves.toBe(16);
    expect(h.dcmi.getDeviceAllErrorCodes(7, 0).codes).toEqual([]);
    const chip = (await h.control.state()).chips.find((c) => c.logicId === 7)!;
    expect(chip.resets).toBe(1);
  });

  test('dcmi-abi §4.7 out-of-band calls go to their dcmiv2_* functions', async () => {
    await expect(h.dcmi.getOutbandChannelState(1, 0)).resolves.toBe(1);
    await h.dcmi.preResetSoc(1, 0);
    await h.dcmi.rescanSoc(1, 0);
    const byName = (await h.control.state()).counters.callsByName;
    expect([byName.dcmiv2_pre_reset_device, byName.dcmiv2_rescan_device]).toEqual([1, 1]);
  });

  test('architecture §5 a control op changes what the v2 functions report (health)', async () => {
    await h.control.expectOk({ op: 'health', logicId: 0, value: 3 });
    expect(h.dcmi.getDeviceHealth(0, 0)).toBe(3);
    await h.control.expectOk({ op: 'health', logicId: 0, value: 0 });
  });

  test('dcmi-abi §4.3 a dropped chip: the error names the v2 function and the card-drop code is appended', async () => {
    await h.control.expectOk({ op: 'drop', logicId: 1 });
    try {
      expect(thrown(() => h.dcmi.getDeviceHealth(1, 0))).toMatchObject({ code: -8012, fn: 'dcmiv2_get_device_health' });
      expect(h.dcmi.getDeviceAllErrorCodes(1, 0)).toEqual({ codes: [0x40f84e00], cardDropped: true });
    } finally {
      await h.control.expectOk({ op: 'restore', logicId: 1 });
    }
  });

  test('a device id other than 0 is refused under v2, naming the v2 function', () => {
    const err = thrown(() => h.dcmi.getDeviceHealth(1, 1));
    expect(err).toMatchObject({ code: -8001, fn: 'dcmiv2_get_device_health' });
    expect((err as Error).message).toContain('device id 1');
  });

  const noCounterpart: [string, (d: Dcmi) => unknown][] = [
    ['dcmi_get_product_type', (d) => d.getProductType(0, 0)],
    ['dcmi_get_netdev_brother_device', (d) => d.getBrotherCardId(0, 0)],
    ['dcmi_create_vdevice', (d) => d.createVirtualDevice(0, 0, 'vir02')],
    ['dcmi_set_destroy_vdevice', (d) => d.destroyVirtualDevice(0, 0, 100)],
    ['dcmi_get_affinity_cpu_info_by_device_id', (d) => d.getAffinityCpu(0, 0)],
    ['dcmi_set_multi_die_policy', (d) => d.setMultiDiePolicy(0)],
  ];

  test.each(noCounterpart)('%s has no v2 counterpart: -8255 naming it', (fn, call) => {
    const err = thrown(() => call(h.dcmi));
    expect(err).toBeInstanceOf(DcmiError);
    expect(err).toMatchObject({ code: -8255, fn });
    expect((err as Error).message).toContain('no dcmiv2_* counterpart');
  });

  test('dcmi-abi §1.3 on a v2 driver Dcmi calls no v1 function but the dcmi_init probe', async () => {
    const byName = (await h.control.state()).counters.callsByName;
    const v1Calls = Object.keys(byName).filter((n) => n.startsWith('dcmi_') && n !== 'dcmi_init');
    expect(v1Calls).toEqual([]);
  });
});

describe('getElabel outside a v2 scenario with a label', () => {
  test('a v1 library: -8255 naming dcmiv2_get_device_elabel_info', async () => {
    const h = await openMock('910b-8chip');
    try {
      expect(thrown(() => h.dcmi.getElabel(0, 0))).toMatchObject({ code: -8255, fn: 'dcmiv2_get_device_elabel_info' });
    } finally {
      h.close();
    }
  });

  test('scenarios/README a v2 scenario without elabel: -8255', async () => {
    const scenario = loadScenario('950-8chip');
    delete scenario.elabel;
    const h = await openMock(scenario);
    try {
      expect(thrown(() => h.dcmi.getElabel(0, 0))).toMatchObject({ code: -8255, fn: 'dcmiv2_get_device_elabel_info' });
    } finally {
      h.close();
    }
  });
});

describe('dcmi-abi §5 fault events through dcmiv2_subscribe_fault_event', () => {
  let h: MockHarness;
  beforeAll(async () => {
    h = await openMock('950-8chip');
  });
  afterAll(() => h.close());

  test('a fault injected through the control socket reaches the v2 subscriber with the driver fields', async () => {
    const events = new EventCollector();
    h.dcmi.subscribeFaultEvents(events.subscription);
    try {
      expect(await calls(h, 'dcmiv2_subscribe_fault_event')).toBe(1);
      await h.control.expectOk({ op: 'fault', logicId: 6, eventId: '80e18402', assertion: 'occur', severity: 3 });
      const [e] = await events.waitForEvents(1);
      expect(e).toMatchObject({ eventId: 0x80e18402, logicId: 6, severity: 3, assertion: 'occur' });
      const chip = (await h.control.state()).chips.find((c) => c.logicId === 6)!;
      expect(chip.errorCodes).toEqual([hex(0x80e18402)]);
    } finally {
      h.dcmi.unsubscribeFaultEvents();
      await h.control.expectOk({ op: 'silentFault', logicId: 6, eventId: '80E18402', assertion: 'recover' });
    }
  });
});

describe('dcmi-abi §1.3 per-symbol degradation of the v2 generation', () => {
  test('a missing dcmiv2_* symbol is listed and fails only that call with -99998', async () => {
    const dcmi = Dcmi.open(PARTIAL_V2_LIBRARY);
    try {
      expect(dcmi.missingSymbolsV2()).toContain('dcmiv2_get_device_health');
      expect(dcmi.missingSymbolsV2()).not.toContain('dcmiv2_init');
      await dcmi.init();
      expect(dcmi.apiVersion()).toBe(2);
      expect(dcmi.missingSymbols()).toContain('dcmiv2_get_device_health');
      expect(dcmi.enumerate()).toEqual([{ logicId: 0, phyId: 4, cardId: 0, deviceId: 0 }]);
      expect(thrown(() => dcmi.getDeviceHealth(0, 0))).toMatchObject({
        code: -99998,
        fn: 'dcmiv2_get_device_health',
      });
    } finally {
      dcmi.close();
    }
  });

  test('every dcmiv2_* function the binding resolves is exported by the mock', () => {
    const dcmi = Dcmi.open(MOCK_DCMI_LIBRARY);
    try {
      expect(dcmi.missingSymbolsV2()).toEqual([]);
      expect(loadAddon().boundFunctionsV2.length).toBeGreaterThan(0);
    } finally {
      dcmi.close();
    }
  });
});

/** Runs dcmi_init on a scenario in a child process (the mock prints its diagnostic on the native stderr). */
function initInChild(scenario: object): Promise<{ stdout: string; stderr: string }> {
  const dir = tempDir();
  const file = path.join(dir, 'scenario.json');
  fs.writeFileSync(file, JSON.stringify(scenario));
  const script = `
    const a = require(process.argv[1]);
    const lib = new a.DcmiLibrary(process.argv[2]);
    lib.mockConfigure(process.argv[3], process.argv[4]);
    lib.init().then(() => console.log('ok'), (e) => console.log(String(e.code)));`;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', script, ADDON, MOCK_DCMI_LIBRARY, file, path.join(dir, 'ctl.sock')],
      (err, stdout, stderr) => {
        fs.rmSync(dir, { recursive: true, force: true });
        if (err) reject(new Error(err.message));
        else resolve({ stdout: stdout.trim(), stderr });
      },
    );
  });
}

describe('scenarios/README apiVersion validation', () => {
  const base = {
    chipName: 'Ascend950PR',
    boardId: 0x28,
    cards: [{ cardId: 0, chips: [{ deviceId: 0, logicId: 0, phyId: 0 }] }],
  };

  test.each([
    [3, 'apiVersion: 3 is out of range 1..2'],
    [0, 'apiVersion: 0 is out of range 1..2'],
    ['2', 'apiVersion: expected an integer, found a string'],
    [2.5, 'apiVersion: expected an integer'],
  ])('apiVersion %p is refused with -8005 and a line naming the field', async (value, text) => {
    const r = await initInChild({ ...base, apiVersion: value });
    expect(r.stdout).toBe('-8005');
    expect(r.stderr).toContain(text);
  });
});
