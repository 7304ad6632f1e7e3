import { describe, expect, test } from '@jest/globals';
import type { NodeDeviceView } from '../../../src/cluster/device-view.js';
import { faultKey, PublicFaultCache, type NewRecord } from '../../../src/cluster/public-fault/cache.js';
import { PublicFaultCollector } from '../../../src/cluster/public-fault/collector.js';
import { parsePublicFaultConfig } from '../../../src/cluster/public-fault/config.js';
import { noopPublicFaultMetrics } from '../../../src/cluster/public-fault/metrics.js';
import { PubFaultProcessor } from '../../../src/cluster/public-fault/processor.js';
import { fault, message, recordingLogger, SHIPPED_CONFIG_FILE, T0_MS } from './fixtures.js';
import { cycle, dump, injected, npuView, pluginFault } from './processor-views.js';
import fs from 'node:fs';

const S = 1_772_330_400;
const NOW = 1_772_446_000_123;

function rec(over: Partial<NewRecord> = {}): NewRecord {
  return {
    resource: 'CCAE',
    faultId: 'fault-0001',
    faultType: 'NPU',
    faultCode: '220001001',
    level: 'SeparateNPU',
    devIds: [0, 1],
    faultTime: S,
    ...over,
  };
}

/** Three nodes with views (n1..n3) and one store-only node; n1 has two records, n2 one, n3 two identical ones. */
function setup() {
  const cache = new PublicFaultCache();
  cache.insert('n1', faultKey('CCAE', 'f-1'), rec({ faultId: 'f-1', devIds: [0, 1] }), S);
  cache.insert('n1', faultKey('CCAE', 'f-2'), rec({ faultId: 'f-2', devIds: [1, 2], faultCode: '220001002' }), S);
  cache.insert('n2', faultKey('CCAE', 'f-3'), rec({ faultId: 'f-3', devIds: [3], level: 'SubHealthFault' }), S);
  cache.insert('n3', faultKey('CCAE', 'f-4'), rec({ faultId: 'f-4', devIds: [4, 5] }), S);
  cache.insert('n3', faultKey('pingmesh', 'f-4'), rec({ resource: 'pingmesh', faultId: 'f-4', devIds: [5, 6] }), S);
  cache.insert('ghost', faultKey('CCAE', 'f-5'), rec({ faultId: 'f-5' }), S);
  const base = new Map<string, NodeDeviceView>([
    ['n1', npuView('n1')],
    ['n2', npuView('n2')],
    ['n3', npuView('n3')],
    ['n4', npuView('n4')],
  ]);
  const processor = new PubFaultProcessor(cache);
  const first = cycle(processor, cache, base, NOW);
  return { cache, base, processor, first };
}

/** A cycle whose output must equal the reference; returns it and the work it took. */
function checkedCycle(s: ReturnType<typeof setup>, nowMs = NOW + 1000) {
  const before = s.processor.stats;
  const out = cycle(s.processor, s.cache, s.base, nowMs);
  expect(dump(out.cached)).toBe(dump(out.reference));
  const after = s.processor.stats;
  return {
    views: out.cached,
    recomputed: after.nodeRecomputes - before.nodeRecomputes,
    replayed: after.nodeReplays - before.nodeReplays,
    created: after.objectsCreated - before.objectsCreated,
  };
}

describe('§2.9 PubFaultProcessor cache: nothing changed', () => {
  test('the first pass equals the uncached pass and computes each node with a view once', () => {
    const s = setup();
    expect(dump(s.first.cached)).toBe(dump(s.first.reference));
    // n3's two records share (time, level, code): device 5 gets one object
    expect(s.processor.stats).toEqual({ passes: 1, nodeReplays: 0, nodeRecomputes: 3, objectsCreated: 8 });
  });

  test('§2.9 records of one node share an injected object only when time, level and code are all equal', () => {
    const cache = new PublicFaultCache();
    const put = (id: string, over: Partial<NewRecord>) =>
      cache.insert('n1', faultKey('CCAE', id), rec({ faultId: id, devIds: [0], ...over }), S);
    put('f-1', {});
    put('f-2', {}); // equal to f-1: shares its object
    put('f-3', { faultTime: S + 1 });
    put('f-4', { level: 'SubHealthFault' });
    put('f-5', { faultCode: '220001002' });
    put('f-6', { faultTime: 0 });
    put('f-7', { faultTime: -0 }); // kept apart from 0, as before the flat table
    const processor = new PubFaultProcessor(cache);
    const out = cycle(processor, cache, new Map([['n1', npuView('n1')]]), NOW);
    expect([dump(out.cached) === dump(out.reference), processor.stats.objectsCreated]).toEqual([true, 6]);
  });

  test('§2.9 a node with many (time, level, code) groups shares and reuses objects the same way', () => {
    const cache = new PublicFaultCache();
    // 20 distinct times, each sent twice (equal records share), plus 0 and -0 kept apart
    for (let i = 0; i < 40; i++) {
      cache.insert(
        'n1',
        faultKey('CCAE', `f-${i}`),
        rec({ faultId: `f-${i}`, devIds: [i % 4], faultTime: S + (i % 20) }),
        S,
      );
    }
    cache.insert('n1', faultKey('CCAE', 'z-0'), rec({ faultId: 'z-0', devIds: [0], faultTime: 0 }), S);
    cache.insert('n1', faultKey('CCAE', 'z-1'), rec({ faultId: 'z-1', devIds: [0], faultTime: -0 }), S);
    const processor = new PubFaultProcessor(cache);
    const base = new Map([['n1', npuView('n1')]]);
    const first = cycle(processor, cache, base, NOW);
    const created = processor.stats.objectsCreated;
    // a new record on the node: recomputed, every earlier object reused
    cache.insert('n1', faultKey('CCAE', 'new'), rec({ faultId: 'new', devIds: [1], faultTime: S + 99 }), S);
    const second = cycle(processor, cache, base, NOW + 1000);
    expect([
      dump(first.cached) === dump(first.reference),
      created,
      dump(second.cached) === dump(second.reference),
      processor.stats.objectsCreated - created,
    ]).toEqual([true, 22, true, 1]);
  });

  test('a second pass on fresh copies replays every node: same output, no object built, the same objects', () => {
    const s = setup();
    const r = checkedCycle(s);
    expect([r.recomputed, r.replayed, r.created]).toEqual([0, 3, 0]);
    for (const n of ['n1', 'n2', 'n3']) {
      const a = injected(s.first.cached.get(n));
      const b = injected(r.views.get(n));
      expect(b).toHaveLength(a.length);
      b.forEach((f, i) => expect(f).toBe(a[i]));
    }
  });

  test('many unchanged passes keep replaying, and UpdateTime follows each pass', () => {
    const s = setup();
    for (let i = 1; i <= 5; i++) {
      const r = checkedCycle(s, NOW + i * 1000);
      expect([r.recomputed, r.created, r.views.get('n1')!.updateTime]).toEqual([
        0,
        0,
        Math.floor((NOW + i * 1000) / 1000),
      ]);
    }
  });

  test('injected objects are frozen (shared between cycles), and so are stored records', () => {
    const s = setup();
    const f = injected(s.first.cached.get('n1'))[0]!;
    expect(() => {
      (f as { level: string }).level = 'x';
    }).toThrow(TypeError);
    expect(() => {
      f.object.fault_time_and_level_map['220001001']!.fault_time = 0;
    }).toThrow(TypeError);
    const r = s.cache.get('n1', faultKey('CCAE', 'f-1'))!;
    expect(() => {
      (r as { level: string }).level = 'NotHandleFault';
    }).toThrow(TypeError);
    expect(() => (r.devIds as number[]).push(7)).toThrow(TypeError);
  });

  test('an empty store does nothing and forgets what was remembered', () => {
    const s = setup();
    for (const [n, k] of [...s.cache.entries()].map(([n, k]) => [n, k] as const)) s.cache.delete(n, k);
    const r = checkedCycle(s);
    expect([r.recomputed, r.replayed, dump(r.views)]).toEqual([0, 0, dump(s.base)]);
  });
});

describe('§2.9 PubFaultProcessor cache: what a change invalidates', () => {
  test('a changed record (recover + occur with another time) recomputes its node only, building its objects only', () => {
    const s = setup();
    const old = s.cache.get('n1', faultKey('CCAE', 'f-2'))!;
    s.cache.delete('n1', faultKey('CCAE', 'f-2'));
    s.cache.insert('n1', faultKey('CCAE', 'f-2'), { ...old, faultTime: S + 9 }, S + 20);
    const r = checkedCycle(s);
    expect([r.recomputed, r.replayed, r.created]).toEqual([1, 2, 2]);
    // f-1's objects on n1 are reused
    expect(injected(r.views.get('n1'))[0]).toBe(injected(s.first.cached.get('n1'))[0]);
  });

  test('a new record on a node recomputes that node; a record for a node without a view costs nothing', () => {
    const s = setup();
    s.cache.insert('n2', faultKey('CCAE', 'f-9'), rec({ faultId: 'f-9', devIds: [7], faultCode: '220001003' }), S);
    s.cache.insert('ghost', faultKey('CCAE', 'f-8'), rec({ faultId: 'f-8' }), S);
    const r = checkedCycle(s);
    expect([r.recomputed, r.replayed, r.created]).toEqual([1, 2, 1]);
  });

  test('a removed record recomputes its node without building anything', () => {
    const s = setup();
    s.cache.delete('n1', faultKey('CCAE', 'f-1'));
    const r = checkedCycle(s);
    expect([r.recomputed, r.replayed, r.created]).toEqual([1, 2, 0]);
    expect(r.views.get('n1')!.faults.has('Ascend910-0')).toBe(false);
  });

  test('removing the record whose identical object was shown keeps the other record showing it', () => {
    const s = setup();
    s.cache.delete('n3', faultKey('CCAE', 'f-4'));
    const r = checkedCycle(s);
    expect([r.recomputed, r.created, [...r.views.get('n3')!.faults.keys()]]).toEqual([
      1,
      0,
      ['Ascend910-5', 'Ascend910-6'],
    ]);
  });

  test("a node's last record removed: its view is left as read, its memory dropped, a new record rebuilds it", () => {
    const s = setup();
    s.cache.delete('n2', faultKey('CCAE', 'f-3'));
    const r = checkedCycle(s);
    expect([r.recomputed, dump(new Map([['n2', r.views.get('n2')!]]))]).toEqual([
      0,
      dump(new Map([['n2', s.base.get('n2')!]])),
    ]);
    s.cache.insert('n2', faultKey('CCAE', 'f-3'), rec({ faultId: 'f-3', devIds: [3], level: 'SubHealthFault' }), S);
    const again = checkedCycle(s);
    expect([again.recomputed, again.created]).toEqual([1, 1]);
  });

  test('a changed device view (available list) recomputes that node only, reusing its objects', () => {
    const s = setup();
    s.base.get('n1')!.deviceList['huawei.com/Ascend910'] = 'Ascend910-0,Ascend910-3';
    const r = checkedCycle(s);
    expect([r.recomputed, r.replayed, r.created]).toEqual([1, 2, 0]);
  });

  test('a device-plugin fault on an NPU a record names recomputes the node; on another NPU it does not', () => {
    const s = setup();
    s.base.get('n1')!.faults.set('Ascend910-7', [pluginFault('Ascend910-7', '80E01801')]);
    expect(checkedCycle(s).recomputed).toBe(0);
    s.base.get('n1')!.faults.set('Ascend910-1', [pluginFault('Ascend910-1', '80E01801')]);
    expect(checkedCycle(s).recomputed).toBe(1);
    expect(checkedCycle(s).recomputed).toBe(0);
    s.base
      .get('n1')!
      .faults.set('Ascend910-1', [pluginFault('Ascend910-1', '80E01801', 'RestartNPU', 'CardUnhealthy', 2)]);
    expect(checkedCycle(s).recomputed).toBe(1);
  });

  test('a device-plugin object identical to the injected one suppresses it, and is noticed when it goes', () => {
    const s = setup();
    const same = injected(s.first.cached.get('n2'))[0]!;
    s.base.get('n2')!.faults.set('Ascend910-3', [{ ...same, receivedTime: 5, object: { ...same.object } }]);
    const r = checkedCycle(s);
    expect([r.recomputed, r.views.get('n2')!.faults.get('Ascend910-3')!.length, r.views.get('n2')!.updateTime]).toEqual(
      [1, 1, 1],
    );
    expect(checkedCycle(s).recomputed).toBe(0);
    s.base.get('n2')!.faults.delete('Ascend910-3');
    expect(checkedCycle(s).recomputed).toBe(1);
  });

  test('a view without the available and -Unhealthy keys gets them created in the same order on a replay', () => {
    const s = setup();
    delete s.base.get('n1')!.deviceList['huawei.com/Ascend910'];
    delete s.base.get('n1')!.deviceList['huawei.com/Ascend910-Unhealthy'];
    expect(checkedCycle(s).recomputed).toBe(1);
    const r = checkedCycle(s);
    expect([r.recomputed, Object.keys(r.views.get('n1')!.deviceList)]).toEqual([
      0,
      ['huawei.com/Ascend910-NetworkUnhealthy', 'huawei.com/Ascend910', 'huawei.com/Ascend910-Unhealthy'],
    ]);
  });

  test('a changed device type rebuilds the objects of that node (NPU names change)', () => {
    const s = setup();
    s.base.set('n2', npuView('n2', 'Ascend310P'));
    const r = checkedCycle(s);
    expect([r.recomputed, r.created, injected(r.views.get('n2')).map((f) => f.object.npu_name)]).toEqual([
      1,
      1,
      ['Ascend310P-3'],
    ]);
  });

  test('a node view that disappears and comes back is recomputed only if its content differs', () => {
    const s = setup();
    const n3 = s.base.get('n3')!;
    s.base.delete('n3');
    expect(checkedCycle(s).recomputed).toBe(0);
    s.base.set('n3', n3);
    expect(checkedCycle(s).recomputed).toBe(0);
  });

  test('re-running on already processed views (their own objects as input) equals the reference', () => {
    const s = setup();
    s.base.clear();
    for (const [n, v] of s.first.cached) s.base.set(n, v);
    const r = checkedCycle(s);
    expect(r.recomputed).toBe(3);
    expect(checkedCycle(s).recomputed).toBe(0);
  });
});

describe('§2.3 a configuration reload', () => {
  const shipped = fs.readFileSync(SHIPPED_CONFIG_FILE, 'utf8');
  // 220001001 moved from SeparateNPU to SubHealthFault
  const moved = JSON.parse(shipped) as { publicFaultCode: Record<string, string[]> };
  moved.publicFaultCode.SeparateNPUCodes = moved.publicFaultCode.SeparateNPUCodes!.filter((c) => c !== '220001001');
  moved.publicFaultCode.SubHealthFaultCodes!.push('220001001');

  test('invalidates nothing (stored faults keep their level); a fault stored after it has the new level', () => {
    const cache = new PublicFaultCache();
    let now = T0_MS;
    const collector = new PublicFaultCollector({
      cache,
      clock: { monotonic: () => now },
      logger: recordingLogger(),
      metrics: noopPublicFaultMetrics,
      nodeBySerial: () => undefined,
      config: parsePublicFaultConfig(shipped),
    });
    expect(collector.collect(message(), 'grpc').code).toBe(0);
    const base = new Map([
      ['node-1', npuView('node-1')],
      ['node-2', npuView('node-2')],
    ]);
    const processor = new PubFaultProcessor(cache);
    const s = { cache, base, processor, first: cycle(processor, cache, base, NOW) };
    collector.setConfig(parsePublicFaultConfig(JSON.stringify(moved)));
    const r = checkedCycle(s);
    expect([r.recomputed, r.created, injected(r.views.get('node-1')).map((f) => f.level)]).toEqual([
      0,
      0,
      ['SeparateNPU', 'SeparateNPU'],
    ]);
    now += 1000;
    const next = message({ id: 'msg.20260301-0002' }, [
      fault({ faultId: 'fault-0002', influence: [{ nodeName: 'node-2', nodeSN: '', deviceIds: [4] }] }),
    ]);
    expect(collector.collect(next, 'grpc').code).toBe(0);
    const r2 = checkedCycle(s);
    expect([r2.recomputed, r2.replayed, r2.created, injected(r2.views.get('node-2')).map((f) => f.level)]).toEqual([
      1,
      1,
      1,
      ['SubHealthFault'],
    ]);
  });
});
