/**
 * The stand-in answers at the real server's limits as kube-apiserver 1.37 does (issue [R] item 7; each answer measured
 * on the real server by test/k8s/suites/manifests-limits.test.ts and manifests.test.ts): a ConfigMap's 1 MiB counts
 * the values only (`binaryData` decoded), etcd's 1.5 MiB request limit is a 500 without a reason, and an API group
 * that is not served is Go's plain-text 404.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CONFIGMAPS, KubeApiStandIn } from '../../src/sim/kube-api.js';

const MiB = 1024 * 1024;
let api: KubeApiStandIn;

beforeAll(async () => {
  api = await KubeApiStandIn.start();
});
afterAll(async () => {
  await api.stop();
});

/** One request; the status, the body as text and, when it is a Status, its fields. */
async function send(method: string, path: string, body?: unknown) {
  const res = await fetch(api.url + path, {
    method,
    headers: { 'content-type': 'application/json', authorization: 'Bearer stand-in-token' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, type: res.headers.get('content-type'), text, json };
}

const configMap = (name: string, data: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
  data,
  ...extra,
});
const CREATE = '/api/v1/namespaces/default/configmaps';

describe('issue [R] item 7: the ConfigMap size limit as the real server counts it', () => {
  test('values of exactly 1 MiB are stored: the keys are not counted', async () => {
    const r = await send('POST', CREATE, configMap('at-limit', { v: 'x'.repeat(MiB) }));
    expect(r.status).toBe(201);
    expect(api.store.get(CONFIGMAPS, 'default', 'at-limit')).toBeDefined();
  });

  test('one byte more: 422 Invalid, "[]: Too long", cause FieldValueTooLong on []', async () => {
    const r = await send('POST', CREATE, configMap('over-limit', { a: 'x'.repeat(600_000), b: 'y'.repeat(448_577) }));
    const message = 'Too long: may not be more than 1048576 bytes';
    expect([r.status, r.json?.reason, r.json?.message]).toEqual([
      422,
      'Invalid',
      `ConfigMap "over-limit" is invalid: []: ${message}`,
    ]);
    expect((r.json?.details as { causes: unknown[] }).causes).toEqual([
      { reason: 'FieldValueTooLong', message, field: '[]' },
    ]);
    expect(api.store.get(CONFIGMAPS, 'default', 'over-limit')).toBeUndefined();
  });

  test('binaryData counts decoded: 600,000 + 400,000 bytes are stored though the base64 text is longer', async () => {
    const binaryData = { b: Buffer.alloc(400_000).toString('base64') };
    const r = await send('POST', CREATE, configMap('binary', { a: 'x'.repeat(600_000) }, { binaryData }));
    expect(r.status).toBe(201);
  });
});

describe("issue [R] item 7: etcd's request limit (1.5 MiB)", () => {
  test('1 MiB of data and 0.5 MiB of labels: 500 "etcdserver: request is too large", a Status without a reason', async () => {
    const labels = Object.fromEntries(
      Array.from({ length: 4500 }, (_, i) => [`l${String(i).padStart(5, '0')}${'k'.repeat(50)}`, 'v'.repeat(60)]),
    );
    const body = configMap('etcd-limit', { v: 'x'.repeat(MiB) });
    const r = await send('POST', CREATE, { ...body, metadata: { ...body.metadata, labels } });
    expect(r.status).toBe(500);
    expect(r.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'etcdserver: request is too large',
      code: 500,
    });
    expect(api.store.get(CONFIGMAPS, 'default', 'etcd-limit')).toBeUndefined();
  });

  test('an update growing the object over the limit is refused the same and the stored object stays', async () => {
    await send('POST', CREATE, configMap('grows', { v: 'small' }));
    const labels = Object.fromEntries(
      Array.from({ length: 4500 }, (_, i) => [`l${i}${'k'.repeat(50)}`, 'v'.repeat(60)]),
    );
    const r = await send(
      'PUT',
      `${CREATE}/grows`,
      configMap('grows', { v: 'x'.repeat(MiB) }, { metadata: { name: 'grows', namespace: 'default', labels } }),
    );
    expect([r.status, r.json?.message]).toEqual([500, 'etcdserver: request is too large']);
    expect(api.store.get(CONFIGMAPS, 'default', 'grows')?.data).toEqual({ v: 'small' });
  });
});

describe('issue [R] item 7: a path of an API group that is not served', () => {
  test("Volcano's PodGroups without Volcano: 404 in plain text, Go's mux answer", async () => {
    const r = await send('GET', '/apis/scheduling.volcano.sh/v1beta1/podgroups?limit=500');
    expect([r.status, r.type, r.text]).toEqual([404, 'text/plain; charset=utf-8', '404 page not found\n']);
  });

  test('an unknown resource of a served group/version stays a JSON Status 404 NotFound', async () => {
    const r = await send('GET', '/api/v1/widgets');
    expect([r.status, r.json?.kind, r.json?.reason]).toEqual([404, 'Status', 'NotFound']);
  });
});
