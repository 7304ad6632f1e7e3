import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { faultKey, PublicFaultCache, type NewRecord } from '../../../src/cluster/public-fault/cache.js';
import { noopPublicFaultMetrics } from '../../../src/cluster/public-fault/metrics.js';
import {
  restoreStatistics,
  statisticsContent,
  StatisticsCorruptError,
  TOO_MANY_DESCRIPTION,
} from '../../../src/cluster/public-fault/statistics.js';
import { StatisticsWriter } from '../../../src/cluster/public-fault/statistics-writer.js';
import { centerKube } from '../helpers.js';
import { KubeApiStandIn } from '../../../src/sim/kube-api.js';
import { recordingLogger, T0_MS } from './fixtures.js';

const S = 1_772_330_390;

function rec(over: Partial<NewRecord> = {}): NewRecord {
  return {
    resource: 'CCAE',
    faultId: 'fault-0001',
    faultType: 'Storage',
    faultCode: '010001001',
    level: 'SubHealthFault',
    devIds: [0, 1],
    faultTime: S,
    ...over,
  };
}

function withEntries(n: number): PublicFaultCache {
  const c = new PublicFaultCache();
  for (let i = 0; i < n; i++) c.insert('node-1', `CCAEfault-${i}`, rec({ faultId: `fault-${i}` }), S);
  return c;
}

describe('§2.10 statistic-fault-info content', () => {
  test('§2.10 a normal write holds the documented bytes', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec(), S);
    expect(statisticsContent(c)).toEqual({
      kind: 'replace',
      data: {
        PublicFaults:
          '{"node-1":[{"resource":"CCAE","devIds":[0,1],"faultId":"fault-0001","type":"Storage","faultCode":"010001001","level":"SubHealthFault","faultTime":1772330390}]}',
        FaultNum: '{"publicFaultNum":1}',
      },
    });
  });

  test('§2.10 an empty cache writes "{}" and a count of 0', () => {
    expect(statisticsContent(new PublicFaultCache()).data).toEqual({
      PublicFaults: '{}',
      FaultNum: '{"publicFaultNum":0}',
    });
  });

  test('§2.10 4500 entries are still written in full', () => {
    expect(statisticsContent(withEntries(4500)).kind).toBe('replace');
  });

  test('issue [O] 3: 4500 entries whose detail would take the ConfigMap over 900 KiB are written as the count only', () => {
    const c = new PublicFaultCache();
    const id = 'x'.repeat(120);
    for (let i = 0; i < 4500; i++) {
      c.insert(
        `node-${i}`,
        `CCAE${id}${i}`,
        rec({ faultId: `${id}${i}`, devIds: Array.from({ length: 32 }, (_, d) => d) }),
        S,
      );
    }
    expect(statisticsContent(c).kind).toBe('patch');
  });

  test('§2.10 above 4500 entries only the count and the description are patched', () => {
    expect(statisticsContent(withEntries(4501))).toEqual({
      kind: 'patch',
      data: { FaultNum: '{"publicFaultNum":4501}', Description: TOO_MANY_DESCRIPTION },
    });
  });

  test('§4.2 TestLoadFaultToCache: entries of 2 nodes load as occur with addTime = now', () => {
    const c = new PublicFaultCache();
    const r = restoreStatistics(
      '{"node-1":[{"resource":"CCAE","devIds":[0],"faultId":"fault-0001","level":"SeparateNPU","faultCode":"220001001","faultTime":1}],' +
        '"node-2":[{"resource":"CCAE","devIds":[1],"faultId":"fault-0002","level":"SeparateNPU","faultCode":"220001001"}]}',
      c,
      S,
    );
    expect([r.loaded, c.get('node-2', 'CCAEfault-0002')?.addTime, c.pendingDeletes]).toEqual([2, S, 0]);
  });

  test('§2.10 restore is subject to the cap', () => {
    const c = new PublicFaultCache({ cap: 1 });
    const r = restoreStatistics(
      '{"n":[{"resource":"CCAE","devIds":[0],"faultId":"fault-0001","level":"SeparateNPU"},{"resource":"CCAE","devIds":[0],"faultId":"fault-0002","level":"SeparateNPU"}]}',
      c,
      S,
    );
    expect([r.loaded, r.capped]).toEqual([1, 1]);
  });

  test('§2.10 an unusable entry is skipped and named, the rest loads', () => {
    const c = new PublicFaultCache();
    const r = restoreStatistics(
      '{"n":[{"resource":"CCAE","devIds":[99],"faultId":"fault-0001","level":"SeparateNPU"},{"resource":"CCAE","devIds":[0],"faultId":"fault-0002","level":"SeparateNPU"}]}',
      c,
      S,
    );
    expect([r.loaded, r.skipped, r.problems[0]]).toEqual([1, 1, expect.stringContaining('PublicFaults.n[0]')]);
  });

  const corrupt: [string, string][] = [
    ['§2.10 bad JSON', '{"node-1":['],
    ['§2.10 an array at the top', '[]'],
    ['§2.10 a node value that is not a list', '{"node-1":{}}'],
    ['§2.10 a devIds that is not a list', '{"n":[{"devIds":3}]}'],
    ['§2.10 a string faultTime', '{"n":[{"faultTime":"1"}]}'],
  ];
  test.each(corrupt)('%s is corrupt and loads nothing', (_n, text) => {
    const c = new PublicFaultCache();
    expect(() => restoreStatistics(text, c, S)).toThrow(StatisticsCorruptError);
    expect(c.size).toBe(0);
  });
});

describe('§2.10 persistence through the API server', () => {
  let api: KubeApiStandIn;
  let core: k8s.CoreV1Api;
  let logger: ReturnType<typeof recordingLogger>;

  beforeEach(async () => {
    api = await KubeApiStandIn.start();
    core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    logger = recordingLogger();
  });
  afterEach(async () => {
    await api.stop();
  });

  function writer(cache: PublicFaultCache): StatisticsWriter {
    return new StatisticsWriter({
      kube: centerKube(api),
      namespace: 'cluster-system',
      cache,
      logger,
      metrics: noopPublicFaultMetrics,
      clock: { now: () => T0_MS, monotonic: () => T0_MS },
      minIntervalMs: 1,
    });
  }

  async function read(): Promise<k8s.V1ConfigMap> {
    return core.readNamespacedConfigMap({ name: 'statistic-fault-info', namespace: 'cluster-system' });
  }

  test('§2.10 the first write creates the ConfigMap with its label', async () => {
    const w = writer(withEntries(1));
    w.notify();
    await w.flush();
    expect((await read()).metadata?.labels).toEqual({ 'mc-statistic-fault': 'true' });
  });

  test('§2.10 a writer stopped at the end of a leadership term writes again after the next restore', async () => {
    const w = writer(withEntries(1));
    await w.stop();
    await w.restore();
    w.notify();
    await w.flush();
    expect((await read()).metadata?.labels).toEqual({ 'mc-statistic-fault': 'true' });
  });

  test('§2.10 round trip: what one center writes, the next restores', async () => {
    const a = withEntries(3);
    a.insert(
      'node-2',
      faultKey('pingmesh', 'pm-link-42'),
      rec({ resource: 'pingmesh', faultId: 'pm-link-42', devIds: [3] }),
      S,
    );
    const w = writer(a);
    w.notify();
    await w.flush();
    const b = new PublicFaultCache();
    await writer(b).restore();
    const strip = (c: PublicFaultCache): unknown[] => [...c.entries()].map(([n, k, r]) => [n, k, { ...r, addTime: 0 }]);
    expect(strip(b)).toEqual(strip(a));
  });

  test('§2.10 above 4500 entries the old PublicFaults stay and Description appears', async () => {
    const c = withEntries(1);
    const w = writer(c);
    w.notify();
    await w.flush();
    const before = (await read()).data?.PublicFaults;
    for (let i = 1; i < 4502; i++) c.insert('node-1', `CCAEfault-${i}`, rec({ faultId: `fault-${i}` }), S);
    w.notify();
    await w.flush();
    const data = (await read()).data;
    expect([data?.PublicFaults, data?.FaultNum, data?.Description]).toEqual([
      before,
      '{"publicFaultNum":4502}',
      TOO_MANY_DESCRIPTION,
    ]);
  });

  test('§2.10 a normal write after a patch drops Description', async () => {
    const c = withEntries(4501);
    const w = writer(c);
    await core.createNamespacedConfigMap({
      namespace: 'cluster-system',
      body: { metadata: { name: 'statistic-fault-info' }, data: {} },
    });
    w.notify();
    await w.flush();
    c.delete('node-1', 'CCAEfault-0');
    w.notify();
    await w.flush();
    expect(Object.keys((await read()).data ?? {}).sort()).toEqual(['FaultNum', 'PublicFaults']);
  });

  test('issue [O] 3: above 4500 entries with no ConfigMap yet, it is created with the count, the description and no detail', async () => {
    const w = writer(withEntries(4501));
    w.notify();
    await w.flush();
    const cm = await read();
    expect([cm.metadata?.labels, cm.data]).toEqual([
      { 'mc-statistic-fault': 'true' },
      { PublicFaults: '{}', FaultNum: '{"publicFaultNum":4501}', Description: TOO_MANY_DESCRIPTION },
    ]);
  });

  test('issue [O] 3: 50,000 entries (the cap): the ConfigMap is created, then patched as the count changes', async () => {
    const c = new PublicFaultCache();
    for (let i = 0; i < 50_000; i++) c.insert(`node-${i % 10_000}`, `CCAEf-${i}`, rec({ faultId: `f-${i}` }), S);
    const w = writer(c);
    w.notify();
    await w.flush();
    c.delete('node-0', 'CCAEf-0');
    w.notify();
    await w.flush();
    expect((await read()).data?.FaultNum).toBe('{"publicFaultNum":49999}');
  });

  test('§2.10 a missing ConfigMap restores nothing, quietly', async () => {
    const c = new PublicFaultCache();
    expect(await writer(c).restore()).toEqual({ loaded: 0, skipped: 0, capped: 0, problems: [] });
  });

  test('§2.10 a once fault live at shutdown comes back as a plain occur (no pending delete)', async () => {
    const a = new PublicFaultCache();
    a.apply('once', 'node-1', 'CCAEfault-0001', rec(), S);
    const w = writer(a);
    w.notify();
    await w.flush();
    const b = new PublicFaultCache();
    await writer(b).restore();
    expect([b.size, b.pendingDeletes]).toEqual([1, 0]);
  });

  describe('corrupt state', () => {
    beforeEach(async () => {
      await core.createNamespacedConfigMap({
        namespace: 'cluster-system',
        body: { metadata: { name: 'statistic-fault-info' }, data: { PublicFaults: '{"node-1":[' } },
      });
    });

    test('§2.10 corrupt stored faults: restore does not throw and starts empty', async () => {
      const c = new PublicFaultCache();
      const r = await writer(c).restore();
      expect([c.size, r.error]).toEqual([0, expect.stringContaining('not valid JSON')]);
    });

    test('§2.10 corrupt stored faults: an error log names the ConfigMap and key', async () => {
      await writer(new PublicFaultCache()).restore();
      expect(logger.lines.find((l) => l.level === 'error')?.obj).toMatchObject({
        configMap: 'cluster-system/statistic-fault-info',
        key: 'PublicFaults',
      });
    });

    test('§2.10 corrupt stored faults: a Warning Event is recorded on the ConfigMap', async () => {
      await writer(new PublicFaultCache()).restore();
      const events = await core.listNamespacedEvent({ namespace: 'cluster-system' });
      expect(events.items.map((e) => [e.type, e.reason, e.involvedObject.name])).toEqual([
        ['Warning', 'PublicFaultRestoreFailed', 'statistic-fault-info'],
      ]);
    });
  });
});
