import { describe, expect, test } from '@jest/globals';
import {
  DeviceInfoIntake,
  deviceTypeOf,
  parseDeviceInfoConfigMap,
  splitFaults,
} from '../../src/cluster/device-info-intake.js';
import { deviceInfoCm, faultObject } from './helpers.js';

describe('0.1 device-info intake', () => {
  test.each([
    [{ 'huawei.com/npu': '' }, 'npu'],
    [{ 'huawei.com/Ascend910-Fault': '' }, 'Ascend910'],
    [{ 'huawei.com/Ascend310P': '' }, 'Ascend310P'],
    [{ 'huawei.com/Ascend310': '' }, 'Ascend310'],
    [{ other: '' }, 'npu'],
  ])('0.1 device type of %j is %s', (list, t) => {
    expect(deviceTypeOf(list)).toBe(t);
  });

  test('0.1 "0x1,0x2" splits into two faults with per-code levels', () => {
    const o = {
      ...faultObject('Ascend910-1', '0x1, 0x2', 'RestartNPU'),
      fault_time_and_level_map: { '0x1': { fault_time: 5, fault_level: 'SeparateNPU' } },
    };
    const f = splitFaults(JSON.stringify([o])).get('Ascend910-1')!;
    expect(f.map((x) => [x.code, x.level])).toEqual([
      ['0x1', 'SeparateNPU'],
      ['0x2', 'RestartNPU'],
    ]);
  });

  test('0.1 an empty code at ManuallySeparateNPU becomes the pseudo-code with time -1', () => {
    const f = splitFaults(JSON.stringify([faultObject('Ascend910-1', '', 'ManuallySeparateNPU')])).get('Ascend910-1')!;
    expect([f[0]?.code, f[0]?.faultTime]).toEqual(['ManuallySeparateNPU', -1]);
  });

  test('0.1 a valid ConfigMap parses with the node name', () => {
    const r = parseDeviceInfoConfigMap(deviceInfoCm('node-1', []));
    expect(r.ok && r.view.node).toBe('node-1');
  });

  test('0.1 a tampered ConfigMap fails the CheckCode check', () => {
    const r = parseDeviceInfoConfigMap(deviceInfoCm('node-1', [], { tamper: true }));
    expect(r.ok ? 'ok' : r.reason).toBe('check-code');
  });

  test('0.1 a ConfigMap outside kube-system is not taken', () => {
    const cm = deviceInfoCm('node-1', []);
    cm.metadata.namespace = 'default';
    expect(parseDeviceInfoConfigMap(cm).ok).toBe(false);
  });

  test('0.1 an update whose old object is invalid is ignored even when the new one is valid', () => {
    const i = new DeviceInfoIntake();
    const r = i.offer({
      type: 'update',
      old: deviceInfoCm('node-1', [], { tamper: true }),
      cm: deviceInfoCm('node-1', []),
    });
    expect([r.accepted, i.hasQueued]).toEqual([false, false]);
  });

  test('0.1 a tampered new object leaves the previous version in place', () => {
    const i = new DeviceInfoIntake();
    i.offer({ type: 'add', cm: deviceInfoCm('node-1', [faultObject('Ascend910-1', 'A', 'RestartNPU')]) });
    i.applyQueued(1);
    i.offer({ type: 'update', old: deviceInfoCm('node-1', []), cm: deviceInfoCm('node-1', [], { tamper: true }) });
    i.applyQueued(2);
    expect(i.views.get('node-1')?.faults.size).toBe(1);
  });

  test('0.1 a code still present keeps its receive time; a new code is stamped now', () => {
    const i = new DeviceInfoIntake();
    i.offer({ type: 'add', cm: deviceInfoCm('node-1', [faultObject('Ascend910-1', 'A', 'RestartNPU')]) });
    i.applyQueued(100);
    const both = { ...faultObject('Ascend910-1', 'A,B', 'RestartNPU') };
    i.offer({ type: 'update', old: undefined, cm: deviceInfoCm('node-1', [both]) });
    i.applyQueued(200);
    expect(
      i.views
        .get('node-1')
        ?.faults.get('Ascend910-1')
        ?.map((f) => f.receivedTime),
    ).toEqual([100, 200]);
  });

  test('0.1 a code that disappears and reappears gets a new receive time', () => {
    const i = new DeviceInfoIntake();
    const withA = deviceInfoCm('node-1', [faultObject('Ascend910-1', 'A', 'RestartNPU')]);
    i.offer({ type: 'add', cm: withA });
    i.applyQueued(100);
    i.offer({ type: 'update', old: withA, cm: deviceInfoCm('node-1', []) });
    i.applyQueued(150);
    i.offer({ type: 'update', old: undefined, cm: withA });
    i.applyQueued(200);
    expect(i.views.get('node-1')?.faults.get('Ascend910-1')?.[0]?.receivedTime).toBe(200);
  });

  test('0.1 a delete removes the node', () => {
    const i = new DeviceInfoIntake();
    i.offer({ type: 'add', cm: deviceInfoCm('node-1', []) });
    i.applyQueued(1);
    i.offer({ type: 'delete', cm: deviceInfoCm('node-1', []) });
    i.applyQueued(2);
    expect(i.views.size).toBe(0);
  });
});
