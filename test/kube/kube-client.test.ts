/**
 * The agent's own Kubernetes client (src/kube/kube-client.ts): every call against the API stand-in, errors as
 * client-node reports them, the watch, kubeconfig and in-cluster loading, TLS with client certificates, bounds.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { clientNodeBackend, loadKube, AgentStartError } from '../../src/agent/run-agent.js';
import {
  KubeApiError,
  KubeClient,
  KubeConfigError,
  loadKubeAccess,
  patchContentType,
  type KubeAccess,
} from '../../src/kube/kube-client.js';
import { ListWatch } from '../../src/kube/list-watch.js';
import { MERGE_PATCH } from '../../src/kube/merge-patch.js';
import { statusOf } from '../../src/core/errors.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { MicroTime } from '../../src/core/kube-time.js';

const TOKEN = 'secret-token';
let api: KubeApiStandIn;
let client: KubeClient;
let tmp: string;

beforeEach(async () => {
  api = await KubeApiStandIn.start({ token: TOKEN });
  client = new KubeClient({ server: api.url, token: TOKEN });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-client-'));
});

afterEach(async () => {
  client.close();
  await api.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the call succeeded');
}

const cm = (name: string, data: Record<string, string>): k8s.V1ConfigMap => ({
  metadata: { name, namespace: 'kube-system' },
  data,
});

describe('calls against the stand-in', () => {
  test('ConfigMaps: create, read, replace, list with selectors; fieldManager goes in the query', async () => {
    const created = await client.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: cm('a', { k: 'v' }),
      fieldManager: 'agent',
    });
    expect(created.metadata?.resourceVersion).toBeDefined();
    const read = await client.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    expect(read.data).toEqual({ k: 'v' });
    // the answer is the server's JSON: timestamps stay strings
    expect(typeof read.metadata?.creationTimestamp).toBe('string');
    const replaced = await client.replaceNamespacedConfigMap({
      name: 'a',
      namespace: 'kube-system',
      body: { ...read, data: { k: 'w' } },
    });
    expect(replaced.data).toEqual({ k: 'w' });
    await client.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('b', {}) });
    const all = await client.listNamespacedConfigMap({ namespace: 'kube-system' });
    expect(all.items.map((i) => i.metadata?.name).sort()).toEqual(['a', 'b']);
    expect(all.metadata?.resourceVersion).toBeDefined();
    const one = await client.listNamespacedConfigMap({ namespace: 'kube-system', fieldSelector: 'metadata.name=b' });
    expect(one.items.map((i) => i.metadata?.name)).toEqual(['b']);
    const log = api.requests({ resource: 'configmaps' });
    expect(log[0]!.url).toContain('fieldManager=agent');
    expect(log.map((r) => r.verb)).toEqual(['create', 'get', 'update', 'create', 'list', 'list']);
  });

  test('configmaps of all namespaces by label (the reset ConfigMaps, hot-reset §2.1)', async () => {
    const labelled = (name: string, namespace: string, reset: boolean) => ({
      metadata: { name, namespace, ...(reset ? { labels: { reset: 'true' } } : {}) },
      data: {},
    });
    await client.createNamespacedConfigMap({ namespace: 'default', body: labelled('reset-config-a', 'default', true) });
    await client.createNamespacedConfigMap({ namespace: 'team', body: labelled('reset-config-b', 'team', true) });
    await client.createNamespacedConfigMap({ namespace: 'team', body: labelled('other', 'team', false) });
    const l = await client.listConfigMapForAllNamespaces({ labelSelector: 'reset=true' });
    expect(l.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`).sort()).toEqual([
      'default/reset-config-a',
      'team/reset-config-b',
    ]);
  });

  test('nodes: read, list, merge patch; pods: list for all namespaces, merge patch; Events: create', async () => {
    api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: 'n1', labels: { a: '1' } } });
    api.store.create(api.resourceType('', 'pods'), 'default', {
      metadata: { name: 'p', namespace: 'default' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
    });
    expect((await client.readNode({ name: 'n1' })).metadata?.labels).toEqual({ a: '1' });
    expect((await client.listNode({ fieldSelector: 'metadata.name=n1' })).items).toHaveLength(1);
    const patched = await client.patchNode({ name: 'n1', body: { metadata: { labels: { b: '2' } } } }, MERGE_PATCH);
    expect(patched.metadata?.labels).toEqual({ a: '1', b: '2' });
    const pods = await client.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=n1' });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual(['p']);
    await client.patchNamespacedPod(
      { name: 'p', namespace: 'default', body: { metadata: { annotations: { x: 'y' } } } },
      MERGE_PATCH,
    );
    const pod = api.store.get(api.resourceType('', 'pods'), 'default', 'p') as k8s.V1Pod;
    expect(pod.metadata?.annotations).toEqual({ x: 'y' });
    const time = new Date(1_700_000_000_123);
    await client.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { name: 'e1', namespace: 'default' },
        involvedObject: { kind: 'Node', name: 'n1' },
        reason: 'R',
        // a MicroTime needs six fractional digits (issue [R] item 1): the Date's own toJSON is what goes out
        eventTime: new MicroTime(time.getTime()),
        firstTimestamp: time,
      },
    });
    const ev = api.store.get(api.resourceType('', 'events'), 'default', 'e1') as Record<string, unknown>;
    expect([ev.eventTime, ev.firstTimestamp]).toEqual(['2023-11-14T22:13:20.123000Z', '2023-11-14T22:13:20Z']);
    expect(api.requests({ resource: 'nodes', verb: 'patch' })[0]!.contentType).toBe('application/merge-patch+json');
  });

  test('errors carry the status as `code` (statusOf) and the Status body, as client-node ApiException', async () => {
    const e = await rejection(client.readNamespacedConfigMap({ name: 'none', namespace: 'kube-system' }));
    expect(e).toBeInstanceOf(KubeApiError);
    expect(statusOf(e)).toBe(404);
    expect((e as KubeApiError).body).toMatchObject({ kind: 'Status', code: 404 });
    expect(String(e)).toContain('404');
    await client.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) });
    expect(
      statusOf(await rejection(client.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', {}) }))),
    ).toBe(409);
    const bad = new KubeClient({ server: api.url, token: 'wrong' });
    expect(statusOf(await rejection(bad.readNode({ name: 'x' })))).toBe(401);
    bad.close();
    await expect(client.readNode({ name: '' })).rejects.toThrow('name is required');
  });

  test('the same answers as client-node for the same calls', async () => {
    const kc = api.kubeConfig(TOKEN);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await client.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { k: 'v' }) });
    const ours = await client.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    const theirs = await core.readNamespacedConfigMap({ name: 'a', namespace: 'kube-system' });
    // the same object; client-node turns timestamps into Dates, KubeClient keeps the server's string
    const { creationTimestamp: t1, ...m1 } = ours.metadata!;
    const { creationTimestamp: t2, ...m2 } = theirs.metadata!;
    expect({ ...ours, metadata: m1 }).toEqual({ ...theirs, metadata: m2 });
    expect(new Date(t1!).getTime()).toBe(t2!.getTime());
    const e1 = await rejection(client.readNamespacedConfigMap({ name: 'z', namespace: 'kube-system' }));
    const e2 = await rejection(core.readNamespacedConfigMap({ name: 'z', namespace: 'kube-system' }));
    expect(statusOf(e1)).toBe(statusOf(e2));
  });

  test('patch content type: from client-node options, JSON patch without them (client-node default)', () => {
    expect(patchContentType(MERGE_PATCH)).toBe('application/merge-patch+json');
    expect(patchContentType(k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch))).toBe(
      'application/strategic-merge-patch+json',
    );
    expect(patchContentType(undefined)).toBe('application/json-patch+json');
  });
});

describe('watch', () => {
  test('delivers events from a resourceVersion, stops on abort with done called once', async () => {
    const first = await client.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('a', { n: '1' }) });
    const seen: Array<[string, string | undefined]> = [];
    const dones: unknown[] = [];
    const c = await client.watch(
      '/api/v1/namespaces/kube-system/configmaps',
      { resourceVersion: first.metadata!.resourceVersion!, allowWatchBookmarks: true, fieldSelector: undefined },
      (type, obj) => seen.push([type, (obj as k8s.V1ConfigMap).data?.n]),
      (err) => dones.push(err),
    );
    await client.replaceNamespacedConfigMap({
      name: 'a',
      namespace: 'kube-system',
      body: { ...first, data: { n: '2' } },
    });
    await client.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('b', { n: '3' }) });
    await until(() => seen.length >= 2);
    expect(seen).toEqual([
      ['MODIFIED', '2'],
      ['ADDED', '3'],
    ]);
    const w = api.requests({ resource: 'configmaps', verb: 'watch' })[0]!;
    expect(w.url).toContain('watch=true');
    expect(w.url).not.toContain('fieldSelector');
    c.abort();
    await until(() => dones.length === 1);
    expect((dones[0] as Error).name).toBe('AbortError');
    c.abort();
    await new Promise((r) => setTimeout(r, 20));
    expect(dones).toHaveLength(1);
  });

  test('a server-side close calls done(null); a refused watch calls done with statusCode', async () => {
    const dones: unknown[] = [];
    await client.watch(
      '/api/v1/namespaces/kube-system/configmaps',
      {},
      () => undefined,
      (e) => dones.push(e),
    );
    api.setAvailable(false); // closes open watches
    await until(() => dones.length === 1);
    expect(dones[0]).toBeNull();
    const refused: unknown[] = [];
    await client.watch(
      '/api/v1/namespaces/kube-system/configmaps',
      {},
      () => undefined,
      (e) => refused.push(e),
    );
    await until(() => refused.length === 1);
    expect((refused[0] as { statusCode?: number }).statusCode).toBeGreaterThanOrEqual(500);
    api.setAvailable(true);
  });

  test('an expired resourceVersion arrives as an ERROR event; ListWatch re-lists over KubeClient', async () => {
    const old = await KubeApiStandIn.start({ token: TOKEN, historyLimit: 2 });
    const c = new KubeClient({ server: old.url, token: TOKEN });
    try {
      let stale = '';
      for (let i = 0; i < 5; i++) {
        const o = await c.createNamespacedConfigMap({ namespace: 'kube-system', body: cm(`c${i}`, {}) });
        if (i === 0) stale = o.metadata!.resourceVersion!;
      }
      const seen: Array<[string, unknown]> = [];
      const ctl = await c.watch(
        '/api/v1/namespaces/kube-system/configmaps',
        { resourceVersion: stale },
        (type, obj) => seen.push([type, (obj as { code?: unknown }).code]),
        () => undefined,
      );
      await until(() => seen.length > 0);
      expect(seen[0]).toEqual(['ERROR', 410]);
      ctl.abort();
      // the first list answers the stale version: the watch's ERROR makes ListWatch list again
      const synced: number[] = [];
      let lists = 0;
      const lw = new ListWatch<k8s.V1ConfigMap>({
        what: 'test',
        path: '/api/v1/namespaces/kube-system/configmaps',
        list: async () => {
          const l = await c.listNamespacedConfigMap({ namespace: 'kube-system' });
          return { items: l.items, resourceVersion: lists++ === 0 ? stale : (l.metadata?.resourceVersion ?? '') };
        },
        watch: c.watch,
        onSync: (items) => synced.push(items.length),
        onEvent: () => undefined,
      });
      await lw.start();
      await until(() => synced.length === 2);
      expect(synced).toEqual([5, 5]);
      const added: string[] = [];
      const lw2 = new ListWatch<k8s.V1ConfigMap>({
        what: 'test2',
        path: '/api/v1/namespaces/kube-system/configmaps',
        list: async () => {
          const l = await c.listNamespacedConfigMap({ namespace: 'kube-system' });
          return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
        },
        watch: c.watch,
        onSync: () => undefined,
        onEvent: (type, o) => added.push(`${type} ${o.metadata?.name}`),
      });
      await lw2.start();
      await c.createNamespacedConfigMap({ namespace: 'kube-system', body: cm('late', {}) });
      await until(() => added.length > 0);
      expect(added).toEqual(['ADDED late']);
      lw.stop();
      lw2.stop();
    } finally {
      c.close();
      await old.stop();
    }
  });
});

describe('bounds', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url?.startsWith('/api/v1/nodes/big')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ metadata: { name: 'x'.repeat(4096) } }));
      } else if (req.url?.startsWith('/api/v1/nodes/html')) {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html>bad gateway</html>');
      } // else: never answers
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  test('a call without an answer fails after timeoutMs; an answer over maxBodyBytes fails', async () => {
    const c = new KubeClient({ server: url }, { timeoutMs: 100, maxBodyBytes: 1024 });
    await expect(c.readNode({ name: 'silent' })).rejects.toThrow('no answer within 100 ms');
    await expect(c.readNode({ name: 'big' })).rejects.toThrow('answer over 1024 bytes');
    const e = await rejection(c.readNode({ name: 'html' }));
    expect(statusOf(e)).toBe(502);
    expect((e as KubeApiError).body).toBe('<html>bad gateway</html>');
    c.close();
  });
});

describe('kept-alive connections', () => {
  test('a call on a reused connection the server drops is sent once more on a fresh one; a fresh one is not', async () => {
    let n = 0;
    const server = http.createServer((req, res) => {
      n++;
      if (n === 2 || n === 4) {
        req.socket.destroy(); // the server closed the idle connection as the request arrived
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ metadata: { name: `n${n}` } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const c = new KubeClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    try {
      expect((await c.readNode({ name: 'a' })).metadata?.name).toBe('n1');
      expect((await c.readNode({ name: 'a' })).metadata?.name).toBe('n3'); // n2 dropped on the reused socket
      expect(n).toBe(3);
      c.close(); // no idle connection left: the next call opens a fresh one, whose drop is an error
      await expect(c.readNode({ name: 'a' })).rejects.toThrow(/socket hang up|ECONNRESET/);
      expect(n).toBe(4);
    } finally {
      c.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('kubeconfig and in-cluster', () => {
  const yamlOf = (user: string, cluster = `    server: ${'URL'}\n`): string =>
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: c',
      '  cluster:',
      cluster.trimEnd(),
      'users:',
      '- name: u',
      '  user:',
      user.trimEnd(),
      'contexts:',
      '- name: x',
      '  context: { cluster: c, user: u, namespace: ns1 }',
      'current-context: x',
      '',
    ].join('\n');

  test('YAML with a token-file and a CA file relative to the kubeconfig folder', () => {
    fs.writeFileSync(path.join(tmp, 'tok'), 'T1\n');
    fs.writeFileSync(path.join(tmp, 'ca.pem'), 'CA');
    const file = path.join(tmp, 'config');
    fs.writeFileSync(
      file,
      yamlOf('    token-file: tok', '    server: https://h:6443/\n    certificate-authority: ca.pem\n'),
    );
    const s = loadKubeAccess(file, {});
    expect(s?.kind).toBe('access');
    const a = (s as { access: KubeAccess }).access;
    expect(a.server).toBe('https://h:6443');
    expect(a.ca?.toString()).toBe('CA');
    expect(a.tokenFile).toBe(path.join(tmp, 'tok'));
    expect(a.namespace).toBe('ns1');
  });

  test('JSON kubeconfig through $KUBECONFIG (first entry), base64 data fields, basic auth', async () => {
    const file = path.join(tmp, 'config.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority-data': 'Q0E=' } }],
        users: [{ name: 'u', user: { username: 'ann', password: 'pw' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const s = loadKubeAccess('', { KUBECONFIG: `${file}${path.delimiter}/elsewhere` });
    const a = (s as { access: KubeAccess }).access;
    expect(a.ca?.toString()).toBe('CA');
    expect(a).toMatchObject({ username: 'ann', password: 'pw' });
    // basic auth reaches the server (the stand-in wants a token: 401 proves the header was sent and refused)
    const c = new KubeClient(a);
    expect(statusOf(await rejection(c.readNode({ name: 'n' })))).toBe(401);
    c.close();
  });

  test('exec, auth-provider, as and proxy-url are left to client-node; bad files are KubeConfigErrors', () => {
    const file = path.join(tmp, 'config');
    for (const user of ['    exec: { command: aws, apiVersion: client.authentication.k8s.io/v1 }', '    as: bob']) {
      fs.writeFileSync(file, yamlOf(user));
      expect(loadKubeAccess(file, {})).toMatchObject({ kind: 'clientNode', file });
    }
    fs.writeFileSync(file, yamlOf('    token: t', '    server: https://h\n    proxy-url: http://proxy:3128\n'));
    expect(loadKubeAccess(file, {})).toMatchObject({
      kind: 'clientNode',
      reason: expect.stringContaining('proxy-url'),
    });
    fs.writeFileSync(file, yamlOf('    token: t').replace('current-context: x', ''));
    expect(() => loadKubeAccess(file, {})).toThrow(KubeConfigError);
    fs.writeFileSync(file, yamlOf('    client-certificate: missing.crt'));
    expect(() => loadKubeAccess(file, {})).toThrow(/client-certificate/);
    fs.writeFileSync(file, 'clusters: [');
    expect(() => loadKubeAccess(file, {})).toThrow(KubeConfigError);
    expect(() => loadKubeAccess(path.join(tmp, 'none'), {})).toThrow(KubeConfigError);
    expect(loadKubeAccess('', {})).toBeUndefined();
  });

  test('in-cluster: https (http on 8080), IPv6 in brackets, the token file re-read after 60 s', async () => {
    fs.writeFileSync(path.join(tmp, 'ca.crt'), 'CA');
    fs.writeFileSync(path.join(tmp, 'token'), `${TOKEN}\n`);
    fs.writeFileSync(path.join(tmp, 'namespace'), 'kube-system');
    const env = { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' };
    const s = loadKubeAccess('', env, tmp) as { access: KubeAccess; from: string };
    expect(s.from).toBe('in-cluster');
    expect(s.access).toMatchObject({ server: 'https://[fd00::1]:443', namespace: 'kube-system' });
    const plain = loadKubeAccess('', { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '8080' }, tmp);
    expect((plain as { access: KubeAccess }).access.server).toBe('http://127.0.0.1:8080');
    // token rotation against the stand-in
    let now = 0;
    const c = new KubeClient({ ...s.access, server: api.url }, { now: () => now });
    api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: 'n' } });
    await c.readNode({ name: 'n' });
    fs.writeFileSync(path.join(tmp, 'token'), 'rotated');
    now = 30_000;
    await c.readNode({ name: 'n' }); // still the cached token
    now = 61_000;
    expect(statusOf(await rejection(c.readNode({ name: 'n' })))).toBe(401); // the rotated one was read
    c.close();
  });

  test('loadKube: the built-in client for a plain kubeconfig, client-node for exec, exit 2 for a bad file', async () => {
    const file = path.join(tmp, 'config');
    await api.writeKubeconfig(file, TOKEN);
    const built = await loadKube(file, {});
    expect(built?.client).toBe('built-in');
    expect(await built!.core.readNamespacedConfigMap({ name: 'x', namespace: 'kube-system' }).catch(statusOf)).toBe(
      404,
    );
    built!.close();
    fs.writeFileSync(file, yamlOf('    exec: { command: /bin/true, apiVersion: client.authentication.k8s.io/v1 }'));
    const viaClientNode = await loadKube(file, {});
    expect(viaClientNode).toMatchObject({ client: 'client-node', from: expect.stringContaining('uses exec') });
    fs.writeFileSync(file, 'nonsense: [');
    const e = await rejection(loadKube(file, {}));
    expect(e).toBeInstanceOf(AgentStartError);
    expect((e as AgentStartError).exitCode).toBe(2);
    expect(await loadKube('', {})).toBeUndefined();
    const cn = await clientNodeBackend(api.kubeConfig(TOKEN));
    expect(cn.client).toBe('client-node');
  });

  test('issue 14 item 5: the AgentStartError of a bad kubeconfig keeps the parse error as its cause', async () => {
    const file = path.join(tmp, 'config');
    fs.writeFileSync(file, 'nonsense: [');
    const e = (await rejection(loadKube(file, {}))) as AgentStartError;
    expect([e.cause instanceof Error, (e.cause as Error | undefined)?.message !== undefined]).toEqual([true, true]);
    expect(e.message).toContain((e.cause as Error).message);
  });
});

// The TLS tests make their certificates with the openssl command line (present wherever the suite runs; a
// missing openssl fails these tests rather than skipping them).
describe('TLS', () => {
  let dir: string;
  let server: https.Server;
  let port: number;
  const pem = (f: string): Buffer => fs.readFileSync(path.join(dir, f));

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-tls-'));
    const ssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=test-ca',
    );
    fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=DNS:kube.test\n');
    for (const [name, cn] of [
      ['server', 'kube.test'],
      ['client', 'agent'],
    ] as const) {
      ssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.csr`,
        '-subj',
        `/CN=${cn}`,
      );
      ssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${name}.crt`,
        '-days',
        '2',
        ...(name === 'server' ? ['-extfile', 'san.ext'] : []),
      );
    }
    server = https.createServer(
      {
        key: pem('server.key'),
        cert: pem('server.crt'),
        ca: pem('ca.crt'),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ metadata: { name: peer.subject?.CN ?? '' } }));
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  }, 30_000);
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('CA, client certificate and tls-server-name from a kubeconfig; an unknown CA is refused', async () => {
    const file = path.join(dir, 'config');
    fs.writeFileSync(
      file,
      [
        'clusters:',
        '- name: c',
        '  cluster:',
        `    server: https://127.0.0.1:${port}`,
        '    certificate-authority: ca.crt',
        '    tls-server-name: kube.test',
        'users:',
        '- name: u',
        '  user:',
        `    client-certificate-data: ${pem('client.crt').toString('base64')}`,
        '    client-key: client.key',
        'contexts:',
        '- name: x',
        '  context: { cluster: c, user: u }',
        'current-context: x',
      ].join('\n'),
    );
    const s = loadKubeAccess(file, {}) as { access: KubeAccess };
    const c = new KubeClient(s.access);
    expect((await c.readNode({ name: 'n' })).metadata?.name).toBe('agent');
    c.close();
    const noCa = new KubeClient({ ...s.access, ca: undefined });
    expect(String(await rejection(noCa.readNode({ name: 'n' })))).toMatch(/certificate/i);
    noCa.close();
    const insecure = new KubeClient({ ...s.access, ca: undefined, insecureSkipTlsVerify: true });
    expect((await insecure.readNode({ name: 'n' })).metadata?.name).toBe('agent');
    insecure.close();
  });
});
