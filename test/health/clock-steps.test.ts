/**
 * Issue [T] item 1, the health layer on the manual clock (test/health/fake-clock.ts): the D.4 recovery hold and the
 * intake window, and the D.8 query interval, with the wall clock frozen or stepped an hour back or forward — each
 * keeps its nominal interval, since each is timed on the monotonic clock; the events keep their wall-clock times.
 */
import { describe, expect, test } from '@jest/globals';
import type { FaultEvent } from '../../src/faults/index.js';
import { IntakeQueue } from '../../src/health/intake-queue.js';
import { IntervalCache } from '../../src/health/interval-cache.js';
import { FakeClock } from './fake-clock.js';

const HOUR = 3_600_000;
const SEP = 0x80e18402;
const HBM = 0x80e01801;

function intake(clock: FakeClock) {
  const batches: FaultEvent[][] = [];
  const queue = new IntakeQueue({
    clock,
    sink: (b) => void batches.push([...b]),
    liveCodes: () => [],
    onFull: () => undefined,
  });
  return { queue, batches };
}

const recover = (logicId: number, code: number, timeMs: number): FaultEvent => ({
  logicId,
  code,
  assertion: 'recover',
  severity: 2,
  timeMs,
});

describe('issue [T] item 1: D.4 recovery hold under wall-clock steps', () => {
  test('D.4 wall clock frozen: a recovery 500 ms after another is held its own full second, not released with it', async () => {
    const clock = new FakeClock();
    const { queue, batches } = intake(clock);
    clock.freezeWall();
    queue.push(recover(0, SEP, clock.now()));
    await clock.advance(500);
    queue.push(recover(1, HBM, clock.now()));
    await clock.advance(500);
    expect(batches.map((b) => b.map((e) => e.logicId))).toEqual([[0]]);
    await clock.advance(499);
    expect(batches).toHaveLength(1);
    await clock.advance(1);
    expect(batches.map((b) => b.map((e) => e.logicId))).toEqual([[0], [1]]);
  });

  test('D.4 wall clock back 1 h during a hold: the recovery leaves after its second, with its own (wall) time', async () => {
    const clock = new FakeClock();
    const { queue, batches } = intake(clock);
    const t = clock.now();
    queue.push(recover(0, SEP, t));
    clock.stepWall(-HOUR);
    await clock.advance(999);
    expect(batches).toHaveLength(0);
    await clock.advance(1);
    expect(batches).toEqual([[expect.objectContaining({ logicId: 0, timeMs: t })]]);
  });

  test('D.4 batching: with the wall clock stepped back 1 h after a burst, the next batch waits one window at most', async () => {
    const clock = new FakeClock();
    const batches: FaultEvent[][] = [];
    const queue = new IntakeQueue({
      clock,
      sink: (b) => void batches.push([...b]),
      liveCodes: () => [],
      onFull: () => undefined,
      coalesceWindowMs: 50,
    });
    const occur = (logicId: number): FaultEvent => ({ logicId, code: SEP, assertion: 'occur', severity: 2, timeMs: 0 });
    queue.push(occur(0));
    queue.push(occur(1));
    await clock.advance(0);
    queue.push(occur(2));
    queue.push(occur(3)); // a second batch of two right after the first: a burst, the next one keeps the window
    await clock.advance(0);
    clock.stepWall(-HOUR);
    queue.push(occur(0));
    await clock.advance(49);
    expect(batches).toHaveLength(2);
    await clock.advance(1);
    expect(batches.map((b) => b.length)).toEqual([2, 2, 1]);
  });
});

describe('issue [T] item 1: D.8 query interval under wall-clock steps', () => {
  function cache() {
    const clock = new FakeClock();
    const c = new IntervalCache<number, string>(clock, 300_000);
    let fetches = 0;
    const get = () => c.get(0, false, () => Promise.resolve(`answer ${++fetches}`));
    return { clock, get };
  }

  test('D.8 wall clock forward 1 h: the cached answer stands until the 5 min are over', async () => {
    const { clock, get } = cache();
    await get();
    clock.stepWall(HOUR);
    expect(await get()).toBe('answer 1');
    await clock.advance(300_000);
    expect(await get()).toBe('answer 2');
  });

  test('D.8 wall clock back 1 h: the next real query comes after 5 min, not 65', async () => {
    const { clock, get } = cache();
    await get();
    clock.stepWall(-HOUR);
    await clock.advance(299_999);
    expect(await get()).toBe('answer 1');
    await clock.advance(1);
    expect(await get()).toBe('answer 2');
  });
});
