import { describe, expect, test } from '@jest/globals';
import {
  DESCRIPTION_TEXT,
  buildDeviceInfo,
  checkCodeOf,
  deviceInfoConfigMap,
  faultEntryGo,
  joinSorted,
  marshalFaultEntries,
  verifyDeviceInfoCfg,
  type DeviceInfoChip,
  type DeviceInfoView,
} from '../../src/kube/device-info.js';
import fc from 'fast-check';
import { GoJsonError, goMap, goSlice, goStruct, goSha256Hex, marshalGo } from '../../src/core/go-json.js';

/** The exact DeviceInfoCfg text of spec H.5. */
const H5_DEVICE_INFO_CFG =
  '{"DeviceInfo":{"DeviceList":{"huawei.com/Ascend910":"Ascend910-1,Ascend910-2,Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7","huawei.com/Ascend910-Fault":"[{\\"fault_type\\":\\"CardUnhealthy\\",\\"npu_name\\":\\"Ascend910-3\\",\\"large_model_fault_level\\":\\"SeparateNPU\\",\\"fault_level\\":\\"SeparateNPU\\",\\"fault_handling\\":\\"SeparateNPU\\",\\"fault_code\\":\\"80E18402\\",\\"fault_time_and_level_map\\":{\\"80E18402\\":{\\"fault_time\\":1744167455784,\\"fault_level\\":\\"SeparateNPU\\"}}},{\\"fault_type\\":\\"CardNetworkUnhealthy\\",\\"npu_name\\":\\"Ascend910-5\\",\\"large_model_fault_level\\":\\"PreSeparateNPU\\",\\"fault_level\\":\\"PreSeparateNPU\\",\\"fault_handling\\":\\"PreSeparateNPU\\",\\"fault_code\\":\\"81078603\\",\\"fault_time_and_level_map\\":{\\"81078603\\":{\\"fault_time\\":1744168468259,\\"fault_level\\":\\"PreSeparateNPU\\"}}}]","huawei.com/Ascend910-NetworkUnhealthy":"Ascend910-5","huawei.com/Ascend910-Recovering":"","huawei.com/Ascend910-Unhealthy":"Ascend910-3"},"UpdateTime":1744182144},"SuperPodID":-2,"ServerIndex":-2,"CheckCode":"b983a79a6b6baa12fdd3d2a6b1bf2d5d1efdd8d7eb64eb68b83ad1913081b737"}';
const H5_CHECK_CODE = 'b983a79a6b6baa12fdd3d2a6b1bf2d5d1efdd8d7eb64eb68b83ad1913081b737';
const H5_REASONS =
  '{"Ascend910-5":[{"upgrade_time":1744168468259,"fault_code":"81078603","fault_level":"PreSeparateNPU","upgrade_type":"FaultDuration"}]}';

function healthyChip(phy: number): DeviceInfoChip {
  return {
    logicId: phy,
    name: `Ascend910-${phy}`,
    health: 'Healthy',
    networkHealth: 'Healthy',
    podUsed: false,
    chipFaults: { level: 'NormalNPU', codes: [] },
    networkFaults: { level: 'NormalNPU', codes: [] },
    reasons: [],
    manuallySeparated: false,
  };
}

/** The node of spec H.5 as the engine would describe it. */
function h5View(): DeviceInfoView {
  const chips = [0, 1, 2, 3, 4, 5, 6, 7].map(healthyChip);
  chips[0] = { ...chips[0]!, podUsed: true };
  chips[3] = {
    ...chips[3]!,
    health: 'Unhealthy',
    chipFaults: {
      level: 'SeparateNPU',
      codes: [{ code: '80E18402', firstSeenMs: 1744167455784, level: 'SeparateNPU' }],
    },
  };
  chips[5] = {
    ...chips[5]!,
    networkHealth: 'Unhealthy',
    networkFaults: {
      level: 'PreSeparateNPU',
      codes: [{ code: '81078603', firstSeenMs: 1744168468259, level: 'PreSeparateNPU' }],
    },
    reasons: [
      {
        upgrade_time: 1744168468259,
        fault_code: '81078603',
        fault_level: 'PreSeparateNPU',
        upgrade_type: 'FaultDuration',
        scope: 'network',
      },
    ],
  };
  return {
    runMode: 'Ascend910',
    resourceName: 'huawei.com/Ascend910',
    chips,
    superPodId: -2,
    serverIndex: -2,
    updateTimeSec: 1744182144,
  };
}

describe('H.5 worked example', () => {
  test('H.5 the literal DeviceInfo serialises to the given CheckCode', () => {
    const parsed = JSON.parse(H5_DEVICE_INFO_CFG);
    const inner = goStruct([
      ['DeviceList', goMap(parsed.DeviceInfo.DeviceList)],
      ['UpdateTime', parsed.DeviceInfo.UpdateTime],
    ]);
    expect(goSha256Hex(inner)).toBe(H5_CHECK_CODE);
  });

  test('H.5 the literal DeviceInfoCfg re-serialises to its own bytes', () => {
    const p = JSON.parse(H5_DEVICE_INFO_CFG);
    const again = goStruct([
      [
        'DeviceInfo',
        goStruct([
          ['DeviceList', goMap(p.DeviceInfo.DeviceList)],
          ['UpdateTime', p.DeviceInfo.UpdateTime],
        ]),
      ],
      ['SuperPodID', p.SuperPodID],
      ['ServerIndex', p.ServerIndex],
      ['CheckCode', p.CheckCode],
    ]);
    expect(marshalGo(again)).toBe(H5_DEVICE_INFO_CFG);
  });

  test('H.5 the builder reproduces DeviceInfoCfg byte for byte', () => {
    expect(buildDeviceInfo(h5View()).data.DeviceInfoCfg).toBe(H5_DEVICE_INFO_CFG);
  });

  test('H.5 the builder returns the CheckCode it wrote', () => {
    expect(buildDeviceInfo(h5View()).checkCode).toBe(H5_CHECK_CODE);
  });

  test('H.5 / G.5 UpgradeFaultReason of the example', () => {
    expect(buildDeviceInfo(h5View()).data.UpgradeFaultReason).toBe(H5_REASONS);
  });

  test('H.5 / G.2 ManuallySeparateNPU is empty without separated chips', () => {
    expect(buildDeviceInfo(h5View()).data.ManuallySeparateNPU).toBe('');
  });

  test('H.2 Description is the fixed text', () => {
    expect(buildDeviceInfo(h5View()).data.Description).toBe(DESCRIPTION_TEXT);
  });

  test('H.3 a consumer re-serialising the written DeviceInfoCfg verifies the CheckCode', () => {
    expect(verifyDeviceInfoCfg(buildDeviceInfo(h5View()).data.DeviceInfoCfg!)).toBe(true);
  });

  test('H.3 a changed byte fails verification', () => {
    const text = buildDeviceInfo(h5View()).data.DeviceInfoCfg!.replace('1744182144', '1744182145');
    expect(verifyDeviceInfoCfg(text)).toBe(false);
  });
});

describe('H.1 identity', () => {
  test('H.1 name, namespace and label of the ConfigMap', () => {
    const cm = deviceInfoConfigMap('node-a', buildDeviceInfo(h5View()));
    expect(cm.metadata).toEqual({
      name: 'mindx-dl-deviceinfo-node-a',
      namespace: 'kube-system',
      labels: { 'mx-consumer-cim': 'true' },
    });
  });

  test('H.2 the data keys of a 910 node without switch info', () => {
    expect(Object.keys(buildDeviceInfo(h5View()).data).sort()).toEqual([
      'Description',
      'DeviceInfoCfg',
      'ManuallySeparateNPU',
      'UpgradeFaultReason',
    ]);
  });
});

describe('H.3 DeviceList', () => {
  test('H.3 lists sort as strings: Ascend910-10 before Ascend910-2', () => {
    expect(joinSorted(['Ascend910-2', 'Ascend910-10', 'Ascend910-1'])).toBe('Ascend910-1,Ascend910-10,Ascend910-2');
  });

  test('H.3 sorted map keys: the DeviceList of a 16-chip node', () => {
    const chips = Array.from({ length: 16 }, (_, i) => healthyChip(i));
    const out = buildDeviceInfo({ ...h5View(), chips });
    expect(out.deviceList['huawei.com/Ascend910']).toMatch(
      /^Ascend910-0,Ascend910-1,Ascend910-10,.*Ascend910-15,Ascend910-2,/,
    );
  });

  test('H.3 an empty fault list is []', () => {
    const out = buildDeviceInfo({ ...h5View(), chips: [healthyChip(0)] });
    expect(out.deviceList['huawei.com/Ascend910-Fault']).toBe('[]');
  });

  test('H.3 network-unhealthy chips stay schedulable', () => {
    expect(buildDeviceInfo(h5View()).deviceList['huawei.com/Ascend910']).toContain('Ascend910-5');
  });

  test('H.3 a withheld chip is not schedulable', () => {
    const v = h5View();
    const chips = v.chips.map((c) => (c.logicId === 1 ? { ...c, withheld: true } : c));
    expect(buildDeviceInfo({ ...v, chips }).deviceList['huawei.com/Ascend910']).not.toContain('Ascend910-1,');
  });

  test('H.3 keys of the previous write persist, virtual types are dropped', () => {
    const out = buildDeviceInfo({
      ...h5View(),
      previousDeviceList: { 'huawei.com/Ascend910-Old': 'x', 'huawei.com/Ascend910-4c': 'Ascend910-4c-100-0' },
    });
    expect([out.deviceList['huawei.com/Ascend910-Old'], out.deviceList['huawei.com/Ascend910-4c']]).toEqual([
      'x',
      undefined,
    ]);
  });

  test('H.3 310P has no NetworkUnhealthy or Recovering key', () => {
    const chips = [0, 1].map((i) => ({ ...healthyChip(i), name: `Ascend310P-${i}` }));
    const out = buildDeviceInfo({ ...h5View(), runMode: 'Ascend310P', resourceName: 'huawei.com/Ascend310P', chips });
    expect(Object.keys(out.deviceList).sort()).toEqual([
      'huawei.com/Ascend310P',
      'huawei.com/Ascend310P-Fault',
      'huawei.com/Ascend310P-Unhealthy',
    ]);
  });

  test('H.3 / M.4 310 writes its fault list under huawei.com/Ascend310P-Fault when told so', () => {
    const chips = [{ ...healthyChip(0), name: 'Ascend310-0' }];
    const out = buildDeviceInfo({
      ...h5View(),
      runMode: 'Ascend310',
      resourceName: 'huawei.com/Ascend310',
      faultKey: 'huawei.com/Ascend310P-Fault',
      chips,
    });
    expect(out.deviceList['huawei.com/Ascend310P-Fault']).toBe('[]');
  });

  test('H.3 a chip entry lists reason codes after current codes; the reason overrides the map entry', () => {
    const chip: DeviceInfoChip = {
      ...healthyChip(2),
      health: 'Unhealthy',
      chipFaults: {
        level: 'ManuallySeparateNPU',
        codes: [
          { code: '80E01801', firstSeenMs: 100, level: 'ManuallySeparateNPU' },
          { code: '80C98009', firstSeenMs: 0, level: 'ManuallySeparateNPU' },
        ],
      },
      reasons: [
        {
          upgrade_time: 500,
          fault_code: '80e01801',
          fault_level: 'ManuallySeparateNPU',
          upgrade_type: 'FaultFrequency',
          scope: 'chip',
        },
        {
          upgrade_time: 600,
          fault_code: '8c084e00',
          fault_level: 'SeparateNPU',
          upgrade_type: 'FaultDuration',
          scope: 'chip',
        },
      ],
      manuallySeparated: true,
    };
    const out = buildDeviceInfo({ ...h5View(), chips: [chip] });
    const [entry] = JSON.parse(out.deviceList['huawei.com/Ascend910-Fault']!);
    expect({ code: entry.fault_code, map: entry.fault_time_and_level_map }).toEqual({
      code: '80E01801,80C98009,8C084E00',
      map: {
        '80C98009': { fault_time: 0, fault_level: 'ManuallySeparateNPU' },
        '80E01801': { fault_time: 500, fault_level: 'ManuallySeparateNPU' },
        '8C084E00': { fault_time: 600, fault_level: 'SeparateNPU' },
      },
    });
  });

  test('H.3 an unhealthy chip without codes still gets a chip entry with an empty map', () => {
    const chip: DeviceInfoChip = {
      ...healthyChip(1),
      health: 'Unhealthy',
      chipFaults: { level: 'NormalNPU', codes: [] },
    };
    const out = buildDeviceInfo({ ...h5View(), chips: [chip] });
    expect(out.deviceList['huawei.com/Ascend910-Fault']).toBe(
      '[{"fault_type":"CardUnhealthy","npu_name":"Ascend910-1","large_model_fault_level":"NormalNPU","fault_level":"NormalNPU","fault_handling":"NormalNPU","fault_code":"","fault_time_and_level_map":{}}]',
    );
  });

  test('H.3 network entry comes before the chip entry of the same chip', () => {
    const chip: DeviceInfoChip = {
      ...healthyChip(4),
      health: 'Unhealthy',
      networkHealth: 'Unhealthy',
      chipFaults: { level: 'RestartNPU', codes: [{ code: '80E01801', firstSeenMs: 1, level: 'RestartNPU' }] },
      networkFaults: {
        level: 'PreSeparateNPU',
        codes: [{ code: '81078603', firstSeenMs: 2, level: 'PreSeparateNPU' }],
      },
    };
    const out = buildDeviceInfo({ ...h5View(), chips: [chip] });
    const types = JSON.parse(out.deviceList['huawei.com/Ascend910-Fault']!).map((e: any) => e.fault_type);
    expect(types).toEqual(['CardNetworkUnhealthy', 'CardUnhealthy']);
  });

  test('H.3 RackID follows CheckCode when present', () => {
    const out = buildDeviceInfo({ ...h5View(), rackId: 7 });
    expect(out.data.DeviceInfoCfg).toMatch(/"CheckCode":"[0-9a-f]{64}","RackID":7}$/);
  });

  test('H.3 CheckCode hashes only DeviceInfo, not SuperPodID', () => {
    const a = buildDeviceInfo(h5View());
    const b = buildDeviceInfo({ ...h5View(), superPodId: 3 });
    expect(b.checkCode).toBe(a.checkCode);
  });

  test('H.3 checkCodeOf equals the builder CheckCode', () => {
    const out = buildDeviceInfo(h5View());
    expect(checkCodeOf(out.deviceList, 1744182144)).toBe(out.checkCode);
  });

  test('H.3 / H.6 the fault list written directly has the bytes of the generic Go encoder (issue [P] item 5)', () => {
    // any text, HTML characters, U+2028 and lone surrogates included; any key order of the fault map
    const text = fc.string({ unit: 'binary', maxLength: 12 });
    const entry = fc.record({
      fault_type: fc.constantFrom('CardUnhealthy' as const, 'CardNetworkUnhealthy' as const),
      npu_name: text,
      large_model_fault_level: text,
      fault_level: text,
      fault_handling: text,
      fault_code: text,
      fault_time_and_level_map: fc
        .array(fc.tuple(text, fc.record({ fault_time: fc.maxSafeInteger(), fault_level: text })), {
          maxLength: 5,
        })
        .map((pairs) => new Map(pairs)),
    });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 5 }), (entries) => {
        expect(marshalFaultEntries(entries)).toBe(marshalGo(goSlice(entries.map(faultEntryGo))));
      }),
      { numRuns: 500 },
    );
  });

  test('H.6 a fault time that is not a safe integer is refused by the direct fault-list writer, as by the generic one', () => {
    const entries = [
      {
        fault_type: 'CardUnhealthy' as const,
        npu_name: 'Ascend910-0',
        large_model_fault_level: 'SeparateNPU',
        fault_level: 'SeparateNPU',
        fault_handling: 'SeparateNPU',
        fault_code: '80E3A201',
        fault_time_and_level_map: new Map([['80E3A201', { fault_time: 1.5, fault_level: 'SeparateNPU' }]]),
      },
    ];
    expect(() => marshalGo(goSlice(entries.map(faultEntryGo)))).toThrow(GoJsonError);
    expect(() => marshalFaultEntries(entries)).toThrow(
      /1\.5 is not a safe integer.*\[0\]\.fault_time_and_level_map\.80E3A201\.fault_time/,
    );
  });
});

describe('G.2 / G.5 separation keys', () => {
  test('G.2 ManuallySeparateNPU is ordered by logic ID', () => {
    const chips = [
      { ...healthyChip(5), logicId: 1, manuallySeparated: true },
      { ...healthyChip(3), logicId: 0, manuallySeparated: true },
      { ...healthyChip(10), logicId: 2, manuallySeparated: true },
    ];
    expect(buildDeviceInfo({ ...h5View(), chips }).data.ManuallySeparateNPU).toBe(
      'Ascend910-3,Ascend910-5,Ascend910-10',
    );
  });

  test('G.5 UpgradeFaultReason is {} without reasons', () => {
    const out = buildDeviceInfo({ ...h5View(), chips: [healthyChip(0)] });
    expect(out.data.UpgradeFaultReason).toBe('{}');
  });

  test('G.5 UpgradeFaultReason keys sort as strings', () => {
    const reason = {
      upgrade_time: 1,
      fault_code: 'AutofillFaultCode',
      fault_level: 'ManuallySeparateNPU' as const,
      upgrade_type: 'FaultAutofill' as const,
      scope: 'chip' as const,
    };
    const chips = [2, 10].map((i) => ({ ...healthyChip(i), reasons: [reason] }));
    const keys = Object.keys(JSON.parse(buildDeviceInfo({ ...h5View(), chips }).data.UpgradeFaultReason!));
    expect(keys).toEqual(['Ascend910-10', 'Ascend910-2']);
  });
});
