/** Pod-resources v1 client (spec I.5) against the simulator's pod-resources server. */
import { afterEach, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import os from 'node:os';
import path from 'node:path';
import { PodResourcesClient } from '../../src/kubelet/podresources-client.js';
import { startHarness, type Harness } from './harness.js';

const R = 'huawei.com/Ascend910';
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('I.5 pod-resources client', () => {
  test('I.5 List reports the devices each pod holds', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    await h.sim.allocate(R, [['Ascend910-0', 'Ascend910-1']], { namespace: 'ns', name: 'train-0' });
    await h.sim.allocate(R, [['Ascend910-5']], { namespace: 'ns', name: 'infer-0', containers: ['main'] });
    const client = new PodResourcesClient(h.podResourcesSocket);
    const list = await client.list();
    expect(list.podResources.map((p) => p.name).sort()).toEqual(['infer-0', 'train-0']);
    expect(await client.devicesInUse(new Set([R]))).toEqual([
      { namespace: 'ns', name: 'train-0', resourceName: R, deviceIds: ['Ascend910-0', 'Ascend910-1'] },
      { namespace: 'ns', name: 'infer-0', resourceName: R, deviceIds: ['Ascend910-5'] },
    ]);
    expect(await client.devicesInUse(new Set(['huawei.com/Ascend310P']))).toEqual([]);
  });

  test('I.5 GetAllocatableResources lists the healthy devices', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    h.source.updateDevice('Ascend910-2', { health: 'Unhealthy' });
    await h.sim.waitForDevices(R, (d) => d[2]!.health === 'Unhealthy', 'chip 2 Unhealthy');
    const res = await new PodResourcesClient(h.podResourcesSocket).getAllocatableResources();
    expect(res.devices.flatMap((d) => d.deviceIds)).toEqual([0, 1, 3, 4, 5, 6, 7].map((i) => `Ascend910-${i}`));
  });

  test('A.4 a call to an absent socket fails within the timeout', async () => {
    const client = new PodResourcesClient(path.join(os.tmpdir(), `kp-absent-${process.pid}.sock`), { timeoutMs: 200 });
    const err = (await client.list().catch((e: unknown) => e)) as ServiceError;
    expect([status.UNAVAILABLE, status.DEADLINE_EXCEEDED]).toContain(err.code);
  });
});
