/**
 * Issue [DRA] "Done when", end to end on the real control plane of issue [R]: the built agent as a host process with
 * `-deviceApi=dra` next to a real kubelet, publishing its own ResourceSlices (no slice written by hand) and serving
 * kubelet's NodePrepareResources, with the shipped DeviceClasses (deploy/rendered/dra.yaml):
 * - a claim for one NPU scheduled by the real kube-scheduler onto the agent's node, the CDI spec naming exactly the
 *   allocated chip, the chip's health in the pod status (KEP-4680);
 * - a fault injected through the mock taints that device in the agent's slice (the time is printed), a new claim
 *   gets another chip, recovery lifts the taint;
 * - a pod asking for `huawei.com/Ascend910: 2` with no claim allocated through DRA, prepared, annotated (spec I.3);
 * - two claims for vNPU partitions of one chip fit, a third that would over-commit it stays pending;
 * - the agent killed during NodePrepare leaves no claim half prepared.
 * One cluster and one agent for the file (CI time); each test deletes what it made.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import yaml from 'js-yaml';
import { DRA_CRASH_ENV } from '../../../src/agent/wire-dra.js';
import { DRA_DRIVER } from '../../../src/core/dra-devices.js';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import type { ResourceClaim, ResourceSlice } from '../../../src/dra/dra-types.js';
import { ANNOTATION_ASCEND_REAL } from '../../../src/kube/pod-annotator.js';
import type { AgentProcess } from '../../helpers/agent-process.js';
import { makeCharDevices, MAJOR, mknod } from '../../dra/helpers.js';
import { ClusterAgent } from '../harness/agent.js';
import { Cluster } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';

const NS = 'default';
const WHOLE = 'ascend910.npu.huawei.com';
const PART = 'ascend910-vir10-3c-16g.npu.huawei.com';
/**
 * A RestartRequest code (faultCode.json): the chip is Unhealthy (spec D.7) and tainted NoSchedule — no eviction of
 * the pod watching its health (a NoExecute level would end it), no reset (`-hotReset=-1`), and no FaultFrequency
 * rule of faultCustomization.json (repeated, it would separate the chip).
 */
const FAULT = '80C98002';
/** Faults injected and not recovered yet (recovered after a failed test, so the next one finds every chip free). */
const active = new Set<number>();
let cluster: Cluster;
let agent: ClusterAgent;

const cdiDir = (): string => agent.cdiDir;

/** 910b-8chip with the 10-core template of the partition class, so NodePrepare can create those vNPUs. */
function vnpuScenario(): string {
  const base = JSON.parse(fs.readFileSync(agent.scenario, 'utf8')) as Record<string, unknown>;
  const file = path.join(agent.dir, 'scenario-vnpu.json');
  const vnpuTemplates = [{ name: 'vir10_3c_16g', aicore: 10, aicpu: 3, memoryMiB: 16384 }];
  fs.writeFileSync(file, JSON.stringify({ ...base, vnpuTemplates }));
  return file;
}
let scenario = '';

/** Starts the agent with `-deviceApi=dra` on kubelet's folders; resolves once kubelet registered it. */
const startAgent = (env: Record<string, string> = {}): Promise<AgentProcess> => agent.startDra({ env, scenario });

async function json<T>(args: readonly string[]): Promise<T> {
  return JSON.parse(await cluster.kubectl([...args, '-o', 'json'])) as T;
}

/** The agent's slices (the driver's, on this node). */
async function mySlices(): Promise<ResourceSlice[]> {
  const l = await json<{ items: ResourceSlice[] }>(['get', 'resourceslices']);
  return l.items.filter((s) => s.spec.driver === DRA_DRIVER && s.spec.nodeName === cluster.nodeName);
}

/** The device `name` of the agent's slices. */
async function device(name: string) {
  return (await mySlices()).flatMap((s) => s.spec.devices ?? []).find((d) => d.name === name);
}

const readClaim = (name: string): Promise<ResourceClaim> => json(['get', 'resourceclaim', name, '-n', NS]);
const allocated = (c: ResourceClaim): string[] =>
  (c.status?.allocation?.devices?.results ?? []).map((r) => r.device).sort();

/** A claim `name` for one device of `deviceClassName` (a CEL selector, all taints tolerated) and a pod using it. */
async function claimAndPod(
  name: string,
  deviceClassName: string,
  o: { selector?: string; tolerateAll?: boolean } = {},
): Promise<void> {
  const claim = {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: NS },
    spec: {
      devices: {
        requests: [
          {
            name: 'npu',
            exactly: {
              deviceClassName,
              ...(o.selector !== undefined ? { selectors: [{ cel: { expression: o.selector } }] } : {}),
              // the device-taint eviction would otherwise end a pod whose chip gets a NoExecute taint
              ...(o.tolerateAll === true ? { tolerations: [{ operator: 'Exists' }] } : {}),
            },
          },
        ],
      },
    },
  };
  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(claim));
  await cluster.core().createNamespacedPod({
    namespace: NS,
    body: {
      metadata: { name },
      spec: {
        terminationGracePeriodSeconds: 0,
        resourceClaims: [{ name: 'npu', resourceClaimName: name }],
        containers: [{ name: 'c0', image: 'registry.k8s.io/pause:3.10', resources: { claims: [{ name: 'npu' }] } }],
      },
    },
  });
}

async function untilAllocated(name: string): Promise<string[]> {
  return pollUntil(
    async () => {
      const d = allocated(await readClaim(name));
      return d.length > 0 ? d : undefined;
    },
    `claim ${name} allocated`,
    30_000,
    () => cluster.tail('kube-scheduler', 15),
    100,
  );
}

async function untilRunning(name: string, timeoutMs = 30_000): Promise<void> {
  let phase: string | undefined;
  await pollUntil(
    async () => {
      phase = (await cluster.core().readNamespacedPod({ name, namespace: NS })).status?.phase;
      return phase === 'Running';
    },
    `pod ${name} Running`,
    timeoutMs,
    () =>
      `last phase: ${phase}\n--- kubelet:\n${cluster.tail('kubelet', 25)}\n--- agent:\n${agent.process?.stdout.slice(-2500)}`,
    100,
  );
}

async function untilUnschedulable(name: string): Promise<void> {
  await pollUntil(
    async () =>
      (await cluster.core().readNamespacedPod({ name, namespace: NS })).status?.conditions?.some(
        (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
      ),
    `pod ${name} unschedulable`,
    30_000,
    undefined,
    100,
  );
}

/** Deletes pods and claims, and waits until the agent has unprepared every claim (its checkpoint is empty). */
async function cleanUp(names: readonly string[]): Promise<void> {
  const core = cluster.core();
  for (const name of names) {
    await core.deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 0 }).catch(() => undefined);
  }
  await pollUntil(
    async () => (await core.listNamespacedPod({ namespace: NS })).items.length === 0,
    'pods deleted',
    30_000,
    undefined,
    100,
  );
  await cluster.kubectl(['delete', 'resourceclaims', '--all', '-n', NS, '--wait=true']);
  await pollUntil(
    () => Object.keys(checkpoint()).length === 0,
    'the agent holding no claim',
    30_000,
    () => JSON.stringify(checkpoint()),
  );
}

type Spec = {
  devices: { name: string; containerEdits: { deviceNodes: { path: string; major: number; minor: number }[] } }[];
};

/** The CDI spec of claim `uid` in the agent's folder, or undefined. */
function specOf(uid: string): Spec | undefined {
  const file = path.join(cdiDir(), `ascend.com-npu_${uid}.json`);
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Spec) : undefined;
}

/** The agent's checkpoint: claim uid → state. */
function checkpoint(): Record<string, string> {
  const file = path.join(agent.dir, 'state', 'dra-checkpoint.json');
  if (!fs.existsSync(file)) return {};
  const c = JSON.parse(fs.readFileSync(file, 'utf8')) as { claims: Record<string, { state: string }> };
  return Object.fromEntries(Object.entries(c.claims).map(([k, v]) => [k, v.state]));
}

beforeAll(async () => {
  // the shipped DaemonSet is privileged (as upstream's): an operator's API server allows it
  cluster = await Cluster.start({ apiserverFlags: ['--allow-privileged=true'] });
  agent = ClusterAgent.create(cluster);
  makeCharDevices(path.join(agent.dir, 'dev'), 16); // the CDI specs copy the nodes' numbers: real device nodes
  scenario = vnpuScenario();
  // the driver makes /dev/vdavinci<id> when it creates a vNPU; the mock does not: the ids it hands out, made here
  for (let id = 100; id < 132; id++) mknod(path.join(agent.dir, 'dev', `vdavinci${id}`), MAJOR.vdavinci, id);
  // the shipped DeviceClasses (the rest of the file — DaemonSet, RBAC, policy — is the dra-api suite's)
  const docs = yaml.loadAll(fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/rendered/dra.yaml'), 'utf8')) as {
    kind?: string;
  }[];
  const classes = docs.filter((d) => d?.kind === 'DeviceClass');
  expect(classes.length).toBeGreaterThan(1);
  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: classes }));
  await startAgent();
  // the agent's API side publishes the slices (again after kubelet's wipe at the registration, if any)
  await pollUntil(async () => (await device('ascend910-7')) !== undefined, 'the agent’s slices', 30_000);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

// after a failed test: its faults recovered, its pods and claims gone, so the next test starts from free chips
afterEach(async () => {
  const p = agent.process;
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) await startAgent();
  for (const logicId of active) await agent.mock({ op: 'fault', logicId, eventId: FAULT, assertion: 'recover' });
  active.clear();
  const left = (await cluster.core().listNamespacedPod({ namespace: NS })).items.map((p) => p.metadata!.name!);
  if (left.length > 0 || Object.keys(checkpoint()).length > 0) await cleanUp(left);
}, 60_000);

describe('issue [DRA] Done when: a claim for one NPU, a fault, recovery, health in the pod status', () => {
  test('scheduled onto the agent’s node; CDI names exactly the chip; a fault taints it, a new claim gets another chip; recovery lifts the taint; KEP-4680 health follows', async () => {
    await claimAndPod('watched', WHOLE, { tolerateAll: true });
    await untilRunning('watched');
    const claim = await readClaim('watched');
    const results = claim.status?.allocation?.devices?.results ?? [];
    expect(results.map((r) => [r.driver, r.pool])).toEqual([[DRA_DRIVER, cluster.nodeName]]);
    const dev = results[0]!.device;
    const phy = Number(/^ascend910-(\d+)$/.exec(dev)![1]);
    expect(
      specOf(claim.metadata.uid!)!.devices.map((d) => [
        d.name,
        d.containerEdits.deviceNodes.map((n) => [n.path, n.major, n.minor]),
      ]),
    ).toEqual([[`${claim.metadata.uid}-${dev}`, [[`/dev/davinci${phy}`, MAJOR.davinci, phy]]]]);
    expect(checkpoint()).toEqual({ [claim.metadata.uid!]: 'prepared' });

    const resourceId = `ascend.com/npu=${claim.metadata.uid}-${dev}`;
    let seen = '';
    const health = async (want: string): Promise<void> => {
      await pollUntil(
        async () => {
          const p = await cluster.core().readNamespacedPod({ name: 'watched', namespace: NS });
          const e = p.status?.containerStatuses?.[0]?.allocatedResourcesStatus?.find((r) => r.name === 'claim:npu');
          seen = (e?.resources ?? []).map((r) => `${r.resourceID}=${r.health}`).join(',');
          return seen === `${resourceId}=${want}`;
        },
        `the device ${want} in the pod status`,
        30_000,
        () => `last seen: ${seen}`,
        100,
      );
    };
    await health('Healthy');

    // 910b-8chip: logic id = phy id
    const t0 = performance.now();
    active.add(phy);
    await agent.mock({ op: 'fault', logicId: phy, eventId: FAULT, assertion: 'occur' });
    await pollUntil(
      async () => ((await device(dev))?.taints ?? []).length > 0,
      `the taint on ${dev}`,
      10_000,
      undefined,
      20,
    );
    process.stdout.write(`fault → taint (agent, real API server): ${(performance.now() - t0).toFixed(0)} ms\n`);
    expect((await device(dev))!.taints).toEqual([
      expect.objectContaining({ key: 'npu.huawei.com/RestartRequest', effect: 'NoSchedule' }),
    ]);
    await health('Unhealthy');

    const other = phy === 7 ? 6 : phy + 1;
    await claimAndPod('pick', WHOLE, {
      selector: `device.attributes['npu.huawei.com'].physicId in [${phy}, ${other}]`,
    });
    expect(await untilAllocated('pick')).toEqual([`ascend910-${other}`]);

    await agent.mock({ op: 'fault', logicId: phy, eventId: FAULT, assertion: 'recover' });
    active.delete(phy);
    await pollUntil(async () => (await device(dev))?.taints === undefined, 'the taint lifted', 10_000, undefined, 50);
    await health('Healthy');
    await cleanUp(['watched', 'pick']);
  }, 120_000);
});

describe('issue [DRA] Done when: today’s pods through DRA', () => {
  test('a pod asking for huawei.com/Ascend910: 2 with no claim: allocated through DRA, prepared, annotated (spec I.3)', async () => {
    await cluster.core().createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'today' },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: 'c0', image: 'registry.k8s.io/pause:3.10', resources: { limits: { 'huawei.com/Ascend910': '2' } } },
          ],
        },
      },
    });
    const claimName = await pollUntil(
      async () =>
        (await cluster.core().readNamespacedPod({ name: 'today', namespace: NS })).status?.extendedResourceClaimStatus
          ?.resourceClaimName,
      'the extended-resource claim of the pod',
      30_000,
      () => cluster.tail('kube-scheduler', 15),
      100,
    );
    const devices = await untilAllocated(claimName);
    expect(devices).toHaveLength(2);
    await untilRunning('today');
    const claim = await readClaim(claimName);
    expect(checkpoint()).toEqual({ [claim.metadata.uid!]: 'prepared' });
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
      undefined,
      100,
    );
    await cleanUp(['today']);
  }, 90_000);
});

describe('issue [DRA] Done when: vNPU partitions', () => {
  test('two claims for partitions of one chip fit and are prepared; a third that would over-commit it stays pending', async () => {
    const onChip0 = "device.attributes['npu.huawei.com'].physicId == 0";
    await claimAndPod('part-a', PART, { selector: onChip0 });
    await claimAndPod('part-b', PART, { selector: onChip0 });
    const a = await untilAllocated('part-a');
    const b = await untilAllocated('part-b');
    expect([...a, ...b].sort()).toEqual(['ascend910-0-vir10-3c-16g-0', 'ascend910-0-vir10-3c-16g-1']);
    await untilRunning('part-a');
    await untilRunning('part-b');
    await claimAndPod('part-c', PART, { selector: onChip0 });
    await untilUnschedulable('part-c');
    expect(allocated(await readClaim('part-c'))).toEqual([]);
    await cleanUp(['part-a', 'part-b', 'part-c']);
  }, 90_000);
});

describe('issue [DRA] Done when: the agent restarted during NodePrepare', () => {
  test('kill -9 after the intent is checkpointed: back up, kubelet retries, one claim prepared, one CDI spec', async () => {
    await agent.stop();
    const doomed = await startAgent({ [DRA_CRASH_ENV]: 'prepare-intent' });
    await claimAndPod('interrupted', WHOLE);
    const exit = await doomed.waitExit(30_000);
    expect(exit.signal).toBe('SIGKILL');
    const claim = await readClaim('interrupted');
    expect(checkpoint()[claim.metadata.uid!]).toBe('preparing'); // nothing of it counts as prepared
    await startAgent();
    // kubelet syncs a pod on every update of it: a label now instead of waiting out its retry period (10 s and more)
    await cluster.kubectl(['label', 'pod', 'interrupted', '-n', NS, 'retry=now']);
    await untilRunning('interrupted', 60_000);
    expect(checkpoint()).toEqual({ [claim.metadata.uid!]: 'prepared' });
    const specs = fs.readdirSync(cdiDir()).filter((f) => f.startsWith('ascend.com-npu_'));
    expect(specs).toEqual([`ascend.com-npu_${claim.metadata.uid}.json`]);
    await cleanUp(['interrupted']);
  }, 120_000);
});
