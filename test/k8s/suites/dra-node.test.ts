/**
 * The DRA driver's node side on a real kubelet (issue [DRA] items 1, 6, node half of 8; issue [R]'s control plane):
 * the agent with `-deviceApi=dra` registered through kubelet's plugin registry (`<--root-dir>/plugins_registry`),
 * a pod with a ResourceClaim for one NPU scheduled by the real kube-scheduler, kubelet's NodePrepareResources
 * answered with a CDI spec that names exactly the allocated chip, the chip's health in the pod status (KEP-4680),
 * a kubelet restart (the driver registered again, the pod and its claim kept), and an agent killed in the middle of
 * NodePrepare (kill -9 after the intent is on disk) leaving no claim half prepared once it is back and kubelet has
 * retried.
 *
 * The ResourceSlices are the agent's own (its API side, wired with `-deviceApi=dra`; the whole driver's Done-when is
 * test/k8s/suites/dra-agent.test.ts). One cluster and one DeviceClass for the file; each test makes its own claim
 * and pod and deletes them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import { DRA_CRASH_ENV } from '../../../src/agent/wire-dra.js';
import { DRA_DRIVER as DRIVER_NAME } from '../../../src/core/dra-devices.js';
import type { AgentProcess } from '../../helpers/agent-process.js';
import { makeCharDevices, MAJOR } from '../../dra/helpers.js';
import { ClusterAgent } from '../harness/agent.js';
import { Cluster } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';

/** A RestartRequest code without a FaultFrequency rule (faultCode.json, faultCustomization.json). */
const RESTART_REQUEST = '80C98002';
let cluster: Cluster;
let agent: ClusterAgent;

/** The agent's CDI folder (in its sandbox folder). */
const cdiDir = (): string => agent.cdiDir;

/** Starts the agent with `-deviceApi=dra` on kubelet's folders; resolves once kubelet registered it. */
const startAgent = (env: Record<string, string> = {}): Promise<AgentProcess> => agent.startDra({ env });

async function apply(obj: Record<string, unknown>): Promise<void> {
  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(obj));
}

/** Names of the ResourceSlices of the driver. */
async function slices(): Promise<string[]> {
  const list = JSON.parse(await cluster.kubectl(['get', 'resourceslices', '-o', 'json'])) as {
    items: { metadata: { name: string }; spec: { driver: string } }[];
  };
  return list.items.filter((i) => i.spec.driver === DRIVER_NAME).map((i) => i.metadata.name);
}

/** A claim `default/<name>` for one NPU and a pod using it (no node: the scheduler places it). */
async function createClaimAndPod(name: string): Promise<void> {
  await apply({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: 'default' },
    spec: { devices: { requests: [{ name: 'npu', exactly: { deviceClassName: DRIVER_NAME } }] } },
  });
  await cluster.core().createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 1,
        resourceClaims: [{ name: 'npu', resourceClaimName: name }],
        containers: [{ name: 'c0', image: 'registry.k8s.io/pause:3.10', resources: { claims: [{ name: 'npu' }] } }],
      },
    },
  });
}

interface Claim {
  metadata: { uid: string };
  status?: { allocation?: { devices?: { results?: { device: string; pool: string; driver: string }[] } } };
}

async function readClaim(name: string): Promise<Claim> {
  return JSON.parse(await cluster.kubectl(['get', 'resourceclaim', name, '-n', 'default', '-o', 'json'])) as Claim;
}

async function untilRunning(name: string, timeoutMs = 90_000): Promise<k8s.V1Pod> {
  let phase: string | undefined;
  return pollUntil(
    async () => {
      const p = await cluster.core().readNamespacedPod({ name, namespace: 'default' });
      phase = p.status?.phase;
      return phase === 'Running' ? p : undefined;
    },
    `pod ${name} Running`,
    timeoutMs,
    () =>
      `last phase: ${phase}\n--- kubelet:\n${cluster.tail('kubelet', 25)}\n--- agent:\n${agent.process?.stdout.slice(-2000)}`,
    250,
  );
}

/** The CDI spec of claim `uid` in the agent's folder, or undefined. */
function specOf(
  uid: string,
):
  | { devices: { name: string; containerEdits: { deviceNodes: { path: string; major: number; minor: number }[] } }[] }
  | undefined {
  const file = path.join(cdiDir(), `ascend.com-npu_${uid}.json`);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined;
}

/** The agent's checkpoint: claim uid → state. */
function checkpoint(): Record<string, string> {
  const file = path.join(agent.dir, 'state', 'dra-checkpoint.json');
  if (!fs.existsSync(file)) return {};
  const c = JSON.parse(fs.readFileSync(file, 'utf8')) as { claims: Record<string, { state: string }> };
  return Object.fromEntries(Object.entries(c.claims).map(([k, v]) => [k, v.state]));
}

beforeAll(async () => {
  cluster = await Cluster.start();
  agent = ClusterAgent.create(cluster);
  makeCharDevices(path.join(agent.dir, 'dev'), 16); // the CDI specs copy the nodes' numbers: real device nodes
  await startAgent();
  await apply({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'DeviceClass',
    metadata: { name: DRIVER_NAME },
    spec: { selectors: [{ cel: { expression: `device.driver == "${DRIVER_NAME}"` } }] },
  });
  await pollUntil(async () => (await slices()).length > 0, 'the agent’s ResourceSlices', 30_000);
}, 150_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

afterEach(async () => {
  const core = cluster.core();
  for (const p of (await core.listNamespacedPod({ namespace: 'default' })).items) {
    await core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: 'default' });
  }
  await pollUntil(
    async () => (await core.listNamespacedPod({ namespace: 'default' })).items.length === 0,
    'pods deleted',
    60_000,
  );
  await cluster.kubectl(['delete', 'resourceclaims', '--all', '-n', 'default', '--wait=true']);
  // kubelet unprepared every claim: the agent holds none
  await pollUntil(
    () => Object.keys(checkpoint()).length === 0,
    'the agent holding no claim',
    60_000,
    () => JSON.stringify(checkpoint()),
  );
}, 150_000);

describe('issue [DRA] on a real kubelet: registration, NodePrepare, CDI', () => {
  test('a pod with a ResourceClaim for one NPU runs; the CDI spec names exactly the allocated chip', async () => {
    await createClaimAndPod('one-npu');
    await untilRunning('one-npu');
    const claim = await readClaim('one-npu');
    const results = claim.status?.allocation?.devices?.results ?? [];
    expect(results.map((r) => [r.driver, r.pool])).toEqual([[DRIVER_NAME, cluster.nodeName]]);
    const device = results[0]!.device;
    const phy = Number(/^ascend910-(\d+)$/.exec(device)![1]);
    const spec = specOf(claim.metadata.uid)!;
    expect(
      spec.devices.map((d) => [d.name, d.containerEdits.deviceNodes.map((n) => [n.path, n.major, n.minor])]),
    ).toEqual([[`${claim.metadata.uid}-${device}`, [[`/dev/davinci${phy}`, MAJOR.davinci, phy]]]]);
    expect(checkpoint()).toEqual({ [claim.metadata.uid]: 'prepared' });
  });

  test('KEP-4680: the chip’s health shows in the pod status, Unhealthy after a fault, Healthy after recovery', async () => {
    await createClaimAndPod('watched');
    await untilRunning('watched');
    const claim = await readClaim('watched');
    const device = claim.status!.allocation!.devices!.results![0]!.device;
    const logicId = Number(device.slice('ascend910-'.length)); // 910b-8chip: logic id = phy id
    const resourceId = `ascend.com/npu=${claim.metadata.uid}-${device}`;
    let last = '';
    const health = async (): Promise<string> => {
      const p = await cluster.core().readNamespacedPod({ name: 'watched', namespace: 'default' });
      const entry = p.status?.containerStatuses?.[0]?.allocatedResourcesStatus?.find((r) => r.name === 'claim:npu');
      last = (entry?.resources ?? []).map((r) => `${r.resourceID}=${r.health}`).join(',');
      return last;
    };
    const until = (want: string, what: string): Promise<boolean> =>
      pollUntil(
        async () => (await health()) === want,
        what,
        60_000,
        () => `last seen: ${last}`,
      );
    await until(`${resourceId}=Healthy`, 'the device Healthy in the pod status');
    // RestartRequest (NoSchedule): a NoExecute level would have the device-taint eviction end the pod
    await agent.mock({ op: 'fault', logicId, eventId: RESTART_REQUEST, assertion: 'occur' });
    await until(`${resourceId}=Unhealthy`, 'the device Unhealthy in the pod status');
    await agent.mock({ op: 'fault', logicId, eventId: RESTART_REQUEST, assertion: 'recover' });
    await until(`${resourceId}=Healthy`, 'the device Healthy again');
  });
});

describe('issue [DRA] item 1 on a real kubelet: kubelet restarted', () => {
  test('kubelet re-reads the registry: the driver registered again, the pod keeps running, its claim still prepared', async () => {
    await createClaimAndPod('steady');
    const before = await untilRunning('steady');
    const claim = await readClaim('steady');
    const registered = (): number =>
      agent.process!.logs().filter((l) => l.msg === 'registered with kubelet (DRA)').length;
    const count = registered();
    const republished = (): number =>
      agent.process!.logs().filter((l) => l.msg === 'ResourceSlice changed by someone else: written again').length;
    const republishedBefore = republished();
    await cluster.restartKubelet();
    await pollUntil(() => registered() > count, 'kubelet registering the DRA driver again', 60_000);
    // kubelet deletes every ResourceSlice of its node when it starts (no driver is registered yet: pods must not
    // be placed on resources nobody serves); the driver's API side sees it and publishes them again
    await pollUntil(
      () => republished() > republishedBefore,
      'the agent publishing its slices again after kubelet wiped them',
      30_000,
    );
    await pollUntil(async () => (await slices()).length > 0, 'the agent’s ResourceSlices back', 30_000);
    const after = await untilRunning('steady');
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.status?.containerStatuses?.[0]?.restartCount ?? 0).toBe(
      before.status?.containerStatuses?.[0]?.restartCount ?? 0,
    );
    expect(checkpoint()).toEqual({ [claim.metadata.uid]: 'prepared' });
    expect(specOf(claim.metadata.uid)).toBeDefined();
  });
});

describe('issue [DRA] item 1 on a real kubelet: the agent killed during NodePrepare', () => {
  test('kill -9 after the intent is checkpointed: back up, kubelet retries, the pod runs, one claim, one spec', async () => {
    await pollUntil(async () => (await slices()).length > 0, 'the agent’s ResourceSlices', 30_000);
    await agent.stop();
    const doomed = await startAgent({ [DRA_CRASH_ENV]: 'prepare-intent' });
    await createClaimAndPod('interrupted');
    const exit = await doomed.waitExit(60_000);
    expect(exit.signal).toBe('SIGKILL');
    const claim = await readClaim('interrupted');
    // killed with the claim in the checkpoint as preparing: nothing of it is a prepared claim
    expect(checkpoint()[claim.metadata.uid]).toBe('preparing');
    await startAgent();
    // kubelet syncs a pod on every update of it: a label now instead of waiting out its retry period (CI time)
    await cluster.kubectl(['label', 'pod', 'interrupted', '-n', 'default', 'retry=now']);
    await untilRunning('interrupted', 60_000);
    expect(checkpoint()).toEqual({ [claim.metadata.uid]: 'prepared' });
    const specs = fs.readdirSync(cdiDir()).filter((f) => f.startsWith('ascend.com-npu_'));
    expect(specs).toEqual([`ascend.com-npu_${claim.metadata.uid}.json`]);
  }, 240_000);
});
