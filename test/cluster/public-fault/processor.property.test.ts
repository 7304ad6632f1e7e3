import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { cloneView, type DeviceFault, type NodeDeviceView } from '../../../src/cluster/device-view.js';
import { faultKey, PublicFaultCache, type NewRecord } from '../../../src/cluster/public-fault/cache.js';
import { PubFaultProcessor } from '../../../src/cluster/public-fault/processor.js';
import type { PublicFaultLevel } from '../../../src/cluster/public-fault/types.js';
import { cycle, dump } from './processor-views.js';

const S = 1_772_330_400;
const NODES = ['n0', 'n1', 'n2', 'ghost'];
const TYPES = ['Ascend910', 'Ascend310P', 'npu'];
const CODES = ['220001001', '220001002', '010001001'];
const LEVELS: PublicFaultLevel[] = ['SeparateNPU', 'PreSeparateNPU', 'SubHealthFault', 'NotHandleFault'];
const PLUGIN_LEVELS = [...LEVELS, 'RestartNPU', 'ManuallySeparateNPU', 'NormalNPU'];
const FAULT_TYPES = ['PublicFault', 'CardUnhealthy', 'CardNetworkUnhealthy'];

type Op =
  | { op: 'insert'; node: string; key: number; rec: Omit<NewRecord, 'resource' | 'faultId' | 'faultType'> }
  | { op: 'delete'; node: string; key: number }
  | { op: 'replace'; node: string; key: number; faultTime: number }
  | { op: 'deviceType'; node: string; type: string }
  | { op: 'list'; node: string; which: 'available' | 'unhealthy'; value: number[] | null }
  | { op: 'pluginFault'; node: string; dev: number; f: DeviceFault }
  | { op: 'clearDevice'; node: string; dev: number; empty: boolean }
  | { op: 'dropView'; node: string }
  | { op: 'feedBack'; node: string }
  | { op: 'pass'; dt: number };

const node = fc.constantFrom(...NODES);
const dev = fc.integer({ min: 0, max: 5 });
const time = fc.constantFrom(S, S + 1, S + 2);
const recArb = fc.record({
  faultCode: fc.constantFrom(...CODES),
  level: fc.constantFrom(...LEVELS),
  // duplicates allowed on purpose (the store does not forbid them)
  devIds: fc.array(dev, { minLength: 1, maxLength: 4 }),
  faultTime: time,
});
const pluginArb = fc
  .record({
    code: fc.constantFrom(...CODES, '80E01801'),
    level: fc.constantFrom(...PLUGIN_LEVELS),
    type: fc.constantFrom(...FAULT_TYPES),
    time,
  })
  .map(({ code, level, type, time: t }) => ({ code, level, type, t }));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('insert' as const), node, key: fc.nat(5), rec: recArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), node, key: fc.nat(5) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('replace' as const), node, key: fc.nat(5), faultTime: time }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('deviceType' as const), node, type: fc.constantFrom(...TYPES) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('list' as const),
      node,
      which: fc.constantFrom('available' as const, 'unhealthy' as const),
      // null: the key is absent ("add fault and fix" then creates it; key order is checked)
      value: fc.option(fc.uniqueArray(dev, { maxLength: 6 }), { freq: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({ op: fc.constant('pluginFault' as const), node, dev, p: pluginArb })
      .map(({ node: n, dev: d, p }): Op => ({ op: 'pluginFault', node: n, dev: d, f: pluginFaultOf(p) })),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('clearDevice' as const), node, dev, empty: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('dropView' as const), node }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('feedBack' as const), node }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('pass' as const), dt: fc.integer({ min: 0, max: 3000 }) }) },
);

/** `npu_name` is filled in when applied (it depends on the node's device type). */
function pluginFaultOf(p: { code: string; level: string; type: string; t: number }): DeviceFault {
  return {
    code: p.code,
    level: p.level,
    faultTime: p.t,
    receivedTime: 3,
    object: {
      fault_type: p.type,
      npu_name: '',
      large_model_fault_level: p.level,
      fault_level: p.level,
      fault_handling: p.level,
      fault_code: p.code,
      fault_time_and_level_map: { [p.code]: { fault_time: p.t, fault_level: p.level } },
    },
  };
}

function freshView(n: string, type = 'Ascend910'): NodeDeviceView {
  return {
    node: n,
    deviceType: type,
    deviceList: {
      [`huawei.com/${type}`]: Array.from({ length: 6 }, (_, i) => `${type}-${i}`).join(','),
      [`huawei.com/${type}-Unhealthy`]: '',
    },
    updateTime: 7,
    superPodId: -2,
    serverIndex: -2,
    rackId: -2,
    faults: new Map(),
  };
}

describe('§2.9 PubFaultProcessor: cached passes equal uncached passes', () => {
  test('random store changes, device-view changes and passes: same content and orders every cycle', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => {
        const cache = new PublicFaultCache();
        const processor = new PubFaultProcessor(cache);
        const base = new Map<string, NodeDeviceView>(NODES.slice(0, 3).map((n) => [n, freshView(n)]));
        let now = S * 1000;
        let last: Map<string, NodeDeviceView> | undefined;
        const viewOf = (n: string): NodeDeviceView => {
          let v = base.get(n);
          if (v === undefined) base.set(n, (v = freshView(n)));
          return v;
        };
        const run = (): void => {
          const { cached, reference } = cycle(processor, cache, base, now);
          expect(dump(cached)).toBe(dump(reference));
          last = cached;
        };
        for (const o of [...ops, { op: 'pass', dt: 1000 } as const, { op: 'pass', dt: 1000 } as const]) {
          switch (o.op) {
            case 'insert':
              cache.insert(
                o.node,
                faultKey('CCAE', `f-${o.key}`),
                { ...o.rec, resource: 'CCAE', faultId: `f-${o.key}`, faultType: 'NPU' },
                S,
              );
              break;
            case 'delete':
              cache.delete(o.node, faultKey('CCAE', `f-${o.key}`));
              break;
            case 'replace': {
              const r = cache.get(o.node, faultKey('CCAE', `f-${o.key}`));
              if (r === undefined) break;
              cache.delete(o.node, faultKey('CCAE', `f-${o.key}`));
              cache.insert(o.node, faultKey('CCAE', `f-${o.key}`), { ...r, faultTime: o.faultTime }, S + 9);
              break;
            }
            case 'deviceType':
              base.set(o.node, freshView(o.node, o.type));
              break;
            case 'list': {
              const v = viewOf(o.node);
              const key = `huawei.com/${v.deviceType}${o.which === 'unhealthy' ? '-Unhealthy' : ''}`;
              if (o.value === null) delete v.deviceList[key];
              else v.deviceList[key] = o.value.map((d) => `${v.deviceType}-${d}`).join(',');
              break;
            }
            case 'pluginFault': {
              const v = viewOf(o.node);
              const d = `${v.deviceType}-${o.dev}`;
              const f = { ...o.f, object: { ...o.f.object, npu_name: d } };
              v.faults.set(d, [...(v.faults.get(d) ?? []), f]);
              break;
            }
            case 'clearDevice': {
              const v = viewOf(o.node);
              const d = `${v.deviceType}-${o.dev}`;
              if (o.empty) v.faults.set(d, []);
              else v.faults.delete(d);
              break;
            }
            case 'dropView':
              base.delete(o.node);
              break;
            case 'feedBack': {
              // the last processed view (with its injected objects) becomes the input
              const v = last?.get(o.node);
              if (v !== undefined) base.set(o.node, cloneView(v));
              break;
            }
            case 'pass':
              now += o.dt;
              run();
              break;
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
