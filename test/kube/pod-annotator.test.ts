import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { PodDevices } from '../../src/core/pods.js';
import {
  ANNOTATION_ASCEND_REAL,
  ANNOTATION_KLT_DEV,
  ANNOTATION_RANK_TABLE_910,
  PodAnnotator,
  podsOfDeviceType,
  rankTableJson,
  type PodAnnotatorOptions,
  type RankChip,
} from '../../src/kube/pod-annotator.js';
import { PodCacheWatcher } from '../../src/kube/pod-cache-watcher.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { FakeClock, NODE, until } from './harness.js';

const CHIPS = new Map<number, RankChip>([
  [0, { phyId: 0, ip: '10.0.0.10', superDeviceId: 5 }],
  [1, { phyId: 1, ip: '10.0.0.11' }],
  [2, { phyId: 2 }],
]);

let api: KubeApiStandIn;
let core: k8s.CoreV1Api;
let cache: PodCacheWatcher;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  cache = new PodCacheWatcher({ api: core, watch: api.kubeConfig(), nodeName: NODE });
  await cache.start();
});

afterEach(async () => {
  cache.stop();
  await api.stop();
});

async function pod(name: string, annotations: Record<string, string> = {}): Promise<string> {
  const p = await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, annotations },
      spec: { nodeName: NODE, containers: [{ name: 'c', image: 'x' }] },
      status: { phase: 'Running' },
    },
  });
  await until(() => cache.pods().some((c) => c.name === name));
  return p.metadata!.uid!;
}

function annotator(o: Partial<PodAnnotatorOptions> = {}): PodAnnotator {
  return new PodAnnotator({
    api: core,
    pods: cache,
    hostIp: '192.168.0.5',
    superPodId: -2,
    serverIndex: -2,
    chips: () => CHIPS,
    rankTable: '910',
    volcanoType: false,
    clock: new FakeClock(),
    ...o,
  });
}

const held = (name: string, ids: string[], resourceName = 'huawei.com/Ascend910'): PodDevices => ({
  namespace: 'default',
  name,
  resourceName,
  deviceIds: ids,
});

async function annotationsOf(name: string): Promise<Record<string, string>> {
  return (await core.readNamespacedPod({ name, namespace: 'default' })).metadata?.annotations ?? {};
}

describe('I.3 pod annotations written by the agent', () => {
  test('I.3 kltDev and AscendReal are the sorted device ids', async () => {
    await pod('p');
    await annotator().annotate('Ascend910', [held('p', ['Ascend910-1', 'Ascend910-0'])]);
    expect(await annotationsOf('p')).toMatchObject({
      [ANNOTATION_KLT_DEV]: 'Ascend910-0,Ascend910-1',
      [ANNOTATION_ASCEND_REAL]: 'Ascend910-0,Ascend910-1',
    });
  });

  test('I.3 the rank table carries pod, node and device IPs (C.5: -1 when unknown)', async () => {
    const uid = await pod('p');
    await annotator().annotate('Ascend910', [held('p', ['Ascend910-2', 'Ascend910-0'])]);
    expect(JSON.parse((await annotationsOf('p'))[ANNOTATION_RANK_TABLE_910]!)).toEqual({
      pod_name: 'p',
      server_id: uid,
      host_ip: '192.168.0.5',
      super_pod_id: -2,
      devices: [
        { device_id: '0', device_ip: '10.0.0.10', super_device_id: '5' },
        { device_id: '2', device_ip: '-1', super_device_id: '0' },
      ],
      rack_id: 0,
      server_index: '-2',
      server_ip: '192.168.0.5',
    });
  });

  test('I.3 rank-table members are in the spec order', () => {
    const json = rankTableJson({
      podName: 'p',
      podUid: 'u',
      hostIp: 'h',
      superPodId: 1,
      serverIndex: 2,
      rackId: 0,
      realNames: ['Ascend910-1'],
      chips: CHIPS,
      a5: false,
    });
    expect(json).toBe(
      '{"pod_name":"p","server_id":"u","host_ip":"h","super_pod_id":1,"devices":[{"device_id":"1",' +
        '"device_ip":"10.0.0.11","super_device_id":"0"}],"rack_id":0,"server_index":"2","server_ip":"h"}',
    );
  });

  test('I.3 a device not in the enumeration has super_device_id -2', () => {
    const json = rankTableJson({
      podName: 'p',
      podUid: 'u',
      hostIp: 'h',
      superPodId: 1,
      serverIndex: 2,
      rackId: 0,
      realNames: ['Ascend910-7'],
      chips: CHIPS,
      a5: false,
    });
    expect(JSON.parse(json).devices[0].super_device_id).toBe('-2');
  });

  test('I.3 a pod that already has AscendReal is not patched', async () => {
    await pod('p', { [ANNOTATION_ASCEND_REAL]: 'Ascend910-0' });
    const r = await annotator().annotate('Ascend910', [held('p', ['Ascend910-0'])]);
    expect(r.patched).toEqual([]);
  });

  test('I.3 a pod is patched once (our own write counts before the watch reports it)', async () => {
    await pod('p');
    const a = annotator();
    await a.annotate('Ascend910', [held('p', ['Ascend910-0'])]);
    await a.annotate('Ascend910', [held('p', ['Ascend910-0'])]);
    expect(api.writeCount({ resource: 'pods', name: 'p' })).toBe(2); // create + one patch
  });

  test('I.3 the patch uses the merge-patch content type', async () => {
    await pod('p');
    await annotator().annotate('Ascend910', [held('p', ['Ascend910-0'])]);
    expect(api.requests({ verb: 'patch', resource: 'pods' }).map((r) => r.contentType)).toEqual([
      'application/merge-patch+json',
    ]);
  });

  test('I.3 no rank table where the run mode has none', async () => {
    await pod('p');
    await annotator({ rankTable: 'none' }).annotate('Ascend910', [held('p', ['Ascend910-0'])]);
    expect(ANNOTATION_RANK_TABLE_910 in (await annotationsOf('p'))).toBe(false);
  });

  test('I.3 a pod gone from the API server (404) is not retried', async () => {
    await pod('p');
    await core.deleteNamespacedPod({ name: 'p', namespace: 'default' });
    const r = await annotator().annotate('Ascend910', [held('p', ['Ascend910-0'])]);
    expect({ failed: r.failed, patches: api.requests({ verb: 'patch', resource: 'pods' }).length }).toEqual({
      failed: ['default/p'],
      patches: 1,
    });
  });

  test('I.3 310P vNPU device types are skipped', async () => {
    await pod('p');
    const r = await annotator().annotate('Ascend310P-2c', [
      held('p', ['Ascend310P-2c-100-0'], 'huawei.com/Ascend310P-2c'),
    ]);
    expect(r).toEqual({ patched: [], skipped: [], failed: [] });
  });
});

describe('I.5 matching pods to devices', () => {
  test('I.5 only pods holding exactly huawei.com/<deviceType> match', () => {
    const all = [held('a', ['Ascend910-0']), held('b', ['Ascend310P-V-0'], 'huawei.com/Ascend310P-V')];
    expect(podsOfDeviceType(all, 'Ascend910').map((p) => p.name)).toEqual(['a']);
  });

  test('I.5 with -volcanoType the real devices come from the kubelet→real map', async () => {
    await pod('p');
    const real = new Map([['Ascend910-0', 'Ascend910-3']]);
    await annotator({ volcanoType: true, realOf: (id) => real.get(id) }).annotate('Ascend910', [
      held('p', ['Ascend910-0']),
    ]);
    expect((await annotationsOf('p'))[ANNOTATION_ASCEND_REAL]).toBe('Ascend910-3');
  });

  test('I.5 with -volcanoType and no map entry nothing is written yet', async () => {
    await pod('p');
    const r = await annotator({ volcanoType: true, realOf: () => undefined }).annotate('Ascend910', [
      held('p', ['Ascend910-0']),
    ]);
    expect(r.skipped.map((s) => s.why)).toEqual(['no kubelet or real devices']);
  });

  test('I.5 a static vNPU type uses the kubelet ids as real devices and writes no kltDev', async () => {
    await pod('p');
    await annotator({ volcanoType: true }).annotate('Ascend910-4c', [
      held('p', ['Ascend910-4c-100-1'], 'huawei.com/Ascend910-4c'),
    ]);
    const a = await annotationsOf('p');
    expect({ real: a[ANNOTATION_ASCEND_REAL], klt: a[ANNOTATION_KLT_DEV] }).toEqual({
      real: 'Ascend910-4c-100-1',
      klt: undefined,
    });
  });

  test('I.5 a pod not yet in the pod cache is skipped this cycle', async () => {
    const r = await annotator().annotate('Ascend910', [held('ghost', ['Ascend910-0'])]);
    expect(r.skipped).toEqual([{ pod: 'default/ghost', why: 'not in the pod cache yet' }]);
  });
});
