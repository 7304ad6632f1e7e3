/**
 * The DRA driver's admission policy (deploy/components/dra/admission-policy.yaml, in deploy/rendered/dra.yaml),
 * evaluated as kube-apiserver evaluates it (src/sim/kube-api-admission.ts: CEL over the AdmissionRequest with Go's
 * omitempty): every write of a ResourceSlice it matches — create, update, delete, by the agent of the node, of another
 * node, without a node, by someone else — evaluates without error (with `failurePolicy: Fail` an error would be a
 * 422 for that write, issue [R] defect 3), and the decisions are the ones docs/rbac.md promises. The real API server
 * proves the same both ways in test/k8s/suites/dra-api.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { beforeAll, describe, expect, test } from '@jest/globals';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import {
  PolicyEvaluator,
  ruleMatches,
  type AdmissionAttributes,
  type AdmissionOperation,
  type BindingObject,
  type PolicyObject,
} from '../../src/sim/kube-api-admission.js';
import { serviceAccountUser, type UserInfo } from '../../src/sim/kube-api-rbac.js';
import type { KubeObject } from '../../src/sim/kube-api-types.js';

type Doc = Record<string, unknown>;
const docs = yaml
  .loadAll(fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/rendered/dra.yaml'), 'utf8'))
  .filter((d): d is Doc => typeof d === 'object' && d !== null);
const POLICY = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy') as PolicyObject;
const BINDING = docs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding') as BindingObject;

const NODE = 'node-a';
const AGENT = serviceAccountUser('kube-system', 'ascend-npu-agent', {
  'authentication.kubernetes.io/node-name': [NODE],
});
const AGENT_NO_NODE = serviceAccountUser('kube-system', 'ascend-npu-agent');
const KUBELET: UserInfo = { username: `system:node:${NODE}`, groups: ['system:nodes', 'system:authenticated'] };
const SLICES = { group: 'resource.k8s.io', version: 'v1', plural: 'resourceslices', kind: 'ResourceSlice' };

const slice = (node: string | undefined, driver = DRA_DRIVER): KubeObject => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceSlice',
  metadata: { name: `${node ?? 'cluster'}-${driver}-0` },
  spec: {
    driver,
    ...(node !== undefined ? { nodeName: node } : { allNodes: true }),
    pool: { name: node ?? 'cluster', generation: 1, resourceSliceCount: 1 },
    devices: [{ name: 'ascend910-0' }],
  },
});

function write(op: AdmissionOperation, user: UserInfo, obj: KubeObject): AdmissionAttributes {
  return {
    operation: op,
    type: SLICES,
    name: obj.metadata!.name!,
    user,
    object: op === 'DELETE' ? null : obj,
    oldObject: op === 'CREATE' ? null : obj,
  };
}

interface Case {
  readonly what: string;
  readonly write: AdmissionAttributes;
  readonly denied?: 403;
}
const CASES: Case[] = [];
for (const op of ['CREATE', 'UPDATE', 'DELETE'] as const) {
  CASES.push(
    { what: `agent: ${op} a slice of its own node`, write: write(op, AGENT, slice(NODE)) },
    { what: `agent: ${op} a slice of another node`, write: write(op, AGENT, slice('node-b')), denied: 403 },
    {
      what: `agent: ${op} a slice of another driver on its node`,
      write: write(op, AGENT, slice(NODE, 'gpu.example.com')),
      denied: 403,
    },
    { what: `agent: ${op} a slice of no node (allNodes)`, write: write(op, AGENT, slice(undefined)), denied: 403 },
    { what: `agent without a node in its token: ${op}`, write: write(op, AGENT_NO_NODE, slice(NODE)), denied: 403 },
    { what: `kubelet: ${op} (its wipe at start) is not the policy's`, write: write(op, KUBELET, slice('node-b')) },
  );
}
CASES.push({
  what: 'agent: a slice without a spec at all (garbage) is refused, not an error',
  write: write('CREATE', AGENT, { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSlice', metadata: { name: 'x' } }),
  denied: 403,
});

let cel: PolicyEvaluator;
beforeAll(async () => {
  cel = await PolicyEvaluator.load();
});

describe('issue [DRA] 7 the admission policy of the DRA driver, in CEL', () => {
  test('deploy/rendered/dra.yaml holds the policy and its Deny binding', () => {
    expect(POLICY.metadata).toMatchObject({ name: 'ascend-npu-agent-own-slices' });
    expect(BINDING.spec).toEqual({ policyName: 'ascend-npu-agent-own-slices', validationActions: ['Deny'] });
  });

  test.each(CASES.map((c): [string, Case] => [c.what, c]))('%s: every expression evaluates without error', (_, c) => {
    expect(POLICY.spec!.matchConstraints!.resourceRules!.some((r) => ruleMatches(r, c.write))).toBe(true);
    const results = cel.explain(POLICY, c.write);
    const matched = results
      .filter((r) => r.where.startsWith('matchCondition'))
      .every((r) => 'value' in r.outcome && r.outcome.value === true);
    const relevant = matched ? results : results.filter((r) => r.where.startsWith('matchCondition'));
    expect(relevant.filter((r) => 'error' in r.outcome).map((r) => `${r.where}: ${JSON.stringify(r.outcome)}`)).toEqual(
      [],
    );
  });

  test.each(CASES.map((c): [string, Case] => [c.what, c]))('%s: the decision is the documented one', (_, c) => {
    const denial = cel.admit([POLICY], [BINDING], c.write);
    expect(denial === undefined ? undefined : [denial.code, denial.reason]).toEqual(
      c.denied === undefined ? undefined : [c.denied, 'Forbidden'],
    );
  });

  test("the denial names the agent's node and the slice's node and driver", () => {
    const denial = cel.admit([POLICY], [BINDING], write('CREATE', AGENT, slice('node-b')));
    expect(denial?.message).toContain(`ascend-npu-agent of node ${NODE} may write only the ResourceSlices`);
    expect(denial?.message).toContain('"node-b"');
  });
});
