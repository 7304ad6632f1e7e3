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
import { RawConfigMapWriter } from '../../src/cluster/raw-configmap-writer.js';
import { CONFIGMAPS, KubeApiStandIn } from '../../src/sim/kube-api.js';

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

  /** A fake API server's paged answers: `pages[token]` (the first page under ''); records what was asked and done. */
  function paged(pages: Record<string, unknown>, log: string[], fail?: (path: string) => Error | undefined) {
    return (path: string): Promise<unknown> => {
      const q = new URL(path, 'http://x').searchParams;
      log.push(`get limit=${q.get('limit') ?? '-'} continue=${q.get('continue') ?? '-'}`);
      const e = fail?.(path);
      if (e !== undefined) return Promise.reject(e);
      return new Promise((r) => setImmediate(() => r(pages[q.get('continue') ?? ''])));
    };
  }
  const informer = (getJson: (p: string) => Promise<unknown>, log: string[], maxItems?: number) =>
    new RawInformer<k8s.KubernetesObject>(
      {
        what: 'test',
        path: '/api/v1/namespaces/kube-system/configmaps',
        getJson,
        watch: () => Promise.resolve(new AbortController()),
        logger: NOOP_LOGGER,
        ...(maxItems !== undefined ? { maxItems } : {}),
      },
      {
        add: (o) => log.push(`add ${o.metadata?.name}`),
        update: (o) => log.push(`update ${o.metadata?.name}`),
        delete: (o) => log.push(`delete ${o.metadata?.name}`),
      },
    );
  const page = (rv: string, names: string[], token?: string) => ({
    metadata: { resourceVersion: rv, ...(token !== undefined ? { continue: token } : {}) },
    items: names.map((n) => cm(n, '1')),
  });

  test('0.1 list chunking: pages of 500 are asked with their continue token, the next one before this one is handed over', async () => {
    const log: string[] = [];
    const inf = informer(
      paged({ '': page('10', ['a', 'b'], 't1'), t1: page('10', ['c'], 't2'), t2: page('10', ['d']) }, log),
      log,
    );
    await inf.start();
    inf.stop();
    expect(log).toEqual([
      'get limit=500 continue=-',
      'get limit=500 continue=t1',
      'add a',
      'add b',
      'get limit=500 continue=t2',
      'add c',
      'add d',
    ]);
  });

  test('0.1 list chunking: a continue token expired between pages (410) lists again in one piece, without duplicates', async () => {
    const log: string[] = [];
    const gone = Object.assign(new Error('HTTP 410: continue parameter is too old'), { code: 410 });
    const pages = { '': page('10', ['a', 'b'], 't1'), t1: page('10', ['c']) };
    const whole = { metadata: { resourceVersion: '12' }, items: [cm('a', '1'), cm('b', '3'), cm('e', '4')] };
    const getJson = paged(pages, log, (p) => (p.includes('continue=t1') ? gone : undefined));
    const inf = informer(
      (p) => (p.includes('limit=') ? getJson(p) : (log.push('get whole'), Promise.resolve(whole))),
      log,
    );
    await inf.start();
    inf.stop();
    // a was unchanged (no event), b changed, e is new; c was never handed over
    expect([log.slice(2), inf.synced]).toEqual([['add a', 'add b', 'get whole', 'update b', 'add e'], true]);
  });

  test('0.1 list chunking: a re-list reports the objects missing from all its pages as deleted, after the last page', async () => {
    const log: string[] = [];
    const answers = [
      { metadata: { resourceVersion: '10' }, items: [cm('a', '1'), cm('b', '1')] },
      page('20', ['a'], 't1'),
      page('20', ['c']),
    ];
    let watches = 0;
    const inf = new RawInformer<k8s.KubernetesObject>(
      {
        what: 'test',
        path: '/api/v1/namespaces/kube-system/configmaps',
        getJson: () => Promise.resolve(answers.shift()),
        watch: (_p, _q, cb, done) => {
          if (watches++ === 0) setImmediate(() => (cb('ERROR', { kind: 'Status', code: 410 }), done(null)));
          return Promise.resolve(new AbortController());
        },
        logger: NOOP_LOGGER,
      },
      {
        add: (o) => log.push(`add ${o.metadata?.name}`),
        update: (o) => log.push(`update ${o.metadata?.name}`),
        delete: (o) => log.push(`delete ${o.metadata?.name}`),
      },
    );
    await inf.start();
    for (let i = 0; i < 100 && watches < 2; i++) await new Promise((r) => setTimeout(r, 10));
    inf.stop();
    expect(log).toEqual(['add a', 'add b', 'add c', 'delete b']);
  });

  test('0.1 list chunking: the size limit counts all pages and refuses the page that crosses it before handing it over', async () => {
    const log: string[] = [];
    const inf = informer(paged({ '': page('10', ['a', 'b'], 't1'), t1: page('10', ['c', 'd']) }, log), log, 3);
    await inf.start();
    inf.stop();
    expect([log.filter((l) => !l.startsWith('get')), inf.synced]).toEqual([['add a', 'add b'], false]);
  });

  test('0.1 list chunking: a server that repeats a continue token is refused (logged, retried), not paged forever', async () => {
    const log: string[] = [];
    const inf = informer(paged({ '': page('10', ['a'], 't1'), t1: page('10', ['b'], 't1') }, log), log);
    await inf.start();
    inf.stop();
    expect([log.filter((l) => l.startsWith('get')).length, inf.synced]).toEqual([2, false]);
  });

  test('0.1 list chunking: a server that ignores limit answers in one piece', async () => {
    const log: string[] = [];
    const inf = informer(paged({ '': page('10', ['a', 'b']) }, log), log);
    await inf.start();
    inf.stop();
    expect([log, inf.synced]).toEqual([['get limit=500 continue=-', 'add a', 'add b'], true]);
  });

  test('0.1 the list path carries the selectors', () => {
    expect(listPath('/api/v1/configmaps', 'a=b', 'metadata.name=c')).toBe(
      '/api/v1/configmaps?labelSelector=a%3Db&fieldSelector=metadata.name%3Dc',
    );
  });

  test('0.1 list chunking against the stand-in: lists compacted after the first page (410 Expired) are read again whole, every object once', async () => {
    const api = await KubeApiStandIn.start();
    try {
      for (let i = 0; i < 1200; i++) {
        api.store.create(CONFIGMAPS, 'kube-system', { metadata: { name: `cm-${String(i).padStart(4, '0')}` } });
      }
      const raw = new RawConfigMapWriter(api.kubeConfig());
      const asked: string[] = [];
      const added = new Set<string>();
      let duplicates = 0;
      const inf = new RawInformer<k8s.KubernetesObject>(
        {
          what: 'test',
          path: '/api/v1/namespaces/kube-system/configmaps',
          getJson: async (p) => {
            asked.push(
              new URL(p, 'http://x').searchParams.has('continue') ? 'page' : p.includes('limit=') ? 'first' : 'whole',
            );
            const answer = await raw.getJson(p);
            if (asked.length === 1) api.compactLists(); // the server compacts right after the first page
            return answer;
          },
          watch: () => Promise.resolve(new AbortController()),
          logger: NOOP_LOGGER,
        },
        {
          add: (o) => (added.has(o.metadata!.name!) ? duplicates++ : added.add(o.metadata!.name!)),
          update: () => undefined,
          delete: () => undefined,
        },
      );
      await inf.start();
      inf.stop();
      raw.close();
      expect([asked, added.size, duplicates, inf.synced]).toEqual([['first', 'page', 'whole'], 1200, 0, true]);
    } finally {
      await api.stop();
    }
  });
});
