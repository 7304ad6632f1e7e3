/**
 * Every CEL expression of every shipped ValidatingAdmissionPolicy (deploy/rendered/*.yaml), evaluated as
 * kube-apiserver evaluates it (src/sim/kube-api-admission.ts: @bufbuild/cel, the AdmissionRequest with Go's
 * omitempty) against representative writes of the programs and of what they must not do (issue [R] item 1, defect
 * 3: `request.subResource` does not exist on a request without a subresource; the expression errored and
 * `failurePolicy: Fail` refused every Node patch of the agent with 422). No expression may error on a write its
 * policy matches; the decisions are the ones docs/rbac.md promises.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { beforeAll, describe, expect, test } from '@jest/globals';
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
import { RENDERED_DIR } from './deploy-files.js';

type Doc = Record<string, unknown>;
const rendered = fs
  .readdirSync(path.join(PROJECT_ROOT, RENDERED_DIR))
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) =>
    yaml
      .loadAll(fs.readFileSync(path.join(PROJECT_ROOT, RENDERED_DIR, f), 'utf8'))
      .filter((d): d is Doc => typeof d === 'object' && d !== null)
      .map((d) => ({ file: f, doc: d })),
  );
const POLICIES = rendered.filter((r) => r.doc.kind === 'ValidatingAdmissionPolicy');
const BINDINGS = rendered.filter((r) => r.doc.kind === 'ValidatingAdmissionPolicyBinding');
const policy = (name: string): PolicyObject => POLICIES.find((p) => (p.doc.metadata as Doc).name === name)!.doc;
const AGENT_POLICY = 'ascend-npu-agent-own-node';
const CENTER_POLICY = 'ascend-fault-center-own-objects';

let cel: PolicyEvaluator;
beforeAll(async () => {
  cel = await PolicyEvaluator.load();
});

const NODE = 'node-a';
const AGENT = serviceAccountUser('kube-system', 'ascend-npu-agent', {
  'authentication.kubernetes.io/node-name': [NODE],
});
const AGENT_NO_NODE = serviceAccountUser('kube-system', 'ascend-npu-agent');
const CENTER = serviceAccountUser('cluster-system', 'ascend-fault-center');
const SOMEONE: UserInfo = { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] };

const node = (name: string, extra: Doc = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'kubernetes.io/hostname': name }, annotations: {} },
  spec: { podCIDR: '10.0.0.0/24' },
  status: {
    capacity: { cpu: '8', 'huawei.com/Ascend910': '8', pods: '110' },
    allocatable: { cpu: '8', 'huawei.com/Ascend910': '8', pods: '110' },
  },
  ...extra,
});
const pod = (nodeName: string | undefined, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'job-0', namespace: 'default', annotations },
  spec: { ...(nodeName !== undefined ? { nodeName } : {}), containers: [{ name: 'c', image: 'i' }] },
  status: { phase: 'Running' },
});
const configMap = (namespace: string, name: string, data: Doc = { k: 'v' }): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const lease = (namespace: string, name: string): KubeObject => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name, namespace },
  spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime: '2026-12-03T14:20:45.167000Z' },
});
const with_ = (o: KubeObject, change: (o: Doc) => void): KubeObject => {
  const c = structuredClone(o) as Doc;
  change(c);
  return c;
};

const NODES = { group: '', version: 'v1', plural: 'nodes', kind: 'Node' };
const PODS = { group: '', version: 'v1', plural: 'pods', kind: 'Pod' };
const CONFIGMAPS = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' };
const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease' };

interface Case {
  readonly what: string;
  readonly policy: string;
  readonly write: AdmissionAttributes;
  /** undefined: allowed; else the HTTP code of the denial. */
  readonly denied?: number;
}

function update(
  type: AdmissionAttributes['type'],
  user: UserInfo,
  old: KubeObject,
  next: KubeObject,
  subresource?: string,
): AdmissionAttributes {
  return {
    operation: 'UPDATE',
    type,
    ...(subresource !== undefined ? { subresource } : {}),
    ...(old.metadata?.namespace !== undefined ? { namespace: old.metadata.namespace } : {}),
    name: old.metadata!.name!,
    user,
    object: next,
    oldObject: old,
  };
}
function create(type: AdmissionAttributes['type'], user: UserInfo, obj: KubeObject): AdmissionAttributes {
  return {
    operation: 'CREATE',
    type,
    namespace: obj.metadata!.namespace!,
    name: obj.metadata!.name!,
    user,
    object: obj,
    oldObject: null,
  };
}

const labelled = (n: KubeObject): KubeObject =>
  with_(n, (o) => ((o.metadata as Doc).labels = { ...((o.metadata as Doc).labels as Doc), accelerator: 'x' }));
const withoutAscend = (n: KubeObject): KubeObject =>
  with_(n, (o) => {
    const s = o.status as { capacity: Doc; allocatable: Doc };
    delete s.capacity['huawei.com/Ascend910'];
    delete s.allocatable['huawei.com/Ascend910'];
  });

/** The writes of the programs (allowed) and what they must not do (denied), docs/rbac.md. */
const CASES: readonly Case[] = [
  // I.1, I.2: the start-up merge patch of its own Node's labels and annotations (no subresource: defect 3)
  {
    what: 'agent: labels of its own Node',
    policy: AGENT_POLICY,
    write: update(NODES, AGENT, node(NODE), labelled(node(NODE))),
  },
  {
    what: 'agent: labels of another Node',
    policy: AGENT_POLICY,
    write: update(NODES, AGENT, node('node-b'), labelled(node('node-b'))),
    denied: 403,
  },
  {
    what: 'agent: a taint on its own Node (spec)',
    policy: AGENT_POLICY,
    write: update(
      NODES,
      AGENT,
      node(NODE),
      with_(node(NODE), (o) => ((o.spec as Doc).unschedulable = true)),
    ),
    denied: 403,
  },
  {
    what: 'agent: its own Node that had no spec gets one',
    policy: AGENT_POLICY,
    write: update(
      NODES,
      AGENT,
      with_(node(NODE), (o) => delete o.spec),
      node(NODE),
    ),
    denied: 403,
  },
  {
    what: 'agent: labels of its own Node without status (a Node object just created)',
    policy: AGENT_POLICY,
    write: update(
      NODES,
      AGENT,
      with_(node(NODE), (o) => delete o.status),
      labelled(with_(node(NODE), (o) => delete o.status)),
    ),
  },
  // A.2 step 8 (A5): huawei.com/Ascend910 removed through nodes/status
  {
    what: 'agent: Ascend910 removed from its own Node status',
    policy: AGENT_POLICY,
    write: update(NODES, AGENT, node(NODE), withoutAscend(node(NODE)), 'status'),
  },
  {
    what: 'agent: another resource of its own Node status changed',
    policy: AGENT_POLICY,
    write: update(
      NODES,
      AGENT,
      node(NODE),
      with_(node(NODE), (o) => ((o.status as { capacity: Doc }).capacity.cpu = '64')),
      'status',
    ),
    denied: 403,
  },
  {
    what: 'agent: status of a Node without status before',
    policy: AGENT_POLICY,
    write: update(
      NODES,
      AGENT,
      with_(node(NODE), (o) => delete o.status),
      withoutAscend(node(NODE)),
      'status',
    ),
    denied: 403,
  },
  {
    what: 'agent: Ascend910 removed from the status of another Node',
    policy: AGENT_POLICY,
    write: update(NODES, AGENT, node('node-b'), withoutAscend(node('node-b')), 'status'),
    denied: 403,
  },
  // I.3: annotations of pods on its node
  {
    what: 'agent: annotations of a pod on its node',
    policy: AGENT_POLICY,
    write: update(PODS, AGENT, pod(NODE), pod(NODE, { 'huawei.com/Ascend910': 'Ascend910-0' })),
  },
  {
    what: 'agent: annotations of a pod on another node',
    policy: AGENT_POLICY,
    write: update(PODS, AGENT, pod('node-b'), pod('node-b', { a: 'b' })),
    denied: 403,
  },
  {
    what: 'agent: annotations of a pod not scheduled yet',
    policy: AGENT_POLICY,
    write: update(PODS, AGENT, pod(undefined), pod(undefined, { a: 'b' })),
    denied: 403,
  },
  {
    what: 'agent: the spec of a pod on its node',
    policy: AGENT_POLICY,
    write: update(
      PODS,
      AGENT,
      pod(NODE),
      with_(pod(NODE), (o) => ((o.spec as Doc).nodeName = 'node-b')),
    ),
    denied: 403,
  },
  // H.1, hot-reset §2.4/§2.5
  {
    what: 'agent: creates its own device-info ConfigMap',
    policy: AGENT_POLICY,
    write: create(CONFIGMAPS, AGENT, configMap('kube-system', `mindx-dl-deviceinfo-${NODE}`)),
  },
  {
    what: 'agent: updates its own device-info ConfigMap',
    policy: AGENT_POLICY,
    write: update(
      CONFIGMAPS,
      AGENT,
      configMap('kube-system', `mindx-dl-deviceinfo-${NODE}`),
      configMap('kube-system', `mindx-dl-deviceinfo-${NODE}`, { k: 'w' }),
    ),
  },
  {
    what: "agent: another node's device-info ConfigMap",
    policy: AGENT_POLICY,
    write: create(CONFIGMAPS, AGENT, configMap('kube-system', 'mindx-dl-deviceinfo-node-b')),
    denied: 403,
  },
  {
    what: 'agent: its device-info name in another namespace',
    policy: AGENT_POLICY,
    write: create(CONFIGMAPS, AGENT, configMap('default', `mindx-dl-deviceinfo-${NODE}`)),
    denied: 403,
  },
  {
    what: "agent: updates a job's reset-config ConfigMap",
    policy: AGENT_POLICY,
    write: update(
      CONFIGMAPS,
      AGENT,
      configMap('default', 'reset-config-job'),
      configMap('default', 'reset-config-job', {}),
    ),
  },
  {
    what: 'agent: creates a reset-config ConfigMap',
    policy: AGENT_POLICY,
    write: create(CONFIGMAPS, AGENT, configMap('default', 'reset-config-job')),
    denied: 403,
  },
  {
    what: 'agent: a token without a node name writes its Node',
    policy: AGENT_POLICY,
    write: update(NODES, AGENT_NO_NODE, node(NODE), labelled(node(NODE))),
    denied: 403,
  },
  {
    what: 'another user: any Node',
    policy: AGENT_POLICY,
    write: update(NODES, SOMEONE, node('node-b'), labelled(node('node-b'))),
  },
  // the fault center
  {
    what: 'fault center: its manual-info ConfigMap',
    policy: CENTER_POLICY,
    write: create(CONFIGMAPS, CENTER, configMap('cluster-system', 'clusterd-manual-info-cm')),
  },
  {
    what: 'fault center: a cluster-info-device chunk',
    policy: CENTER_POLICY,
    write: update(
      CONFIGMAPS,
      CENTER,
      configMap('mindx-dl', 'cluster-info-device-0'),
      configMap('mindx-dl', 'cluster-info-device-0', { k: 'w' }),
    ),
  },
  {
    what: 'fault center: clusterd-config-cm (read only)',
    policy: CENTER_POLICY,
    write: update(
      CONFIGMAPS,
      CENTER,
      configMap('cluster-system', 'clusterd-config-cm'),
      configMap('cluster-system', 'clusterd-config-cm', {}),
    ),
    denied: 403,
  },
  {
    what: 'fault center: a ConfigMap in another namespace',
    policy: CENTER_POLICY,
    write: create(CONFIGMAPS, CENTER, configMap('default', 'cluster-info-device-0')),
    denied: 403,
  },
  {
    what: 'fault center: its Lease',
    policy: CENTER_POLICY,
    write: create(LEASES, CENTER, lease('cluster-system', 'ascend-fault-center')),
  },
  {
    what: 'fault center: renews its Lease',
    policy: CENTER_POLICY,
    write: update(
      LEASES,
      CENTER,
      lease('cluster-system', 'ascend-fault-center'),
      lease('cluster-system', 'ascend-fault-center'),
    ),
  },
  {
    what: 'fault center: another Lease',
    policy: CENTER_POLICY,
    write: create(LEASES, CENTER, lease('kube-system', 'kube-scheduler')),
    denied: 403,
  },
];

const bindingsOf = (name: string): BindingObject[] =>
  BINDINGS.map((b) => b.doc as BindingObject).filter((b) => b.spec?.policyName === name);

describe('issue [R] item 1: the shipped admission policies evaluate without error', () => {
  test('deploy/rendered holds both policies, each with a binding', () => {
    // and the DRA component's own (deploy/rendered/dra.yaml; its cases: test/deploy/dra-admission-policy-cel.test.ts)
    expect(POLICIES.map((p) => (p.doc.metadata as Doc).name).sort()).toEqual(
      [CENTER_POLICY, AGENT_POLICY, 'ascend-npu-agent-own-slices'].sort(),
    );
    for (const p of POLICIES) expect(bindingsOf(String((p.doc.metadata as Doc).name))).toHaveLength(1);
  });

  test.each(CASES.map((c): [string, Case] => [c.what, c]))('%s: every expression evaluates without error', (_, c) => {
    const p = policy(c.policy);
    expect(p.spec!.matchConstraints!.resourceRules!.some((r) => ruleMatches(r, c.write))).toBe(true);
    const results = cel.explain(p, c.write);
    const matched = results
      .filter((r) => r.where.startsWith('matchCondition'))
      .every((r) => 'value' in r.outcome && r.outcome.value === true);
    // a request the match conditions leave out runs nothing else: only they must evaluate
    const relevant = matched ? results : results.filter((r) => r.where.startsWith('matchCondition'));
    expect(relevant.filter((r) => 'error' in r.outcome).map((r) => `${r.where}: ${JSON.stringify(r.outcome)}`)).toEqual(
      [],
    );
  });

  test.each(CASES.map((c): [string, Case] => [c.what, c]))('%s: the decision is the documented one', (_, c) => {
    const denial = cel.admit([policy(c.policy)], bindingsOf(c.policy), c.write);
    expect(denial === undefined ? undefined : [denial.code, denial.reason]).toEqual(
      c.denied === undefined ? undefined : [c.denied, 'Forbidden'],
    );
  });
});

describe('issue [R] item 1: every request shape a policy matches evaluates without error', () => {
  // every (resource, subresource, operation) a rule matches, by the agent and by the fault center, on their own
  // objects and on others: no expression may error (with failurePolicy Fail an error is a 422 for that write)
  interface Shape {
    what: string;
    policy: string;
    write: AdmissionAttributes;
  }
  const shapes: Shape[] = [];
  const objectOf: Record<string, (own: boolean) => KubeObject> = {
    nodes: (own) => node(own ? NODE : 'node-b'),
    pods: (own) => pod(own ? NODE : 'node-b'),
    configmaps: (own) => configMap('kube-system', own ? `mindx-dl-deviceinfo-${NODE}` : 'other'),
    leases: (own) => lease('cluster-system', own ? 'ascend-fault-center' : 'other'),
  };
  for (const name of [AGENT_POLICY, CENTER_POLICY]) {
    const rules = policy(name).spec!.matchConstraints!.resourceRules!;
    const user = name === AGENT_POLICY ? AGENT : CENTER;
    for (const rule of rules) {
      for (const res of rule.resources ?? []) {
        const [plural, sub] = res.split('/') as [string, string | undefined];
        const type = [NODES, PODS, CONFIGMAPS, LEASES].find((t) => t.plural === plural)!;
        for (const op of rule.operations ?? []) {
          for (const own of [true, false]) {
            const obj = objectOf[plural]!(own);
            const write: AdmissionAttributes =
              (op as AdmissionOperation) === 'CREATE'
                ? { ...create(type, user, obj), ...(sub !== undefined ? { subresource: sub } : {}) }
                : update(type, user, obj, labelled(obj), sub);
            shapes.push({ what: `${name} ${op} ${res} ${own ? 'own' : 'other'}`, policy: name, write });
          }
        }
      }
    }
  }

  test.each(shapes.map((s): [string, Shape] => [s.what, s]))('%s', (_, s) => {
    const errors = cel.explain(policy(s.policy), s.write).filter((r) => 'error' in r.outcome);
    expect(errors.map((r) => `${r.where}: ${JSON.stringify(r.outcome)}`)).toEqual([]);
  });
});

describe('the evaluator reports what kube-apiserver reports', () => {
  test('reading request.subResource on a request without one is an error ("no such key"), under Fail a 422', () => {
    const broken: PolicyObject = {
      metadata: { name: 'p' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }],
        },
        validations: [{ expression: "request.subResource == 'status'", reason: 'Forbidden' }],
      },
    };
    const write = update(NODES, AGENT, node(NODE), labelled(node(NODE)));
    expect(cel.explain(broken, write)[0]!.outcome).toEqual({ error: 'no such key: subResource' });
    const denial = cel.admit(
      [broken],
      [{ metadata: { name: 'b' }, spec: { policyName: 'p', validationActions: ['Deny'] } }],
      write,
    );
    expect([denial?.code, denial?.reason, denial?.message]).toEqual([
      422,
      'Invalid',
      `nodes "${NODE}" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ` +
        "expression 'request.subResource == 'status'' resulted in error: no such key: subResource",
    ]);
  });

  test('under failurePolicy Ignore the same error lets the write through', () => {
    const ignoring: PolicyObject = {
      metadata: { name: 'p' },
      spec: {
        failurePolicy: 'Ignore',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }],
        },
        validations: [{ expression: "request.subResource == 'status'" }],
      },
    };
    const write = update(NODES, AGENT, node(NODE), labelled(node(NODE)));
    expect(
      cel.admit(
        [ignoring],
        [{ metadata: { name: 'b' }, spec: { policyName: 'p', validationActions: ['Deny'] } }],
        write,
      ),
    ).toBeUndefined();
  });
});
