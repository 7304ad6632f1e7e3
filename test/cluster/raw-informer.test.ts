/**
 * The fault center's inputs without client-node's informer (issue [O] start-up; cluster-faults §0.1 inputs): a
 * re-list reports, from the resourceVersions kept, what an informer would: new objects as add, changed ones as
 * update, vanished ones as delete.
 */
import { describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { NOOP_LOGGER } from '../../src/core/logger.js';
import type { WatchFn } from '../../src/kube/list-watch.js';
import { listPath, RawInformer } from '../../src/cluster/raw-informer.js';

const cm = (name: string, rv: string) => ({ metadata: { name, namespace: 'kube-system', resourceVersion: rv } });

describe('0.1 inputs listed and watched', () => {
  test('0.1 a re-list after 410 Gone reports new, changed and vanished objects as add, update and delete', async () => {
    const lists = [
      { metadata: { resourceVersion: '10' }, items: [cm('x', '1'), cm('y', '2')] },
      { metadata: { resourceVersion: '20' }, items: [cm('x', '5'), cm('z', '6')] },
    ];
    let watches = 0;
    const watch: WatchFn = (_p, _q, cb, done) => {
      // the first watch expires at once (410 Gone), the second stays open
      if (watches++ === 0) {
        setImmediate(() => {
          cb('ERROR', { kind: 'Status', code: 410 });
          done(null);
        });
      }
      return Promise.resolve(new AbortController());
    };
    const seen: string[] = [];
    const inf = new RawInformer<k8s.KubernetesObject>(
      {
        what: 'test',
        path: '/api/v1/namespaces/kube-system/configmaps',
        kubeConfig: new k8s.KubeConfig(),
        getJson: () => Promise.resolve(lists.shift()),
        watch,
        logger: NOOP_LOGGER,
      },
      {
        add: (o) => seen.push(`add ${o.metadata?.name}`),
        update: (o) => seen.push(`update ${o.metadata?.name}`),
        delete: (o) => seen.push(`delete ${o.metadata?.namespace}/${o.metadata?.name}`),
      },
    );
    await inf.start();
    for (let i = 0; i < 100 && watches < 2; i++) await new Promise((r) => setTimeout(r, 10));
    inf.stop();
    expect(seen).toEqual(['add x', 'add y', 'update x', 'add z', 'delete kube-system/y']);
  });

  test('0.1 a list answer that is not a list is refused (and retried), not read as empty', async () => {
    const seen: string[] = [];
    let lists = 0;
    const inf = new RawInformer<k8s.KubernetesObject>(
      {
        what: 'test',
        path: '/api/v1/pods',
        kubeConfig: new k8s.KubeConfig(),
        getJson: () => {
          lists++;
          return Promise.resolve({ items: 'nope' });
        },
        watch: () => Promise.resolve(new AbortController()),
        logger: NOOP_LOGGER,
      },
      { add: (o) => seen.push(String(o.metadata?.name)), update: () => undefined, delete: () => undefined },
    );
    await inf.start();
    inf.stop();
    expect([lists, seen, inf.synced]).toEqual([1, [], false]);
  });

  test('0.1 the list path carries the selectors', () => {
    expect(listPath('/api/v1/configmaps', 'a=b', 'metadata.name=c')).toBe(
      '/api/v1/configmaps?labelSelector=a%3Db&fieldSelector=metadata.name%3Dc',
    );
  });
});
