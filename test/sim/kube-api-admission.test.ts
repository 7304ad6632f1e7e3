/**
 * The stand-in's `admissionPolicies` mode (issue [R] item 7): the ValidatingAdmissionPolicies it stores are
 * enforced with the answers a real kube-apiserver 1.37 gave for the same writes (recorded by hand on one, see the
 * report of issue [R]): a denial with the reason's code and `ValidatingAdmissionPolicy '<p>' with binding '<b>'
 * denied request: <message>`, an expression error under failurePolicy Fail a 422.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { ADMIN_USER, serviceAccountUser, type UserInfo } from '../../src/sim/kube-api-rbac.js';
import {
  KubeApiStandIn,
  NODES,
  VALIDATING_ADMISSION_POLICIES,
  VALIDATING_ADMISSION_POLICY_BINDINGS,
  type KubeObject,
} from '../../src/sim/kube-api.js';

const AGENT = serviceAccountUser('kube-system', 'ascend-npu-agent', {
  'authentication.kubernetes.io/node-name': ['node-a'],
});
const USERS: Record<string, UserInfo> = { admin: ADMIN_USER, agent: AGENT };
/** Authentication only (RBAC is another test's concern): the token names the user. */
const gate = { admit: (_m: string, _u: URL, auth: string | undefined): UserInfo => USERS[(auth ?? '').slice(7)]! };

let api: KubeApiStandIn | undefined;
afterEach(async () => {
  await api?.stop();
  api = undefined;
});

async function standIn(admissionPolicies = true): Promise<KubeApiStandIn> {
  api = await KubeApiStandIn.start({ gate, admissionPolicies });
  for (const name of ['node-a', 'node-b']) {
    api.store.create(NODES, undefined, {
      metadata: { name },
      status: {
        capacity: { cpu: '8', 'huawei.com/Ascend910': '8' },
        allocatable: { cpu: '8', 'huawei.com/Ascend910': '8' },
      },
    });
  }
  return api;
}

async function call(
  s: KubeApiStandIn,
  token: string,
  method: string,
  p: string,
  body: unknown,
  ct = 'application/json',
) {
  const res = await fetch(s.url + p, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': ct },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
const patchNode = (s: KubeApiStandIn, name: string, body: unknown, sub = '') =>
  call(s, 'agent', 'PATCH', `/api/v1/nodes/${name}${sub}`, body, 'application/merge-patch+json');

/** The shipped policies, applied as `kubectl apply -f deploy/rendered/admission-policies.yaml` would (POST). */
async function applyShipped(s: KubeApiStandIn): Promise<void> {
  const docs = yaml.loadAll(
    fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/rendered/admission-policies.yaml'), 'utf8'),
  ) as KubeObject[];
  for (const d of docs) {
    const plural =
      d.kind === 'ValidatingAdmissionPolicy' ? 'validatingadmissionpolicies' : 'validatingadmissionpolicybindings';
    const r = await call(s, 'admin', 'POST', `/apis/admissionregistration.k8s.io/v1/${plural}`, d);
    expect(r.status).toBe(201);
  }
}

const POLICY =
  "ValidatingAdmissionPolicy 'ascend-npu-agent-own-node' with binding 'ascend-npu-agent-own-node' denied request";

describe('issue [R] item 7: the stand-in enforces the ValidatingAdmissionPolicies it stores', () => {
  test('the agent patches the labels of its own Node: allowed (the write that failed with 422 on a real cluster)', async () => {
    const s = await standIn();
    await applyShipped(s);
    const r = await patchNode(s, 'node-a', { metadata: { labels: { accelerator: 'huawei-Ascend910' } } });
    expect(r.status).toBe(200);
  });

  test('the labels of another Node: 403 with the real server message', async () => {
    const s = await standIn();
    await applyShipped(s);
    const r = await patchNode(s, 'node-b', { metadata: { labels: { accelerator: 'huawei-Ascend910' } } });
    expect([r.status, r.body.reason, r.body.message]).toEqual([
      403,
      'Forbidden',
      `nodes "node-b" is forbidden: ${POLICY}: ascend-npu-agent of node node-a may change only the labels and annotations of its own Node, not of Node node-b`,
    ]);
    expect(r.body.details).toMatchObject({ name: 'node-b', kind: 'nodes' });
  });

  test('nodes/status: Ascend910 removed is allowed, another capacity changed is 403', async () => {
    const s = await standIn();
    await applyShipped(s);
    const drop = {
      status: { capacity: { 'huawei.com/Ascend910': null }, allocatable: { 'huawei.com/Ascend910': null } },
    };
    expect((await patchNode(s, 'node-a', drop, '/status')).status).toBe(200);
    const r = await patchNode(s, 'node-a', { status: { capacity: { cpu: '64' } } }, '/status');
    expect([r.status, r.body.message]).toEqual([
      403,
      `nodes "node-a" is forbidden: ${POLICY}: ascend-npu-agent of node node-a may only remove huawei.com/Ascend910 from the capacity and allocatable of its own Node, not change the status of Node node-a`,
    ]);
  });

  test('an expression that errors under failurePolicy Fail: 422 Invalid naming the expression and the error', async () => {
    const s = await standIn();
    s.store.create(VALIDATING_ADMISSION_POLICIES, undefined, {
      metadata: { name: 'p' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }],
        },
        validations: [{ expression: "request.subResource == 'status'", reason: 'Forbidden' }],
      },
    });
    s.store.create(VALIDATING_ADMISSION_POLICY_BINDINGS, undefined, {
      metadata: { name: 'b' },
      spec: { policyName: 'p', validationActions: ['Deny'] },
    });
    const r = await patchNode(s, 'node-a', { metadata: { labels: { a: 'b' } } });
    expect([r.status, r.body.reason, r.body.message]).toEqual([
      422,
      'Invalid',
      `nodes "node-a" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'request.subResource == 'status'' resulted in error: no such key: subResource`,
    ]);
    expect(s.store.get(NODES, undefined, 'node-a')?.metadata?.labels).toBeUndefined();
  });

  test('off by default: the policy types are not served and nothing is enforced', async () => {
    const s = await standIn(false);
    const r = await fetch(s.url + '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', {
      headers: { authorization: 'Bearer admin' },
    });
    expect(r.status).toBe(404);
    expect((await patchNode(s, 'node-b', { metadata: { labels: { a: 'b' } } })).status).toBe(200);
  });
});
