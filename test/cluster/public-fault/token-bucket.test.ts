import { describe, expect, test } from '@jest/globals';
import { SenderLimiter, TokenBucket } from '../../../src/cluster/public-fault/token-bucket.js';
import { manualClock } from './fixtures.js';

function takeN(b: TokenBucket, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i++) if (b.tryTake()) ok++;
  return ok;
}

describe('§2.4 token bucket (burst 100, 1 token/s)', () => {
  test('§2.4 a new bucket starts full: 100 takes succeed at once', () => {
    const c = manualClock();
    expect(takeN(new TokenBucket(100, 1, c.now), 100)).toBe(100);
  });

  test('§2.4 the 101st take at the same instant fails', () => {
    const c = manualClock();
    const b = new TokenBucket(100, 1, c.now);
    takeN(b, 100);
    expect(b.tryTake()).toBe(false);
  });

  test('§2.4 999 ms after emptying there is still no whole token', () => {
    const c = manualClock();
    const b = new TokenBucket(100, 1, c.now);
    takeN(b, 100);
    c.advance(999);
    expect(b.tryTake()).toBe(false);
  });

  test('§2.4 1000 ms after emptying exactly one token is back', () => {
    const c = manualClock();
    const b = new TokenBucket(100, 1, c.now);
    takeN(b, 100);
    c.advance(1000);
    expect([b.tryTake(), b.tryTake()]).toEqual([true, false]);
  });

  test('§2.4 refill never exceeds the burst', () => {
    const c = manualClock();
    const b = new TokenBucket(100, 1, c.now);
    takeN(b, 100);
    c.advance(3_600_000);
    expect(takeN(b, 150)).toBe(100);
  });

  test('§2.4 a clock going back refills nothing', () => {
    const c = manualClock();
    const b = new TokenBucket(100, 1, c.now);
    takeN(b, 100);
    c.advance(-10_000);
    expect(b.tryTake()).toBe(false);
  });

  test('§2.4 the global limit bucket (1000/s, burst 1000) passes 1000 then refuses', () => {
    const c = manualClock();
    const b = new TokenBucket(1000, 1000, c.now);
    expect([takeN(b, 1001), (c.advance(1), b.tryTake())]).toEqual([1000, true]);
  });

  test('a bucket with no capacity is refused at construction', () => {
    expect(() => new TokenBucket(0, 1, () => 0)).toThrow(RangeError);
  });
});

describe('§2.4 per-sender limiter', () => {
  test('§4.2 TestLimiter: one bucket per configured sender', () => {
    expect(new SenderLimiter(['CCAE', 'pingmesh'], () => 0).senders()).toEqual(['CCAE', 'pingmesh']);
  });

  test('§4.2 TestLimiter: a known sender is allowed', () => {
    expect(new SenderLimiter(['CCAE'], () => 0).take('CCAE')).toBeUndefined();
  });

  test('§2.4 an unknown sender has no bucket', () => {
    expect(new SenderLimiter(['CCAE'], () => 0).take('nobody')).toBe('unknown-sender');
  });

  test('§2.4 an exhausted sender is rate-limited', () => {
    const l = new SenderLimiter(['CCAE'], () => 0);
    for (let i = 0; i < 100; i++) l.take('CCAE');
    expect(l.take('CCAE')).toBe('rate-limited');
  });

  test('§2.4 senders have separate buckets', () => {
    const l = new SenderLimiter(['CCAE', 'pingmesh'], () => 0);
    for (let i = 0; i < 100; i++) l.take('CCAE');
    expect(l.take('pingmesh')).toBeUndefined();
  });

  test('§2.3 a reset (configuration change) refills and removes stale senders', () => {
    const l = new SenderLimiter(['CCAE', 'pingmesh'], () => 0);
    for (let i = 0; i < 100; i++) l.take('CCAE');
    l.reset(['CCAE']);
    expect([l.take('CCAE'), l.take('pingmesh')]).toEqual([undefined, 'unknown-sender']);
  });
});
