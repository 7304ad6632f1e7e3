import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import type { FaultEvent } from '../../src/faults/index.js';
import type { DeviceSnapshot } from '../../src/kubelet/device-source.js';
import { StoreDeviceSource } from '../../src/kubelet/store-device-source.js';
import { NodeStateStore, sameJson, type NodeState, type StateChange } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import type { FakeClock } from '../health/fake-clock.js';
import { testStore } from './helpers.js';

const SEPARATE = 0x80e18402; // SeparateNPU in the shipped faultCode.json
const HBM = 0x80e01801; // FaultFrequency 2 in 24 h → ManuallySeparateNPU (shipped customization)

function makeStore(chips = 4): { store: NodeStateStore; clock: FakeClock } {
  return testStore({ chips });
}

function ev(logicId: number, code: number, assertion: FaultEvent['assertion'] = 'occur'): FaultEvent {
  return { logicId, code, assertion, severity: 2 };
}

describe('D.2 event-driven cycle (architecture §2 one store)', () => {
  test('a batch of events is applied at once and published as a new snapshot', () => {
    const { store } = makeStore();
    const seen: [NodeState, StateChange][] = [];
    store.onChange((s, c) => seen.push([s, c]));
    store.applyEvents([ev(1, SEPARATE)]);
    expect(seen).toHaveLength(1);
    const [state, change] = seen[0]!;
    expect(state.chips[1]).toMatchObject({ health: 'Unhealthy', level: 'SeparateNPU', faultCodes: ['80E18402'] });
    expect(change).toMatchObject({ cause: 'events', changed: [1], events: 1 });
    expect(change.transitions).toContainEqual(
      expect.objectContaining({ kind: 'health', logicId: 1, from: 'Healthy', to: 'Unhealthy' }),
    );
  });

  test('snapshots are immutable and a new one replaces the old', () => {
    const { store } = makeStore();
    const before = store.snapshot();
    store.applyEvents([ev(0, SEPARATE)]);
    const after = store.snapshot();
    expect(after).not.toBe(before);
    expect(after.seq).toBe(before.seq + 1);
    expect(before.chips[0]!.health).toBe('Healthy');
    expect(Object.isFrozen(after.chips[0])).toBe(true);
    expect(() => (after.chips[0]!.faultCodes as string[]).push('x')).toThrow();
  });

  test('D.6 a recovery removes the code and the chip is Healthy again', () => {
    const { store } = makeStore();
    store.applyEvents([ev(2, SEPARATE)]);
    store.applyEvents([ev(2, SEPARATE, 'recover')]);
    expect(store.chip(2)).toMatchObject({ health: 'Healthy', level: 'NormalNPU', faultCodes: [] });
  });

  test('D.6 a recovery of a code DCMI still reports is ignored (liveCodes)', () => {
    const { store } = makeStore(4);
    store.applyEvents([ev(2, SEPARATE)]);
    store.applyEvents([{ ...ev(2, SEPARATE, 'recover'), liveCodes: [SEPARATE] }]);
    expect(store.chip(2)!.health).toBe('Unhealthy');
  });

  test('a cycle that changes nothing publishes nothing', () => {
    const { store } = makeStore();
    let n = 0;
    store.onChange(() => n++);
    store.tick();
    expect(n).toBe(0);
  });

  test('an input given by a listener is applied after the current notification, in order', () => {
    const { store } = makeStore();
    const seqs: number[] = [];
    store.onChange((s, c) => {
      seqs.push(s.seq);
      if (c.cause === 'events' && s.seq === 1) store.applyEvents([ev(3, SEPARATE)]);
    });
    store.applyEvents([ev(0, SEPARATE)]);
    expect(seqs).toEqual([1, 2]);
    expect(store.chip(3)!.health).toBe('Unhealthy');
  });

  test('a throwing listener does not stop the others', () => {
    const { store } = makeStore();
    let reached = false;
    store.onChange(() => {
      throw new Error('boom');
    });
    store.onChange(() => (reached = true));
    store.applyEvents([ev(0, SEPARATE)]);
    expect(reached).toBe(true);
  });
});

describe('F.3/G.2 escalation, operator release, pod-used (store inputs)', () => {
  test('FaultFrequency escalates to ManuallySeparateNPU; operator release returns the chip', () => {
    const { store, clock } = makeStore();
    store.applyEvents([ev(1, HBM)]);
    clock.t += 1000;
    store.applyEvents([ev(1, HBM, 'recover')]);
    clock.t += 1000;
    store.applyEvents([ev(1, HBM)]);
    expect(store.chip(1)).toMatchObject({ level: 'ManuallySeparateNPU', manuallySeparated: true });
    expect(store.snapshot().manualSeparation).toBe('Ascend910-1');
    store.applyEvents([ev(1, HBM, 'recover')]);
    store.release(1);
    expect(store.chip(1)).toMatchObject({ manuallySeparated: false, health: 'Healthy' });
    expect(store.snapshot().manualSeparation).toBe('');
  });

  test('D.7 PreSeparateNPU on a chip used by a pod is Healthy', () => {
    const { store } = makeStore();
    store.applyEvents([ev(0, 0x8118043c)]); // PreSeparateNPU
    expect(store.chip(0)!.health).toBe('Unhealthy');
    store.setPodUsed(new Set([0]));
    expect(store.chip(0)).toMatchObject({ health: 'Healthy', podUsed: true });
  });

  test('F.8 a new policy re-levels the chips at once', () => {
    const { store } = makeStore();
    store.applyEvents([ev(0, 0x12345678)]); // unknown code, severity 2 → SeparateNPU (E.4)
    expect(store.chip(0)!.level).toBe('SeparateNPU');
    store.setPolicy(shippedPolicy());
    expect(store.chip(0)!.level).toBe('SeparateNPU');
  });
});

describe('D.2 idle cycle every listWatchPeriod', () => {
  test('start() runs the idle cycle on the clock; stop() ends it', async () => {
    const { store, clock } = makeStore();
    store.start();
    expect(clock.pending()).toBe(1);
    await clock.advance(5000);
    expect(clock.pending()).toBe(1);
    store.stop();
    expect(clock.pending()).toBe(0);
  });
});

describe('B.3/C.1 the DeviceSource adapter', () => {
  test('devices are named <manager>-<phy> and carry health, level and separation', () => {
    const { store } = makeStore(2);
    const src = new StoreDeviceSource(store);
    expect(src.snapshot().deviceTypes).toEqual({
      Ascend910: [
        expect.objectContaining({ id: 'Ascend910-0', logicId: 0, health: 'Healthy', level: 'NormalNPU' }),
        expect.objectContaining({ id: 'Ascend910-1', manuallySeparated: false }),
      ],
    });
    expect(src.snapshot().node.chipKind).toBe('Ascend910B');
  });

  test('a fault reaches the DeviceSource listener as Unhealthy, a recovery as Healthy', () => {
    const { store } = makeStore(2);
    const src = new StoreDeviceSource(store);
    const seen: DeviceSnapshot[] = [];
    src.onChange((s) => seen.push(s));
    store.applyEvents([ev(1, SEPARATE)]);
    store.applyEvents([ev(1, SEPARATE, 'recover')]);
    expect(seen.map((s) => s.deviceTypes.Ascend910![1]!.health)).toEqual(['Unhealthy', 'Healthy']);
  });

  test('a change kubelet cannot see (network health) does not notify kubelet', () => {
    const { store, clock } = makeStore(2);
    const src = new StoreDeviceSource(store);
    let n = 0;
    src.onChange(() => n++);
    store.applyEvents([ev(0, 0x81078603)]); // F.6: network PreSeparateNPU after 20 s down
    clock.t += 21_000;
    store.tick();
    expect(store.chip(0)!.networkHealth).toBe('Unhealthy');
    expect(n).toBe(0);
  });
});

describe('sameJson (the store compares chip views without building their JSON text)', () => {
  test('agrees with comparing JSON.stringify texts', () => {
    const value = fc.jsonValue({ maxDepth: 3 });
    const tweaked = value.chain((v) =>
      fc.constantFrom(v, structuredClone(v), JSON.parse(JSON.stringify(v)) as unknown),
    );
    fc.assert(
      fc.property(fc.oneof(fc.tuple(value, value), fc.tuple(value, tweaked)), ([a, b]) => {
        expect(sameJson(a, b)).toBe(JSON.stringify(a) === JSON.stringify(b));
      }),
      { numRuns: 2000 },
    );
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false); // key order counts, as in the text
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson([undefined], [null])).toBe(true);
    expect(sameJson([1, 2], { 0: 1, 1: 2 })).toBe(false);
  });

  test('a storm of repeated occurrences publishes one snapshot, not one per batch', () => {
    const { store } = makeStore();
    let n = 0;
    store.onChange(() => n++);
    for (let i = 0; i < 50; i++) store.applyEvents([ev(1, SEPARATE), ev(2, SEPARATE)]);
    expect(n).toBe(1);
    expect(store.chip(1)!.faultCodes).toEqual(['80E18402']);
  });
});

describe('issue [P] item 5: deferred listeners (the projections after the kubelet send)', () => {
  const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));
  /** Enough turns for every deferred call queued so far (one call per turn). */
  const turns = async (n = 12): Promise<void> => {
    for (let i = 0; i < n; i++) await nextTurn();
  };

  test('a deferred listener is not called in the cycle, and is called after it with the snapshot and its change', async () => {
    const { store } = makeStore();
    const seen: [number, string][] = [];
    store.onChange((s, c) => seen.push([s.seq, c.cause]), { deferred: true });
    store.applyEvents([ev(1, SEPARATE)]);
    const inTurn = seen.length;
    await nextTurn();
    expect([inTurn, seen]).toEqual([0, [[1, 'events']]]);
  });

  test('every snapshot of a turn reaches a deferred listener, in order, after the in-turn listeners had each', async () => {
    const { store } = makeStore();
    const order: string[] = [];
    store.onChange((s) => order.push(`now ${s.seq}`));
    store.onChange((s) => order.push(`later ${s.seq}`), { deferred: true });
    store.onFaultEvents((e) => order.push(`events later ${e.length}`), { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]);
    store.applyEvents([ev(1, SEPARATE), ev(2, SEPARATE)]);
    await turns();
    expect(order).toEqual(['now 1', 'now 2', 'later 1', 'events later 1', 'later 2', 'events later 2']);
  });

  test('the durable listeners stay in the cycle (a save is on disk before any output leaves)', () => {
    const { store } = makeStore();
    let durable = 0;
    store.onDurableChange(() => durable++);
    store.onChange(() => undefined, { deferred: true });
    store.applyEvents([ev(1, HBM)]);
    expect(durable).toBeGreaterThan(0);
  });

  test('flushDeferred hands what waits to the deferred listeners at once (the shutdown), and only once', async () => {
    const { store } = makeStore();
    const seqs: number[] = [];
    store.onChange((s) => seqs.push(s.seq), { deferred: true });
    store.applyEvents([ev(1, SEPARATE)]);
    store.flushDeferred();
    const flushed = [...seqs];
    await nextTurn();
    expect([flushed, seqs]).toEqual([[1], [1]]);
  });

  test('a throwing deferred listener does not stop the others', async () => {
    const { store } = makeStore();
    let reached = false;
    store.onChange(
      () => {
        throw new Error('boom');
      },
      { deferred: true },
    );
    store.onChange(() => (reached = true), { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]);
    await turns();
    expect(reached).toBe(true);
  });

  test('one deferred call per turn of the event loop: a fault arriving meanwhile waits for one projection, not all', async () => {
    const { store } = makeStore();
    const order: string[] = [];
    store.onChange(() => order.push('metrics'), { deferred: true });
    store.onChange(() => order.push('configmap'), { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]);
    await nextTurn();
    const afterOne = [...order];
    await turns();
    expect([afterOne, order]).toEqual([['metrics'], ['metrics', 'configmap']]);
  });

  test('a turn whose poll phase queued a fault batch (inputComing) runs its cycle before any deferred call', async () => {
    const { store } = makeStore();
    const order: string[] = [];
    store.onChange((s) => order.push(`now ${s.seq}`));
    store.onChange((s) => order.push(`later ${s.seq}`), { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]); // queues its deferred call for the next check phase
    store.inputComing(); // as the intake does in the poll phase, just before it queues its flush
    setImmediate(() => store.applyEvents([ev(1, SEPARATE)])); // the intake's flush, queued after that call
    await turns();
    expect(order).toEqual(['now 1', 'now 2', 'later 1', 'later 2']);
  });

  test('inputComing without a batch holds the deferred calls for one turn only', async () => {
    const { store } = makeStore();
    const order: string[] = [];
    store.onChange((s) => order.push(`later ${s.seq}`), { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]);
    store.inputComing();
    await nextTurn();
    const held = [...order];
    await nextTurn();
    expect([held, order]).toEqual([[], ['later 1']]);
  });
});

describe('issue [P] item 5: the output lane (later tasks, the quiet period)', () => {
  const turns = async (n = 12): Promise<void> => {
    for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
  };

  test('later(task) runs after what was deferred before it, in a turn of its own', async () => {
    const { store } = makeStore();
    const order: string[] = [];
    store.onChange(() => order.push('projection'), { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]);
    store.later(() => order.push('task'));
    await new Promise((r) => setImmediate(r));
    const afterOne = [...order];
    await turns();
    expect([afterOne, order]).toEqual([['projection'], ['projection', 'task']]);
  });

  test('a throwing later task does not stop the lane', async () => {
    const { store } = makeStore();
    let reached = false;
    store.later(() => {
      throw new Error('boom');
    });
    store.later(() => (reached = true));
    await turns();
    expect(reached).toBe(true);
  });

  test('with outputQuietMs the outputs wait until no fault batch came for that long', async () => {
    const { store, clock } = testStore({ outputQuietMs: 2 });
    let ran = 0;
    store.onChange(() => ran++, { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]);
    await turns();
    const beforeQuiet = ran;
    await clock.advance(2);
    await turns();
    expect([beforeQuiet, ran]).toEqual([0, 1]);
  });

  test('a stopped store delivers what waited for quiet without waiting (the shutdown flushes after stop)', async () => {
    const { store } = testStore({ outputQuietMs: 2 });
    let ran = 0;
    store.onChange(() => ran++, { deferred: true });
    store.applyEvents([ev(0, SEPARATE)]);
    await turns();
    const beforeStop = ran;
    store.stop();
    await turns();
    expect([beforeStop, ran]).toEqual([0, 1]);
  });

  test('a fault batch within the quiet period puts the outputs off again, a storm past outputMaxWaitMs (50) does not', async () => {
    const { store, clock } = testStore({ outputQuietMs: 2, chips: 4 });
    const ranAt: number[] = [];
    let published = 0;
    store.onChange(() => published++);
    store.onChange(() => ranAt.push(clock.monotonic()), { deferred: true });
    for (let ms = 0; ms < 80; ms++) {
      store.applyEvents([ev(ms % 4, SEPARATE, ms % 8 < 4 ? 'occur' : 'recover')]); // a batch every 1 ms
      await clock.advance(1);
      await turns(2);
    }
    // nothing ran while batches came every 1 ms, until 50 ms after the first output entered the lane
    expect(ranAt[0]).toBeGreaterThanOrEqual(50);
    expect(ranAt[0]).toBeLessThanOrEqual(52);
    // then the lane runs without waiting until it is empty: it keeps up during the storm, and loses nothing
    const duringStorm = ranAt.length;
    await clock.advance(2); // the quiet after the storm
    await turns(40);
    expect([duringStorm > published / 2, ranAt.length]).toEqual([true, published]);
  });
});
