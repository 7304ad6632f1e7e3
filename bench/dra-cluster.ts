/**
 * Issue [DRA] figures on the real control plane of issue [R] (bench/README.md "dra-cluster"): the built agent with
 * `-deviceApi=dra` next to a real kubelet, as test/k8s/suites/dra-agent.test.ts runs it.
 * - fault → taint: a fault injected through the mock until the taint is in the ResourceSlice the real API server
 *   serves (a watch of the slices, no polling delay), and recovery → taint lifted; chips taken in turn;
 * - slice writes per minute on an idle node: every slice event the watch sees during a minute without changes;
 * - NodePrepareResources as the real kubelet calls it: the agent's own answer time (its debug log `DRA call answered`)
 *   for one claim per pod, rounds of one pod per chip made at once.
 * Needs root and the built Kubernetes binaries (`npm run test:cluster` builds them). Run:
 * `npx tsx bench/dra-cluster.ts` (it re-runs itself in a private mount namespace, as test/k8s/run.ts does).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DRA_DRIVER } from '../src/core/dra-devices.js';
import type { ResourceSlice } from '../src/dra/dra-types.js';
import { KubeClient } from '../src/kube/kube-client.js';
import { AGENT_JS, AgentProcess } from '../test/helpers/agent-process.js';
import { makeCharDevices } from '../test/dra/helpers.js';
import { ClusterAgent } from '../test/k8s/harness/agent.js';
import { Cluster, RUN_ROOT_ENV } from '../test/k8s/harness/cluster.js';
import { pollUntil } from '../test/k8s/harness/component.js';
import { currentMountNamespace, HOST_MNT_NS_ENV } from '../test/k8s/harness/host-view.js';
import { percentile } from './stats.js';

const FAULTS = Number(process.env.BENCH_FAULTS ?? 40);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const IDLE_MS = Number(process.env.BENCH_IDLE_S ?? 60) * 1000;
const FAULT = '80C98002'; // RestartRequest: NoSchedule, no reset (-hotReset=-1), no FaultFrequency rule

async function bench(): Promise<void> {
  const cluster = await Cluster.start();
  try {
    const agent = ClusterAgent.create(cluster);
    makeCharDevices(path.join(agent.dir, 'dev'), 16);
    const root = cluster.kubeletRootDir;
    const child = spawn(
      process.execPath,
      [
        AGENT_JS,
        ...agent.flags([
          '-deviceApi=dra',
          '-logLevel=-1',
          `-kubeletPluginsDir=${path.join(root, 'plugins')}`,
          `-kubeletRegistryDir=${path.join(root, 'plugins_registry')}`,
          `-cdiDir=${path.join(agent.dir, 'cdi')}`,
        ]),
      ],
      {
        env: {
          PATH: process.env.PATH,
          NODE_NAME: cluster.nodeName,
          ASCEND_MOCK_SCENARIO: agent.scenario,
          ASCEND_MOCK_CONTROL: agent.control,
          CONTAINERD_ADDRESS: path.join(agent.dir, 'containerd.sock'),
        },
      },
    );
    cluster.own(child);
    const p = new AgentProcess(child);
    agent.process = p;
    await pollUntil(() => p.logs().some((l) => l.msg === 'registered with kubelet (DRA)'), 'registration', 30_000);
    const admin = new KubeClient({
      server: cluster.server,
      ca: Buffer.from(cluster.pki!.caPem),
      token: cluster.adminToken,
    });
    // the node's slices as the API server serves them, kept current by a watch; each event counted
    const devices = new Map<string, { taints?: unknown[] }>();
    let events = 0;
    const waiters = new Set<() => void>();
    await admin.watch(
      '/apis/resource.k8s.io/v1/resourceslices',
      { fieldSelector: `spec.nodeName=${cluster.nodeName},spec.driver=${DRA_DRIVER}` },
      (_type, obj) => {
        events++;
        for (const d of (obj as ResourceSlice).spec.devices ?? []) devices.set(d.name, d);
        for (const w of waiters) w();
      },
      () => undefined,
    );
    const until = (cond: () => boolean): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (!cond()) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    await until(() => devices.has('ascend910-7'));
    const tainted = (name: string): boolean =>
      (devices.get(name)?.taints ?? []).some((t) => (t as { key?: string }).key === 'npu.huawei.com/RestartRequest');

    const taint: number[] = [];
    const lift: number[] = [];
    for (let i = 0; i < FAULTS; i++) {
      const chip = i % 8;
      const name = `ascend910-${chip}`;
      let t0 = performance.now();
      await agent.mock({ op: 'fault', logicId: chip, eventId: FAULT, assertion: 'occur' });
      await until(() => tainted(name));
      taint.push(performance.now() - t0);
      t0 = performance.now();
      await agent.mock({ op: 'fault', logicId: chip, eventId: FAULT, assertion: 'recover' });
      await until(() => !tainted(name));
      lift.push(performance.now() - t0);
    }

    await new Promise((r) => setTimeout(r, 5000)); // the last write settled
    const before = events;
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idle = events - before;
    const fmt = (xs: number[]): string => {
      const q = (p: number): string => percentile(xs, p).toFixed(1);
      return `n=${xs.length} p50 ${q(50)} ms, p99 ${q(99)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
    };
    console.log(`fault → taint in the served slice: ${fmt(taint)}`);
    console.log(`recovery → taint lifted:           ${fmt(lift)}`);
    console.log(`slice events during ${IDLE_MS / 1000} s idle: ${idle}`);

    await cluster.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'DeviceClass',
        metadata: { name: DRA_DRIVER },
        spec: { selectors: [{ cel: { expression: `device.driver == "${DRA_DRIVER}"` } }] },
      }),
    );
    const core = cluster.core();
    // rounds of one pod per chip, all at once; a pod not Running within 60 s is reported, not waited for
    for (let round = 0; round < ROUNDS; round++) {
      const names = Array.from({ length: 8 }, (_, i) => `bench-${round}-${i}`);
      for (const name of names) {
        await cluster.kubectl(
          ['apply', '-f', '-'],
          JSON.stringify({
            apiVersion: 'resource.k8s.io/v1',
            kind: 'ResourceClaim',
            metadata: { name, namespace: 'default' },
            spec: { devices: { requests: [{ name: 'npu', exactly: { deviceClassName: DRA_DRIVER } }] } },
          }),
        );
        await core.createNamespacedPod({
          namespace: 'default',
          body: {
            metadata: { name },
            spec: {
              terminationGracePeriodSeconds: 0,
              resourceClaims: [{ name: 'npu', resourceClaimName: name }],
              containers: [
                { name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { claims: [{ name: 'npu' }] } },
              ],
            },
          },
        });
      }
      const running = async (): Promise<number> =>
        (await core.listNamespacedPod({ namespace: 'default' })).items.filter((x) => x.status?.phase === 'Running')
          .length;
      await pollUntil(async () => (await running()) === names.length, `round ${round} Running`, 60_000).catch(
        async (err: unknown) => {
          const pods = (await core.listNamespacedPod({ namespace: 'default' })).items;
          const stuck = pods.filter((x) => x.status?.phase !== 'Running');
          console.log(`round ${round}: ${stuck.length} pods not Running (${String(err).slice(0, 80)})`);
          for (const x of stuck) console.log(`  ${x.metadata?.name}: ${JSON.stringify(x.status?.conditions)}`);
        },
      );
      for (const name of names) await core.deleteNamespacedPod({ name, namespace: 'default', gracePeriodSeconds: 0 });
      await pollUntil(
        async () => !(await core.listNamespacedPod({ namespace: 'default' })).items.length,
        'gone',
        60_000,
      );
      await cluster.kubectl(['delete', 'resourceclaims', '--all', '-n', 'default', '--wait=true']);
    }
    const calls = p.logs().filter((l) => l.msg === 'DRA call answered');
    const prepare = calls.filter((l) => l.call === 'prepare').map((l) => Number(l.ms));
    const unprepare = calls.filter((l) => l.call === 'unprepare').map((l) => Number(l.ms));
    console.log(`NodePrepareResources (agent):      ${fmt(prepare)}`);
    console.log(`NodeUnprepareResources (agent):    ${fmt(unprepare)}`);
    console.log(
      `load average: ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
    admin.close();
  } finally {
    await cluster.stop();
  }
}

if (process.env[HOST_MNT_NS_ENV] === undefined) {
  // as test/k8s/run.ts: kubelet's mounts stay in a private mount namespace; the run root goes afterwards
  const runRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-k8s-bench-'));
  const r = spawnSync(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      process.execPath,
      ...process.execArgv,
      fileURLToPath(import.meta.url),
    ],
    {
      stdio: 'inherit',
      env: { ...process.env, [RUN_ROOT_ENV]: runRoot, [HOST_MNT_NS_ENV]: currentMountNamespace() },
    },
  );
  fs.rmSync(runRoot, { recursive: true, force: true });
  process.exit(r.status ?? 1);
} else {
  bench().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
