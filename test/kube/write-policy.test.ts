import { describe, expect, test } from '@jest/globals';
import {
  HEARTBEAT_INTERVAL_MS,
  MIN_WRITE_INTERVAL_MS,
  decideWrite,
  equalIgnoringFaultTime,
  type DeviceInfoSnapshot,
  type WrittenSnapshot,
} from '../../src/kube/write-policy.js';

const FAULT = (time: number, code = '80E18402'): string =>
  `[{"fault_type":"CardUnhealthy","npu_name":"Ascend910-3","fault_code":"${code}","fault_time_and_level_map":{"${code}":{"fault_time":${time},"fault_level":"SeparateNPU"}}}]`;

function snap(faultTime = 1000, extra: Partial<DeviceInfoSnapshot> = {}): DeviceInfoSnapshot {
  return {
    deviceList: { 'huawei.com/Ascend910': 'Ascend910-0', 'huawei.com/Ascend910-Fault': FAULT(faultTime) },
    manuallySeparate: '',
    upgradeReasons: '{}',
    ...extra,
  };
}

const T0 = 1_744_182_144_000;
const written = (s: DeviceInfoSnapshot, at = T0): WrittenSnapshot => ({ ...s, writtenAtMs: at });
const changed = snap(1000, { manuallySeparate: 'Ascend910-3' });

describe('H.4 write timing', () => {
  test('H.4 the first state is written at once', () => {
    expect(decideWrite(undefined, snap(), T0)).toEqual({ action: 'write', why: 'first' });
  });

  test('H.4 a change less than 1 s after the last write waits until 1 s has passed', () => {
    expect(decideWrite(written(snap()), changed, T0 + 999)).toEqual({
      action: 'wait',
      atMs: T0 + MIN_WRITE_INTERVAL_MS,
    });
  });

  test('H.4 a change exactly 1 s after the last write is written', () => {
    expect(decideWrite(written(snap()), changed, T0 + 1000)).toEqual({ action: 'write', why: 'changed' });
  });

  test('H.4 no change before 5 min: nothing is written', () => {
    expect(decideWrite(written(snap()), snap(), T0 + HEARTBEAT_INTERVAL_MS - 1)).toEqual({
      action: 'skip',
      heartbeatAtMs: T0 + HEARTBEAT_INTERVAL_MS,
    });
  });

  test('H.4 no change at exactly 5 min: heartbeat write', () => {
    expect(decideWrite(written(snap()), snap(), T0 + HEARTBEAT_INTERVAL_MS)).toEqual({
      action: 'write',
      why: 'heartbeat',
    });
  });

  test('H.4 a fault-time-only change is ignored', () => {
    expect(decideWrite(written(snap(1000)), snap(2000), T0 + 5000).action).toBe('skip');
  });

  test('H.4 a changed fault code is a change', () => {
    const next = snap(1000);
    const other = {
      ...next,
      deviceList: { ...next.deviceList, 'huawei.com/Ascend910-Fault': FAULT(1000, '80E01801') },
    };
    expect(decideWrite(written(snap()), other, T0 + 5000)).toEqual({ action: 'write', why: 'changed' });
  });

  test('H.4 a changed UpgradeFaultReason is a change', () => {
    expect(decideWrite(written(snap()), snap(1000, { upgradeReasons: '{"Ascend910-5":[]}' }), T0 + 5000).action).toBe(
      'write',
    );
  });

  test('H.4 switch info compares without its UpdateTime', () => {
    const a = snap(1000, { switchInfo: '{"FaultCode":[],"FaultLevel":"","UpdateTime":100,"NodeStatus":"Healthy"}' });
    const b = snap(1000, { switchInfo: '{"FaultCode":[],"FaultLevel":"","UpdateTime":200,"NodeStatus":"Healthy"}' });
    expect(decideWrite(written(a), b, T0 + 5000).action).toBe('skip');
  });

  test('H.4 timing can be shortened for simulate', () => {
    expect(decideWrite(written(snap()), snap(), T0 + 50, { minIntervalMs: 10, heartbeatMs: 50 })).toEqual({
      action: 'write',
      why: 'heartbeat',
    });
  });
});

describe('H.4 equalIgnoringFaultTime', () => {
  test('H.4 a new key is a change', () => {
    expect(equalIgnoringFaultTime({ a: '1' }, { a: '1', b: '' })).toBe(false);
  });

  test('H.4 a missing key is a change even with the same count', () => {
    expect(equalIgnoringFaultTime({ a: '1' }, { b: '1' })).toBe(false);
  });

  test('H.4 only "fault_time":<digits>, is removed (a trailing member is compared)', () => {
    expect(equalIgnoringFaultTime({ a: '{"x":{"fault_time":1}}' }, { a: '{"x":{"fault_time":2}}' })).toBe(false);
  });
});
