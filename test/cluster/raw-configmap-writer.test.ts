/**
 * The raw ConfigMap writer of the chunks and the state objects (issue [O] item 1: bodies serialised once, answers
 * not parsed): what it writes, its errors (the HTTP status as `code`, so the write queue creates on 404 and drops a
 * 422), its authentication, and its use through the write queue.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { statusOf } from '../../src/core/errors.js';
import { ApiRecovery, ObjectWriteQueue } from '../../src/kube/write-queue.js';
import {
  bodyWriter,
  prepareConfigMap,
  prepareEscapedConfigMap,
  sameBytes,
  RawConfigMapWriter,
  RawWriteError,
  type PreparedConfigMap,
} from '../../src/cluster/raw-configmap-writer.js';
import { CONFIGMAPS, KubeApiStandIn } from '../../src/sim/kube-api.js';
import { escapeJsonContent } from '../../src/cluster/cluster-info.js';

const TOKEN = 'raw-writer-token';
let api: KubeApiStandIn;

beforeAll(async () => {
  api = await KubeApiStandIn.start({ token: TOKEN });
});
afterAll(async () => {
  await api.stop();
});

const cm = (name: string, value: string) =>
  prepareConfigMap({ metadata: { name, namespace: 'mindx-dl', labels: { a: 'b' } }, data: { [name]: value } });

async function until(fn: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('RawConfigMapWriter', () => {
  test('[O] 1 create then update write the prepared object with its labels and data', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig());
    try {
      await w.create(cm('raw-a', 'one'));
      await w.update(cm('raw-a', 'two'));
      const got = api.store.get(CONFIGMAPS, 'mindx-dl', 'raw-a') as k8s.V1ConfigMap;
      expect(got.data).toEqual({ 'raw-a': 'two' });
      expect(got.metadata?.labels).toEqual({ a: 'b' });
    } finally {
      w.close();
    }
  });

  test('[O] 1 an update of a missing object fails with code 404 (the queue then creates it)', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig());
    try {
      const e = await w.update(cm('raw-missing', 'x')).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(RawWriteError);
      expect(statusOf(e)).toBe(404);
      expect(String(e)).toContain('HTTP 404');
    } finally {
      w.close();
    }
  });

  test('[O] 1 a ConfigMap over 1 MiB fails with code 422 and the API server message', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig());
    try {
      const e = await w.create(cm('raw-big', 'x'.repeat(1024 * 1024 + 1))).catch((err: unknown) => err);
      expect(statusOf(e)).toBe(422);
      expect((e as Error).message).toMatch(/HTTP 422: .*raw-big/);
    } finally {
      w.close();
    }
  });

  test('[O] 1 requests carry the kubeconfig credentials (a wrong token is a 401)', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig('wrong-token'));
    try {
      const e = await w.create(cm('raw-auth', 'x')).catch((err: unknown) => err);
      expect(statusOf(e)).toBe(401);
      expect(api.store.get(CONFIGMAPS, 'mindx-dl', 'raw-auth')).toBeUndefined();
    } finally {
      w.close();
    }
  });

  test('[P] 6 a GET on a kept-alive connection the server has dropped is sent again on a new one; a write is not', async () => {
    // a server that drops every connection at its second request (as one closing idle connections would)
    const perSocket = new WeakMap<object, number>();
    let requests = 0;
    const server = http.createServer((req, res) => {
      requests++;
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      if (n >= 2) {
        req.socket.destroy();
        return;
      }
      req.resume();
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        res.end(req.method === 'GET' ? '{"ok":true}' : '{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [
        { name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
      ],
      users: [{ name: 'u', token: TOKEN }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const w = new RawConfigMapWriter(kc, 5000);
    try {
      expect(await w.getJson('/api/v1/configmaps')).toEqual({ ok: true });
      expect(await w.getJson('/api/v1/configmaps')).toEqual({ ok: true });
      expect(requests).toBe(3);
      await w.update(cm('raw-stale', 'a'));
      const e = await w.update(cm('raw-stale', 'b')).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(RawWriteError);
      expect(requests).toBe(5);
    } finally {
      w.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test('[O] 1 an unreachable server is an error without a status (retried as an outage)', async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'u', token: TOKEN }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const w = new RawConfigMapWriter(kc, 2000);
    try {
      const e = await w.update(cm('raw-down', 'x')).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(RawWriteError);
      expect(statusOf(e)).toBeUndefined();
    } finally {
      w.close();
    }
  });

  test('[O] 1 through the write queue a missing object is created and the last state wins', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig());
    const q = new ObjectWriteQueue<PreparedConfigMap>({ writer: w, backoff: { initialMs: 20 } });
    try {
      q.submit(cm('raw-q', 'first'));
      q.submit(cm('raw-q', 'last'));
      await until(
        () =>
          (api.store.get(CONFIGMAPS, 'mindx-dl', 'raw-q') as k8s.V1ConfigMap | undefined)?.data?.['raw-q'] === 'last',
        'the last state written',
      );
      expect(q.stats.rejected).toBe(0);
    } finally {
      q.close();
      w.close();
    }
  });

  test("[T] 2 a chunk conflicting through the queue: 3 PUTs, then it waits until another chunk's write succeeds", async () => {
    const w = new RawConfigMapWriter(api.kubeConfig());
    const recovery = new ApiRecovery();
    // a conflict wait of a minute: only the wake by another object's successful write can write it within the test
    const queue = () =>
      new ObjectWriteQueue<PreparedConfigMap>({
        writer: w,
        backoff: { recovery },
        conflictBackoff: { initialMs: 60_000, maxMs: 60_000 },
      });
    const a = queue();
    const b = queue();
    try {
      await w.create(cm('raw-storm-a', 'old'));
      await w.create(cm('raw-storm-b', 'old'));
      api.clearLog();
      api.setConflicts(Infinity, { name: 'raw-storm-a' });
      a.submit(cm('raw-storm-a', 'new'));
      await until(() => a.stats.failures === 1, 'the conflict wait');
      api.setConflicts(0);
      b.submit(cm('raw-storm-b', 'new'));
      const value = (n: string) => (api.store.get(CONFIGMAPS, 'mindx-dl', n) as k8s.V1ConfigMap).data?.[n];
      await until(() => value('raw-storm-a') === 'new', 'chunk a written after the wake');
      const puts = api.requests({ verb: 'update', name: 'raw-storm-a' }).map((r) => r.status);
      expect([puts, api.requests({ verb: 'get' }).length, recovery.stats.writeWakes]).toEqual([
        [409, 409, 409, 200],
        0,
        1,
      ]);
    } finally {
      api.setConflicts(0);
      a.close();
      b.close();
      w.close();
    }
  });

  test('[O] 2 bodyWriter serialises plain bodies (the state objects) through the same writer', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig());
    try {
      const b = bodyWriter(w);
      await b.create({ metadata: { name: 'raw-state', namespace: 'cluster-system' }, data: { state: '{"v":1}' } });
      await b.update({ metadata: { name: 'raw-state', namespace: 'cluster-system' }, data: { state: '{"v":2}' } });
      expect((api.store.get(CONFIGMAPS, 'cluster-system', 'raw-state') as k8s.V1ConfigMap).data).toEqual({
        state: '{"v":2}',
      });
    } finally {
      w.close();
    }
  });

  test('[O] 1 a body built around an escaped value is the same JSON as the plain body, and is written as such', async () => {
    const value = '{"mindx-dl-deviceinfo-n1":{"a":"b\\"c\\u0001é😀"}}';
    const meta = { name: 'raw-esc', namespace: 'mindx-dl', labels: { 'mx-consumer-volcano': 'true' } };
    const esc = prepareEscapedConfigMap(meta, 'raw-esc', [escapeJsonContent(value)]);
    const plain = prepareConfigMap({ metadata: meta, data: { 'raw-esc': value } });
    const text = (b: readonly Buffer[]) => Buffer.concat(b).toString('utf8');
    expect(JSON.parse(text(esc.body))).toEqual(JSON.parse(text(plain.body)));
    const w = new RawConfigMapWriter(api.kubeConfig());
    try {
      await w.create(esc);
      expect((api.store.get(CONFIGMAPS, 'mindx-dl', 'raw-esc') as k8s.V1ConfigMap).data).toEqual({ 'raw-esc': value });
    } finally {
      w.close();
    }
  });

  test('[O] 1 sameBytes compares byte pieces however they are split', () => {
    const b = (t: string) => Buffer.from(t);
    expect(sameBytes([b('ab'), b('cde')], [b('a'), b('bcd'), b('e')])).toBe(true);
    expect(sameBytes([b('abcde')], [b('ab'), b(''), b('cde')])).toBe(true);
    expect(sameBytes([b('ab'), b('cdf')], [b('abcde')])).toBe(false);
    expect(sameBytes([b('abcd')], [b('abcde')])).toBe(false);
    const shared = b('xyz');
    expect(sameBytes([shared, b('1')], [shared, b('2')])).toBe(false);
  });
});
