/**
 * A refused non-essential write does not stop the agent (issue [R] item 1, defect 4): the agent (dist/cli/agent.js,
 * a child process) runs against the API stand-in in its `admissionPolicies` mode with a ValidatingAdmissionPolicy
 * that refuses every Node write of the agent (403, as a mis-set policy or RBAC on a real cluster). Before the fix the
 * agent exited at start-up with status 1 ("cannot patch labels and annotations of node … after 3 tries"). Now it
 * registers with kubelet, writes device-info, counts the refusals in /metrics, and writes the labels as soon as the
 * refusal stops.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ADMIN_USER, serviceAccountUser, type UserInfo } from '../../src/sim/kube-api-rbac.js';
import { VALIDATING_ADMISSION_POLICIES, VALIDATING_ADMISSION_POLICY_BINDINGS } from '../../src/sim/kube-api.js';
import { AgentSandbox, NODE_NAME } from '../helpers/agent-process.js';

const AGENT_TOKEN = 'agent-sa-token';
const USERS: Record<string, UserInfo> = {
  'stand-in-token': ADMIN_USER,
  [AGENT_TOKEN]: serviceAccountUser('kube-system', 'ascend-npu-agent', {
    'authentication.kubernetes.io/node-name': [NODE_NAME],
  }),
};
/** Authentication only; the refusal comes from the policy. */
const gate = {
  admit: (_m: string, _u: URL, auth: string | undefined): UserInfo => {
    const u = USERS[(auth ?? '').replace(/^Bearer\s+/i, '')];
    if (u === undefined) throw new Error('unknown token');
    return u;
  },
};

let sb: AgentSandbox;

beforeAll(async () => {
  sb = await AgentSandbox.create(undefined, { api: { gate, admissionPolicies: true }, token: AGENT_TOKEN });
  sb.api.store.create(VALIDATING_ADMISSION_POLICIES, undefined, {
    metadata: { name: 'refuse-node-writes' },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }],
      },
      matchConditions: [
        {
          name: 'agent',
          expression: "request.userInfo.username == 'system:serviceaccount:kube-system:ascend-npu-agent'",
        },
      ],
      validations: [{ expression: 'false', message: 'node writes refused by the test', reason: 'Forbidden' }],
    },
  });
  sb.api.store.create(VALIDATING_ADMISSION_POLICY_BINDINGS, undefined, {
    metadata: { name: 'refuse-node-writes' },
    spec: { policyName: 'refuse-node-writes', validationActions: ['Deny'] },
  });
}, 30_000);

afterAll(async () => {
  await sb.close();
}, 30_000);

const refusedNode = (metrics: string): number =>
  Number(/^ascend_npu_agent_kube_writes_refused_total\{object="node",status="403"\} (\d+)/m.exec(metrics)?.[1] ?? 0);

describe('issue [R] item 1 (defect 4): a refused Node patch leaves the kubelet path and device-info working', () => {
  test('issue [R] 1: the agent keeps running, registers with kubelet, writes device-info and counts the refusals', async () => {
    const agent = await sb.start(); // resolves once kubelet has the device list (rejects if the agent exits)
    await sb.until(() => sb.deviceInfo(), 'the first device-info write', 20_000);
    const metrics = await sb.untilAsync(
      async () => {
        const m = await sb.metrics();
        return refusedNode(m) >= 3 ? m : undefined;
      },
      'three refused node patches in /metrics',
      20_000,
    );
    expect(refusedNode(metrics)).toBeGreaterThanOrEqual(3);
    expect(sb.node()?.metadata?.labels?.accelerator).toBeUndefined();
    expect(agent.child.exitCode).toBeNull();
    expect(agent.logs().some((l) => l.msg === 'node label/annotation patch failed')).toBe(true);
  }, 60_000);

  test('issue [R] 1: once the refusal stops, the labels and annotations are written without a restart', async () => {
    sb.api.store.delete(VALIDATING_ADMISSION_POLICY_BINDINGS, undefined, 'refuse-node-writes');
    await sb.until(() => sb.node()?.metadata?.labels?.accelerator, 'the Node labels', 40_000);
    expect(sb.node()?.metadata?.annotations?.baseDeviceInfos).toBeDefined();
    expect(sb.agent!.child.exitCode).toBeNull();
  }, 60_000);
});
