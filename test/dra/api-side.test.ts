/**
 * The API side assembled (src/dra/api-side.ts), as the agent's wiring will construct it, against the API stand-in:
 * the store's changes reach the slices, a pod with a DRA claim is annotated with its chips, and in `both` mode a chip
 * held through the device plugin leaves the slices and comes back.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { createDraApiSide, type DraApiSide } from '../../src/dra/api-side.js';
import type { ResourceSlice } from '../../src/dra/dra-types.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { ANNOTATION_ASCEND_REAL, PodAnnotator } from '../../src/kube/pod-annotator.js';
import { PodCacheWatcher } from '../../src/kube/pod-cache-watcher.js';
import { DRA_RESOURCES, KubeApiStandIn, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES } from '../../src/sim/kube-api.js';
import { testStore } from '../state/helpers.js';

const NODE = 'node-a';
let api: KubeApiStandIn;
let client: KubeClient;
let cache: PodCacheWatcher;
let side: DraApiSide;

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
const devices = () =>
  api.store.list(RESOURCE_SLICES, undefined, [], []).flatMap((o) => (o as unknown as ResourceSlice).spec.devices ?? []);

beforeEach(async () => {
  api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES });
  client = new KubeClient({ server: api.url, token: 't' });
  cache = new PodCacheWatcher({ api: client, watch: client.watch, nodeName: NODE, onChange: () => side.podsChanged() });
});

afterEach(async () => {
  side.stop();
  cache.stop();
  client.close();
  await api.stop();
});

describe('issue [DRA] 2-4 the API side as the wiring builds it', () => {
  test('a fault taints the slice; a pod with a claim gets AscendReal; a chip held by the device plugin leaves', async () => {
    const { store } = testStore({ chips: 4 });
    store.start();
    let held = new Set<number>();
    side = createDraApiSide({
      store,
      client,
      nodeName: NODE,
      inventory: { kind: 'Ascend910B', node: { chipKind: 'Ascend910B', boardId: 0x24 } },
      deviceType: 'Ascend910',
      withdrawn: () => held,
      ipOf: (phy) => `10.0.0.${phy}`,
      pods: cache,
      annotator: new PodAnnotator({
        api: client,
        pods: cache,
        hostIp: '192.0.2.1',
        superPodId: -2,
        serverIndex: -2,
        chips: () => new Map(),
        rankTable: '910',
        volcanoType: false,
      }),
    });
    await cache.start();
    await side.start();
    await side.writer.whenIdle();
    expect(devices().map((d) => d.name)).toEqual(['ascend910-0', 'ascend910-1', 'ascend910-2', 'ascend910-3']);

    store.applyEvents([{ logicId: 1, code: 0x80e18402, assertion: 'occur', severity: 2 }]);
    await until(() => devices().find((d) => d.name === 'ascend910-1')?.taints !== undefined);

    const pod = api.store.create(PODS, 'default', {
      metadata: { name: 'p' },
      spec: { nodeName: NODE, containers: [{ name: 'c', image: 'x' }] },
      status: { phase: 'Pending', resourceClaimStatuses: [{ name: 'npu', resourceClaimName: 'p-npu' }] },
    });
    api.store.create(RESOURCE_CLAIMS, 'default', {
      metadata: { name: 'p-npu' },
      spec: { devices: { requests: [{ name: 'npu', exactly: { deviceClassName: DRA_DRIVER } }] } },
      status: {
        allocation: {
          devices: { results: [{ request: 'npu', driver: DRA_DRIVER, pool: NODE, device: 'ascend910-3' }] },
        },
        reservedFor: [{ resource: 'pods', name: 'p', uid: pod.metadata!.uid! }],
      },
    });
    // the claim was made after the pod: the next pass (a pod change, or the periodic one) finds it
    side.podsChanged();
    await until(() => cache.pods().some((p) => p.annotations[ANNOTATION_ASCEND_REAL] === 'Ascend910-3'));

    held = new Set([2]);
    side.withdrawnChanged();
    await until(() => !devices().some((d) => d.name === 'ascend910-2'));
    held = new Set();
    side.withdrawnChanged();
    await until(() => devices().some((d) => d.name === 'ascend910-2'));
  });
});
