/**
 * Issue [O] item 1: the processing centre re-processes only the nodes whose inputs changed, and that gives the
 * result of upstream's full re-processing every cycle (cluster-faults §0.2): a reference core that re-processes
 * every node every cycle sees the same random history and must publish the same values (but for `UpdateTime`,
 * see docs/fault-center.md), queue the same job faults and count the same.
 */
import { describe, expect, test } from '@jest/globals';
import { faultKey, PublicFaultCache } from '../../src/cluster/public-fault/cache.js';
import { PubFaultProcessor } from '../../src/cluster/public-fault/processor.js';
import { parsePolicy } from '../../src/cluster/policy.js';
import { FaultCenterCore } from '../../src/cluster/processing-center.js';
import { ccaeSeparateFault, deviceInfoCm, faultObject, jobPod, podGroup, policyText } from './helpers.js';

const T0 = 1_772_359_200_000;
const NODES = 12;

/** Deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Side {
  core: FaultCenterCore;
  cache: PublicFaultCache;
}

function side(): Side {
  const cache = new PublicFaultCache();
  const core = new FaultCenterCore({ extraProcessors: [new PubFaultProcessor(cache)] });
  core.manual.setPolicy(parsePolicy(policyText({ threshold: '2' })));
  for (let n = 0; n < NODES; n++) {
    core.jobIndex.upsertPod(jobPod(`p${n}`, `node-${n}`, `uid-${n % 3}`, [0, 1, 2, 3]));
  }
  for (let j = 0; j < 3; j++) core.jobIndex.upsertPodGroup(podGroup(`pg${j}`, `uid-${j}`));
  return { core, cache };
}

/** Published values without `UpdateTime` (refreshed only when a node is re-processed). */
function published(core: FaultCenterCore): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, json] of core.publishedJson) out[n] = json.replace(/"UpdateTime":\d+/, '"UpdateTime":0');
  return out;
}

/** Public fault `f` of CCAE (SeparateNPU on NPU 2) on `node`. */
function insertPublicFault(cache: PublicFaultCache, node: string): void {
  cache.insert(node, faultKey('CCAE', 'f'), ccaeSeparateFault(), 1);
}

const CODES = ['80E01801', '8C084E00', '80E3A201'];
const LEVELS = ['RestartNPU', 'SeparateNPU', 'NotHandleFault'];

describe('issue [O] item 1: incremental processing equals full processing', () => {
  test.each([1, 2, 3])('0.2 random history %i: published values, job faults and counts equal the reference', (seed) => {
    const rnd = prng(seed);
    const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
    const a = side();
    const b = side();
    let t = T0;
    for (let step = 0; step < 250; step++) {
      const op = rnd();
      const node = `node-${Math.floor(rnd() * NODES)}`;
      if (op < 0.5) {
        const faults = Array.from({ length: Math.floor(rnd() * 3) }, () =>
          faultObject(`Ascend910-${Math.floor(rnd() * 4)}`, pick(CODES), pick(LEVELS), t),
        );
        const cm = deviceInfoCm(node, faults, { updateTime: Math.floor(t / 1000) });
        for (const s of [a, b]) s.core.intake.offer({ type: 'update', old: undefined, cm });
      } else if (op < 0.58) {
        for (const s of [a, b]) s.core.intake.offer({ type: 'delete', cm: deviceInfoCm(node, []) });
      } else if (op < 0.78) {
        const id = `f-${Math.floor(rnd() * 6)}`;
        const rec = {
          resource: 'CCAE',
          faultId: id,
          faultType: 'NPU',
          faultCode: '220001001',
          level: 'SeparateNPU' as const,
          devIds: [Math.floor(rnd() * 8)],
          faultTime: 1,
        };
        const del = rnd() < 0.4;
        for (const s of [a, b]) {
          if (del) s.cache.delete(node, faultKey('CCAE', id));
          else s.cache.insert(node, faultKey('CCAE', id), rec, 1);
        }
      } else if (op < 0.86) {
        const dev = `Ascend910-${Math.floor(rnd() * 8)}`;
        const release = rnd() < 0.5;
        for (const s of [a, b]) {
          if (release) s.core.manual.cache.deleteSeparateDev(node, dev);
          else s.core.manual.cache.addSeparateDev(node, dev, 'X', t);
        }
      } else if (op < 0.89) {
        const enabled = rnd() < 0.7 ? 'true' : 'false';
        for (const s of [a, b]) s.core.manual.setPolicy(parsePolicy(policyText({ enabled, threshold: '2' })));
      }
      t += Math.floor(rnd() * 20_000);
      a.core.cycle(t);
      b.core.invalidateAll();
      b.core.cycle(t);
      expect(published(a.core)).toEqual(published(b.core));
    }
    expect([a.core.manual.jobs.export(), a.core.manual.counter.export()]).toEqual([
      b.core.manual.jobs.export(),
      b.core.manual.counter.export(),
    ]);
  });

  test('issue [O] start-up: a first cycle in slices of maxNodes takes the nodes in name order and leaves the rest due', () => {
    const a = side();
    for (let n = 0; n < NODES; n++) a.core.intake.offer({ type: 'add', cm: deviceInfoCm(`node-${n}`, []) });
    const r = a.core.cycle(T0, { jobPass: false, maxNodes: 5 });
    const sorted = Array.from({ length: NODES }, (_, n) => `node-${n}`).sort();
    expect([[...r.published.keys()].sort(), a.core.pendingNodes]).toEqual([sorted.slice(0, 5), NODES - 5]);
  });

  test('issue [O] start-up: slices of a first cycle publish what one whole cycle publishes, and then nothing is due', () => {
    const build = () => {
      const s = side();
      for (let n = 0; n < NODES; n++) {
        const faults = n % 3 === 0 ? [faultObject('Ascend910-1', '80E3A201', 'SeparateNPU', T0)] : [];
        s.core.intake.offer({ type: 'add', cm: deviceInfoCm(`node-${n}`, faults) });
      }
      insertPublicFault(s.cache, 'node-4');
      return s;
    };
    const whole = build();
    whole.core.cycle(T0, { jobPass: false });
    const parts = build();
    let slices = 0;
    do {
      parts.core.cycle(T0, { jobPass: false, maxNodes: 5 });
      slices++;
    } while (parts.core.pendingNodes > 0);
    const next = parts.core.cycle(T0 + 1000, { jobPass: false });
    expect([slices, published(parts.core), next.processedNodes]).toEqual([3, published(whole.core), 0]);
  });

  test('issue [O] 1: a cycle with nothing changed re-processes no node and publishes nothing', () => {
    const a = side();
    for (let n = 0; n < NODES; n++) a.core.intake.offer({ type: 'add', cm: deviceInfoCm(`node-${n}`, []) });
    a.core.cycle(T0);
    const r = a.core.cycle(T0 + 1000);
    expect([r.processedNodes, r.published.size]).toEqual([0, 0]);
  });

  test("issue [O] 1: one node's new device info re-processes that node only", () => {
    const a = side();
    for (let n = 0; n < NODES; n++) a.core.intake.offer({ type: 'add', cm: deviceInfoCm(`node-${n}`, []) });
    a.core.cycle(T0);
    a.core.intake.offer({
      type: 'update',
      old: undefined,
      cm: deviceInfoCm('node-3', [faultObject('Ascend910-1', '80E01801', 'RestartNPU')]),
    });
    const r = a.core.cycle(T0 + 1000);
    expect([r.processedNodes, [...r.published.keys()]]).toEqual([1, ['node-3']]);
  });

  test('issue [O] 1: a public fault re-processes its node only; a separation its node only', () => {
    const a = side();
    for (let n = 0; n < NODES; n++) a.core.intake.offer({ type: 'add', cm: deviceInfoCm(`node-${n}`, []) });
    a.core.cycle(T0);
    insertPublicFault(a.cache, 'node-5');
    const r1 = a.core.cycle(T0 + 1000);
    a.core.manual.cache.addSeparateDev('node-7', 'Ascend910-1', 'X', T0);
    const r2 = a.core.cycle(T0 + 2000);
    expect([[...r1.published.keys()], r1.processedNodes, [...r2.published.keys()], r2.processedNodes]).toEqual([
      ['node-5'],
      1,
      ['node-7'],
      1,
    ]);
  });

  test('issue [O] 1: a separation counted within a cycle is published by it and re-processes nothing next', () => {
    const core = new FaultCenterCore({ countJoblessFaults: true });
    core.manual.setPolicy(parsePolicy(policyText({ threshold: '1' })));
    core.intake.offer({
      type: 'add',
      cm: deviceInfoCm('node-1', [faultObject('Ascend910-2', '80E3A201', 'SeparateNPU')]),
    });
    const r1 = core.cycle(T0);
    const r2 = core.cycle(T0 + 1000);
    expect([r1.published.get('node-1')?.includes('ManuallySeparateNPU'), r2.processedNodes]).toEqual([true, 0]);
  });

  test('0.2 a node whose device info is deleted leaves the published view in the next cycle', () => {
    const a = side();
    a.core.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', []) });
    a.core.cycle(T0);
    a.core.intake.offer({ type: 'delete', cm: deviceInfoCm('node-1', []) });
    const r = a.core.cycle(T0 + 1000);
    expect([r.published.get('node-1'), a.core.processed.has('node-1')]).toEqual([null, false]);
  });
});
