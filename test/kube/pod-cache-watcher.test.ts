import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { PREDICATE_TIME_USED } from '../../src/core/pods.js';
import { PodCacheWatcher } from '../../src/kube/pod-cache-watcher.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { until } from './harness.js';

let api: KubeApiStandIn;
let core: k8s.CoreV1Api;
let cache: PodCacheWatcher;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  cache = new PodCacheWatcher({ api: core, watch: api.kubeConfig(), nodeName: 'node-a' });
  await cache.start();
});

afterEach(async () => {
  cache.stop();
  await api.stop();
});

async function pod(name: string, node: string, devices: string, phase = 'Running'): Promise<void> {
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, annotations: { 'huawei.com/Ascend910': devices, 'predicate-time': '123' } },
      spec: {
        nodeName: node,
        containers: [{ name: 'c', image: 'x', resources: { limits: { 'huawei.com/Ascend910': '2' } } }],
      },
      status: { phase },
    },
  });
}

describe('I.6 pod cache by watch with a spec.nodeName field selector', () => {
  test('I.6 only pods of this node are cached', async () => {
    await pod('a', 'node-a', 'Ascend910-0,Ascend910-1');
    await pod('b', 'node-b', 'Ascend910-2');
    await until(() => cache.pods().length === 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(cache.pods().map((p) => [p.name, p.containerLimits])).toEqual([['a', [{ 'huawei.com/Ascend910': 2 }]]]);
  });

  test('I.6 a deleted pod leaves the cache', async () => {
    await pod('a', 'node-a', 'Ascend910-0');
    await until(() => cache.pods().length === 1);
    await core.deleteNamespacedPod({ name: 'a', namespace: 'default' });
    await until(() => cache.pods().length === 0);
    expect(cache.pods()).toEqual([]);
  });

  test('I.4/D.7 devices listed by active pods are in use; a finished pod frees them', async () => {
    await pod('a', 'node-a', 'Ascend910-0,Ascend910-1');
    await pod('done', 'node-a', 'Ascend910-5', 'Succeeded');
    await until(() => cache.pods().length === 2);
    expect([...cache.devicesInUse('Ascend910')].sort()).toEqual(['Ascend910-0', 'Ascend910-1']);
  });

  test('C.3 markAllocated patches predicate-time on the API server and in the cache', async () => {
    await pod('a', 'node-a', 'Ascend910-0');
    await until(() => cache.pods().length === 1);
    await cache.markAllocated(cache.pods()[0]!);
    const live = await core.readNamespacedPod({ name: 'a', namespace: 'default' });
    expect([live.metadata?.annotations?.['predicate-time'], cache.pods()[0]!.annotations['predicate-time']]).toEqual([
      PREDICATE_TIME_USED,
      PREDICATE_TIME_USED,
    ]);
  });

  test('I.6 the cache follows pods created after the API server was unavailable', async () => {
    api.setAvailable(false);
    await new Promise((r) => setTimeout(r, 50));
    api.setAvailable(true);
    await pod('late', 'node-a', 'Ascend910-3');
    await until(() => cache.pods().some((p) => p.name === 'late'));
    expect(cache.pods().map((p) => p.name)).toEqual(['late']);
  });
});
