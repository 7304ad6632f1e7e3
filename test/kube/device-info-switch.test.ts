/**
 * The `SwitchInfoCfg` value of the device-info ConfigMap (spec H.2, L.9; issue 18 item 1).
 */
import { describe, expect, test } from '@jest/globals';
import { buildDeviceInfo, KEY_SWITCH_INFO } from '../../src/kube/device-info.js';
import {
  carriesSwitchInfo,
  EMPTY_SWITCH_INFO_CFG,
  assembleSwitchCode,
  l2PlaneDown,
  switchInfoOf,
  type SwitchFaultLevel,
} from '../../src/kube/device-info-switch.js';
import { applySwitchEvent, switchFaultsOfQuery, type SwitchFault } from '../../src/state/switch-faults.js';
import { testStore } from '../state/helpers.js';

describe('spec H.2 SwitchInfoCfg while switch faults are off', () => {
  test('L.9 the value is the Go zero value of SwitchFaultInfo (nil slice and map as null, members in order)', () => {
    // what Go's json.Marshal(SwitchFaultInfo{}) writes for upstream's struct (FaultCode []string, FaultLevel
    // string, UpdateTime int64, NodeStatus string, FaultTimeAndLevelMap map[string]FaultTimeAndLevel)
    expect(EMPTY_SWITCH_INFO_CFG).toBe(
      '{"FaultCode":null,"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null}',
    );
  });

  test('H.2 910A3 and 910A5 carry the key, the other kinds do not', () => {
    expect(carriesSwitchInfo('Ascend910A3')).toBe(true);
    expect(carriesSwitchInfo('Ascend910A5')).toBe(true);
    for (const k of ['Ascend910', 'Ascend910B', 'Ascend310P', 'Ascend310', 'Ascend310B'] as const) {
      expect(carriesSwitchInfo(k)).toBe(false);
    }
  });

  test('H.2 the ConfigMap data holds the value verbatim next to DeviceInfoCfg', () => {
    const content = buildDeviceInfo({
      runMode: 'Ascend910',
      resourceName: 'huawei.com/Ascend910',
      chips: [],
      superPodId: 1,
      serverIndex: 0,
      updateTimeSec: 1,
      switchInfoCfg: EMPTY_SWITCH_INFO_CFG,
    });
    expect(content.data[KEY_SWITCH_INFO]).toBe(EMPTY_SWITCH_INFO_CFG);
  });
});

const fault = (over: Partial<SwitchFault> = {}): SwitchFault => ({
  eventType: 0x00f1fef5,
  subType: 155913,
  peerPortDevice: 0,
  peerPortId: 3,
  switchChipId: 1,
  switchPortId: 7,
  severity: 2,
  assertion: 1,
  alarmRaisedTime: 1744167455784,
  ...over,
});

const table = (m: Record<string, SwitchFaultLevel>) => (c: string) => m[c];

describe('spec L.9 switch fault codes and SwitchInfoCfg', () => {
  test('L.9 codes are assembled as [0x%08x,<subType|na>,<cpu|npu|L2|na>,na]', () => {
    expect(assembleSwitchCode(fault())).toBe('[0x00f1fef5,155913,cpu,na]');
    expect(assembleSwitchCode(fault({ eventType: 0x08520003, subType: 0xffffffff, peerPortDevice: 2 }))).toBe(
      '[0x08520003,na,L2,na]',
    );
    expect(assembleSwitchCode(fault({ peerPortDevice: 1 }))).toBe('[0x00f1fef5,155913,npu,na]');
    expect(assembleSwitchCode(fault({ peerPortDevice: 0xffff }))).toBe('[0x00f1fef5,155913,na,na]');
  });

  test('L.9 a recovery removes the fault it recovers; a repeat is kept once', () => {
    let cur = applySwitchEvent([], fault());
    cur = applySwitchEvent(cur, fault({ alarmRaisedTime: 5 }));
    expect(cur).toHaveLength(1);
    cur = applySwitchEvent(cur, fault({ switchPortId: 8 }));
    expect(cur).toHaveLength(2);
    cur = applySwitchEvent(cur, fault({ assertion: 0, severity: 0 }));
    expect(cur.map((f) => f.switchPortId)).toEqual([8]);
  });

  test('L.9 a query answer drops recoveries', () => {
    expect(switchFaultsOfQuery([fault(), fault({ assertion: 0, switchPortId: 9 })])).toHaveLength(1);
  });

  test('L.9 the value: registered faults only, the top level, its node status and the time map', () => {
    const info = switchInfoOf({
      faults: [
        fault(),
        fault({ eventType: 0x00f103b0, subType: 155907, peerPortDevice: 0xffff }),
        fault({ subType: 1 }),
      ],
      levelOf: table({ '[0x00f1fef5,155913,cpu,na]': 'NotHandle', '[0x00f103b0,155907,na,na]': 'Separate' }),
      nowSec: 1744182144,
    });
    expect(info.level).toBe('Separate');
    expect(info.nodeStatus).toBe('UnHealthy');
    expect(info.unregistered).toEqual(['[0x00f1fef5,1,cpu,na]']);
    const v = JSON.parse(info.text) as {
      FaultCode: string[];
      FaultLevel: string;
      UpdateTime: number;
      NodeStatus: string;
      FaultTimeAndLevelMap: Record<string, { fault_time: number; fault_level: string }>;
    };
    expect(Object.keys(v)).toEqual(['FaultCode', 'FaultLevel', 'UpdateTime', 'NodeStatus', 'FaultTimeAndLevelMap']);
    expect(v.FaultCode).toHaveLength(2);
    expect(Object.keys(JSON.parse(v.FaultCode[0]!) as object)).toEqual([
      'EventType',
      'AssembledFaultCode',
      'PeerPortDevice',
      'PeerPortId',
      'SwitchChipId',
      'SwitchPortId',
      'Severity',
      'Assertion',
      'AlarmRaisedTime',
    ]);
    expect(v.UpdateTime).toBe(1744182144);
    expect(v.FaultTimeAndLevelMap['[0x00f1fef5,155913,cpu,na]_1_7']).toEqual({
      fault_time: 1744167455784,
      fault_level: 'NotHandle',
    });
  });

  test.each([
    ['NotHandle', 'Healthy'],
    ['SubHealthFault', 'SubHealthy'],
    ['RestartRequest', 'UnHealthy'],
    ['PreSeparate', 'PreSeparate'],
    ['Separate', 'UnHealthy'],
  ] as const)('L.9 node status of a %s fault is %s', (level, status) => {
    const info = switchInfoOf({ faults: [fault()], levelOf: () => level, nowSec: 1 });
    expect(info.nodeStatus).toBe(status);
    expect(JSON.parse(info.text)).toMatchObject({ FaultLevel: level, NodeStatus: status });
  });

  test('L.9 no fault: empty lists, FaultLevel "" and Healthy', () => {
    expect(switchInfoOf({ faults: [], levelOf: () => 'Separate', nowSec: 9 }).text).toBe(
      '{"FaultCode":[],"FaultLevel":"","UpdateTime":9,"NodeStatus":"Healthy","FaultTimeAndLevelMap":{}}',
    );
  });

  test('L.9 faults on 16 distinct L2-facing ports of one switch chip force Separate', () => {
    const l2 = (port: number, chip = 0): SwitchFault =>
      fault({ eventType: 0x08520003, subType: 0xffffffff, peerPortDevice: 2, switchChipId: chip, switchPortId: port });
    const levelOf = table({ '[0x08520003,na,L2,na]': 'NotHandle' });
    const fifteen = Array.from({ length: 15 }, (_, i) => l2(i));
    expect(l2PlaneDown(fifteen)).toBe(false);
    expect(switchInfoOf({ faults: fifteen, levelOf, nowSec: 1 }).level).toBe('NotHandle');
    // 15 on chip 0 and one on chip 1: still no chip with 16
    expect(l2PlaneDown([...fifteen, l2(15, 1)])).toBe(false);
    const sixteen = [...fifteen, l2(15)];
    const info = switchInfoOf({ faults: sixteen, levelOf, nowSec: 1 });
    expect(info.l2PlaneDown).toBe(true);
    expect(info.level).toBe('Separate');
    expect(info.nodeStatus).toBe('UnHealthy');
  });

  test('hot-reset §3.10 during an online reset: NodeStatus Healthy and every code NotHandle', () => {
    const info = switchInfoOf({ faults: [fault()], levelOf: () => 'Separate', nowSec: 1, resetting: true });
    expect(info.nodeStatus).toBe('Healthy');
    expect(JSON.parse(info.text)).toMatchObject({ FaultLevel: 'NotHandle' });
  });
});

describe('spec L.9 the node switch fault state (a store input)', () => {
  test('L.9 an unstamped fault keeps its first time across queries; a change publishes one snapshot', async () => {
    const { store, clock } = testStore();
    const causes: string[] = [];
    store.onChange((_, c) => causes.push(c.cause));
    const t0 = clock.now();
    store.replaceSwitchFaults([fault({ alarmRaisedTime: 0 })]);
    await clock.advance(300_000);
    store.replaceSwitchFaults([fault({ alarmRaisedTime: 0 })]);
    expect([store.snapshot().switch.faults.map((f) => f.alarmRaisedTime), causes]).toEqual([[t0], ['switch']]);
  });

  test('L.9 a recovery event removes the fault and publishes', () => {
    const { store } = testStore();
    store.applySwitchEvents([fault()]);
    store.applySwitchEvents([fault({ assertion: 0, alarmRaisedTime: 0 })]);
    expect([store.snapshot().switch.faults, store.snapshot().seq]).toEqual([[], 2]);
  });

  test('F.8 a new level table is a store input: the snapshot carries it', () => {
    const { store } = testStore();
    const levels = new Map<string, SwitchFaultLevel>([['[0x00f1fef5,na,L2,na]', 'Separate']]);
    store.setSwitchLevels(levels);
    expect(store.snapshot().switch.levels).toBe(levels);
  });
});
