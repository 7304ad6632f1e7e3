/**
 * The shipped RBAC of Ascend910A5 nodes (deploy/overlays/a5; docs/rbac.md): the API stand-in enforces what
 * `kubectl apply -k deploy/overlays/a5` creates, and the built agent runs on an Ascend950 scenario with its
 * service-account token. A.2 step 8 (the merge patch of nodes/status that removes huawei.com/Ascend910) is allowed
 * and needed there, and nothing the agent does at start is denied. The 910 overlay does not grant nodes/status
 * (test/integration/rbac.test.ts: "the agent cannot PATCH …/status").
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { RbacGate, loadRbacFiles, serviceAccountUser, ADMIN_USER } from '../../src/sim/kube-api-rbac.js';
import { AgentSandbox, NODE_NAME } from '../helpers/agent-process.js';
import { RBAC_RENDERED_A5 } from '../deploy/deploy-files.js';

const AGENT_TOKEN = 'agent-a5-sa-token';
const ADMIN_TOKEN = 'stand-in-token';
const AGENT = serviceAccountUser('kube-system', 'ascend-npu-agent', {
  'authentication.kubernetes.io/node-name': [NODE_NAME],
});
const gate = new RbacGate({
  policy: loadRbacFiles(RBAC_RENDERED_A5.map((f) => path.join(PROJECT_ROOT, f))),
  users: { [ADMIN_TOKEN]: ADMIN_USER, [AGENT_TOKEN]: AGENT },
});
let sb: AgentSandbox;

beforeAll(async () => {
  sb = await AgentSandbox.create(path.join(PROJECT_ROOT, 'scenarios', '950-8chip.json'), {
    api: { gate },
    token: AGENT_TOKEN,
  });
  // the Node as the previous (910) device plugin left it: huawei.com/Ascend910 in capacity and allocatable
  const t = sb.api.resourceType('', 'nodes');
  const node = sb.api.store.get(t, undefined, NODE_NAME)!;
  const res = { 'huawei.com/Ascend910': '8', cpu: '64' };
  sb.api.store.update(t, undefined, NODE_NAME, { ...node, status: { capacity: res, allocatable: res } }, 'status');
  await sb.start([], {}, { resource: 'huawei.com/npu' });
  await sb.until(() => sb.deviceInfo(), 'the first device-info write');
}, 60_000);

afterAll(async () => {
  await sb.close();
}, 30_000);

describe('deploy/overlays/a5: the RBAC of the agent on Ascend910A5 nodes', () => {
  test('A.2 step 8 under the shipped A5 RBAC: huawei.com/Ascend910 leaves the capacity and allocatable', async () => {
    const node = await sb.until(
      () => (sb.node()?.status?.capacity?.['huawei.com/Ascend910'] === undefined ? sb.node() : undefined),
      'the capacity without huawei.com/Ascend910',
    );
    expect([node.status?.capacity, node.status?.allocatable]).toEqual([{ cpu: '64' }, { cpu: '64' }]);
  }, 30_000);

  test('no request of the A5 agent at start was denied, and it ran as its service account', () => {
    const denied = gate.denied().filter((r) => r.attributes.user.username === AGENT.username);
    expect(denied.map((r) => `${r.method} ${r.url}`)).toEqual([]);
    expect(gate.decisions(AGENT.username).length).toBeGreaterThan(10);
  });

  test('the nodes/status grant of deploy/components/a5-node-status was used (patch of its own Node status)', () => {
    const grants = gate.authorizer.grantsOf(AGENT).filter((g) => g.resource === 'nodes/status');
    expect(grants.map((g) => [g.role, g.verb])).toEqual([['ClusterRole ascend-npu-agent-node-status', 'patch']]);
    const unused = new Set(gate.unusedGrants(AGENT).map((g) => g.key));
    expect(grants.filter((g) => unused.has(g.key))).toEqual([]);
  });
});
