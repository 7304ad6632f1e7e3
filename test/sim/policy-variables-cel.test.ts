/**
 * The stand-in's CEL of admission policies (issue [R] item 7, issue [DRA] item 7): a variable whose value is a map or
 * a list — `request.operation == 'DELETE' ? oldObject : object`, the shape the DRA slice policy uses — is read by
 * the later expressions as that map or list, as kube-apiserver reads it (not as an empty map).
 */
import { describe, expect, test } from '@jest/globals';
import { ADMIN_USER } from '../../src/sim/kube-api-rbac.js';
import { PolicyEvaluator, type AdmissionAttributes, type PolicyObject } from '../../src/sim/kube-api-admission.js';

const SLICES = { group: 'resource.k8s.io', version: 'v1', plural: 'resourceslices', kind: 'ResourceSlice' } as const;
const slice = { metadata: { name: 's' }, spec: { nodeName: 'node-a', devices: [{ name: 'd0' }, { name: 'd1' }] } };

const policy: PolicyObject = {
  metadata: { name: 'p' },
  spec: {
    variables: [
      { name: 'obj', expression: "request.operation == 'DELETE' ? oldObject : object" },
      { name: 'devices', expression: 'variables.obj.spec.devices' },
    ],
    validations: [
      { expression: "variables.obj.spec.nodeName == 'node-a'" },
      { expression: 'size(variables.devices) == 2' },
    ],
  },
};

const write = (operation: 'CREATE' | 'DELETE'): AdmissionAttributes => ({
  operation,
  type: SLICES,
  name: 's',
  user: ADMIN_USER,
  object: operation === 'DELETE' ? null : slice,
  oldObject: operation === 'DELETE' ? slice : null,
});

describe('issue [DRA] stand-in CEL: a variable holding `object` through a ternary', () => {
  test.each(['CREATE', 'DELETE'] as const)('%s: the later expressions read the object’s fields', async (op) => {
    const cel = await PolicyEvaluator.load();
    const out = cel.explain(policy, write(op)).filter((r) => r.where.startsWith('validation'));
    expect(out.map((r) => [r.where, r.outcome])).toEqual([
      ['validation 0', { value: true }],
      ['validation 1', { value: true }],
    ]);
  });
});
