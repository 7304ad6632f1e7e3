import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { KubeApiStandIn, VOLCANO_PODGROUPS, type KubeObject } from '../../src/sim/kube-api.js';

let api: KubeApiStandIn;
let kc: k8s.KubeConfig;
let core: k8s.CoreV1Api;

beforeEach(async () => {
  api = await KubeApiStandIn.start({ extraResources: [VOLCANO_PODGROUPS] });
  kc = api.kubeConfig();
  core = kc.makeApiClient(k8s.CoreV1Api);
});

afterEach(async () => {
  await api.stop();
});

/** The HTTP code and the decoded Status body of a failed client-node call. */
async function failure(p: Promise<unknown>): Promise<{ code: number; status: any }> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof k8s.ApiException)) throw e;
    const body = (e as k8s.ApiException<unknown>).body;
    return { code: e.code, status: typeof body === 'string' ? JSON.parse(body) : body };
  }
  throw new Error('the call succeeded');
}

function cm(name: string, data: Record<string, string>, labels?: Record<string, string>): k8s.V1ConfigMap {
  return { metadata: { name, namespace: 'kube-system', ...(labels ? { labels } : {}) }, data };
}

interface Seen {
  type: string;
  name: string;
  data?: Record<string, string>;
}

/** Starts a client-node watch and collects its events. */
async function watchAll(
  path: string,
  query: Record<string, string>,
): Promise<{ seen: Seen[]; done: Promise<unknown>; controller: AbortController }> {
  const seen: Seen[] = [];
  let finish!: (e: unknown) => void;
  const done = new Promise<unknown>((r) => (finish = r));
  const controller = await new k8s.Watch(kc).watch(
    path,
    query,
    (type, obj: KubeObject) =>
      seen.push({ type, name: obj.metadata?.name ?? '', data: obj.data as Record<string, string> }),
    (err) => finish(err),
  );
  return { seen, done, controller };
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

describe('stand-in CRUD through client-node', () => {
  test('create, read, replace and delete a ConfigMap', async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { k: '1' }) });
    const read = await core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    read.data = { k: '2' };
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: read });
    await core.deleteNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    expect((await failure(core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' }))).code).toBe(404);
  });

  test('a created object carries uid, resourceVersion and creationTimestamp', async () => {
    const o = await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    expect([
      typeof o.metadata?.uid,
      /^\d+$/.test(o.metadata?.resourceVersion ?? ''),
      o.metadata?.creationTimestamp instanceof Date,
    ]).toEqual(['string', true, true]);
  });

  test('404 answers with a NotFound Status body', async () => {
    const f = await failure(core.readNamespacedConfigMap({ name: 'missing', namespace: 'kube-system' }));
    expect(f.status).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
      message: 'configmaps "missing" not found',
      details: { name: 'missing', kind: 'configmaps' },
    });
  });

  test('creating an existing name is 409 AlreadyExists', async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    const f = await failure(core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) }));
    expect([f.code, f.status.reason]).toEqual([409, 'AlreadyExists']);
  });

  test('an update with a stale resourceVersion is 409 Conflict', async () => {
    const first = await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { v: '1' }) });
    await core.replaceNamespacedConfigMap({
      name: 'a',
      namespace: 'kube-system',
      body: { ...first, data: { v: '2' } },
    });
    const f = await failure(
      core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: { ...first, data: { v: '3' } } }),
    );
    expect([f.code, f.status.reason, f.status.message]).toEqual([
      409,
      'Conflict',
      'Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again',
    ]);
  });

  test('an update without resourceVersion is unconditional', async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { v: '1' }) });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', { v: '2' }) });
    expect((await core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' })).data).toEqual({ v: '2' });
  });

  test('updating a missing object is 404 (no create on update)', async () => {
    const f = await failure(
      core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', {}) }),
    );
    expect(f.code).toBe(404);
  });

  test('an update that changes nothing keeps the resourceVersion', async () => {
    const o = await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { v: '1' }) });
    const again = await core.replaceNamespacedConfigMap({
      name: 'a',
      namespace: 'kube-system',
      body: cm('a', { v: '1' }),
    });
    expect(again.metadata?.resourceVersion).toBe(o.metadata?.resourceVersion);
  });

  test('an invalid name is 422 Invalid', async () => {
    const f = await failure(core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('Bad_Name', {}) }));
    expect([f.code, f.status.reason]).toEqual([422, 'Invalid']);
  });

  test('a body namespace different from the URL is 400', async () => {
    const body = { metadata: { name: 'a', namespace: 'other' } };
    expect((await failure(core.createNamespacedConfigMap({ namespace: 'kube-system', body }))).code).toBe(400);
  });

  test('generateName creates a unique name', async () => {
    const o = await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { generateName: 'x-' } },
    });
    expect(o.metadata?.name).toMatch(/^x-[0-9a-f]{5}$/);
  });

  test('a delete with a stale resourceVersion precondition is 409', async () => {
    const o = await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', { v: '2' }) });
    const f = await failure(
      core.deleteNamespacedConfigMap({
        name: 'a',
        namespace: 'kube-system',
        body: { preconditions: { resourceVersion: o.metadata!.resourceVersion! } },
      }),
    );
    expect(f.code).toBe(409);
  });
});

describe('stand-in selectors', () => {
  beforeEach(async () => {
    await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: cm('info-a', {}, { 'mx-consumer-cim': 'true' }),
    });
    await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: cm('info-b', {}, { 'mx-consumer-cim': 'false' }),
    });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'info-c', labels: { other: 'x' } } },
    });
  });

  test('label selector equality', async () => {
    const l = await core.listNamespacedConfigMap({ namespace: 'kube-system', labelSelector: 'mx-consumer-cim=true' });
    expect(l.items.map((i) => i.metadata?.name)).toEqual(['info-a']);
  });

  test('label selector set-based and existence', async () => {
    const l = await core.listConfigMapForAllNamespaces({ labelSelector: 'mx-consumer-cim in (true,false),!other' });
    expect(l.items.map((i) => i.metadata?.name)).toEqual(['info-a', 'info-b']);
  });

  test('label selector inequality matches objects without the label', async () => {
    const l = await core.listConfigMapForAllNamespaces({ labelSelector: 'mx-consumer-cim!=true' });
    expect(l.items.map((i) => i.metadata?.name)).toEqual(['info-c', 'info-b']);
  });

  test('field selector on metadata.name across namespaces', async () => {
    const l = await core.listConfigMapForAllNamespaces({ fieldSelector: 'metadata.name=info-c' });
    expect(l.items.map((i) => i.metadata?.namespace)).toEqual(['default']);
  });

  test('field selector on spec.nodeName of pods', async () => {
    const pod = (name: string, nodeName: string): k8s.V1Pod => ({
      metadata: { name, namespace: 'default' },
      spec: { nodeName, containers: [{ name: 'c', image: 'i' }] },
    });
    await core.createNamespacedPod({ namespace: 'default', body: pod('p1', 'node-a') });
    await core.createNamespacedPod({ namespace: 'default', body: pod('p2', 'node-b') });
    const l = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=node-a' });
    expect(l.items.map((i) => i.metadata?.name)).toEqual(['p1']);
  });

  test('a list carries the current resourceVersion', async () => {
    const l = await core.listNamespacedConfigMap({ namespace: 'kube-system' });
    expect(l.metadata?.resourceVersion).toBe(api.store.resourceVersion);
  });
});

describe('stand-in patches', () => {
  beforeEach(async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { x: '1', y: '2' }) });
  });

  test('merge patch sets and removes keys', async () => {
    const o = await core.patchNamespacedConfigMap(
      { name: 'a', namespace: 'kube-system', body: { data: { x: null, z: '3' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    expect(o.data).toEqual({ y: '2', z: '3' });
  });

  test('strategic merge patch merges containers by name', async () => {
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'p' },
        spec: {
          containers: [
            { name: 'a', image: 'a:1' },
            { name: 'b', image: 'b:1' },
          ],
        },
      },
    });
    const o = await core.patchNamespacedPod(
      { name: 'p', namespace: 'default', body: { spec: { containers: [{ name: 'b', image: 'b:2' }] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
    expect(o.spec?.containers.map((c) => `${c.name}=${c.image}`)).toEqual(['a=a:1', 'b=b:2']);
  });

  test('JSON patch applies operations in order', async () => {
    const o = await core.patchNamespacedConfigMap(
      {
        name: 'a',
        namespace: 'kube-system',
        body: [
          { op: 'test', path: '/data/x', value: '1' },
          { op: 'replace', path: '/data/x', value: '9' },
          { op: 'remove', path: '/data/y' },
          { op: 'add', path: '/metadata/annotations', value: { 'a/b': 'c' } },
        ],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    expect([o.data, o.metadata?.annotations]).toEqual([{ x: '9' }, { 'a/b': 'c' }]);
  });

  test('a JSON patch test that fails changes nothing', async () => {
    const f = await failure(
      core.patchNamespacedConfigMap(
        {
          name: 'a',
          namespace: 'kube-system',
          body: [
            { op: 'replace', path: '/data/x', value: '9' },
            { op: 'test', path: '/data/y', value: 'nope' },
          ],
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
      ),
    );
    const now = await core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    expect([f.code, now.data]).toEqual([400, { x: '1', y: '2' }]);
  });

  test('a patch carrying a stale resourceVersion is 409', async () => {
    const f = await failure(
      core.patchNamespacedConfigMap(
        { name: 'a', namespace: 'kube-system', body: { metadata: { resourceVersion: '1' }, data: { x: '5' } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    expect(f.code).toBe(409);
  });

  test('patching a missing object is 404', async () => {
    const f = await failure(
      core.patchNamespacedConfigMap(
        { name: 'zz', namespace: 'kube-system', body: { data: { x: '5' } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    expect(f.code).toBe(404);
  });

  test('a node label merge patch (the agent labels its node)', async () => {
    await core.createNode({ body: { metadata: { name: 'node-a' } } });
    const o = await core.patchNode(
      { name: 'node-a', body: { metadata: { labels: { 'node.kubernetes.io/npu.chip.name': '910B3' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    expect(o.metadata?.labels).toEqual({ 'node.kubernetes.io/npu.chip.name': '910B3' });
  });
});

describe('stand-in status subresource', () => {
  test('the main resource keeps the stored status on update', async () => {
    await core.createNode({ body: { metadata: { name: 'n' }, status: { phase: 'Running' } } });
    const o = await core.replaceNode({
      name: 'n',
      body: { metadata: { name: 'n', labels: { a: 'b' } }, status: { phase: 'Pending' } },
    });
    expect(o.status?.phase).toBe('Running');
  });

  test('the status subresource changes only status', async () => {
    await core.createNode({ body: { metadata: { name: 'n' }, status: { phase: 'Running' } } });
    const o = await core.replaceNodeStatus({
      name: 'n',
      body: { metadata: { name: 'n', labels: { ignored: 'x' } }, status: { phase: 'Terminated' } },
    });
    expect([o.status?.phase, o.metadata?.labels]).toEqual(['Terminated', undefined]);
  });
});

describe('stand-in watch', () => {
  test('watch from a resourceVersion receives ADDED, MODIFIED, DELETED in order', async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('before', {}) });
    const rv = api.store.resourceVersion;
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', { resourceVersion: rv });
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { v: '1' }) });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', { v: '2' }) });
    await core.deleteNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    await until(() => w.seen.length >= 3);
    w.controller.abort();
    expect(w.seen.map((s) => `${s.type} ${s.name}`)).toEqual(['ADDED a', 'MODIFIED a', 'DELETED a']);
  });

  test('watch from an older resourceVersion replays the changes after it', async () => {
    const rv = api.store.resourceVersion;
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { v: '1' }) });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', { v: '2' }) });
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', { resourceVersion: rv });
    await until(() => w.seen.length >= 2);
    w.controller.abort();
    expect(w.seen.map((s) => `${s.type} ${s.data?.v}`)).toEqual(['ADDED 1', 'MODIFIED 2']);
  });

  test('watch without a resourceVersion starts with ADDED for existing objects', async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', {});
    await until(() => w.seen.length >= 1);
    w.controller.abort();
    expect(w.seen).toEqual([{ type: 'ADDED', name: 'a', data: {} }]);
  });

  test('an object leaving the label selection arrives as DELETED', async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}, { sel: 'yes' }) });
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', {
      labelSelector: 'sel=yes',
      resourceVersion: api.store.resourceVersion,
    });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', {}, { sel: 'no' }) });
    await until(() => w.seen.length >= 1);
    w.controller.abort();
    expect(w.seen.map((s) => s.type)).toEqual(['DELETED']);
  });

  test('a field-selected watch sees only its object', async () => {
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', {
      fieldSelector: 'metadata.name=b',
      resourceVersion: api.store.resourceVersion,
    });
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('b', {}) });
    await until(() => w.seen.length >= 1);
    w.controller.abort();
    expect(w.seen.map((s) => s.name)).toEqual(['b']);
  });

  test('a resourceVersion older than the history gets a 410 Expired ERROR event', async () => {
    await api.stop();
    api = await KubeApiStandIn.start({ historyLimit: 2 });
    kc = api.kubeConfig();
    core = kc.makeApiClient(k8s.CoreV1Api);
    const rv = api.store.resourceVersion;
    for (const n of ['a', 'b', 'c'])
      await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm(n, {}) });
    const events: any[] = [];
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    await new k8s.Watch(kc).watch(
      '/api/v1/namespaces/kube-system/configmaps',
      { resourceVersion: rv },
      (type, obj) => events.push({ type, code: obj.code, reason: obj.reason }),
      () => finish(),
    );
    await done;
    expect(events).toEqual([{ type: 'ERROR', code: 410, reason: 'Expired' }]);
  });

  test('an informer (list + watch) follows changes', async () => {
    const path = '/api/v1/namespaces/kube-system/configmaps';
    const informer = k8s.makeInformer(kc, path, () => core.listNamespacedConfigMap({ namespace: 'kube-system' }));
    const seen: string[] = [];
    informer.on('add', (o) => seen.push(`add ${o.metadata?.name}`));
    informer.on('update', (o) => seen.push(`update ${o.metadata?.name}`));
    await informer.start();
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { v: '1' }) });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', { v: '2' }) });
    await until(() => seen.length >= 2);
    await informer.stop();
    expect(seen).toEqual(['add a', 'update a']);
  });
});

describe('stand-in availability switch', () => {
  test('switched off, every request is 503 ServiceUnavailable', async () => {
    api.setAvailable(false);
    const f = await failure(core.listNamespacedConfigMap({ namespace: 'kube-system' }));
    expect([f.code, f.status.reason]).toEqual([503, 'ServiceUnavailable']);
  });

  test('switched back on, requests succeed', async () => {
    api.setAvailable(false);
    api.setAvailable(true);
    await expect(core.listNamespacedConfigMap({ namespace: 'kube-system' })).resolves.toBeDefined();
  });

  test('unavailableFor ends by itself', async () => {
    api.unavailableFor(30);
    const during = (await failure(core.listNamespacedConfigMap({ namespace: 'kube-system' }))).code;
    await until(() => !api.unavailable);
    await expect(core.listNamespacedConfigMap({ namespace: 'kube-system' })).resolves.toBeDefined();
    expect(during).toBe(503);
  });

  test('switching off ends open watches', async () => {
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', {});
    await until(() => api.requests({ verb: 'watch' }).some((r) => r.status === 200));
    api.setAvailable(false);
    await expect(w.done).resolves.toBeNull();
  });
});

describe('stand-in other types', () => {
  test('coordination.k8s.io/v1 Leases', async () => {
    const coord = kc.makeApiClient(k8s.CoordinationV1Api);
    await coord.createNamespacedLease({
      namespace: 'cluster-system',
      body: { metadata: { name: 'ascend-fault-center' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } },
    });
    const l = await coord.readNamespacedLease({ name: 'ascend-fault-center', namespace: 'cluster-system' });
    expect(l.spec?.holderIdentity).toBe('a');
  });

  test('core/v1 Events', async () => {
    await core.createNamespacedEvent({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'host.17441674557843' },
        involvedObject: { kind: 'pod', namespace: 'kube-system', name: 'host' },
        reason: 'Occur',
        type: 'Warning',
      },
    });
    const l = await core.listNamespacedEvent({ namespace: 'kube-system', fieldSelector: 'involvedObject.name=host' });
    expect(l.items.map((e) => e.reason)).toEqual(['Occur']);
  });

  test('events.k8s.io/v1 Events', async () => {
    const ev = kc.makeApiClient(k8s.EventsV1Api);
    const now = new k8s.V1MicroTime(); // six fractional digits, as the real server needs (issue [R] item 1)
    await ev.createNamespacedEvent({
      namespace: 'kube-system',
      body: { metadata: { name: 'e1' }, eventTime: now, reason: 'Occur', action: 'RestartBusiness' },
    });
    expect((await ev.readNamespacedEvent({ name: 'e1', namespace: 'kube-system' })).action).toBe('RestartBusiness');
  });

  test('a Volcano PodGroup through the custom-objects API', async () => {
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      group: 'scheduling.volcano.sh',
      version: 'v1beta1',
      namespace: 'default',
      plural: 'podgroups',
      body: {
        apiVersion: 'scheduling.volcano.sh/v1beta1',
        kind: 'PodGroup',
        metadata: { name: 'job-1' },
        spec: { minMember: 2 },
      },
    });
    const pg = await custom.getNamespacedCustomObject({
      group: 'scheduling.volcano.sh',
      version: 'v1beta1',
      namespace: 'default',
      plural: 'podgroups',
      name: 'job-1',
    });
    expect(pg.spec).toEqual({ minMember: 2 });
  });

  test('a type that is not served is 404', async () => {
    const res = await fetch(`${api.url}/apis/example.com/v1/namespaces/default/things`);
    expect(res.status).toBe(404);
  });
});

describe('stand-in plumbing', () => {
  test('discovery lists the served core resources', async () => {
    const res = await fetch(`${api.url}/api/v1`);
    const doc = (await res.json()) as { resources: { name: string }[] };
    expect(doc.resources.map((r) => r.name)).toEqual(
      expect.arrayContaining(['configmaps', 'pods', 'pods/status', 'nodes', 'events', 'namespaces']),
    );
  });

  test('a kubeconfig YAML file works for client-node', async () => {
    const kc2 = new k8s.KubeConfig();
    kc2.loadFromString(api.kubeconfigYaml());
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    const o = await kc2.makeApiClient(k8s.CoreV1Api).readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    expect(o.metadata?.name).toBe('a');
  });

  test('a required token refuses other callers with 401', async () => {
    await api.stop();
    api = await KubeApiStandIn.start({ token: 'right' });
    const wrong = api.kubeConfig('wrong').makeApiClient(k8s.CoreV1Api);
    expect((await failure(wrong.listNamespacedConfigMap({ namespace: 'kube-system' }))).code).toBe(401);
  });

  test('a body over the limit is 413', async () => {
    await api.stop();
    api = await KubeApiStandIn.start({ maxBodyBytes: 1000 });
    core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    const f = await failure(
      core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { k: 'x'.repeat(2000) }) }),
    );
    expect([f.code, f.status.reason]).toEqual([413, 'RequestEntityTooLarge']);
  });

  test('a ConfigMap over 1 MiB is 422', async () => {
    const f = await failure(
      core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { k: 'x'.repeat(1024 * 1024 + 1) }) }),
    );
    expect(f.code).toBe(422);
  });

  test('writes are counted per object', async () => {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('b', {}) });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', { v: '1' }) });
    await core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    expect(api.writeCount({ resource: 'configmaps', namespace: 'kube-system', name: 'a' })).toBe(2);
  });

  test('the request log records verb, object and status', async () => {
    await failure(core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' }));
    expect(api.requests({ resource: 'configmaps' }).map((r) => [r.verb, r.namespace, r.name, r.status])).toEqual([
      ['get', 'kube-system', 'a', 404],
    ]);
  });
});

describe('stand-in watch order (issue 12 item 1: a real API server may deliver a write event before its response)', () => {
  /** The order in which a watcher's event and the writer's response of one create reach this client. */
  async function orderOfCreate(name: string): Promise<string[]> {
    const order: string[] = [];
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', {
      fieldSelector: `metadata.name=${name}`,
      resourceVersion: api.store.resourceVersion,
    });
    const seen = w.seen.length;
    const poll = setInterval(() => {
      if (w.seen.length > seen && !order.includes('event')) order.push('event');
    }, 1);
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm(name, { v: '1' }) });
    order.push('response');
    await until(() => order.length === 2);
    clearInterval(poll);
    w.controller.abort();
    return order;
  }

  test('watch-first: the event of a write reaches the watcher before the writer has the response', async () => {
    api.setWatchOrder('watch-first');
    expect(await orderOfCreate('a')).toEqual(['event', 'response']);
  });

  test('response-first: the writer has the response before the event reaches the watcher', async () => {
    api.setWatchOrder('response-first');
    expect(await orderOfCreate('a')).toEqual(['response', 'event']);
  });

  test('response-first keeps the order of the events of successive writes', async () => {
    api.setWatchOrder('response-first', 20);
    const w = await watchAll('/api/v1/namespaces/kube-system/configmaps', {
      resourceVersion: api.store.resourceVersion,
    });
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { v: '1' }) });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: cm('a', { v: '2' }) });
    await core.deleteNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    await until(() => w.seen.length >= 3);
    w.controller.abort();
    expect(w.seen.map((s) => `${s.type} ${s.data?.v}`)).toEqual(['ADDED 1', 'MODIFIED 2', 'DELETED 2']);
  });

  test('the order is an option of start as well', async () => {
    await api.stop();
    api = await KubeApiStandIn.start({ watchOrder: 'watch-first', watchOrderDelayMs: 30 });
    kc = api.kubeConfig();
    core = kc.makeApiClient(k8s.CoreV1Api);
    expect(await orderOfCreate('b')).toEqual(['event', 'response']);
  });

  test('a negative delay is refused', () => {
    expect(() => api.setWatchOrder('watch-first', -1)).toThrow(RangeError);
  });
});
