/**
 * The Kubernetes side of the reset layer against the API stand-in: the informer cache of the reset ConfigMaps
 * (hot-reset §2.1, §2.8), GET + UPDATE that change nothing but the data (§2.4), and the ResetInfo annotation by merge
 * patch, which also creates a missing key (device-plugin §J.7).
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { KubeClient } from '../../src/kube/kube-client.js';
import { nodeAnnotationApi, resetConfigMapApi, ResetConfigMapWatcher } from '../../src/reset/reset-kube.js';
import type { ConfigMapObject } from '../../src/reset/types.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';

const TOKEN = 't';
let api: KubeApiStandIn;
let client: KubeClient;
let watcher: ResetConfigMapWatcher | undefined;

beforeEach(async () => {
  api = await KubeApiStandIn.start({ token: TOKEN });
  client = new KubeClient({ server: api.url, token: TOKEN });
});

afterEach(async () => {
  watcher?.stop();
  watcher = undefined;
  client.close();
  await api.stop();
});

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function cm(namespace: string, name: string, data: Record<string, string>, labels = { reset: 'true' }) {
  return { metadata: { name, namespace, labels }, data };
}

describe('reset ConfigMap cache (hot-reset §2.1, §2.8)', () => {
  test('§2.1 lists labelled reset-config-* and data-trace-* ConfigMaps of every namespace', async () => {
    await client.createNamespacedConfigMap({
      namespace: 'default',
      body: cm('default', 'reset-config-job1', { a: '1' }),
    });
    await client.createNamespacedConfigMap({ namespace: 'team', body: cm('team', 'data-trace-job2', { b: '2' }) });
    await client.createNamespacedConfigMap({ namespace: 'team', body: cm('team', 'unrelated', { c: '3' }) });
    await client.createNamespacedConfigMap({
      namespace: 'team',
      body: cm('team', 'reset-config-nolabel', {}, {} as { reset: string }),
    });
    watcher = new ResetConfigMapWatcher({ api: client, watch: client.watch });
    await watcher.start();
    expect(watcher.get('default', 'reset-config-job1')?.data).toEqual({ a: '1' });
    expect(watcher.dataTrace('team', 'data-trace-job2')?.data).toEqual({ b: '2' });
    expect(watcher.get('team', 'unrelated')).toBeUndefined();
    expect(watcher.get('team', 'reset-config-nolabel')).toBeUndefined();
  });

  test('§2.8 a watched update and a delete reach the cache and the change callback', async () => {
    const seen: [string, boolean][] = [];
    watcher = new ResetConfigMapWatcher({
      api: client,
      watch: client.watch,
      onChange: (c, deleted) => seen.push([`${c.namespace}/${c.name}:${c.data['reset.json'] ?? ''}`, deleted]),
    });
    await watcher.start();
    await client.createNamespacedConfigMap({
      namespace: 'default',
      body: cm('default', 'reset-config-job1', { 'reset.json': 'x' }),
    });
    await until(() => watcher!.get('default', 'reset-config-job1') !== undefined);
    const read = await client.readNamespacedConfigMap({ namespace: 'default', name: 'reset-config-job1' });
    await client.replaceNamespacedConfigMap({
      namespace: 'default',
      name: 'reset-config-job1',
      body: { ...read, data: { 'reset.json': 'y' } },
    });
    await until(() => watcher!.get('default', 'reset-config-job1')?.data['reset.json'] === 'y');
    api.store.delete(api.resourceType('', 'configmaps'), 'default', 'reset-config-job1');
    await until(() => watcher!.get('default', 'reset-config-job1') === undefined);
    expect(seen).toEqual([
      ['default/reset-config-job1:x', false],
      ['default/reset-config-job1:y', false],
      ['default/reset-config-job1:y', true],
    ]);
  });
});

describe('reset ConfigMap GET + UPDATE (hot-reset §2.4)', () => {
  test('§2.4 NotFound reads as undefined', async () => {
    expect(await resetConfigMapApi(client).get('default', 'reset-config-none')).toBeUndefined();
  });

  test('§2.4 the UPDATE keeps the metadata read (annotations) and changes the data', async () => {
    await client.createNamespacedConfigMap({
      namespace: 'default',
      body: {
        metadata: {
          name: 'reset-config-job1',
          namespace: 'default',
          labels: { reset: 'true' },
          annotations: { a: 'b' },
        },
        data: { 'reset.json': 'old' },
      },
    });
    const port = resetConfigMapApi(client);
    const old = (await port.get('default', 'reset-config-job1'))!;
    const next: ConfigMapObject = { ...old, data: { 'reset.json': 'new' } };
    await port.replace(next);
    const after = await client.readNamespacedConfigMap({ namespace: 'default', name: 'reset-config-job1' });
    expect(after.data).toEqual({ 'reset.json': 'new' });
    expect(after.metadata?.annotations).toEqual({ a: 'b' });
    expect(after.metadata?.labels).toEqual({ reset: 'true' });
  });

  test('§2.4 a write over a moved resourceVersion is refused with 409 (optimistic concurrency)', async () => {
    await client.createNamespacedConfigMap({ namespace: 'default', body: cm('default', 'reset-config-job1', {}) });
    const port = resetConfigMapApi(client);
    const old = (await port.get('default', 'reset-config-job1'))!;
    await port.replace({ ...old, data: { v: '1' } });
    await expect(port.replace({ ...old, data: { v: '2' } })).rejects.toMatchObject({ code: 409 });
  });
});

describe('ResetInfo node annotation (device-plugin §J.7)', () => {
  test('§J.7 a missing annotation reads undefined and a write creates it, other annotations kept', async () => {
    api.store.create(api.resourceType('', 'nodes'), undefined, {
      metadata: { name: 'node-a', annotations: { keep: 'me' } },
    });
    const port = nodeAnnotationApi(client, 'node-a');
    expect(await port.read('ResetInfo')).toBeUndefined();
    await port.write('ResetInfo', '{"ThirdPartyResetDevs":[],"ManualResetDevs":[]}');
    expect(await port.read('ResetInfo')).toBe('{"ThirdPartyResetDevs":[],"ManualResetDevs":[]}');
    const node = await client.readNode({ name: 'node-a' });
    expect(node.metadata?.annotations?.keep).toBe('me');
  });
});
