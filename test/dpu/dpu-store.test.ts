/**
 * DPU health entering through the state store and leaving through the device-info projection (docs/super-node.md
 * "DPU faults": `<resource>-DPUUnhealthy` lists the NPUs whose DPU health is Unhealthy; the chips stay Healthy).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import type { DpuState } from '../../src/dpu/monitor.js';
import { FaultEngine } from '../../src/faults/index.js';
import { buildDeviceList } from '../../src/kube/device-info.js';
import { deviceInfoViewOf } from '../../src/kube/device-info-view.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from '../health/fake-clock.js';

let store: NodeStateStore | undefined;
afterEach(() => {
  store?.stop();
  store = undefined;
});

function setup(): NodeStateStore {
  const chips = [0, 1, 4, 5].map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  store = new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips, hyperPlane: true }),
    chips,
    node: { chipKind: 'Ascend910A5', boardId: 0x60 },
    clock: new FakeClock(),
    listWatchPeriodMs: 5000,
  });
  store.start();
  return store;
}

function dpuState(health: [number, DpuState['health'] extends ReadonlyMap<number, infer H> ? H : never][]): DpuState {
  return {
    busType: 'ub',
    dpus: [
      { name: 'dpu1', operstate: 'down', deviceId: '0xa222', vendorId: '0x19e5' },
      { name: 'dpu9', operstate: 'down', deviceId: '0xa222', vendorId: '0x19e5' },
    ],
    npuToDpus: new Map([[0, ['dpu1', 'dpu9']]]),
    health: new Map(health),
  };
}

const view = (s: NodeStateStore, withDpu = true) =>
  deviceInfoViewOf(
    s.snapshot().chips,
    {
      runMode: 'Ascend910',
      resourceName: 'huawei.com/npu',
      superPodId: -2,
      serverIndex: -2,
      ...(withDpu ? { dpuHealth: () => s.snapshot().dpu?.health } : {}),
    },
    0,
  );

describe('DPU state through the store', () => {
  test('setDpuState publishes a snapshot carrying the DPU state', () => {
    const s = setup();
    const seq = s.snapshot().seq;
    s.setDpuState(dpuState([[0, 'Unhealthy']]));
    expect(s.snapshot().seq).toBe(seq + 1);
    expect(s.snapshot().dpu?.health.get(0)).toBe('Unhealthy');
  });

  test('without a DPU input the snapshot has no DPU state', () => {
    expect(setup().snapshot().dpu).toBeUndefined();
  });
});

describe('DPU health in the device-info DeviceList', () => {
  test('an NPU whose DPUs are all down is listed in huawei.com/npu-DPUUnhealthy; its chip stays Healthy', () => {
    const s = setup();
    s.setDpuState(
      dpuState([
        [0, 'Unhealthy'],
        [1, 'DpuSubHealthy'],
        [4, 'Healthy'],
      ]),
    );
    const v = view(s);
    const list = buildDeviceList(v);
    // the chip's device name as the store names it (A5 naming is the serving layer's)
    expect(list['huawei.com/npu-DPUUnhealthy']).toBe(s.chip(0)!.name);
    expect(list['huawei.com/npu-Unhealthy']).toBe('');
  });

  test('the NPU of a device name is its number modulo 8 (<type>-12 is NPU 4)', () => {
    const chips = [12].map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
    store = new NodeStateStore({
      engine: new FaultEngine(shippedPolicy(), { chips }),
      chips,
      node: { chipKind: 'Ascend910A5', boardId: 0x60 },
      clock: new FakeClock(),
      listWatchPeriodMs: 5000,
    });
    store.start();
    store.setDpuState(dpuState([[4, 'Unhealthy']]));
    expect(store.chip(12)!.name).toMatch(/-12$/);
    expect(buildDeviceList(view(store))['huawei.com/npu-DPUUnhealthy']).toBe(store.chip(12)!.name);
  });

  test('while the feature is off there is no -DPUUnhealthy key', () => {
    const s = setup();
    expect(Object.keys(buildDeviceList(view(s, false)))).not.toContain('huawei.com/npu-DPUUnhealthy');
    expect(Object.keys(buildDeviceList(view(s, true)))).not.toContain('huawei.com/npu-DPUUnhealthy');
  });
});
