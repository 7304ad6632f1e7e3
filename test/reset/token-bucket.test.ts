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
