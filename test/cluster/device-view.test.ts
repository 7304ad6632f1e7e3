import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import {
  addFaultAndFix,
  cloneView,
  levelRank,
  listHas,
  listWithout,
  mostSevere,
  type DeviceFault,
  type NodeDeviceView,
} from '../../src/cluster/device-view.js';
import { faultObject } from './helpers.js';

function view(): NodeDeviceView {
  return {
    node: 'node-1',
    deviceType: 'Ascend910',
    deviceList: { 'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1', 'huawei.com/Ascend910-Unhealthy': '' },
    updateTime: 1,
    superPodId: -2,
    serverIndex: -2,
    rackId: -2,
    faults: new Map(),
  };
}
const fault = (level: string, type = 'CardUnhealthy'): DeviceFault => ({
  code: 'c',
  level,
  faultTime: 1,
  receivedTime: 1,
  object: faultObject('Ascend910-1', 'c', level, 1, type),
});

describe('0.3 add fault and fix', () => {
  test('0.3 a normal-level fault does not change the lists', () => {
    const v = view();
    addFaultAndFix(v, 'Ascend910-1', fault('NotHandleFault'));
    expect(v.deviceList['huawei.com/Ascend910']).toBe('Ascend910-0,Ascend910-1');
  });

  test('0.3 a duplicate is not re-added', () => {
    const v = view();
    addFaultAndFix(v, 'Ascend910-1', fault('RestartNPU'));
    expect(addFaultAndFix(v, 'Ascend910-1', fault('RestartNPU'))).toBe(false);
  });

  test('0.3 a severe card fault moves the device to -Unhealthy', () => {
    const v = view();
    addFaultAndFix(v, 'Ascend910-1', fault('SeparateNPU'));
    expect([v.deviceList['huawei.com/Ascend910'], v.deviceList['huawei.com/Ascend910-Unhealthy']]).toEqual([
      'Ascend910-0',
      'Ascend910-1',
    ]);
  });

  test('0.3 a network fault moves the device to -NetworkUnhealthy', () => {
    const v = view();
    addFaultAndFix(v, 'Ascend910-1', fault('SeparateNPU', 'CardNetworkUnhealthy'));
    expect(v.deviceList['huawei.com/Ascend910-NetworkUnhealthy']).toBe('Ascend910-1');
  });

  test('0.3 severity order puts ManuallySeparateNPU first', () => {
    expect(mostSevere(['RestartNPU', 'ManuallySeparateNPU', 'SeparateNPU'])).toBe('ManuallySeparateNPU');
  });

  test('0.3 NormalNetwork ranks as NormalNPU', () => {
    expect(levelRank('NormalNetwork')).toBe(levelRank('NormalNPU'));
  });

  test('0.3 "add fault and fix" list edits searched in place equal the built strings and the split, filter and join, for any list', () => {
    const part = fc.constantFrom('', 'a', 'b', 'ab', 'a,b', ',', 'Ascend910-1', 'Ascend910-10');
    const list = fc.array(part, { maxLength: 6 }).map((p) => p.join(','));
    fc.assert(
      fc.property(list, part, (l, item) => {
        expect(listHas(l, item)).toBe(`,${l},`.includes(`,${item},`));
        expect(listWithout(l, item)).toBe(
          l
            .split(',')
            .filter((d) => d !== '' && d !== item)
            .join(','),
        );
      }),
      { numRuns: 3000 },
    );
  });

  test('0.2 cloneView copies every field of a fault, a time-map key "__proto__" as an own key, and shares no object', () => {
    const v = view();
    const f = fault('RestartNPU');
    f.receivedTime = 5;
    f.object.fault_time_and_level_map = JSON.parse(
      '{"__proto__":{"fault_time":3,"fault_level":"L"},"B":{"fault_time":-1,"fault_level":"M"}}',
    );
    v.faults.set('Ascend910-1', [f]);
    const c = cloneView(v).faults.get('Ascend910-1')![0]!;
    expect(c).toEqual(f);
    expect(Object.keys(c.object.fault_time_and_level_map)).toEqual(['__proto__', 'B']);
    expect(Object.getPrototypeOf(c.object.fault_time_and_level_map)).toBe(Object.prototype);
    expect([
      c === f,
      c.object === f.object,
      c.object.fault_time_and_level_map.B === f.object.fault_time_and_level_map.B,
    ]).toEqual([false, false, false]);
  });

  test('0.2 cloneView is a deep copy', () => {
    const v = view();
    v.faults.set('Ascend910-1', [fault('RestartNPU')]);
    const c = cloneView(v);
    c.faults.get('Ascend910-1')![0]!.level = 'x';
    c.deviceList['huawei.com/Ascend910'] = '';
    expect([v.faults.get('Ascend910-1')![0]!.level, v.deviceList['huawei.com/Ascend910']]).toEqual([
      'RestartNPU',
      'Ascend910-0,Ascend910-1',
    ]);
  });
});
