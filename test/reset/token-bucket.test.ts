import { describe, expect, test } from '@jest/globals';
import { ChipTokenBuckets } from '../../src/reset/token-bucket.js';
import { FakeClock } from '../health/fake-clock.js';

const H = 3_600_000;

function buckets(clock = new FakeClock()) {
  return { clock, b: new ChipTokenBuckets({ clock, capacity: 3, refillMs: 6 * H }) };
}

describe('ChipTokenBuckets (§J.2)', () => {
  test('§J.2 a chip starts with 3 tokens and can consume 3', () => {
    const { b } = buckets();
    expect(b.available(0)).toBe(3);
    expect([b.tryConsume(0), b.tryConsume(0), b.tryConsume(0), b.tryConsume(0)]).toEqual([true, true, true, false]);
    expect(b.available(0)).toBe(0);
  });

  test('§J.2 buckets are per chip', () => {
    const { b } = buckets();
    b.tryConsume(0);
    b.tryConsume(0);
    b.tryConsume(0);
    expect(b.tryConsume(1)).toBe(true);
    expect(b.available(1)).toBe(2);
  });

  test('§J.2 no partial refill before 6 h since the last refill', async () => {
    const { clock, b } = buckets();
    b.tryConsume(0);
    b.tryConsume(0);
    await clock.advance(6 * H - 1);
    expect(b.available(0)).toBe(1);
  });

  test('§J.2 refilled to full once 6 h have passed since the last refill', async () => {
    const { clock, b } = buckets();
    b.tryConsume(0);
    b.tryConsume(0);
    b.tryConsume(0);
    await clock.advance(6 * H);
    expect(b.available(0)).toBe(3);
  });

  test('§J.2 the period runs from the last refill, not from the last consumption', async () => {
    const { clock, b } = buckets();
    b.available(0); // bucket created (refilled) at t0
    await clock.advance(5 * H);
    b.tryConsume(0);
    await clock.advance(1 * H);
    expect(b.available(0)).toBe(3);
    await clock.advance(1 * H);
    b.tryConsume(0);
    await clock.advance(5 * H - 1);
    expect(b.available(0)).toBe(2);
  });

  test('peek reports without creating or refilling, nextRefillAt after the first access', async () => {
    const { clock, b } = buckets();
    expect(b.peek(4)).toBe(3);
    expect(b.nextRefillAt(4)).toBeUndefined();
    const t0 = clock.now();
    b.tryConsume(4);
    expect(b.peek(4)).toBe(2);
    expect(b.nextRefillAt(4)).toBe(t0 + 6 * H);
    await clock.advance(6 * H);
    expect(b.peek(4)).toBe(3);
    expect(b.nextRefillAt(4)).toBe(t0 + 6 * H);
  });

  test('bad options and ids name the problem', () => {
    const clock = new FakeClock();
    expect(() => new ChipTokenBuckets({ clock, capacity: 0, refillMs: 1 })).toThrow(
      'capacity must be a positive integer',
    );
    expect(() => new ChipTokenBuckets({ clock, capacity: 3, refillMs: NaN })).toThrow('refill period');
    expect(() => new ChipTokenBuckets({ clock, capacity: 3, refillMs: 1 }).available(-1)).toThrow('logic id -1');
  });
});

describe('ChipTokenBuckets on the monotonic clock, kept across a restart (issue [T] items 1 and 4)', () => {
  test('§J.2 a wall clock stepped back one hour neither delays nor speeds the 6 h refill', async () => {
    const { clock, b } = buckets();
    b.tryConsume(0);
    clock.stepWall(-H);
    await clock.advance(6 * H - 1);
    expect(b.available(0)).toBe(2);
    await clock.advance(1);
    expect(b.available(0)).toBe(3);
  });

  test('§J.2 a wall clock stepped forward six hours does not refill', () => {
    const { clock, b } = buckets();
    b.tryConsume(0);
    clock.stepWall(6 * H);
    expect(b.available(0)).toBe(2);
    expect(b.peek(0)).toBe(2);
  });

  test('nextRefillAt is a wall time: the last refill plus 6 h, moved with a wall step', async () => {
    const { clock, b } = buckets();
    const t0 = clock.now();
    b.tryConsume(0);
    await clock.advance(H);
    clock.stepWall(-H);
    expect(b.nextRefillAt(0)).toBe(t0 - H + 6 * H);
  });

  test('exportState lists the buckets that are not full, with the last refill as a wall time', async () => {
    const { clock, b } = buckets();
    const t0 = clock.now();
    b.tryConsume(2);
    b.available(5); // full: not listed
    await clock.advance(H);
    expect(b.exportState()).toEqual([{ logicId: 2, tokens: 2, lastRefillAt: t0 }]);
  });

  test('restore: a bucket saved by the previous process keeps its tokens until 6 h after its refill', async () => {
    const first = buckets();
    first.b.tryConsume(1);
    first.b.tryConsume(1);
    const saved = first.b.exportState();
    // a new process 2 h later: a new monotonic origin, the same wall clock
    const clock = new FakeClock(first.clock.now() + 2 * H);
    const b = new ChipTokenBuckets({ clock, capacity: 3, refillMs: 6 * H });
    expect(b.restore(saved)).toEqual([]);
    expect(b.available(1)).toBe(1);
    await clock.advance(4 * H - 1);
    expect(b.available(1)).toBe(1);
    await clock.advance(1);
    expect(b.available(1)).toBe(3);
  });

  test('restore: a wall clock stepped back while the agent was down counts as no time passed', async () => {
    const first = buckets();
    first.b.tryConsume(1);
    const saved = first.b.exportState();
    const clock = new FakeClock(first.clock.now() - 24 * H);
    const b = new ChipTokenBuckets({ clock, capacity: 3, refillMs: 6 * H });
    b.restore(saved);
    await clock.advance(6 * H - 1);
    expect(b.available(1)).toBe(2);
  });

  test('restore: entries that are not buckets are named and skipped', () => {
    const { b } = buckets();
    const problems = b.restore([
      { logicId: -1, tokens: 1, lastRefillAt: 0 },
      { logicId: 2, tokens: 9, lastRefillAt: 0 },
      { logicId: 3, tokens: 0, lastRefillAt: Number.NaN },
    ]);
    expect(problems).toHaveLength(3);
    expect(problems[1]).toContain('"tokens":9');
    expect([b.available(2), b.available(3)]).toEqual([3, 3]);
  });
});
