/**
 * The policy both ways (issue [R] item 1): requests the agent and the fault center must not make, each refused by the
 * shipped RBAC or admission policy with 403, and requests they do make, allowed, as data; and the API stand-in set up
 * as the real server of manifests.test.ts (the same RBAC files, the same policies, the same tokens and objects), so
 * that each request can be sent to both and the answers compared.
 */
import path from 'node:path';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import {
  ADMIN_USER,
  loadRbacFiles,
  RbacGate,
  serviceAccountUser,
  type UserInfo,
} from '../../../src/sim/kube-api-rbac.js';
import {
  CONFIGMAPS,
  KubeApiStandIn,
  NODES,
  PODS,
  VALIDATING_ADMISSION_POLICIES,
  VALIDATING_ADMISSION_POLICY_BINDINGS,
  type ResourceType,
} from '../../../src/sim/kube-api.js';
import { rawRequest, type RawAnswer } from '../harness/raw-api.js';
import { AGENT_NS, CENTER_NS, PAUSE_IMAGE, renderedDocs } from '../harness/shipped.js';

/** The node of the suite's cluster (`Cluster`'s default) and the agent's stand-in pod on it (harness/shipped.ts). */
export const NODE = 'npu-node';
export const AGENT_POD = 'ascend-npu-agent-910-host';

/** Who sends a request: the agent's pod-bound token, the fault center's, or the agent's service account unbound. */
export type Who = 'agent' | 'center' | 'agent-unbound';

/** One request and the answer the real server must give. */
export interface PolicyCase {
  readonly what: string;
  readonly who: Who;
  readonly method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly body?: unknown;
  readonly contentType?: string;
  /** 403 with `reason` Forbidden and a message containing `message`; or allowed (`status` 200/201). */
  readonly expect: { readonly status: number; readonly reason: string; readonly message: string };
}

const MERGE = 'application/merge-patch+json';
const AGENT_POLICY =
  "ValidatingAdmissionPolicy 'ascend-npu-agent-own-node' with binding 'ascend-npu-agent-own-node' denied request: ";
const CENTER_POLICY =
  "ValidatingAdmissionPolicy 'ascend-fault-center-own-objects' with binding 'ascend-fault-center-own-objects' denied request: ";
const AGENT_USER = 'User "system:serviceaccount:kube-system:ascend-npu-agent"';
const CENTER_USER = 'User "system:serviceaccount:cluster-system:ascend-fault-center"';
const forbidden = (message: string) => ({ status: 403, reason: 'Forbidden', message });
const allowed = (status: 200 | 201) => ({ status, reason: '', message: '' });
const configMap = (namespace: string, name: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { probe: '1' },
});
const cmPath = (namespace: string, name = '') =>
  `/api/v1/namespaces/${namespace}/configmaps${name === '' ? '' : `/${name}`}`;
const deviceInfoOnly = (name: string) =>
  `${AGENT_POLICY}ascend-npu-agent of node ${NODE} may write ConfigMap kube-system/mindx-dl-deviceinfo-${NODE} and update reset-config-* / fault-config-* ConfigMaps only, not ${name}`;

/** What the agent and the fault center must not do: each refused with 403. */
export const REFUSED: readonly PolicyCase[] = [
  {
    what: "agent creates another node's device-info ConfigMap",
    who: 'agent',
    method: 'POST',
    path: cmPath(AGENT_NS),
    body: configMap(AGENT_NS, 'mindx-dl-deviceinfo-third-node'),
    expect: forbidden(deviceInfoOnly('kube-system/mindx-dl-deviceinfo-third-node')),
  },
  {
    what: "agent replaces another node's device-info ConfigMap",
    who: 'agent',
    method: 'PUT',
    path: cmPath(AGENT_NS, 'mindx-dl-deviceinfo-other-node'),
    body: configMap(AGENT_NS, 'mindx-dl-deviceinfo-other-node'),
    expect: forbidden(deviceInfoOnly('kube-system/mindx-dl-deviceinfo-other-node')),
  },
  {
    what: 'agent patches a ConfigMap (it replaces its device-info, never patches)',
    who: 'agent',
    method: 'PATCH',
    path: cmPath(AGENT_NS, `mindx-dl-deviceinfo-${NODE}`),
    body: { data: { probe: '1' } },
    contentType: MERGE,
    expect: forbidden(
      `${AGENT_USER} cannot patch resource "configmaps" in API group "" in the namespace "kube-system"`,
    ),
  },
  {
    what: "agent labels another node's Node",
    who: 'agent',
    method: 'PATCH',
    path: '/api/v1/nodes/other-node',
    body: { metadata: { labels: { 'ascend-test/probe': '1' } } },
    contentType: MERGE,
    expect: forbidden(
      `${AGENT_POLICY}ascend-npu-agent of node ${NODE} may change only the labels and annotations of its own Node, not of Node other-node`,
    ),
  },
  {
    what: 'agent creates a ConfigMap in another namespace',
    who: 'agent',
    method: 'POST',
    path: cmPath('default'),
    body: configMap('default', 'agent-notes'),
    expect: forbidden(`${AGENT_USER} cannot create resource "configmaps" in API group "" in the namespace "default"`),
  },
  {
    what: 'agent creates a ConfigMap of another name in kube-system',
    who: 'agent',
    method: 'POST',
    path: cmPath(AGENT_NS),
    body: configMap(AGENT_NS, 'agent-notes'),
    expect: forbidden(deviceInfoOnly('kube-system/agent-notes')),
  },
  {
    what: 'agent replaces the ConfigMap it only reads (mindx-dl-fault-config)',
    who: 'agent',
    method: 'PUT',
    path: cmPath(AGENT_NS, 'mindx-dl-fault-config'),
    body: configMap(AGENT_NS, 'mindx-dl-fault-config'),
    expect: forbidden(deviceInfoOnly('kube-system/mindx-dl-fault-config')),
  },
  {
    what: 'agent cordons its own Node (spec.unschedulable)',
    who: 'agent',
    method: 'PATCH',
    path: `/api/v1/nodes/${NODE}`,
    body: { spec: { unschedulable: true } },
    contentType: MERGE,
    expect: forbidden(`${AGENT_POLICY}ascend-npu-agent of node ${NODE} may change only the labels and annotations`),
  },
  {
    what: "agent changes its own Node's taints",
    who: 'agent',
    method: 'PATCH',
    path: `/api/v1/nodes/${NODE}`,
    body: { spec: { taints: [{ key: 'ascend-test/probe', value: '1', effect: 'NoSchedule' }] } },
    contentType: MERGE,
    expect: forbidden(`${AGENT_POLICY}ascend-npu-agent of node ${NODE} may change only the labels and annotations`),
  },
  {
    what: "agent patches its own Node's status",
    who: 'agent',
    method: 'PATCH',
    path: `/api/v1/nodes/${NODE}/status`,
    body: { status: { capacity: { [`huawei.com/Ascend910`]: '16' } } },
    contentType: MERGE,
    expect: forbidden(`${AGENT_USER} cannot patch resource "nodes/status" in API group "" at the cluster scope`),
  },
  {
    what: 'agent annotates a pod on another node',
    who: 'agent',
    method: 'PATCH',
    path: '/api/v1/namespaces/default/pods/on-other-node',
    body: { metadata: { annotations: { 'huawei.com/AscendReal': 'Ascend910-0' } } },
    contentType: MERGE,
    expect: forbidden(
      `${AGENT_POLICY}ascend-npu-agent of node ${NODE} may change only the annotations of pods on its node, not of pod default/on-other-node`,
    ),
  },
  {
    what: 'agent deletes its own device-info ConfigMap',
    who: 'agent',
    method: 'DELETE',
    path: cmPath(AGENT_NS, `mindx-dl-deviceinfo-${NODE}`),
    expect: forbidden(
      `${AGENT_USER} cannot delete resource "configmaps" in API group "" in the namespace "kube-system"`,
    ),
  },
  {
    what: 'agent with a token not bound to a pod writes its own device-info',
    who: 'agent-unbound',
    method: 'PUT',
    path: `${cmPath(AGENT_NS, `mindx-dl-deviceinfo-${NODE}`)}?dryRun=All`,
    body: configMap(AGENT_NS, `mindx-dl-deviceinfo-${NODE}`),
    expect: forbidden(`${AGENT_POLICY}the token of ascend-npu-agent carries no node name`),
  },
  {
    what: 'fault center creates a ConfigMap of another name in cluster-system',
    who: 'center',
    method: 'POST',
    path: cmPath(CENTER_NS),
    body: configMap(CENTER_NS, 'not-mine'),
    expect: forbidden(
      `${CENTER_POLICY}ascend-fault-center may write only its own ConfigMaps, not cluster-system/not-mine`,
    ),
  },
  {
    what: 'fault center creates a ConfigMap in mindx-dl not named cluster-info-device-<m>',
    who: 'center',
    method: 'POST',
    path: cmPath('mindx-dl'),
    body: configMap('mindx-dl', 'cluster-info-device-summary'),
    expect: forbidden(
      `${CENTER_POLICY}ascend-fault-center may write only its own ConfigMaps, not mindx-dl/cluster-info-device-summary`,
    ),
  },
  {
    what: 'fault center creates a Lease of another name',
    who: 'center',
    method: 'POST',
    path: `/apis/coordination.k8s.io/v1/namespaces/${CENTER_NS}/leases`,
    body: {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'other-lease', namespace: CENTER_NS },
      spec: { holderIdentity: 'x', leaseDurationSeconds: 15 },
    },
    expect: forbidden(
      `${CENTER_POLICY}ascend-fault-center may write only its own Lease, not cluster-system/other-lease`,
    ),
  },
  {
    what: 'fault center replaces the policy ConfigMap it only reads',
    who: 'center',
    method: 'PUT',
    path: cmPath(CENTER_NS, 'clusterd-config-cm'),
    body: configMap(CENTER_NS, 'clusterd-config-cm'),
    expect: forbidden(
      `${CENTER_USER} cannot update resource "configmaps" in API group "" in the namespace "cluster-system"`,
    ),
  },
  {
    what: 'fault center creates a device-info ConfigMap in kube-system',
    who: 'center',
    method: 'POST',
    path: cmPath(AGENT_NS),
    body: configMap(AGENT_NS, 'mindx-dl-deviceinfo-third-node'),
    expect: forbidden(
      `${CENTER_USER} cannot create resource "configmaps" in API group "" in the namespace "kube-system"`,
    ),
  },
];

/** Writes of the kinds the programs make, allowed (dry runs on the real server: nothing changes). */
export const ALLOWED: readonly PolicyCase[] = [
  {
    what: 'agent labels its own Node',
    who: 'agent',
    method: 'PATCH',
    path: `/api/v1/nodes/${NODE}?dryRun=All`,
    body: { metadata: { labels: { 'ascend-test/probe': '1' } } },
    contentType: MERGE,
    expect: allowed(200),
  },
  {
    what: 'agent annotates a pod on its node',
    who: 'agent',
    method: 'PATCH',
    path: `/api/v1/namespaces/${AGENT_NS}/pods/${AGENT_POD}?dryRun=All`,
    body: { metadata: { annotations: { 'huawei.com/AscendReal': 'Ascend910-0' } } },
    contentType: MERGE,
    expect: allowed(200),
  },
  {
    what: 'agent replaces its own device-info ConfigMap',
    who: 'agent',
    method: 'PUT',
    path: `${cmPath(AGENT_NS, `mindx-dl-deviceinfo-${NODE}`)}?dryRun=All`,
    body: configMap(AGENT_NS, `mindx-dl-deviceinfo-${NODE}`),
    expect: allowed(200),
  },
  {
    what: "agent replaces a job's reset-config-<job> ConfigMap",
    who: 'agent',
    method: 'PUT',
    path: `${cmPath('default', 'reset-config-job1')}?dryRun=All`,
    body: configMap('default', 'reset-config-job1'),
    expect: allowed(200),
  },
  {
    what: 'fault center creates cluster-info-device-7',
    who: 'center',
    method: 'POST',
    path: `${cmPath('mindx-dl')}?dryRun=All`,
    body: configMap('mindx-dl', 'cluster-info-device-7'),
    expect: allowed(201),
  },
];

/** The objects the cases name (besides the node and the agent's pod), created on both servers. */
export function seedObjects(): Record<string, unknown>[] {
  return [
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'other-node' } },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'on-other-node', namespace: 'default' },
      spec: { nodeName: 'other-node', containers: [{ name: 'c0', image: PAUSE_IMAGE }] },
    },
    { ...configMap(AGENT_NS, 'mindx-dl-deviceinfo-other-node'), data: {} },
    { ...configMap(AGENT_NS, 'mindx-dl-fault-config'), data: {} },
    {
      ...configMap('default', 'reset-config-job1'),
      metadata: { name: 'reset-config-job1', namespace: 'default', labels: { reset: 'true' } },
    },
  ];
}

/** The stand-in playing the real server of the suite; `request` sends a case with the same token as there. */
export interface StandInServer {
  request(k: PolicyCase): Promise<RawAnswer>;
  stop(): Promise<void>;
}

/**
 * The API stand-in with the shipped RBAC (`RbacGate`) and policies (`admissionPolicies`), the tokens of the real
 * cluster mapped to the users the real server makes of them, and the objects the cases name.
 */
export async function startStandIn(o: { tokens: Record<Who, string>; adminToken: string }): Promise<StandInServer> {
  const node = { 'authentication.kubernetes.io/node-name': [NODE] };
  const users: Record<string, UserInfo> = {
    [o.adminToken]: ADMIN_USER,
    [o.tokens.agent]: serviceAccountUser(AGENT_NS, 'ascend-npu-agent', node),
    [o.tokens['agent-unbound']]: serviceAccountUser(AGENT_NS, 'ascend-npu-agent'),
    [o.tokens.center]: serviceAccountUser(CENTER_NS, 'ascend-fault-center', node),
  };
  const gate = new RbacGate({
    policy: loadRbacFiles(
      ['deploy/rendered/910.yaml', 'deploy/rendered/fault-center.yaml'].map((f) => path.join(PROJECT_ROOT, f)),
    ),
    users,
  });
  const api = await KubeApiStandIn.start({ gate, admissionPolicies: true });
  const types: Record<string, ResourceType> = {
    ValidatingAdmissionPolicy: VALIDATING_ADMISSION_POLICIES,
    ValidatingAdmissionPolicyBinding: VALIDATING_ADMISSION_POLICY_BINDINGS,
    Node: NODES,
    Pod: PODS,
    ConfigMap: CONFIGMAPS,
  };
  const objects = [
    ...renderedDocs('deploy/rendered/admission-policies.yaml'),
    { kind: 'Node', metadata: { name: NODE } },
    {
      kind: 'Pod',
      metadata: { name: AGENT_POD, namespace: AGENT_NS },
      spec: { nodeName: NODE, containers: [{ name: 'agent', image: PAUSE_IMAGE }] },
    },
    { kind: 'ConfigMap', metadata: { name: `mindx-dl-deviceinfo-${NODE}`, namespace: AGENT_NS }, data: {} },
    { kind: 'ConfigMap', metadata: { name: 'clusterd-config-cm', namespace: CENTER_NS }, data: {} },
    ...seedObjects(),
  ];
  for (const obj of objects) {
    const t = types[String(obj.kind)];
    if (t === undefined) throw new Error(`no stand-in type for ${String(obj.kind)}`);
    const ns = (obj.metadata as { namespace?: string }).namespace;
    api.store.create(t, ns, obj);
  }
  return {
    request: (k) =>
      rawRequest({ server: api.url }, o.tokens[k.who], k.method, k.path, k.body, k.contentType ?? 'application/json'),
    stop: () => api.stop(),
  };
}
