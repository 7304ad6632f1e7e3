/**
 * The API side of the DRA driver npu.huawei.com on the real control plane (issue [DRA] items 2–5 and 7; issue [R]):
 * deploy/rendered/dra.yaml applied as it is (DeviceClasses, RBAC, the admission policy), the slice writer, the pod
 * annotator and the claim-status writer running in this process as the agent's service account with a pod-bound
 * token, against the real kube-apiserver and the real kube-scheduler, which allocates claims from the slices:
 * - the slices written and read back, within the real server's validation (with partitions: several slices);
 * - the admission policy both ways: another node's slice refused with 403, a token without a node refused, the own
 *   slices allowed;
 * - a fault taints the device and a new claim gets another chip; recovery lifts the taint and the chip is allocated
 *   again;
 * - two claims for vNPU partitions of one chip fit and a third that would over-commit it stays pending;
 * - a pod asking for `huawei.com/Ascend910: 2` with no claim is allocated through DRA (the DeviceClass's
 *   extendedResourceName) and gets the spec I.3 annotations; the chips' IPs go into the claim's device status (the
 *   API server's per-driver "associated-node" check);
 * - a chip under reset: a claim that tolerates its taint waits in the scheduler until the agent says ChipReady.
 * No kubelet plugin is registered here (the node side is another suite's): pods are allocated and bound, and kubelet
 * then cannot prepare them, which none of these tests needs.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { SYSTEM_CLOCK } from '../../../src/core/clock.js';
import { DRA_DRIVER } from '../../../src/core/dra-devices.js';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import { ClaimAnnotator } from '../../../src/dra/claim-annotator.js';
import { ClaimBindingWatcher } from '../../../src/dra/claim-binding.js';
import { ClaimStatusWriter } from '../../../src/dra/claim-status.js';
import { deviceClasses } from '../../../src/dra/device-classes.js';
import { isResetting } from '../../../src/dra/device-taints.js';
import { draApiOf, type DraApi } from '../../../src/dra/dra-api.js';
import type { ResourceClaim, ResourceSlice } from '../../../src/dra/dra-types.js';
import { poolOf, slicesOf, type DraInventory } from '../../../src/dra/resource-slices.js';
import { ResourceSliceWriter } from '../../../src/dra/slice-writer.js';
import { KubeClient } from '../../../src/kube/kube-client.js';
import { ANNOTATION_ASCEND_REAL, PodAnnotator, type RankChip } from '../../../src/kube/pod-annotator.js';
import { PodCacheWatcher } from '../../../src/kube/pod-cache-watcher.js';
import type { NodeStateStore } from '../../../src/state/store.js';
import { testStore } from '../../state/helpers.js';
import { Cluster } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';

const SEP = 0x80e18402;
const NS = 'default';
const INV: Omit<DraInventory, 'node'> = {
  kind: 'Ascend910B',
  chipName: '910B3',
  aiCores: 20,
  hbmBytes: 64 * 1024 ** 3,
};
const IPS = new Map<number, RankChip>(Array.from({ length: 8 }, (_, i) => [i, { phyId: i, ip: `10.20.0.${10 + i}` }]));

let cluster: Cluster;
let admin: KubeClient;
let agentToken: string;
let agent: KubeClient;
let dra: DraApi;
let store: NodeStateStore;
let partitions = false;
let writer: ResourceSliceWriter;
let status: ClaimStatusWriter;
let binding: ClaimBindingWatcher;
let pods: PodCacheWatcher;
let claims: ClaimAnnotator;

const client = (token: string): KubeClient =>
  new KubeClient({ server: cluster.server, ca: Buffer.from(cluster.pki!.caPem), token });
const adminDra = (): DraApi => draApiOf(admin);

async function mySlices(): Promise<ResourceSlice[]> {
  const l = await adminDra().listResourceSlices(`spec.nodeName=${cluster.nodeName},spec.driver=${DRA_DRIVER}`);
  return l.items.sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
}
async function device(name: string) {
  return (await mySlices()).flatMap((s) => s.spec.devices ?? []).find((d) => d.name === name);
}
const readClaim = (name: string): Promise<ResourceClaim> => adminDra().readResourceClaim(NS, name);
const allocatedDevices = (c: ResourceClaim): string[] =>
  (c.status?.allocation?.devices?.results ?? []).map((r) => r.device).sort();

/** A ResourceClaim for `count` devices of `deviceClassName`, with a CEL selector, and a pod that uses it. */
async function claimAndPod(
  name: string,
  deviceClassName: string,
  o: { selector?: string; count?: number; tolerateAll?: boolean } = {},
): Promise<void> {
  await admin.requestJson('POST', `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims`, {
    body: {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name },
      spec: {
        devices: {
          requests: [
            {
              name: 'npu',
              exactly: {
                deviceClassName,
                count: o.count ?? 1,
                ...(o.selector !== undefined ? { selectors: [{ cel: { expression: o.selector } }] } : {}),
                ...(o.tolerateAll === true ? { tolerations: [{ operator: 'Exists' }] } : {}),
              },
            },
          ],
        },
      },
    },
  });
  await cluster.core().createNamespacedPod({
    namespace: NS,
    body: {
      metadata: { name },
      spec: {
        containers: [{ name: 'c', image: 'npu-job:1', resources: { claims: [{ name: 'npu' }] } }],
        resourceClaims: [{ name: 'npu', resourceClaimName: name }],
        terminationGracePeriodSeconds: 0,
      },
    },
  });
}

async function untilAllocated(name: string, timeoutMs = 60_000): Promise<string[]> {
  return pollUntil(
    async () => {
      const d = allocatedDevices(await readClaim(name));
      return d.length > 0 ? d : undefined;
    },
    `claim ${name} allocated`,
    timeoutMs,
    () => cluster.tail('kube-scheduler', 15),
  );
}

/** The pod's PodScheduled condition says Unschedulable (the scheduler tried and found no devices). */
async function untilUnschedulable(name: string): Promise<void> {
  await pollUntil(
    async () =>
      (await cluster.core().readNamespacedPod({ name, namespace: NS })).status?.conditions?.some(
        (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
      ),
    `pod ${name} unschedulable`,
    60_000,
  );
}

async function deletePodAndClaim(name: string): Promise<void> {
  await cluster
    .core()
    .deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 0 })
    .catch(() => undefined);
  await pollUntil(
    async () =>
      !(await cluster.core().listNamespacedPod({ namespace: NS })).items.some((p) => p.metadata?.name === name),
    `pod ${name} gone`,
    60_000,
  );
  await admin
    .requestJson('DELETE', `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims/${name}`)
    .catch(() => undefined);
}

beforeAll(async () => {
  // the agent's DaemonSet is privileged (as upstream's): an operator's API server allows it
  cluster = await Cluster.start({ apiserverFlags: ['--allow-privileged=true'] });
  admin = client(cluster.adminToken);
  // the shipped manifests, as they are (the DaemonSet selects accelerator=huawei-Ascend910 nodes: none here)
  await cluster.kubectl(['apply', '-f', path.join(PROJECT_ROOT, 'deploy/rendered/dra.yaml')]);
  // a pod of the agent's service account on the node: its token carries the node name (what the policy reads)
  const holder = await cluster.core().createNamespacedPod({
    namespace: 'kube-system',
    body: {
      metadata: { name: 'ascend-npu-agent-test' },
      spec: {
        serviceAccountName: 'ascend-npu-agent',
        nodeName: cluster.nodeName,
        containers: [{ name: 'agent', image: 'ascend-npu-agent:test' }],
      },
    },
  });
  agentToken = await cluster.createToken('kube-system', 'ascend-npu-agent', {
    pod: { name: holder.metadata!.name!, uid: holder.metadata!.uid! },
  });
  agent = client(agentToken);
  dra = draApiOf(agent);
  ({ store } = testStore({ chips: 8 }));
  store.start();
  const inv: DraInventory = { ...INV, node: { chipKind: 'Ascend910B', boardId: 0x24 } };
  writer = new ResourceSliceWriter({
    api: dra,
    watch: agent.watch,
    nodeName: cluster.nodeName,
    build: (times) => slicesOf(poolOf(store.snapshot(), inv, times, { partitions }), cluster.nodeName),
    clock: SYSTEM_CLOCK,
  });
  const chipOf = (phy: number) => store.snapshot().chips.find((c) => c.phyId === phy);
  const facts = (phy: number) => ({ ...(chipOf(phy) ? { chip: chipOf(phy)! } : {}), ip: IPS.get(phy)!.ip! });
  status = new ClaimStatusWriter({ api: dra, nodeName: cluster.nodeName, kind: 'Ascend910B', facts });
  binding = new ClaimBindingWatcher({
    api: dra,
    watch: agent.watch,
    nodeName: cluster.nodeName,
    kind: 'Ascend910B',
    status,
    resetting: () => store.snapshot().chips.some(isResetting),
  });
  pods = new PodCacheWatcher({
    api: agent,
    watch: agent.watch,
    nodeName: cluster.nodeName,
    onChange: () => void claims.request(),
  });
  claims = new ClaimAnnotator({
    api: dra,
    pods,
    nodeName: cluster.nodeName,
    kind: 'Ascend910B',
    deviceType: 'Ascend910',
    annotator: new PodAnnotator({
      api: agent,
      pods,
      hostIp: '192.0.2.10',
      superPodId: -2,
      serverIndex: -2,
      chips: () => IPS,
      rankTable: '910',
      volcanoType: false,
    }),
    status,
    facts,
  });
  store.onChange(() => {
    writer.changed();
    binding.changed();
  });
  await pods.start();
  await writer.start();
  await writer.whenIdle();
}, 180_000);

afterAll(async () => {
  claims?.stop();
  pods?.stop();
  binding?.stop();
  status?.stop();
  writer?.stop();
  agent?.close();
  admin?.close();
  await cluster?.stop();
}, 60_000);

describe('issue [DRA] 7 the shipped manifests on the real API server', () => {
  test('every DeviceClass of deploy/rendered/dra.yaml is applied as the code derives it', async () => {
    const list = await admin.requestJson<{ items: { metadata: { name: string }; spec: unknown }[] }>(
      'GET',
      '/apis/resource.k8s.io/v1/deviceclasses',
    );
    const byName = new Map(list.items.map((c) => [c.metadata.name, c.spec]));
    for (const c of deviceClasses())
      expect([c.metadata.name, byName.get(c.metadata.name)]).toEqual([c.metadata.name, c.spec]);
  });
});

describe('issue [DRA] 2 the slices on the real API server', () => {
  test('written and read back: pool = node, generation, slice count, Huawei names and attributes', async () => {
    const slices = await mySlices();
    expect(slices).toHaveLength(1);
    expect(slices[0]!.spec).toMatchObject({
      driver: DRA_DRIVER,
      nodeName: cluster.nodeName,
      pool: { name: cluster.nodeName, resourceSliceCount: 1 },
    });
    const d = slices[0]!.spec.devices!.find((x) => x.name === 'ascend910-3')!;
    expect(d.attributes).toMatchObject({ deviceType: { string: 'Ascend910B' }, physicId: { int: 3 } });
    expect(d.capacity).toEqual({ aiCore: { value: '20' }, hbm: { value: '64Gi' } });
  });

  test('no write when nothing changed (idle cycles)', async () => {
    const before = writer.stats.poolWrites;
    const rv = (await mySlices())[0]!.metadata.resourceVersion;
    for (let i = 0; i < 5; i++) {
      store.tick();
      writer.changed();
      await writer.whenIdle();
    }
    expect(writer.stats.poolWrites).toBe(before);
    expect((await mySlices())[0]!.metadata.resourceVersion).toBe(rv);
  });
});

describe('issue [DRA] 7 the admission policy, both ways', () => {
  const foreign = (name: string, node: string): ResourceSlice => ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name },
    spec: {
      driver: DRA_DRIVER,
      nodeName: node,
      pool: { name: node, generation: 1, resourceSliceCount: 1 },
      devices: [],
    },
  });
  const statusOf = async (p: Promise<unknown>): Promise<number> =>
    p.then(
      () => 200,
      (e: { code?: number }) => e.code ?? -1,
    );

  test("another node's slice: create refused with 403", async () => {
    // the policy is loaded a moment after it is created: wait until it refuses
    await pollUntil(
      async () => {
        const code = await statusOf(dra.createResourceSlice(foreign('other-node-npu.huawei.com-0', 'other-node')));
        if (code === 200) await adminDra().deleteResourceSlice('other-node-npu.huawei.com-0');
        return code === 403;
      },
      'the policy refusing another node',
      30_000,
    );
  });

  test("another node's slice made by the admin: the agent's update and delete refused with 403", async () => {
    const made = await adminDra().createResourceSlice(foreign('other-node-npu.huawei.com-1', 'other-node'));
    expect(
      await statusOf(dra.replaceResourceSlice({ ...made, spec: { ...made.spec, devices: [{ name: 'x' }] } })),
    ).toBe(403);
    expect(await statusOf(dra.deleteResourceSlice('other-node-npu.huawei.com-1'))).toBe(403);
    await adminDra().deleteResourceSlice('other-node-npu.huawei.com-1');
  });

  test('a slice of another driver on its own node: refused with 403', async () => {
    const s = foreign('mine-other-driver', cluster.nodeName);
    s.spec.driver = 'gpu.example.com';
    expect(await statusOf(dra.createResourceSlice(s))).toBe(403);
  });

  test('a token of the agent without a node (not pod-bound): refused with 403', async () => {
    const unbound = client(await cluster.createToken('kube-system', 'ascend-npu-agent'));
    try {
      expect(await statusOf(draApiOf(unbound).createResourceSlice(foreign('no-node', cluster.nodeName)))).toBe(403);
    } finally {
      unbound.close();
    }
  });

  test('its own slices: create, update and delete allowed (no 422: every expression evaluates)', async () => {
    const own = foreign(`${cluster.nodeName}-extra`, cluster.nodeName);
    const made = await dra.createResourceSlice(own);
    const updated = await dra.replaceResourceSlice({
      ...made,
      spec: { ...made.spec, pool: { ...made.spec.pool, generation: 2 } },
    });
    expect(updated.spec.pool.generation).toBe(2);
    await dra.deleteResourceSlice(own.metadata.name!);
    // the writer's own pool was written by the agent all along
    expect(writer.stats.poolWrites).toBeGreaterThanOrEqual(1);
  });
});

describe('issue [DRA] 3 faults drive taints; the real scheduler honours them', () => {
  test('a fault taints the device; a new claim gets another chip; recovery lifts the taint', async () => {
    const t0 = performance.now();
    store.applyEvents([{ logicId: 2, code: SEP, assertion: 'occur', severity: 2 }]);
    await pollUntil(
      async () => (await device('ascend910-2'))?.taints?.length === 1,
      'the taint on ascend910-2',
      10_000,
      undefined,
      20,
    );
    process.stdout.write(`fault → taint on the real API server: ${(performance.now() - t0).toFixed(0)} ms\n`);
    expect((await device('ascend910-2'))!.taints![0]).toMatchObject({
      key: 'npu.huawei.com/SeparateNPU',
      effect: 'NoExecute',
    });

    await claimAndPod('pick', 'ascend910.npu.huawei.com', {
      selector: "device.attributes['npu.huawei.com'].physicId in [2, 3]",
    });
    expect(await untilAllocated('pick')).toEqual(['ascend910-3']);
    await claimAndPod('only2', 'ascend910.npu.huawei.com', {
      selector: "device.attributes['npu.huawei.com'].physicId == 2",
    });
    await untilUnschedulable('only2');

    store.applyEvents([{ logicId: 2, code: SEP, assertion: 'recover', severity: 2 }]);
    await pollUntil(async () => (await device('ascend910-2'))?.taints === undefined, 'the taint lifted', 10_000);
    expect(await untilAllocated('only2', 90_000)).toEqual(['ascend910-2']);
    await deletePodAndClaim('pick');
    await deletePodAndClaim('only2');
  }, 240_000);
});

describe('issue [DRA] 4 today’s pods: huawei.com/Ascend910: 2 through DRA', () => {
  test('allocated through the DeviceClass, annotated (spec I.3), device IPs in the claim status', async () => {
    await cluster.core().createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'today' },
        spec: {
          containers: [{ name: 'c', image: 'npu-job:1', resources: { limits: { 'huawei.com/Ascend910': '2' } } }],
          terminationGracePeriodSeconds: 0,
        },
      },
    });
    const claimName = await pollUntil(
      async () =>
        (await cluster.core().readNamespacedPod({ name: 'today', namespace: NS })).status?.extendedResourceClaimStatus
          ?.resourceClaimName,
      'the extended-resource claim of the pod',
      60_000,
      () => cluster.tail('kube-scheduler', 15),
    );
    const devices = await untilAllocated(claimName);
    expect(devices).toHaveLength(2);
    const real = devices
      .map((d) => `Ascend910-${d.split('-')[1]!}`)
      .sort()
      .join(',');
    await pollUntil(
      async () =>
        (await cluster.core().readNamespacedPod({ name: 'today', namespace: NS })).metadata?.annotations?.[
          ANNOTATION_ASCEND_REAL
        ] === real,
      `AscendReal = ${real}`,
      30_000,
    );
    const c = await pollUntil(
      async () => {
        const x = await readClaim(claimName);
        return (x.status?.devices ?? []).length === 2 ? x : undefined;
      },
      'the device IPs in the claim status',
      30_000,
    );
    for (const e of c.status!.devices!) {
      const phy = Number(e.device.split('-')[1]);
      expect(e).toMatchObject({
        driver: DRA_DRIVER,
        pool: cluster.nodeName,
        networkData: { ips: [`10.20.0.${10 + phy}/32`] },
      });
    }
    await cluster.core().deleteNamespacedPod({ name: 'today', namespace: NS, gracePeriodSeconds: 0 });
  }, 180_000);
});

describe('issue [DRA] 5 partitions: the real scheduler never over-commits a chip', () => {
  test('two 10-core partitions of one chip fit; a third stays pending; the whole chip too', async () => {
    partitions = true;
    writer.changed();
    await writer.whenIdle();
    const slices = await mySlices();
    expect(slices.length).toBeGreaterThan(1);
    expect(new Set(slices.map((s) => s.spec.pool.generation)).size).toBe(1);
    const onChip0 = "device.attributes['npu.huawei.com'].physicId == 0";
    await claimAndPod('part-a', 'ascend910-vir10-3c-16g.npu.huawei.com', { selector: onChip0 });
    await claimAndPod('part-b', 'ascend910-vir10-3c-16g.npu.huawei.com', { selector: onChip0 });
    const a = await untilAllocated('part-a');
    const b = await untilAllocated('part-b');
    expect([...a, ...b].sort()).toEqual(['ascend910-0-vir10-3c-16g-0', 'ascend910-0-vir10-3c-16g-1']);
    await claimAndPod('part-c', 'ascend910-vir10-3c-16g.npu.huawei.com', { selector: onChip0 });
    await untilUnschedulable('part-c');
    await claimAndPod('whole-0', 'ascend910.npu.huawei.com', { selector: onChip0 });
    await untilUnschedulable('whole-0');
    expect(allocatedDevices(await readClaim('part-c'))).toEqual([]);
    for (const n of ['part-a', 'part-b', 'part-c', 'whole-0']) await deletePodAndClaim(n);
    partitions = false;
    writer.changed();
    await writer.whenIdle();
    expect(await mySlices()).toHaveLength(1);
  }, 300_000);
});

describe('issue [DRA] 3 a chip under reset: binding conditions on the real scheduler', () => {
  test('a claim tolerating the Resetting taint waits in PreBind until the agent says ChipReady', async () => {
    store.setResetOverrides(new Set(), new Set(), new Set([5]));
    await pollUntil(
      async () => (await device('ascend910-5'))?.bindingConditions?.length === 1,
      'binding conditions on ascend910-5',
      10_000,
    );
    await claimAndPod('reset', 'ascend910.npu.huawei.com', {
      selector: "device.attributes['npu.huawei.com'].physicId == 5",
      tolerateAll: true,
    });
    expect(await untilAllocated('reset')).toEqual(['ascend910-5']);
    const claim = await readClaim('reset');
    expect(claim.status!.allocation!.devices!.results![0]!.bindingConditions).toEqual(['npu.huawei.com/ChipReady']);
    // not bound while the chip is reset
    await new Promise((r) => setTimeout(r, 3000));
    expect((await cluster.core().readNamespacedPod({ name: 'reset', namespace: NS })).spec?.nodeName).toBeUndefined();
    store.setResetOverrides(new Set(), new Set(), new Set());
    await pollUntil(
      async () =>
        (await cluster.core().readNamespacedPod({ name: 'reset', namespace: NS })).spec?.nodeName === cluster.nodeName,
      'the pod bound after ChipReady',
      60_000,
      () => cluster.tail('kube-scheduler', 15),
    );
    const devices = (await readClaim('reset')).status!.devices!;
    expect(devices[0]!.conditions!.map((c) => [c.type, c.status])).toEqual([['npu.huawei.com/ChipReady', 'True']]);
    await deletePodAndClaim('reset');
  }, 180_000);
});
