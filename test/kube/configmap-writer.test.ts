import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { configMapWriter, type ConfigMapBody } from '../../src/kube/configmap-writer.js';
import { buildDeviceInfo, deviceInfoConfigMap, verifyDeviceInfoCfg } from '../../src/kube/device-info.js';
import { ObjectWriteQueue } from '../../src/kube/write-queue.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';

let api: KubeApiStandIn;
let core: k8s.CoreV1Api;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
});

afterEach(async () => {
  await api.stop();
});

function content(updateTimeSec: number, podUsed: boolean): ConfigMapBody {
  const c = buildDeviceInfo({
    runMode: 'Ascend910',
    resourceName: 'huawei.com/Ascend910',
    superPodId: -2,
    serverIndex: -2,
    updateTimeSec,
    chips: [
      {
        logicId: 0,
        name: 'Ascend910-0',
        health: 'Healthy',
        networkHealth: 'Healthy',
        podUsed,
        chipFaults: { level: 'NormalNPU', codes: [] },
        networkFaults: { level: 'NormalNPU', codes: [] },
        reasons: [],
        manuallySeparated: false,
      },
    ],
  });
  return deviceInfoConfigMap('node-a', c);
}

const NAME = 'mindx-dl-deviceinfo-node-a';

describe('H.1 device-info ConfigMap written through the queue to the stand-in', () => {
  test('H.1 a missing ConfigMap is created by the first write, with its label', async () => {
    const q = new ObjectWriteQueue<ConfigMapBody>({ writer: configMapWriter(core) });
    q.submit(content(1, false));
    await q.whenIdle();
    const cm = await core.readNamespacedConfigMap({ name: NAME, namespace: 'kube-system' });
    expect([cm.metadata?.labels, q.stats.creates]).toEqual([{ 'mx-consumer-cim': 'true' }, 1]);
  });

  test('H.1 the written DeviceInfoCfg verifies after the round trip through the API server', async () => {
    const q = new ObjectWriteQueue<ConfigMapBody>({ writer: configMapWriter(core) });
    q.submit(content(1, false));
    await q.whenIdle();
    const cm = await core.readNamespacedConfigMap({ name: NAME, namespace: 'kube-system' });
    expect(verifyDeviceInfoCfg(cm.data!.DeviceInfoCfg!)).toBe(true);
  });

  test('H.1 an update replaces keys and labels an operator added', async () => {
    await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: NAME, labels: { extra: 'x' } }, data: { Other: 'y' } },
    });
    const q = new ObjectWriteQueue<ConfigMapBody>({ writer: configMapWriter(core) });
    q.submit(content(1, false));
    await q.whenIdle();
    const cm = await core.readNamespacedConfigMap({ name: NAME, namespace: 'kube-system' });
    expect([cm.metadata?.labels, Object.keys(cm.data!).includes('Other')]).toEqual([
      { 'mx-consumer-cim': 'true' },
      false,
    ]);
  });

  test('states submitted while the API server answers 503 end as one write of the last state', async () => {
    api.setAvailable(false);
    const q = new ObjectWriteQueue<ConfigMapBody>({
      writer: configMapWriter(core),
      backoff: { initialMs: 5, maxMs: 20 },
    });
    for (let t = 1; t <= 10; t++) q.submit(content(t, t % 2 === 0));
    while (q.stats.failures < 3) await new Promise((r) => setTimeout(r, 5));
    api.setAvailable(true);
    await q.whenIdle();
    const cm = await core.readNamespacedConfigMap({ name: NAME, namespace: 'kube-system' });
    expect([
      JSON.parse(cm.data!.DeviceInfoCfg!).DeviceInfo.UpdateTime,
      api.writeCount({ resource: 'configmaps', name: NAME }),
    ]).toEqual([10, 1]);
  });
});
