/**
 * Issue [DRA] item 4: today's pods served through DRA — the spec I.3 annotations Volcano and the training stack read
 * (`huawei.com/AscendReal`, `huawei.com/kltDev`, the rank table) written for chips allocated through DRA, found
 * from the pod's claims in its status, by the kube layer's own PodAnnotator; and the chips' IPs in the claims'
 * device status. Against the API stand-in over HTTP, with the real pod cache.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { ClaimAnnotator } from '../../src/dra/claim-annotator.js';
import { ClaimStatusWriter } from '../../src/dra/claim-status.js';
import { draApiOf, type DraApi } from '../../src/dra/dra-api.js';
import type { ResourceClaim } from '../../src/dra/dra-types.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import {
  ANNOTATION_ASCEND_REAL,
  ANNOTATION_KLT_DEV,
  ANNOTATION_RANK_TABLE_910,
  PodAnnotator,
  type RankChip,
} from '../../src/kube/pod-annotator.js';
import { PodCacheWatcher } from '../../src/kube/pod-cache-watcher.js';
import { DRA_RESOURCES, KubeApiStandIn, PODS, RESOURCE_CLAIMS } from '../../src/sim/kube-api.js';

const NODE = 'node-a';
const CHIPS = new Map<number, RankChip>([
  [2, { phyId: 2, ip: '10.0.0.12', superDeviceId: 7 }],
  [3, { phyId: 3, ip: '10.0.0.13', superDeviceId: 8 }],
  [4, { phyId: 4 }],
]);

let api: KubeApiStandIn;
let client: KubeClient;
let dra: DraApi;
let core: k8s.CoreV1Api;
let cache: PodCacheWatcher;
let status: ClaimStatusWriter;
let claims: ClaimAnnotator;

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

beforeEach(async () => {
  api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES });
  client = new KubeClient({ server: api.url, token: 't' });
  dra = draApiOf(client);
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  cache = new PodCacheWatcher({ api: client, watch: client.watch, nodeName: NODE });
  await cache.start();
  const facts = (phy: number) => ({ ...(CHIPS.get(phy)?.ip ? { ip: CHIPS.get(phy)!.ip! } : {}) });
  status = new ClaimStatusWriter({ api: dra, nodeName: NODE, kind: 'Ascend910B', facts });
  claims = new ClaimAnnotator({
    api: dra,
    pods: cache,
    nodeName: NODE,
    kind: 'Ascend910B',
    deviceType: 'Ascend910',
    annotator: new PodAnnotator({
      api: client,
      pods: cache,
      hostIp: '192.168.0.5',
      superPodId: -2,
      serverIndex: -2,
      chips: () => CHIPS,
      rankTable: '910',
      volcanoType: false,
    }),
    status,
    facts,
  });
});

afterEach(async () => {
  claims.stop();
  status.stop();
  cache.stop();
  client.close();
  await api.stop();
});

/** A claim allocated from `pool` and reserved for the pod `uid`. */
function claim(name: string, devices: string[], o: { pool?: string; uid?: string; driver?: string } = {}): void {
  api.store.create(RESOURCE_CLAIMS, 'default', {
    metadata: { name },
    spec: {
      devices: { requests: [{ name: 'npu', exactly: { deviceClassName: 'npu.huawei.com', count: devices.length } }] },
    },
    status: {
      allocation: {
        devices: {
          results: devices.map((device) => ({
            request: 'npu',
            driver: o.driver ?? DRA_DRIVER,
            pool: o.pool ?? NODE,
            device,
          })),
        },
      },
      ...(o.uid !== undefined ? { reservedFor: [{ resource: 'pods', name: 'p', uid: o.uid }] } : {}),
    },
  });
}

/** A pod on the node whose status lists its claims (as kubelet and the scheduler write it). */
async function pod(name: string, status: Record<string, unknown>): Promise<string> {
  const created = api.store.create(PODS, 'default', {
    metadata: { name },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'x' }] },
    status: { phase: 'Running', ...status },
  });
  await until(() => cache.pods().some((p) => p.name === name));
  return created.metadata!.uid!;
}

async function annotationsOf(name: string): Promise<Record<string, string>> {
  return (await core.readNamespacedPod({ name, namespace: 'default' })).metadata?.annotations ?? {};
}
const claimOf = (name: string): ResourceClaim =>
  api.store.get(RESOURCE_CLAIMS, 'default', name) as unknown as ResourceClaim;

describe('issue [DRA] 4 the pod cache knows the claims in a pod status', () => {
  test('status.resourceClaimStatuses and status.extendedResourceClaimStatus give the claim names', async () => {
    await pod('p1', {
      resourceClaimStatuses: [{ name: 'npus', resourceClaimName: 'p1-npus-abcde' }, { name: 'none' }],
      extendedResourceClaimStatus: {
        resourceClaimName: 'p1-extended-resources-xyz',
        requestMappings: [
          { containerName: 'c', resourceName: 'huawei.com/Ascend910', requestName: 'container-0-request-0' },
        ],
      },
    });
    expect(cache.pods().find((p) => p.name === 'p1')!.resourceClaims).toEqual([
      'p1-npus-abcde',
      'p1-extended-resources-xyz',
    ]);
  });

  test('a pod without claims has none', async () => {
    await pod('p2', {});
    expect(cache.pods().find((p) => p.name === 'p2')!.resourceClaims).toBeUndefined();
  });
});

describe('issue [DRA] 4 spec I.3 annotations for chips allocated through DRA', () => {
  test('a pod asking for huawei.com/Ascend910: 2 served by the DeviceClass: AscendReal, kltDev, rank table', async () => {
    const uid = await pod('p', { extendedResourceClaimStatus: { resourceClaimName: 'p-ext', requestMappings: [] } });
    claim('p-ext', ['ascend910-3', 'ascend910-2'], { uid });
    await claims.request();
    const a = await annotationsOf('p');
    expect(a[ANNOTATION_ASCEND_REAL]).toBe('Ascend910-2,Ascend910-3');
    expect(a[ANNOTATION_KLT_DEV]).toBe('Ascend910-2,Ascend910-3');
    const rank = JSON.parse(a[ANNOTATION_RANK_TABLE_910]!) as { devices: unknown[]; server_id: string };
    expect(rank.server_id).toBe(uid);
    expect(rank.devices).toEqual([
      { device_id: '2', device_ip: '10.0.0.12', super_device_id: '7' },
      { device_id: '3', device_ip: '10.0.0.13', super_device_id: '8' },
    ]);
  });

  test('chips of several claims of one pod are one annotation', async () => {
    const uid = await pod('q', {
      resourceClaimStatuses: [
        { name: 'a', resourceClaimName: 'c1' },
        { name: 'b', resourceClaimName: 'c2' },
      ],
    });
    claim('c1', ['ascend910-4'], { uid });
    claim('c2', ['ascend910-2'], { uid });
    await claims.request();
    expect((await annotationsOf('q'))[ANNOTATION_ASCEND_REAL]).toBe('Ascend910-2,Ascend910-4');
  });

  test("another node's pool, another driver, or a claim not reserved for the pod: nothing", async () => {
    const uid = await pod('r', {
      resourceClaimStatuses: [
        { name: 'a', resourceClaimName: 'o1' },
        { name: 'b', resourceClaimName: 'o2' },
        { name: 'c', resourceClaimName: 'o3' },
      ],
    });
    claim('o1', ['ascend910-2'], { uid, pool: 'node-b' });
    claim('o2', ['gpu-0'], { uid, driver: 'gpu.example.com' });
    claim('o3', ['ascend910-3'], { uid: 'someone-else' });
    await claims.request();
    expect((await annotationsOf('r'))[ANNOTATION_ASCEND_REAL]).toBeUndefined();
  });

  test("a vNPU partition gives no AscendReal (its vNPU id is the node side's)", async () => {
    const uid = await pod('v', { resourceClaimStatuses: [{ name: 'a', resourceClaimName: 'v1' }] });
    claim('v1', ['ascend910-2-vir05-1c-16g-0'], { uid });
    await claims.request();
    expect((await annotationsOf('v'))[ANNOTATION_ASCEND_REAL]).toBeUndefined();
  });

  test('written once: an annotated pod is not patched again, its claim not read again', async () => {
    const uid = await pod('w', { resourceClaimStatuses: [{ name: 'a', resourceClaimName: 'once' }] });
    claim('once', ['ascend910-2'], { uid });
    await claims.request();
    await until(() => cache.pods().some((p) => p.name === 'w' && p.annotations[ANNOTATION_ASCEND_REAL] !== undefined));
    const patches = api.writeCount({ resource: 'pods', name: 'w' });
    const reads = claims.stats.claimReads;
    for (let i = 0; i < 5; i++) await claims.request();
    expect(api.writeCount({ resource: 'pods', name: 'w' })).toBe(patches);
    expect(claims.stats.claimReads).toBe(reads);
  });

  test('a claim that cannot be read (gone) is skipped; the pass goes on with the others', async () => {
    const uid = await pod('x', {
      resourceClaimStatuses: [
        { name: 'a', resourceClaimName: 'missing' },
        { name: 'b', resourceClaimName: 'ok' },
      ],
    });
    claim('ok', ['ascend910-3'], { uid });
    await claims.request();
    expect((await annotationsOf('x'))[ANNOTATION_ASCEND_REAL]).toBe('Ascend910-3');
    expect(claims.stats.readFailures).toBe(1);
  });
});

describe('issue [DRA] 4 device IPs in the claim device status (DRAResourceClaimDeviceStatus)', () => {
  test('networkData.ips of each chip in CIDR form; a chip without an IP gets no entry', async () => {
    const uid = await pod('y', { resourceClaimStatuses: [{ name: 'a', resourceClaimName: 'ips' }] });
    claim('ips', ['ascend910-2', 'ascend910-4'], { uid });
    await claims.request();
    expect(claimOf('ips').status!.devices).toEqual([
      { driver: DRA_DRIVER, pool: NODE, device: 'ascend910-2', networkData: { ips: ['10.0.0.12/32'] } },
    ]);
  });

  test('entries of other writers are kept; a second pass writes nothing', async () => {
    const uid = await pod('z', { resourceClaimStatuses: [{ name: 'a', resourceClaimName: 'mixed' }] });
    claim('mixed', ['ascend910-3'], { uid });
    const c = claimOf('mixed');
    const theirs = {
      driver: DRA_DRIVER,
      pool: NODE,
      device: 'ascend910-3',
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'Prepared', message: '' },
      ],
    };
    api.store.update(
      RESOURCE_CLAIMS,
      'default',
      'mixed',
      { ...c, status: { ...c.status, devices: [theirs] } },
      'status',
    );
    await claims.request();
    expect(claimOf('mixed').status!.devices).toEqual([{ ...theirs, networkData: { ips: ['10.0.0.13/32'] } }]);
    const writes = status.stats.writes;
    await claims.request();
    await status.sync('default', 'mixed');
    expect(status.stats.writes).toBe(writes);
  });
});
