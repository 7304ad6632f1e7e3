/**
 * The shipped RBAC is sufficient and least-privilege (issue [I] item 5, issue [K] item 9): the API stand-in enforces
 * the Roles, ClusterRoles and bindings that `deploy/rendered/` installs (kube-api-rbac.ts: a request outside them gets kube-apiserver's
 * 403), the agent (dist/cli/agent.js) and the fault center (dist/cli/fault-center.js) run as child processes with
 * their service-account tokens through their normal flows, and then: no request was denied, and every grant
 * (binding × rule × verb × resource × name) was needed by some request (see `AuthorizationDecision.grant`).
 *
 * The tests of this file run in order on one sandbox: each drives one flow, the last two check the outcome.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { KEY_MANUALLY_SEPARATE } from '../../src/kube/device-info.js';
import { ANNOTATION_ASCEND_REAL } from '../../src/kube/pod-annotator.js';
import {
  ADMIN_USER,
  RbacGate,
  loadRbacFiles,
  serviceAccountUser,
  type Grant,
  type UserInfo,
} from '../../src/sim/kube-api-rbac.js';
import { CONFIGMAPS, CORE_EVENTS, LEASES, PODS, VOLCANO_PODGROUPS } from '../../src/sim/kube-api.js';
import { allPartNames } from '../../src/cluster/persisted-state.js';
import { operatorRelease } from '../../src/sim/simulate.js';
import { AgentSandbox, FREQUENCY_CODE, NODE_NAME, RESOURCE, SEPARATE_CODE, listed } from '../helpers/agent-process.js';
import { RBAC_RENDERED } from '../deploy/deploy-files.js';

const AGENT_TOKEN = 'agent-sa-token';
const CENTER_TOKEN = 'fault-center-sa-token';
/** The token of the stand-in's own kubeconfig (`api.kubeConfig()`): the test acts as cluster administrator. */
const ADMIN_TOKEN = 'stand-in-token';
/** The agent's token is pod-bound: it carries the node name (what admission-policy.yaml reads). */
const AGENT = serviceAccountUser('kube-system', 'ascend-npu-agent', {
  'authentication.kubernetes.io/node-name': [NODE_NAME],
});
const CENTER = serviceAccountUser('cluster-system', 'ascend-fault-center');
/** RestartNPU (faultCode.json): task policy `reset`, the online flow (hot-reset §3.7). */
const RESTART_NPU = '8C03A000';
const JOB = 'job1';
const ALL = [0, 1, 2, 3, 4, 5, 6, 7];
const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');

/**
 * Grants no flow of this file needs, each with the reason it is shipped. Empty: every grant is used (a grant added
 * to deploy/ without a flow that needs it fails the last test until it is exercised or listed here with a reason).
 */
const ALLOWED_UNUSED: Readonly<Record<string, string>> = {};
/**
 * The base parts of the fault center's persisted state (docs/fault-center.md "Persisted state"): written only once
 * the state outgrows its head (512 KiB), which the flows here do not reach; test/integration/fault-center-state.test.ts
 * writes and reads them under the same RBAC.
 */
const STATE_PARTS: ReadonlySet<string> = new Set(allPartNames('ascend-fault-center'));

const gate = new RbacGate({
  // what `kubectl apply -k deploy/overlays/910` and `deploy/overlays/fault-center` create (test/deploy/manifests.test.ts)
  policy: loadRbacFiles(RBAC_RENDERED.map((f) => path.join(PROJECT_ROOT, f))),
  users: { [ADMIN_TOKEN]: ADMIN_USER, [AGENT_TOKEN]: AGENT, [CENTER_TOKEN]: CENTER },
});
let sb: AgentSandbox;
let center: ChildProcess | undefined;
let centerErr = '';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const cm = (ns: string, name: string) =>
  sb.api.store.get(CONFIGMAPS, ns, name) as { data?: Record<string, string> } | undefined;
const denials = (user: UserInfo) => gate.denied().filter((r) => r.attributes.user.username === user.username);

/** A public-fault message (cluster-faults §2.1, §2.5) of `n` faults on this node, from sender CCAE. */
function publicFault(id: string, n: number, code: string): string {
  const now = Date.now();
  return JSON.stringify({
    id,
    timestamp: now,
    version: '1.0',
    resource: 'CCAE',
    faults: Array.from({ length: n }, (_, i) => ({
      faultId: `${id}-${i}`,
      faultType: 'Storage',
      faultCode: code,
      faultTime: now - 1000,
      assertion: 'occur',
      influence: [{ nodeName: NODE_NAME, deviceIds: [i % 8] }],
    })),
  });
}

function publicFaultConfigMap(name: string, message: string) {
  return {
    metadata: { name, namespace: 'default', labels: { 'mc-consumer-publicfault': 'true' } },
    data: { PublicFault: message },
  };
}

beforeAll(async () => {
  sb = await AgentSandbox.create(undefined, { api: { gate, extraResources: [VOLCANO_PODGROUPS] }, token: AGENT_TOKEN });
  // the manual-separation policy (cluster-faults §1.2): threshold 1, so one counted fault separates
  sb.api.store.create(CONFIGMAPS, 'cluster-system', {
    metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' },
    data: {
      'manually_separate_policy.conf':
        'enabled: true\nseparate:\n  fault_window_hours: 24\n  fault_threshold: 1\nrelease:\n  fault_free_hours: 48\n',
    },
  });
}, 30_000);

afterAll(async () => {
  if (center !== undefined && center.exitCode === null) {
    const done = new Promise((r) => center!.once('exit', r));
    center.kill('SIGTERM');
    await done;
  }
  await sb.close();
}, 30_000);

describe('deploy/ RBAC enforced by the API stand-in, agent and fault center through their flows', () => {
  test('agent: start (Node labels, pod and ConfigMap watches, first device-info write)', async () => {
    const agent = await sb.start();
    await sb.until(() => sb.deviceInfo(), 'the first device-info write');
    await sb.until(() => sb.node()?.metadata?.labels?.accelerator, 'the Node labels');
    expect(agent.child.exitCode).toBeNull();
  }, 30_000);

  test('agent: a fault and its recovery (ConfigMap updates, Events)', async () => {
    await sb.mock({ op: 'fault', logicId: 5, eventId: SEPARATE_CODE, assertion: 'occur' });
    await sb.until(() => sb.health('Ascend910-5') === 'Unhealthy', 'Unhealthy');
    await sb.until(() => sb.events().some((e) => e.reason === 'Occur'), 'an Occur Event');
    await sb.mock({ op: 'fault', logicId: 5, eventId: SEPARATE_CODE, assertion: 'recover' });
    await sb.until(() => sb.health('Ascend910-5') === 'Healthy', 'Healthy again');
  }, 30_000);

  test('agent: FaultFrequency → ManuallySeparateNPU, then an operator release', async () => {
    for (const assertion of ['occur', 'recover', 'occur'] as const) {
      await sb.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion });
      if (assertion === 'recover') await sb.until(() => sb.health('Ascend910-3') === 'Healthy', 'recovered');
    }
    await sb.until(() => listed(sb.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE], 'Ascend910-3'), 'separated');
    await sb.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'recover' });
    expect(await operatorRelease(sb.core(), NODE_NAME, 'Ascend910-3')).toBe(true);
    await sb.until(() => sb.health('Ascend910-3') === 'Healthy', 'Healthy after the release', 15_000);
  }, 40_000);

  test('agent: a pod kubelet allocated a chip to is annotated', async () => {
    await sb.core().createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'train-0', namespace: 'default' },
        spec: {
          nodeName: NODE_NAME,
          containers: [{ name: 'c0', image: 'x', resources: { limits: { [RESOURCE]: '1' } } }],
        },
      },
    });
    await sb.kubelet.allocate(RESOURCE, [['Ascend910-2']], { namespace: 'default', name: 'train-0' });
    await sb.until(
      () =>
        (sb.api.store.get(PODS, 'default', 'train-0') as { metadata?: { annotations?: Record<string, string> } })
          ?.metadata?.annotations?.[ANNOTATION_ASCEND_REAL],
      'the pod annotations',
    );
    await sb.core().deleteNamespacedPod({ namespace: 'default', name: 'train-0' });
  }, 30_000);

  test('fault center: Lease, device-info intake and the published cluster-info-device-0', async () => {
    const dir = path.join(sb.dir, 'fault-center');
    fs.mkdirSync(dir);
    const kubeconfig = path.join(dir, 'kubeconfig');
    await sb.api.writeKubeconfig(kubeconfig, CENTER_TOKEN);
    center = spawn(
      process.execPath,
      [
        FAULT_CENTER_JS,
        `-kubeconfig=${kubeconfig}`,
        '-metricsAddress=127.0.0.1:0',
        '-grpcAddress=127.0.0.1:0',
        '-identity=it-center',
        `-stateDir=${dir}`,
        '-cycleMs=200',
        '-manualTickMs=500',
        '-leaseRetryPeriodMs=200',
        '-countJoblessFaults=true',
        '-logLevel=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    center.stderr!.on('data', (d: Buffer) => (centerErr += d.toString()));
    const lease = await sb.until(
      () => sb.api.store.get(LEASES, 'cluster-system', 'ascend-fault-center') as { spec?: { holderIdentity?: string } },
      `the Lease (${centerErr})`,
      15_000,
    );
    expect(lease.spec?.holderIdentity).toBe('it-center');
    await sb.until(
      () =>
        cm('mindx-dl', 'cluster-info-device-0')?.data?.['cluster-info-device-0']?.includes(
          `mindx-dl-deviceinfo-${NODE_NAME}`,
        ),
      'the agent node in cluster-info-device-0',
      15_000,
    );
    // a renewal of the Lease (update) follows within the retry period
    await sleep(600);
  }, 30_000);

  test('fault center: a device fault in the agent ConfigMap separates the chip (clusterd-manual-info-cm, state)', async () => {
    await sb.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'occur' });
    const written = await sb.until(
      () => cm('cluster-system', 'clusterd-manual-info-cm')?.data?.[NODE_NAME],
      'manual-info written',
      15_000,
    );
    expect(written).toContain('Ascend910-1');
    await sb.until(() => cm('cluster-system', 'ascend-fault-center-state')?.data?.state, 'counter state persisted');
    await sb.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'recover' });
    await sb.until(() => sb.health('Ascend910-1') === 'Healthy', 'chip 1 Healthy again in kubelet');
  }, 30_000);

  test('fault center: a public-fault ConfigMap is collected and persisted in statistic-fault-info', async () => {
    await sb.core().createNamespacedConfigMap({
      namespace: 'default',
      body: publicFaultConfigMap('ccae-fault', publicFault('msg.rbac-0001', 1, '010001001')),
    });
    await sb.until(
      () => cm('cluster-system', 'statistic-fault-info')?.data?.PublicFaults?.includes('msg.rbac-0001-0'),
      'public faults persisted',
      15_000,
    );
  }, 30_000);

  test('fault center: an operator release deletes clusterd-manual-info-cm', async () => {
    await sb.core().replaceNamespacedConfigMap({
      name: 'clusterd-manual-info-cm',
      namespace: 'cluster-system',
      body: { metadata: { name: 'clusterd-manual-info-cm', namespace: 'cluster-system' }, data: {} },
    });
    await sb.until(
      () => cm('cluster-system', 'clusterd-manual-info-cm') === undefined,
      'the ConfigMap deleted',
      15_000,
    );
  }, 30_000);

  test('fault center: an invalid policy edit is rejected with an Event', async () => {
    await sb.core().replaceNamespacedConfigMap({
      name: 'clusterd-config-cm',
      namespace: 'cluster-system',
      body: {
        metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' },
        data: { 'manually_separate_policy.conf': 'enabled: maybe\n' },
      },
    });
    await sb.until(
      () => sb.api.store.list(CORE_EVENTS, 'cluster-system').some((e) => JSON.stringify(e).includes('PolicyRejected')),
      'the PolicyRejected Event',
      15_000,
    );
  }, 30_000);

  test('fault center: over 4,500 public faults only the count is merge-patched (cluster-faults §2.10)', async () => {
    for (let i = 0; i < 46; i++) {
      sb.api.store.create(
        CONFIGMAPS,
        'default',
        publicFaultConfigMap(`bulk-${i}`, publicFault(`msg.bulk-${i}`, 100, '010001001')),
      );
    }
    await sb.until(
      () => {
        const n = cm('cluster-system', 'statistic-fault-info')?.data?.FaultNum;
        return n !== undefined && (JSON.parse(n) as { publicFaultNum: number }).publicFaultNum > 4500;
      },
      'the patched count',
      20_000,
    );
  }, 40_000);

  test('agent: restarted with -hotReset=1, a RestartNPU in a job writes reset-config-<job> and fault-config-<job>', async () => {
    sb.agent!.child.kill('SIGTERM');
    expect((await sb.agent!.waitExit()).code).toBe(0);
    await sb.start(['-hotReset=1', '-resetTimePercent=5']);
    const core = sb.core();
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: {
        metadata: { name: `reset-config-${JOB}`, namespace: 'default', labels: { reset: 'true' } },
        data: { 'reset.json': '{"status":"initializing"}', checkCode: '' },
      },
    });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: `fault-config-${JOB}`, namespace: 'default' }, data: {} },
    });
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: {
          name: `${JOB}-w1`,
          namespace: 'default',
          labels: { 'volcano.sh/job-name': JOB },
          annotations: {
            'volcano.sh/job-name': JOB,
            [RESOURCE]: ALL.map((i) => `Ascend910-${i}`).join(','),
            'hccl/rankIndex': '1',
          },
        },
        spec: {
          nodeName: NODE_NAME,
          containers: [{ name: 'c0', image: 'x', resources: { limits: { [RESOURCE]: '8' } } }],
        },
      },
    });
    const landed = path.join(sb.dir, 'host', 'user/restore/reset', `default.reset-config-${JOB}`, 'reset.json');
    await sb.until(() => fs.existsSync(landed), 'the reset file landing (the agent saw the ConfigMap)', 15_000);
    await sb.mock({ op: 'fault', logicId: 6, eventId: RESTART_NPU, assertion: 'occur' });
    await sb.until(() => cm('default', `reset-config-${JOB}`)?.data?.checkCode, 'the reset-config write', 15_000);
    await sb.until(() => cm('default', `fault-config-${JOB}`)?.data?.['fault-npus'], 'the fault-config write', 15_000);
  }, 60_000);

  test('no request of the agent or the fault center was denied', () => {
    expect(denials(AGENT).map((r) => `${r.method} ${r.url}`)).toEqual([]);
    expect(denials(CENTER).map((r) => `${r.method} ${r.url}`)).toEqual([]);
    // both really ran as their service accounts
    expect(gate.decisions(AGENT.username).length).toBeGreaterThan(10);
    expect(gate.decisions(CENTER.username).length).toBeGreaterThan(10);
  });

  test('every granted permission was needed by some request (or is listed with a reason)', () => {
    const isStatePart = (g: Grant): boolean => g.resourceName !== undefined && STATE_PARTS.has(g.resourceName);
    const unused = (u: UserInfo): string[] =>
      gate
        .unusedGrants(u)
        .filter((g) => !isStatePart(g))
        .map((g: Grant) => g.key)
        .filter((k) => ALLOWED_UNUSED[k] === undefined);
    expect({ agent: unused(AGENT), faultCenter: unused(CENTER) }).toEqual({ agent: [], faultCenter: [] });
    expect(gate.authorizer.grantsOf(AGENT).length).toBeGreaterThan(0);
  });
});

describe('requests outside the shipped roles get 403 as from kube-apiserver', () => {
  async function call(
    token: string,
    method: string,
    p: string,
    body?: unknown,
  ): Promise<{ status: number; message: string }> {
    const res = await fetch(`${sb.api.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, message: ((await res.json()) as { message?: string }).message ?? '' };
  }
  const before = { agent: 0, center: 0 };
  beforeAll(() => {
    before.agent = denials(AGENT).length;
    before.center = denials(CENTER).length;
  });

  test('the agent cannot create a ConfigMap outside kube-system', async () => {
    expect(
      await call(AGENT_TOKEN, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x' } }),
    ).toEqual({
      status: 403,
      message:
        'configmaps is forbidden: User "system:serviceaccount:kube-system:ascend-npu-agent" cannot create resource "configmaps" in API group "" in the namespace "default"',
    });
  });

  test.each([
    [
      'PATCH',
      `/api/v1/nodes/${NODE_NAME}/status`,
      'patch resource "nodes/status" in API group "" at the cluster scope',
    ],
    ['PUT', `/api/v1/nodes/${NODE_NAME}`, 'update resource "nodes" in API group "" at the cluster scope'],
    [
      'GET',
      '/api/v1/namespaces/default/pods/job1-w1',
      'get resource "pods" in API group "" in the namespace "default"',
    ],
    [
      'POST',
      '/api/v1/namespaces/default/events',
      'create resource "events" in API group "" in the namespace "default"',
    ],
    [
      'GET',
      '/api/v1/namespaces/kube-system/secrets',
      'list resource "secrets" in API group "" in the namespace "kube-system"',
    ],
    ['DELETE', '/api/v1/namespaces/kube-system/configmaps/mindx-dl-fault-config', 'delete resource "configmaps"'],
  ])('the agent cannot %s %s', async (method, p, what) => {
    const r = await call(
      AGENT_TOKEN,
      method,
      p,
      method === 'GET' || method === 'DELETE' ? undefined : { metadata: {} },
    );
    expect([r.status, r.message]).toEqual([403, expect.stringContaining(`ascend-npu-agent" cannot ${what}`)]);
  });

  test('the fault center cannot write the policy ConfigMap', async () => {
    const body = { metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' } };
    expect(
      await call(CENTER_TOKEN, 'PUT', '/api/v1/namespaces/cluster-system/configmaps/clusterd-config-cm', body),
    ).toEqual({
      status: 403,
      message:
        'configmaps "clusterd-config-cm" is forbidden: User "system:serviceaccount:cluster-system:ascend-fault-center" cannot update resource "configmaps" in API group "" in the namespace "cluster-system"',
    });
  });

  test.each([
    ['GET', '/api/v1/namespaces/kube-system/configmaps/kubeadm-config', 'get resource "configmaps"'],
    ['DELETE', '/api/v1/namespaces/cluster-system/configmaps/statistic-fault-info', 'delete resource "configmaps"'],
    ['PUT', '/apis/coordination.k8s.io/v1/namespaces/cluster-system/leases/other', 'update resource "leases"'],
    ['PATCH', '/api/v1/nodes/it-node', 'patch resource "nodes"'],
  ])('the fault center cannot %s %s', async (method, p, what) => {
    const r = await call(
      CENTER_TOKEN,
      method,
      p,
      method === 'GET' || method === 'DELETE' ? undefined : { metadata: {} },
    );
    expect([r.status, r.message]).toEqual([403, expect.stringContaining(`ascend-fault-center" cannot ${what}`)]);
  });

  test("RBAC alone lets the agent replace another node's device-info ConfigMap: only admission-policy.yaml refuses it", async () => {
    // documented limit (docs/rbac.md): a DaemonSet's Role cannot name the node; the stand-in does not run the policy
    const p = '/api/v1/namespaces/kube-system/configmaps/mindx-dl-deviceinfo-other-node';
    const r = await call(AGENT_TOKEN, 'PUT', p, { metadata: { name: 'mindx-dl-deviceinfo-other-node' } });
    expect(r.status).toBe(404); // authorized, then not found
  });

  test('each refusal above is recorded as a denial of that service account', () => {
    expect([denials(AGENT).length - before.agent, denials(CENTER).length - before.center]).toEqual([7, 5]);
  });
});
