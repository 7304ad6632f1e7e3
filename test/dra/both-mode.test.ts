/**
 * Issue [DRA] item 1, `-deviceApi=both` (docs/dra.md "never the same chip twice"): the device plugin's half — a chip
 * a prepared DRA claim holds is advertised Unhealthy to kubelet with the claim named, and comes back when the claim
 * is unprepared — and {@link DevicePluginHolds}, kubelet's pod-resources answer read as the chips the device plugin
 * has handed out (what the slices withdraw and NodePrepare refuses).
 */
import { describe, expect, test } from '@jest/globals';
import { DevicePluginHolds } from '../../src/dra/plugin-holds.js';
import type { PodDevices } from '../../src/core/pods.js';
import { phyIdOfName } from '../../src/core/device-names.js';
import { StoreDeviceSource, toDeviceSnapshot } from '../../src/kubelet/store-device-source.js';
import type { DraClaimHold } from '../../src/state/store.js';
import { testStore } from '../state/helpers.js';

const hold = (name: string, logicId: number, adminAccess = false): DraClaimHold => ({
  uid: `uid-${name}`,
  namespace: 'default',
  name,
  devices: [{ device: `ascend910-${logicId}`, logicId, ...(adminAccess ? { adminAccess: true } : {}) }],
});

const view = (s: ReturnType<typeof toDeviceSnapshot>) =>
  (s.deviceTypes['Ascend910'] ?? []).map((d) => [d.id, d.health, d.heldBy]);

describe('issue [DRA] item 1 -deviceApi=both: the device plugin does not offer a chip a DRA claim holds', () => {
  test('a prepared claim’s chip is Unhealthy to kubelet, naming the claim; admin access holds nothing', () => {
    const { store } = testStore();
    store.setDraClaims([hold('train', 1), hold('watch', 2, true)]);
    expect(view(toDeviceSnapshot(store.snapshot(), { draHolds: true }))).toEqual([
      ['Ascend910-0', 'Healthy', undefined],
      ['Ascend910-1', 'Unhealthy', 'DRA claim default/train'],
      ['Ascend910-2', 'Healthy', undefined],
      ['Ascend910-3', 'Healthy', undefined],
    ]);
  });

  test('without -deviceApi=both the claims do not change what the device plugin offers', () => {
    const { store } = testStore();
    store.setDraClaims([hold('train', 1)]);
    expect(view(toDeviceSnapshot(store.snapshot())).every(([, h, by]) => h === 'Healthy' && by === undefined)).toBe(
      true,
    );
  });

  test('the device source follows the claims: held at prepare, offered again at unprepare', () => {
    const { store } = testStore();
    const source = new StoreDeviceSource(store, { draHolds: true });
    const seen: string[] = [];
    source.onChange((s) => seen.push(view(s)[3]![1] as string));
    store.setDraClaims([hold('train', 3)]);
    store.setDraClaims([]);
    source.close();
    expect(seen).toEqual(['Unhealthy', 'Healthy']);
  });
});

describe('issue [DRA] item 1 -deviceApi=both: the chips held through the device plugin', () => {
  const answer = (ids: string[]): PodDevices[] => [
    { namespace: 'default', name: 'p', resourceName: 'huawei.com/Ascend910', deviceIds: ids },
  ];

  test('kubelet’s device ids become phy ids; ids that are not chips of this node are left out', async () => {
    const h = new DevicePluginHolds({
      query: () => Promise.resolve(answer(['Ascend910-3', 'Ascend910-5', 'bogus'])),
      phyOf: (id) => phyIdOfName(id),
    });
    expect([...(await h.refresh())].sort()).toEqual([3, 5]);
    expect([...h.current()].sort()).toEqual([3, 5]);
  });

  test('kubelet not answering keeps the last set (its allocations are what they were); said once per outage', async () => {
    let fail = false;
    const warned: string[] = [];
    const h = new DevicePluginHolds({
      query: () => (fail ? Promise.reject(new Error('connection refused')) : Promise.resolve(answer(['Ascend910-1']))),
      phyOf: (id) => phyIdOfName(id),
      logger: { ...silent(), warn: (_o: unknown, m: string) => void warned.push(m) } as never,
    });
    await h.refresh();
    fail = true;
    await h.refresh();
    await h.refresh();
    expect([[...h.current()], warned.length]).toEqual([[1], 1]);
  });

  test('onChange only when the set changed; a call during a query is answered by a query after it', async () => {
    let ids = ['Ascend910-0'];
    let release: () => void = () => undefined;
    const changes: number[][] = [];
    const h = new DevicePluginHolds({
      query: () =>
        new Promise((resolve) => {
          const snapshot = ids;
          release = () => resolve(answer(snapshot));
        }),
      phyOf: (id) => phyIdOfName(id),
      onChange: (s) => changes.push([...s]),
    });
    const first = h.refresh();
    ids = ['Ascend910-0', 'Ascend910-6']; // an Allocate while the first query runs
    const second = h.refresh();
    release();
    await first;
    await new Promise((r) => setImmediate(r));
    release();
    expect([...(await second)].sort()).toEqual([0, 6]);
    const third = h.refresh(); // the same answer again: no change reported
    await new Promise((r) => setImmediate(r));
    release();
    await third;
    expect([changes, h.queries]).toEqual([[[0], [0, 6]], 3]);
  });
});

function silent() {
  const n = (): void => undefined;
  return { debug: n, info: n, warn: n, error: n, child: () => silent() };
}
