/**
 * The fault center's list reads against the real kube-apiserver (issue [P] item 6; the real thing is the contract):
 * each input list the center asks for as protobuf (src/cluster/list-protobuf.ts) is answered as protobuf by the real
 * server, and decodes to what the center reads of the same list asked for as JSON — device-info ConfigMaps (§0.1),
 * pods (§1.3), Volcano PodGroups as metadata only (§1.4, a custom resource), public-fault ConfigMaps (§2.1) and the
 * Nodes' metadata (§2.5, the serial numbers). The objects carry what the decoder must get right: labels,
 * annotations with non-ASCII text, a `__proto__` data key, empty values, owner references with and without
 * `controller`, a cluster-scoped object's empty namespace. Only the control plane runs (no kubelet).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import https from 'node:https';
import {
  decodeProtobufList,
  LIST_ACCEPT,
  METADATA_LIST_ACCEPT,
  type ProtobufListKind,
} from '../../../src/cluster/list-protobuf.js';
import { RawConfigMapWriter } from '../../../src/cluster/raw-configmap-writer.js';
import { Cluster } from '../harness/cluster.js';
import { PODGROUP_CRD } from '../harness/volcano.js';

let c: Cluster;

const owner = (name: string, uid: string, controller?: boolean) => ({
  apiVersion: 'batch.volcano.sh/v1alpha1',
  kind: 'Job',
  name,
  uid,
  ...(controller !== undefined ? { controller } : {}),
});

const OBJECTS = [
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'default' } },
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'mindx-dl-deviceinfo-node-a', namespace: 'kube-system', labels: { 'mx-consumer-cim': 'true' } },
    data: { DeviceInfoCfg: '{"DeviceInfo":{"DeviceList":{},"UpdateTime":1}}', ['__proto__']: 'x', empty: '' },
  },
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'mindx-dl-deviceinfo-node-b',
      namespace: 'kube-system',
      labels: { 'mx-consumer-cim': 'true', other: 'x-1' },
      annotations: { note: 'über 中文' },
    },
    data: { DeviceInfoCfg: '{}' },
  },
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'public-fault-1', namespace: 'default', labels: { 'mc-consumer-publicfault': 'true' } },
    data: { PublicFault: '{"id":"m1","faults":[]}' },
  },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'train-0',
      namespace: 'default',
      ownerReferences: [owner('job-0', '00000000-0000-0000-0000-000000000001', true)],
      annotations: { 'ascend.kubectl.kubernetes.io/ascend-910-configuration': '{"devices":[{"device_id":"3"}]}' },
    },
    spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'x' }], automountServiceAccountToken: false },
  },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'unscheduled', namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'x' }], automountServiceAccountToken: false },
  },
  {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-a', annotations: { 'product-serial-number': 'SN-A' }, labels: { a: 'b' } },
  },
  { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-b' } },
];

/** A PodGroup in `default`, with a Volcano Job as owner when `job` is given. */
const podGroup = (name: string, job?: { name: string; uid: string; controller: boolean }) => ({
  apiVersion: 'scheduling.volcano.sh/v1beta1',
  kind: 'PodGroup',
  metadata: {
    name,
    namespace: 'default',
    ...(job !== undefined ? { ownerReferences: [owner(job.name, job.uid, job.controller)] } : {}),
  },
  spec: { minMember: 1 },
});

const POD_GROUPS = [
  podGroup('pg-0', { name: 'job-0', uid: '00000000-0000-0000-0000-000000000001', controller: true }),
  podGroup('pg-1', { name: 'job-1', uid: '00000000-0000-0000-0000-000000000002', controller: false }),
  podGroup('pg-2'),
];

beforeAll(async () => {
  c = await Cluster.start({ controlPlaneOnly: true });
  await c.kubectl(['apply', '-f', '-'], JSON.stringify(PODGROUP_CRD));
  await c.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/podgroups.scheduling.volcano.sh']);
  await c.kubectl(['apply', '-f', '-'], OBJECTS.map((o) => JSON.stringify(o)).join('\n'));
  // the CRD's storage may lag behind its Established condition for a moment
  for (let i = 0; ; i++) {
    try {
      await c.kubectl(['create', '-f', '-'], POD_GROUPS.map((o) => JSON.stringify(o)).join('\n'));
      break;
    } catch (e) {
      if (i >= 50) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}, 180_000);

afterAll(async () => {
  await c?.stop();
});

/** GET `p` as the admin with `accept`: the answer's content type and bytes. */
function get(p: string, accept: string): Promise<{ status: number; contentType: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const url = new URL(p, c.server);
    const req = https.request(
      url,
      { ca: c.pki!.caPem, timeout: 30_000, headers: { authorization: `Bearer ${c.adminToken}`, accept } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (b: Buffer) => chunks.push(b));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${p}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

type Json = Record<string, unknown>;

/** What the decoder keeps of a JSON list item (the module comment of list-protobuf.ts), in the same shape. */
function projection(item: Json, kind: ProtobufListKind): Json {
  const m = (item.metadata ?? {}) as Json;
  const meta: Json = {};
  for (const k of ['name', 'namespace', 'uid', 'resourceVersion', 'labels', 'annotations'] as const) {
    if (m[k] !== undefined && m[k] !== '') meta[k] = m[k];
  }
  if (Array.isArray(m.ownerReferences)) {
    meta.ownerReferences = (m.ownerReferences as Json[]).map((r) => {
      const o: Json = {};
      for (const k of ['apiVersion', 'kind', 'name', 'uid', 'controller'] as const) if (r[k] !== undefined) o[k] = r[k];
      return o;
    });
  }
  const out: Json = { metadata: meta };
  if (kind === 'ConfigMap' && item.data !== undefined) out.data = item.data;
  if (kind === 'Pod') {
    const spec = (item.spec ?? {}) as Json;
    out.spec = spec.nodeName !== undefined ? { nodeName: spec.nodeName } : {};
  }
  return out;
}

const LISTS: [string, string, ProtobufListKind, number][] = [
  [
    '§0.1 device-info ConfigMaps',
    '/api/v1/namespaces/kube-system/configmaps?labelSelector=mx-consumer-cim%3Dtrue',
    'ConfigMap',
    2,
  ],
  ['§1.3 pods', '/api/v1/pods', 'Pod', 2],
  ['§1.4 Volcano PodGroups, metadata only', '/apis/scheduling.volcano.sh/v1beta1/podgroups', 'Metadata', 3],
  ['§2.1 public-fault ConfigMaps', '/api/v1/configmaps?labelSelector=mc-consumer-publicfault%3Dtrue', 'ConfigMap', 1],
  ['§2.5 Nodes, metadata only', '/api/v1/nodes', 'Metadata', 2],
];

describe('issue [P] item 6: the center lists as protobuf on the real kube-apiserver', () => {
  test.each(LISTS)(
    '%s: answered as protobuf, decoded to what the center reads of the JSON list',
    async (_what, p, kind, count) => {
      const pb = await get(p, kind === 'Metadata' ? METADATA_LIST_ACCEPT : LIST_ACCEPT);
      expect([pb.status, pb.contentType]).toEqual([200, 'application/vnd.kubernetes.protobuf']);
      const decoded = decodeProtobufList(pb.body, kind);
      const json = await get(p, 'application/json');
      expect(json.status).toBe(200);
      const list = JSON.parse(json.body.toString('utf8')) as { items: Json[] };
      expect(decoded.items).toHaveLength(count);
      expect(decoded.items).toEqual(list.items.map((i) => projection(i, kind)));
      expect(decoded.metadata.resourceVersion).toMatch(/^\d+$/);
    },
  );

  test("§1.4 the center's reader of PodGroups gets their namespace, name and controller owner from the real server", async () => {
    const raw = new RawConfigMapWriter(c.kubeConfig());
    try {
      const list = (await raw.getList('/apis/scheduling.volcano.sh/v1beta1/podgroups?limit=2', 'Metadata')) as {
        metadata: { continue?: string };
        items: {
          metadata: { namespace: string; name: string; ownerReferences?: { uid: string; controller?: boolean }[] };
        }[];
      };
      const rest = (await raw.getList(
        `/apis/scheduling.volcano.sh/v1beta1/podgroups?limit=2&continue=${encodeURIComponent(list.metadata.continue ?? '')}`,
        'Metadata',
      )) as typeof list;
      const seen = [...list.items, ...rest.items].map((i) => [
        `${i.metadata.namespace}/${i.metadata.name}`,
        i.metadata.ownerReferences?.find((r) => r.controller === true)?.uid ?? '',
      ]);
      expect(seen).toEqual([
        ['default/pg-0', '00000000-0000-0000-0000-000000000001'],
        ['default/pg-1', ''],
        ['default/pg-2', ''],
      ]);
    } finally {
      raw.close();
    }
  });
});
