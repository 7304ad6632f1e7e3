/**
 * The intake queue (spec D.4 recovery hold, bounded queue, batching; D.6 live codes attached on release) on a
 * manual clock with a stub DCMI read.
 */
import { describe, expect, test } from '@jest/globals';
import type { FaultEvent } from '../../src/faults/index.js';
import { IntakeQueue, type IntakeQueueOptions } from '../../src/health/intake-queue.js';
import { FakeClock } from './fake-clock.js';

const SEP = 0x80e18402;
const HBM = 0x80e01801;
const LINK = 0x81078603; // parameter plane (network scope)

interface Rig {
  clock: FakeClock;
  queue: IntakeQueue;
  batches: FaultEvent[][];
  reads: number[];
  full: FaultEvent[];
  /** What the stub DCMI lists per chip (absent: DCMI cannot answer). */
  dcmi: Map<number, number[]>;
  /** True while the sink runs (the store cycle's place). */
  inSink: { now: boolean; readsInside: number };
}

function rig(extra: Partial<IntakeQueueOptions> = {}): Rig {
  const clock = new FakeClock();
  const batches: FaultEvent[][] = [];
  const reads: number[] = [];
  const full: FaultEvent[] = [];
  const dcmi = new Map<number, number[]>([
    [0, []],
    [1, []],
  ]);
  const inSink = { now: false, readsInside: 0 };
  const queue = new IntakeQueue({
    clock,
    sink: (b) => {
      inSink.now = true;
      batches.push([...b]);
      inSink.now = false;
    },
    liveCodes: (id) => {
      reads.push(id);
      if (inSink.now) inSink.readsInside++;
      return dcmi.get(id);
    },
    onFull: (ev) => full.push(ev),
    ...extra,
  });
  return { clock, queue, batches, reads, full, dcmi, inSink };
}

function ev(logicId: number, code: number, assertion: FaultEvent['assertion'], timeMs: number): FaultEvent {
  return { logicId, code, assertion, severity: 2, timeMs };
}

describe('D.4 recovery hold', () => {
  test('D.4 an occurrence is queued at once, a recovery only after recoveryDelayMs', async () => {
    const r = rig();
    r.queue.push(ev(0, SEP, 'occur', r.clock.now()));
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    await r.clock.advance(0);
    expect(r.batches).toEqual([[expect.objectContaining({ code: SEP, assertion: 'occur' })]]);
    await r.clock.advance(999);
    expect(r.batches).toHaveLength(1);
    await r.clock.advance(1);
    expect(r.batches[1]).toEqual([expect.objectContaining({ code: SEP, assertion: 'recover' })]);
  });

  test('D.4 a code is reported held until its last held recovery is released', async () => {
    const r = rig();
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    await r.clock.advance(500);
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    expect([r.queue.isHeld(0, SEP), r.queue.isHeld(1, SEP), r.queue.isHeld(0, HBM)]).toEqual([true, false, false]);
    await r.clock.advance(500);
    expect(r.queue.isHeld(0, SEP)).toBe(true);
    await r.clock.advance(500);
    expect(r.queue.isHeld(0, SEP)).toBe(false);
  });

  test('D.4 recoveries of the same millisecond share one timer and leave as one batch', async () => {
    const r = rig();
    for (let i = 0; i < 100; i++) r.queue.push(ev(i % 2, SEP, 'recover', r.clock.now()));
    expect(r.clock.pending()).toBe(1);
    await r.clock.advance(1000);
    expect(r.batches.map((b) => b.length)).toEqual([100]);
  });

  test('recoveryDelayMs 0 queues a recovery at once, with its live codes', async () => {
    const r = rig({ recoveryDelayMs: 0 });
    r.dcmi.set(0, [HBM]);
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    await r.clock.advance(0);
    expect(r.batches).toEqual([[expect.objectContaining({ code: SEP, liveCodes: [HBM] })]]);
  });
});

describe('D.6 live codes attached when a held recovery is released', () => {
  test("D.6 a released recovery carries the chip's DCMI code list", async () => {
    const r = rig();
    r.dcmi.set(0, [SEP, HBM]);
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    await r.clock.advance(1000);
    expect(r.batches).toEqual([[expect.objectContaining({ code: SEP, assertion: 'recover', liveCodes: [SEP, HBM] })]]);
  });

  test('D.6 DCMI is read in the release turn, once per chip, never while the sink (the store cycle) runs', async () => {
    const r = rig();
    for (let i = 0; i < 10; i++) r.queue.push(ev(i % 2, SEP, 'recover', r.clock.now()));
    await r.clock.advance(1000);
    expect([r.reads.sort(), r.inSink.readsInside, r.batches.length]).toEqual([[0, 1], 0, 1]);
  });

  test('D.6 the list is read when the recovery is released, not when it arrived', async () => {
    const r = rig();
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    await r.clock.advance(500);
    r.dcmi.set(0, [SEP]); // the code came back meanwhile
    await r.clock.advance(500);
    expect(r.batches[0]![0]!.liveCodes).toEqual([SEP]);
  });

  test('D.6 occurrences and network-plane recoveries carry no list and cost no DCMI read', async () => {
    const r = rig();
    r.queue.push(ev(0, SEP, 'occur', r.clock.now()));
    r.queue.push(ev(0, LINK, 'recover', r.clock.now()));
    await r.clock.advance(1000);
    expect([r.batches.flat().map((e) => e.liveCodes), r.reads]).toEqual([[undefined, undefined], []]);
  });

  test('D.6 DCMI unable to answer: the recovery goes on without a list (nothing counts as still reported)', async () => {
    const r = rig();
    r.dcmi.delete(1);
    r.queue.push(ev(1, SEP, 'recover', r.clock.now()));
    await r.clock.advance(1000);
    expect(r.batches.map((b) => b.length)).toEqual([1]);
    expect(r.batches[0]![0]).not.toHaveProperty('liveCodes');
  });
});

describe('architecture §2 bounded intake, batching', () => {
  test('an event that does not fit goes to onFull, the others leave in one batch', async () => {
    const r = rig({ capacity: 2 });
    for (let i = 0; i < 5; i++) r.queue.push(ev(0, SEP, 'occur', r.clock.now()));
    await r.clock.advance(0);
    expect([r.batches.map((b) => b.length), r.full.length]).toEqual([[2], 3]);
  });

  test('after a burst the next batch waits for the coalescing window; after a lone event it does not', async () => {
    const r = rig({ coalesceWindowMs: 2 });
    r.queue.push(ev(0, SEP, 'occur', r.clock.now()));
    await r.clock.advance(0);
    r.queue.push(ev(1, SEP, 'occur', r.clock.now()));
    await r.clock.advance(0);
    r.queue.push(ev(0, HBM, 'occur', r.clock.now()));
    r.queue.push(ev(1, HBM, 'occur', r.clock.now()));
    await r.clock.advance(0);
    r.queue.push(ev(0, SEP, 'occur', r.clock.now()));
    await r.clock.advance(1);
    expect(r.batches.map((b) => b.length)).toEqual([1, 1, 2]);
    await r.clock.advance(1);
    expect(r.batches.map((b) => b.length)).toEqual([1, 1, 2, 1]);
  });

  test('issue [P] item 5: a fault right after one larger batch (held recoveries released together) does not wait for the window', async () => {
    const r = rig({ coalesceWindowMs: 2 });
    r.queue.push(ev(0, SEP, 'occur', r.clock.now()));
    r.queue.push(ev(1, SEP, 'occur', r.clock.now()));
    await r.clock.advance(10);
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    r.queue.push(ev(1, SEP, 'recover', r.clock.now())); // one hold group, released as one batch of two
    await r.clock.advance(1000);
    r.queue.push(ev(0, HBM, 'occur', r.clock.now())); // within the window of that batch
    await r.clock.advance(0);
    expect(r.batches.map((b) => b.length)).toEqual([2, 2, 1]);
  });

  test('stop drops held and queued events and clears every timer', async () => {
    const r = rig();
    r.queue.push(ev(0, SEP, 'occur', r.clock.now()));
    r.queue.push(ev(0, SEP, 'recover', r.clock.now()));
    r.queue.stop();
    r.queue.push(ev(1, SEP, 'occur', r.clock.now()));
    await r.clock.advance(2000);
    expect([r.batches, r.clock.pending(), r.queue.isHeld(0, SEP)]).toEqual([[], 0, false]);
  });
});

describe('issue [P] item 5: the store hears of a batch due in this turn', () => {
  test('onQueued is called once when a batch is queued for this turn, before its flush', async () => {
    let queued = 0;
    let batchesAtQueued = -1;
    const r = rig({
      onQueued: () => {
        queued++;
        batchesAtQueued = r.batches.length;
      },
    });
    r.queue.push(ev(0, SEP, 'occur', 0));
    r.queue.push(ev(1, SEP, 'occur', 0)); // same batch: no second call
    await r.clock.advance(0);
    expect([queued, batchesAtQueued, r.batches.length]).toEqual([1, 0, 1]);
  });
});
