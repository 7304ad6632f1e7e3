/**
 * The stand-in's conflict storm (issue [T] item 2): every PUT and PATCH of an existing object answered 409 Conflict
 * for a period, POST of an existing name its 409 AlreadyExists, while GET, list, watch, creates of new objects and
 * deletes are served.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { CONFIGMAPS, CONFLICT_REASON, KubeApiStandIn } from '../../src/sim/kube-api.js';

let api: KubeApiStandIn;
let kc: k8s.KubeConfig;
let core: k8s.CoreV1Api;

const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  kc = api.kubeConfig();
  core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { k: '1' }) });
  await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('b', { k: '1' }) });
});

afterEach(async () => {
  await api.stop();
});

function cm(name: string, data: Record<string, string>): k8s.V1ConfigMap {
  return { metadata: { name, namespace: 'kube-system' }, data };
}

/** The HTTP code and the decoded Status body of a failed client-node call. */
async function failure(p: Promise<unknown>): Promise<{ code: number; reason: string; message: string }> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof k8s.ApiException)) throw e;
    const body = (e as k8s.ApiException<unknown>).body;
    const status = (typeof body === 'string' ? JSON.parse(body) : body) as { reason: string; message: string };
    return { code: e.code, reason: status.reason, message: status.message };
  }
  throw new Error('the call succeeded');
}

const stored = (name: string): Record<string, string> | undefined =>
  api.store.get(CONFIGMAPS, 'kube-system', name)?.data as Record<string, string>;

const put = (name: string, value: string) =>
  core.replaceNamespacedConfigMap({ name, namespace: 'kube-system', body: cm(name, { k: value }) });

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

describe('stand-in conflict storm (issue [T] item 2)', () => {
  test('[T] 2 during a storm a PUT of an existing object is 409 Conflict with the API server message, nothing stored', async () => {
    api.setConflicts(60_000);
    const f = await failure(put('a', '2'));
    expect([f.code, f.reason, f.message, stored('a')]).toEqual([
      409,
      'Conflict',
      `Operation cannot be fulfilled on configmaps "a": ${CONFLICT_REASON}`,
      { k: '1' },
    ]);
  });

  test('[T] 2 during a storm a PATCH of an existing object is 409 Conflict, the Node status subresource included', async () => {
    api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: 'n1' } });
    api.setConflicts(60_000);
    const patch = await failure(
      core.patchNamespacedConfigMap({ name: 'a', namespace: 'kube-system', body: { data: { k: '3' } } }, MERGE),
    );
    const status = await failure(core.patchNodeStatus({ name: 'n1', body: { status: { capacity: {} } } }, MERGE));
    expect([patch.code, patch.reason, status.code, stored('a')]).toEqual([409, 'Conflict', 409, { k: '1' }]);
  });

  test('[T] 2 during a storm a POST of an existing name is 409 AlreadyExists, a POST of a new name is created', async () => {
    api.setConflicts(60_000);
    const f = await failure(core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) }));
    const created = await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('c', { k: 'new' }) });
    expect([f.code, f.reason, created.data, stored('c')]).toEqual([409, 'AlreadyExists', { k: 'new' }, { k: 'new' }]);
  });

  test('[T] 2 during a storm GET, list and delete are served', async () => {
    api.setConflicts(60_000);
    const got = await core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    const list = await core.listNamespacedConfigMap({ namespace: 'kube-system' });
    await core.deleteNamespacedConfigMap({ name: 'b', namespace: 'kube-system' });
    expect([got.data, list.items.map((i) => i.metadata?.name).sort(), stored('b')]).toEqual([
      { k: '1' },
      ['a', 'b'],
      undefined,
    ]);
  });

  test('[T] 2 during a storm an open watch stays open and delivers changes made by another path', async () => {
    const seen: string[] = [];
    let ended = false;
    const c = await new k8s.Watch(kc).watch(
      '/api/v1/namespaces/kube-system/configmaps',
      { resourceVersion: api.store.resourceVersion },
      (type, obj: k8s.V1ConfigMap) => seen.push(`${type} ${obj.metadata?.name} ${String(obj.data?.k)}`),
      () => (ended = true),
    );
    try {
      await until(() => api.requests({ verb: 'watch' }).some((r) => r.status === 200));
      api.setConflicts(60_000);
      const old = api.store.get(CONFIGMAPS, 'kube-system', 'a')!;
      api.store.update(CONFIGMAPS, 'kube-system', 'a', { ...old, data: { k: 'operator' } }); // the write that won
      await until(() => seen.length > 0);
      expect([seen, ended]).toEqual([['MODIFIED a operator'], false]);
    } finally {
      c.abort();
    }
  });

  test('[T] 2 a storm ends by itself after its period; setConflicts(0) ends one at once', async () => {
    api.setConflicts(1000); // long enough for the first request to arrive inside it on a loaded machine
    const during = (await failure(put('a', '2'))).code;
    await until(() => !api.conflicting);
    await put('a', '3');
    api.setConflicts(Infinity);
    const forever = (await failure(put('a', '4'))).code;
    api.setConflicts(0);
    await put('a', '5');
    expect([during, forever, stored('a'), api.conflicting]).toEqual([409, 409, { k: '5' }, false]);
  });

  test('[T] 2 a storm narrowed to one object leaves the others writable', async () => {
    api.setConflicts(60_000, { resource: 'configmaps', name: 'a' });
    const a = (await failure(put('a', '2'))).code;
    await put('b', '2');
    expect([a, stored('b')]).toEqual([409, { k: '2' }]);
  });

  test('[T] 2 the request log records the refused writes as updates answered 409, and counts them', async () => {
    api.clearLog();
    api.setConflicts(60_000);
    await failure(put('a', '2'));
    await failure(put('a', '3'));
    const log = api.requests({ verb: 'update', name: 'a' }).map((r) => r.status);
    expect([log, api.conflictsAnswered, api.writeCount({ resource: 'configmaps', name: 'a' })]).toEqual([
      [409, 409],
      2,
      0,
    ]);
  });

  test('a storm length that is not a number is refused', () => {
    expect(() => api.setConflicts(Number.NaN)).toThrow(/NaN/);
  });
});
