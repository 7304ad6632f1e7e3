/**
 * ListAndWatch (spec C.1, C.2): full list on connect, a new full list on every change kubelet can see, the
 * periodic resend, NUMA topology, and a large share-mode list.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { simSnapshot } from '../../src/sim/kubelet-devices.js';
import { startHarness, type Harness } from './harness.js';

const R = 'huawei.com/Ascend910';
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('C.1 ListAndWatch', () => {
  test('C.1 the full list is sent on connect, every device Healthy', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    expect(h.sim.devices(R)).toEqual(
      [...Array(8).keys()].map((i) => ({ ID: `Ascend910-${i}`, health: 'Healthy', topology: null })),
    );
  });

  test('C.1 a chip turning Unhealthy is streamed as a new full list', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    h.source.updateDevice('Ascend910-3', { health: 'Unhealthy', level: 'SeparateNPU' });
    const list = await h.sim.waitForDevices(R, (d) => d.some((x) => x.health === 'Unhealthy'), 'chip 3 Unhealthy');
    expect(list).toHaveLength(8);
    expect(list.filter((d) => d.health === 'Unhealthy').map((d) => d.ID)).toEqual(['Ascend910-3']);
  });

  test('C.1 a chip that recovers goes back to Healthy', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    h.source.updateDevice('Ascend910-5', { health: 'Unhealthy', level: 'RestartNPU' });
    await h.sim.waitForDevices(R, (d) => d[5]!.health === 'Unhealthy', 'chip 5 Unhealthy');
    h.source.updateDevice('Ascend910-5', { health: 'Healthy', level: 'NormalNPU' });
    await h.sim.waitForDevices(R, (d) => d.every((x) => x.health === 'Healthy'), 'all Healthy again');
  });

  test('C.1 a change kubelet cannot see (level only) sends nothing', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    const before = h.sim.updates.length;
    h.source.updateDevice('Ascend910-1', { level: 'SubHealthFault' });
    h.source.updateDevice('Ascend910-2', { health: 'Unhealthy' });
    await h.sim.waitForDevices(R, (d) => d[2]!.health === 'Unhealthy', 'chip 2 Unhealthy');
    expect(h.sim.updates.length).toBe(before + 1);
  });

  test('C.1 periodic resend: the unchanged list is sent again once the last notify is 1 h old', async () => {
    let now = 0;
    h = await startHarness({ manager: { monotonic: () => now } });
    await h.sim.waitForRegistration(R);
    const server = h.manager.servers[0]!;
    const before = h.sim.updates.length;
    now += 3_599_999;
    server.periodicCheck();
    now += 1;
    server.periodicCheck();
    await h.sim.waitFor(() => h!.sim.updates.length > before, 'a resend');
    expect(h.sim.updates.length).toBe(before + 1);
    expect(h.sim.updates.at(-1)!.devices).toHaveLength(8);
  });
});

describe('C.2 NUMA topology', () => {
  test('C.2 a known NUMA node is sent as topology, an unknown one is omitted', async () => {
    h = await startHarness({
      snapshot: simSnapshot({ kind: 'Ascend910B', chips: 8, numaOf: (i) => (i < 4 ? 0 : i < 6 ? 1 : undefined) }),
    });
    await h.sim.waitForRegistration(R);
    const list = h.sim.devices(R)!;
    expect(list[0]!.topology).toEqual({ nodes: [{ ID: '0' }] });
    expect(list[5]!.topology).toEqual({ nodes: [{ ID: '1' }] });
    expect(list[7]!.topology).toBeNull();
  });
});

describe('C.1 large lists', () => {
  test('C.1 share mode: 2,000 IDs are listed and a health change reaches kubelet', async () => {
    const snapshot = simSnapshot({ kind: 'Ascend310P', chips: 20, shareDevCount: 100 });
    h = await startHarness({ snapshot });
    const R310 = 'huawei.com/Ascend310P';
    await h.sim.waitForRegistration(R310);
    const list = h.sim.devices(R310)!;
    expect(list).toHaveLength(2000);
    expect(new Set(list.map((d) => d.ID)).size).toBe(2000);
    h.source.updateDevice('Ascend310P-19-99', { health: 'Unhealthy' });
    await h.sim.waitForDevices(
      R310,
      (d) => d.some((x) => x.ID === 'Ascend310P-19-99' && x.health === 'Unhealthy'),
      'share unhealthy',
    );
  });
});
