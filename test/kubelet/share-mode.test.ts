/**
 * Issue 17 item 1: 310P/310B share mode (`-shareDevCount` N in 2..100). Spec B.3 (each chip advertised N times as
 * `<name>-<phy>-<i>`), C.1 (every copy carries its chip's health), C.3/C.4 (Allocate maps any copy back to its
 * chip), H.3 (device-info lists every copy), I.3 (rank table by chip).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import { effectiveShareCount, phyIdOfName, shareName } from '../../src/core/device-names.js';
import { FaultEngine } from '../../src/faults/index.js';
import { buildDeviceList, type DeviceInfoView } from '../../src/kube/device-info.js';
import { deviceInfoViewOf } from '../../src/kube/device-info-view.js';
import { rankTableJson } from '../../src/kube/pod-annotator.js';
import type { DeviceSnapshot } from '../../src/kubelet/device-source.js';
import { StoreDeviceSource, toDeviceSnapshot } from '../../src/kubelet/store-device-source.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from '../health/fake-clock.js';
import { startHarness, type Harness } from './harness.js';

const R = 'huawei.com/Ascend310P';
const SEPARATE = 0x80e18402; // SeparateNPU in the shipped faultCode.json

/** A 310P store of `chips` chips (phy = logic = card id). */
function store310p(chips = 2): NodeStateStore {
  const list = Array.from({ length: chips }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  return new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips: list, runMode: 'Ascend310P' }),
    chips: list,
    node: { chipKind: 'Ascend310P', boardId: 0x35, productTypes: ['Atlas 300I Pro'] },
    clock: new FakeClock(),
    listWatchPeriodMs: 5000,
    runMode: 'Ascend310P',
  });
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function refused(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as ServiceError,
  );
  if (!err) throw new Error('expected the call to be refused');
  return err;
}

describe('B.3 share-mode device names', () => {
  test('B.3 copy i of chip phy is <name>-<phy>-<i>, and its phy id parses back in share mode', () => {
    expect(shareName('Ascend310P', 3, 7)).toBe('Ascend310P-3-7');
    expect(phyIdOfName('Ascend310P-3-7', true)).toBe(3);
  });

  test('A.1 upstream ShareDev(): share mode on 310P and 310B only; the flag is one copy on other kinds', () => {
    expect(effectiveShareCount('Ascend310P', 4)).toBe(4);
    expect(effectiveShareCount('Ascend310B', 4)).toBe(4);
    expect(effectiveShareCount('Ascend310', 4)).toBe(1);
    expect(effectiveShareCount('Ascend910B', 4)).toBe(1);
  });

  test('B.3 the store is advertised N times per chip, in chip order', () => {
    const snap = toDeviceSnapshot(store310p(2).snapshot(), { shareCount: 3 });
    expect(snap.deviceTypes.Ascend310P!.map((d) => d.id)).toEqual([
      'Ascend310P-0-0',
      'Ascend310P-0-1',
      'Ascend310P-0-2',
      'Ascend310P-1-0',
      'Ascend310P-1-1',
      'Ascend310P-1-2',
    ]);
    expect(snap.deviceTypes.Ascend310P!.filter((d) => d.phyId === 1)).toHaveLength(3);
  });

  test('B.3 without share mode one device per chip', () => {
    const snap = toDeviceSnapshot(store310p(2).snapshot());
    expect(snap.deviceTypes.Ascend310P!.map((d) => d.id)).toEqual(['Ascend310P-0', 'Ascend310P-1']);
  });
});

describe('C.1 health of the copies follows the chip', () => {
  test('C.1 a fault on chip 1 makes all its copies Unhealthy and leaves chip 0 copies Healthy', () => {
    const store = store310p(2);
    const src = new StoreDeviceSource(store, { shareCount: 4 });
    const seen: DeviceSnapshot[] = [];
    src.onChange((s) => seen.push(s));
    store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    const devices = seen.at(-1)!.deviceTypes.Ascend310P!;
    expect(devices.filter((d) => d.health === 'Unhealthy').map((d) => d.id)).toEqual([
      'Ascend310P-1-0',
      'Ascend310P-1-1',
      'Ascend310P-1-2',
      'Ascend310P-1-3',
    ]);
    expect(devices.filter((d) => d.phyId === 0).every((d) => d.health === 'Healthy')).toBe(true);
    src.close();
  });
});

describe('C.3/C.4 Allocate in share mode', () => {
  async function shareHarness(ascendDocker: boolean): Promise<{ h: Harness; store: NodeStateStore }> {
    const store = store310p(4);
    const source = new StoreDeviceSource(store, { shareCount: 5 });
    h = await startHarness({ snapshot: source.snapshot(), manager: { useAscendDocker: ascendDocker } });
    await h.sim.waitForRegistration(R);
    return { h, store };
  }

  test('C.1 kubelet gets every copy: 4 chips × 5 copies', async () => {
    const { h } = await shareHarness(true);
    const ids = h.sim.devices(R)!.map((d) => d.ID);
    expect(ids).toHaveLength(20);
    expect(ids).toContain('Ascend310P-3-4');
  });

  test('C.4 a copy is its chip: ASCEND_VISIBLE_DEVICES names the phy id', async () => {
    const { h } = await shareHarness(true);
    const c = (await h.sim.allocate(R, [['Ascend310P-2-3']])).containerResponses[0]!;
    expect(c.envs).toEqual({ ASCEND_VISIBLE_DEVICES: '2', ASCEND_RUNTIME_OPTIONS: '' });
  });

  test('C.4 two copies of one chip and one of another: each chip once, in request order', async () => {
    const { h } = await shareHarness(true);
    const c = (await h.sim.allocate(R, [['Ascend310P-3-0', 'Ascend310P-1-4', 'Ascend310P-3-2']]))
      .containerResponses[0]!;
    expect(c.envs.ASCEND_VISIBLE_DEVICES).toBe('3,1');
  });

  test('C.4 native mode mounts /dev/davinci<phy> of the copy chip once', async () => {
    const { h } = await shareHarness(false);
    const c = (await h.sim.allocate(R, [['Ascend310P-0-1', 'Ascend310P-0-2']])).containerResponses[0]!;
    expect(c.devices.map((d) => d.containerPath).filter((p) => p.startsWith('/dev/davinci'))).toEqual([
      '/dev/davinci_manager',
      '/dev/davinci0',
    ]);
  });

  test('C.3 a copy index past N, or a bare chip name, is an unknown device ID', async () => {
    const { h } = await shareHarness(true);
    for (const id of ['Ascend310P-0-5', 'Ascend310P-0']) {
      const err = await refused(h.sim.allocate(R, [[id]]));
      expect(err.code).toBe(status.INVALID_ARGUMENT);
      expect(err.details).toContain(`unknown device ID "${id}"`);
    }
  });

  test('C.3 Allocate reads each new snapshot: a copy allocated while Healthy is refused once its chip faults', async () => {
    const store = store310p(4);
    const source = new StoreDeviceSource(store, { shareCount: 5 });
    h = await startHarness({ snapshot: source.snapshot(), manager: { useAscendDocker: true } });
    await h.sim.waitForRegistration(R);
    await h.sim.allocate(R, [['Ascend310P-2-1']]);
    store.applyEvents([{ logicId: 2, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    h.source.set(source.snapshot());
    const err = await refused(h.sim.allocate(R, [['Ascend310P-2-1']]));
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    source.close();
  });

  test('C.3 a copy of an Unhealthy chip is refused (our deliberate change), naming the copy', async () => {
    const store = store310p(4);
    const source = new StoreDeviceSource(store, { shareCount: 5 });
    store.applyEvents([{ logicId: 2, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    h = await startHarness({ snapshot: source.snapshot(), manager: { useAscendDocker: true } });
    await h.sim.waitForRegistration(R);
    const err = await refused(h.sim.allocate(R, [['Ascend310P-2-1']]));
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.details).toContain('Ascend310P-2-1 is Unhealthy');
    source.close();
  });
});

describe('H.3 device-info in share mode', () => {
  function view(o: { inUse?: string[]; faultOn?: number } = {}): DeviceInfoView {
    const store = store310p(2);
    if (o.faultOn !== undefined) {
      store.applyEvents([{ logicId: o.faultOn, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    }
    return deviceInfoViewOf(
      store.snapshot().chips,
      {
        runMode: 'Ascend310P',
        resourceName: R,
        superPodId: -2,
        serverIndex: -2,
        shareCount: 3,
        namesInUse: () => new Set(o.inUse ?? []),
      },
      0,
    );
  }

  test('H.3 the schedulable list names every copy, sorted as strings', () => {
    expect(buildDeviceList(view())[R]).toBe(
      'Ascend310P-0-0,Ascend310P-0-1,Ascend310P-0-2,Ascend310P-1-0,Ascend310P-1-1,Ascend310P-1-2',
    );
  });

  test('H.3 only the copies a pod holds leave the schedulable list', () => {
    expect(buildDeviceList(view({ inUse: ['Ascend310P-0-1'] }))[R]).toBe(
      'Ascend310P-0-0,Ascend310P-0-2,Ascend310P-1-0,Ascend310P-1-1,Ascend310P-1-2',
    );
  });

  test('H.3 an Unhealthy chip: every copy in -Unhealthy, one fault entry per copy', () => {
    const list = buildDeviceList(view({ faultOn: 1 }));
    expect(list[R]).toBe('Ascend310P-0-0,Ascend310P-0-1,Ascend310P-0-2');
    expect(list[`${R}-Unhealthy`]).toBe('Ascend310P-1-0,Ascend310P-1-1,Ascend310P-1-2');
    const faults = JSON.parse(list[`${R}-Fault`]!) as { npu_name: string; fault_code: string }[];
    expect(faults.map((f) => [f.npu_name, f.fault_code])).toEqual([
      ['Ascend310P-1-0', '80E18402'],
      ['Ascend310P-1-1', '80E18402'],
      ['Ascend310P-1-2', '80E18402'],
    ]);
  });
});

describe('I.3 rank table in share mode (all-Duo 310P)', () => {
  test('I.3 copies are read back to their chip and each chip is listed once', () => {
    const json = rankTableJson({
      podName: 'p',
      podUid: 'u',
      hostIp: '10.0.0.1',
      superPodId: -2,
      serverIndex: -2,
      rackId: 0,
      realNames: ['Ascend310P-1-0', 'Ascend310P-1-3', 'Ascend310P-0-2'],
      chips: new Map(),
      a5: false,
      shareMode: true,
    });
    const devices = (JSON.parse(json) as { devices: { device_id: string }[] }).devices;
    expect(devices.map((d) => d.device_id)).toEqual(['0', '1']);
  });
});
