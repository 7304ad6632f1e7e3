/**
 * The agent on a real kubelet (issue [R] item 4): the cases of kubernetes' own node e2e device-plugin suites that
 * apply to a device plugin (test/e2e_node/device_plugin_test.go, device_plugin_failures_test.go), with the real
 * kube-scheduler placing the pods and the real kubelet admitting them through the agent's GetPreferredAllocation
 * and Allocate. One cluster and one agent (host process, mock library, 910B with 8 chips) for the file; the tests
 * run in order and each leaves the node as it found it (no pods, 8 healthy chips), except the last, which stops
 * the agent for good.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import path from 'node:path';
import type { PreferredAllocationResponse__Output } from '../../../src/generated/deviceplugin/v1beta1/PreferredAllocationResponse.js';
import { PodResourcesClient } from '../../../src/kubelet/podresources-client.js';
import { loadDevicePluginProto } from '../../../src/kubelet/proto.js';
import { ANNOTATION_ASCEND_REAL } from '../../../src/kube/pod-annotator.js';
import { SEPARATE_CODE } from '../../helpers/agent-process.js';
import { ClusterAgent } from '../harness/agent.js';
import { Cluster, DEVICE_PLUGIN_DIR } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';

const RESOURCE = 'huawei.com/Ascend910';
const ALL = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);
/** kubelet's endpointStopGracePeriod (pkg/kubelet/cm/devicemanager): capacity outlives a gone plugin this long. */
const ENDPOINT_STOP_GRACE_MS = 5 * 60_000;

let cluster: Cluster;
let agent: ClusterAgent;

beforeAll(async () => {
  cluster = await Cluster.start();
  agent = ClusterAgent.create(cluster);
  await agent.start();
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

afterEach(async () => {
  // Leave no pod behind: delete them and wait until kubelet has released their devices.
  const core = cluster.core();
  const pods = await core.listNamespacedPod({ namespace: 'default' });
  for (const p of pods.items) await core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: 'default' });
  await pollUntil(
    async () => (await core.listNamespacedPod({ namespace: 'default' })).items.length === 0,
    'the pods of the test deleted',
    60_000,
  );
  await pollUntil(
    async () => (await podResources().list()).podResources.every((p) => p.namespace !== 'default'),
    'pod-resources without the pods of the test',
    30_000,
  );
}, 120_000);

function podResources(): PodResourcesClient {
  return new PodResourcesClient(cluster.podResourcesSocket);
}

/** Capacity and allocatable of the resource on the node; -1 when absent (as the e2e suites count). */
async function resourceValues(): Promise<{ capacity: number; allocatable: number }> {
  const node = await cluster.node();
  const n = (v: string | undefined): number => (v === undefined ? -1 : Number(v));
  return { capacity: n(node.status?.capacity?.[RESOURCE]), allocatable: n(node.status?.allocatable?.[RESOURCE]) };
}

async function untilValues(capacity: number, allocatable: number, timeoutMs = 60_000): Promise<void> {
  let last = { capacity: NaN, allocatable: NaN };
  await pollUntil(
    async () => {
      last = await resourceValues();
      return last.capacity === capacity && last.allocatable === allocatable;
    },
    `${RESOURCE} capacity ${capacity} and allocatable ${allocatable}`,
    timeoutMs,
    () => `last seen: capacity ${last.capacity}, allocatable ${last.allocatable}`,
    250,
  );
}

/** Creates `default/<name>` asking for `count` chips, without a node: kube-scheduler has to place it. */
async function createPod(name: string, count: number): Promise<k8s.V1Pod> {
  return cluster.core().createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'c0',
            image: 'registry.k8s.io/pause:3.10',
            resources: { limits: { [RESOURCE]: String(count) } },
          },
        ],
      },
    },
  });
}

async function untilRunning(name: string, timeoutMs = 60_000): Promise<k8s.V1Pod> {
  let phase: string | undefined;
  return pollUntil(
    async () => {
      const p = await cluster.core().readNamespacedPod({ name, namespace: 'default' });
      phase = p.status?.phase;
      return phase === 'Running' ? p : undefined;
    },
    `pod ${name} Running`,
    timeoutMs,
    () => `last phase: ${phase}\n--- kubelet:\n${cluster.tail('kubelet', 15)}`,
    250,
  );
}

/** The device IDs of `resource` that pod-resources lists for `default/<name>` container c0. */
async function allocated(name: string): Promise<string[]> {
  const list = await podResources().list();
  const pod = list.podResources.find((p) => p.namespace === 'default' && p.name === name);
  const c0 = pod?.containers.find((c) => c.name === 'c0');
  return (c0?.devices ?? [])
    .filter((d) => d.resourceName === RESOURCE)
    .flatMap((d) => d.deviceIds)
    .sort();
}

/** Asks the agent's plugin socket directly what it prefers among `available` for `size` chips. */
async function agentPreference(available: readonly string[], size: number): Promise<string[]> {
  const dp = loadDevicePluginProto();
  const client = new dp.DevicePlugin(
    `unix://${path.join(DEVICE_PLUGIN_DIR, 'Ascend910.sock')}`,
    grpc.credentials.createInsecure(),
  );
  try {
    const res = await new Promise<PreferredAllocationResponse__Output>((resolve, reject) =>
      client.GetPreferredAllocation(
        { containerRequests: [{ availableDeviceIDs: [...available], mustIncludeDeviceIDs: [], allocationSize: size }] },
        { deadline: Date.now() + 5000 },
        (err, value) => (err ? reject(err) : resolve(value!)),
      ),
    );
    return [...(res.containerResponses[0]?.deviceIDs ?? [])].sort();
  } finally {
    client.close();
  }
}

/** The identity of a running pod instance: uid, container ID, restarts. */
function instance(p: k8s.V1Pod): { uid?: string; containerID?: string; restarts?: number } {
  const s = p.status?.containerStatuses?.[0];
  return { uid: p.metadata?.uid, containerID: s?.containerID, restarts: s?.restartCount };
}

describe('e2e_node DevicePlugin: registration', () => {
  test('after the agent registers, the node shows capacity and allocatable huawei.com/Ascend910: 8', async () => {
    await untilValues(8, 8);
    const alloc = await podResources().getAllocatableResources();
    const ids = alloc.devices.filter((d) => d.resourceName === RESOURCE).flatMap((d) => d.deviceIds);
    expect(ids.sort()).toEqual(ALL);
  });
});

describe('e2e_node DevicePlugin: Can schedule a pod that requires a device', () => {
  test('a pod asking for 2 is placed by kube-scheduler and admitted with the chips the agent prefers', async () => {
    await untilValues(8, 8);
    const preferred = await agentPreference(ALL, 2);
    expect(preferred).toHaveLength(2);
    await createPod('two', 2);
    const pod = await untilRunning('two');
    expect(pod.spec?.nodeName).toBe(cluster.nodeName);
    expect(pod.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True');
    expect(await allocated('two')).toEqual(preferred);
  });

  test('the pod admitted through Allocate gets the agent annotation of the chips pod-resources lists', async () => {
    await untilValues(8, 8);
    await createPod('annotated', 2);
    await untilRunning('annotated');
    const ids = await allocated('annotated');
    expect(ids).toHaveLength(2);
    const real = await pollUntil(
      async () =>
        (await cluster.core().readNamespacedPod({ name: 'annotated', namespace: 'default' })).metadata?.annotations?.[
          ANNOTATION_ASCEND_REAL
        ],
      `the ${ANNOTATION_ASCEND_REAL} annotation`,
      30_000,
    );
    expect(real.split(',').sort()).toEqual(ids);
  });
});

describe('e2e_node Device Plugin Failures: an unhealthy device', () => {
  test('a fault on a chip of a running pod lowers allocatable to 7, keeps capacity 8 and the pod; recovery restores 8', async () => {
    await untilValues(8, 8);
    await createPod('holder', 2);
    const before = instance(await untilRunning('holder'));
    const [chip] = await allocated('holder');
    const logicId = Number(chip!.slice('Ascend910-'.length));
    await agent.mock({ op: 'fault', logicId, eventId: SEPARATE_CODE, assertion: 'occur' });
    await untilValues(8, 7);
    // Three of kubelet's node-status periods (2 s here): the pod keeps running, same instance, no restart.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 2000));
      const p = await cluster.core().readNamespacedPod({ name: 'holder', namespace: 'default' });
      expect(p.status?.phase).toBe('Running');
      expect(instance(p)).toEqual(before);
    }
    expect(await allocated('holder')).toContain(chip);
    await agent.mock({ op: 'fault', logicId, eventId: SEPARATE_CODE, assertion: 'recover' });
    await untilValues(8, 8);
  });

  test('KEP-4680: the pod status names the unhealthy chip of the container, and Healthy again after recovery', async () => {
    await untilValues(8, 8);
    await createPod('watched', 2);
    await untilRunning('watched');
    const chips = await allocated('watched');
    /** `<chip>=<health>` of the container's allocatedResourcesStatus, sorted. */
    const health = async (): Promise<string> => {
      const p = await cluster.core().readNamespacedPod({ name: 'watched', namespace: 'default' });
      const entry = p.status?.containerStatuses?.[0]?.allocatedResourcesStatus?.find((r) => r.name === RESOURCE);
      return (entry?.resources ?? [])
        .map((r) => `${r.resourceID}=${r.health}`)
        .sort()
        .join(',');
    };
    const logicId = Number(chips[0]!.slice('Ascend910-'.length));
    await agent.mock({ op: 'fault', logicId, eventId: SEPARATE_CODE, assertion: 'occur' });
    const sick = `${chips[0]}=Unhealthy,${chips[1]}=Healthy`;
    await pollUntil(async () => (await health()) === sick, 'chip Unhealthy in the pod status', 30_000);
    await agent.mock({ op: 'fault', logicId, eventId: SEPARATE_CODE, assertion: 'recover' });
    const well = `${chips[0]}=Healthy,${chips[1]}=Healthy`;
    await pollUntil(async () => (await health()) === well, 'chip Healthy in the pod status', 30_000);
    await untilValues(8, 8);
  });
});

describe('e2e_node DevicePlugin: Keeps device plugin assignments across kubelet restarts', () => {
  test('kubelet restarted: the agent registers again, 8 allocatable, the same pod instance keeps its chips', async () => {
    await untilValues(8, 8);
    await createPod('steady', 2);
    const before = instance(await untilRunning('steady'));
    const chips = await allocated('steady');
    const registrations = agent.registrations();
    await cluster.restartKubelet();
    await pollUntil(() => agent.registrations() > registrations, 'the agent registering again', 30_000);
    await untilValues(8, 8);
    const after = await untilRunning('steady');
    expect(instance(after)).toEqual(before);
    await pollUntil(async () => (await allocated('steady')).length > 0, 'pod-resources after the restart', 30_000);
    expect(await allocated('steady')).toEqual(chips);
  });
});

describe('e2e_node DevicePlugin: Keeps device plugin assignments after the device plugin has restarted', () => {
  test('agent restarted: registered again, 8 allocatable, the pod keeps its chips, a new pod gets others', async () => {
    await untilValues(8, 8);
    await createPod('first', 2);
    const before = instance(await untilRunning('first'));
    const chips = await allocated('first');
    await agent.stop();
    await agent.start();
    await untilValues(8, 8);
    expect(instance(await untilRunning('first'))).toEqual(before);
    expect(await allocated('first')).toEqual(chips);
    const free = ALL.filter((id) => !chips.includes(id));
    const preferred = await agentPreference(free, 2);
    await createPod('second', 2);
    await untilRunning('second');
    const second = await allocated('second');
    expect(second).toEqual(preferred);
    expect(second.filter((id) => chips.includes(id))).toEqual([]);
  });
});

describe('e2e_node Device Plugin Failures: when device plugin is stopped after provisioning devices', () => {
  test(
    'the agent gone: allocatable 0 at once, capacity 8 through kubelet grace period (5 min), then 0',
    async () => {
      await untilValues(8, 8);
      await agent.stop();
      await untilValues(8, 0);
      const seen = Date.now();
      // Still 8 a minute before the grace period ends (it started when kubelet saw the stream end, before `seen`).
      await new Promise((r) => setTimeout(r, ENDPOINT_STOP_GRACE_MS - 60_000));
      expect(await resourceValues()).toEqual({ capacity: 8, allocatable: 0 });
      await untilValues(0, 0, 120_000 + (seen - Date.now() + ENDPOINT_STOP_GRACE_MS));
    },
    ENDPOINT_STOP_GRACE_MS + 180_000,
  );
});
