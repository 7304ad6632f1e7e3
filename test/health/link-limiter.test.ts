/**
 * The D.8 link-status limiter: one real `hccn_tool -link -g` per chip per interval, the cached answer otherwise,
 * failure counted as DOWN.
 */
import { describe, expect, test } from '@jest/globals';
import type { LinkStatus } from '../../src/dcmi/hccn.js';
import { LinkLimiter } from '../../src/health/link-limiter.js';
import { FakeClock } from './fake-clock.js';

function rig(answers: Map<number, LinkStatus | Error>, intervalMs = 60_000) {
  const clock = new FakeClock();
  const calls: number[] = [];
  const limiter = new LinkLimiter({
    clock,
    intervalMs,
    query: (phy) => {
      calls.push(phy);
      const a = answers.get(phy) ?? 'UP';
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    },
  });
  return { clock, calls, limiter };
}

describe('D.8 link-status limiter', () => {
  test('D.8 one real query per chip per interval; the cached answer in between', async () => {
    const answers = new Map<number, LinkStatus | Error>([[1, 'DOWN']]);
    const r = rig(answers);
    expect(await r.limiter.status(1)).toBe('DOWN');
    answers.set(1, 'UP');
    await r.clock.advance(59_999);
    expect(await r.limiter.status(1)).toBe('DOWN');
    expect(await r.limiter.status(2)).toBe('UP'); // another chip has its own budget
    expect(r.calls).toEqual([1, 2]);
  });

  test('D.8 once the interval has passed the next request queries again', async () => {
    const answers = new Map<number, LinkStatus | Error>([[1, 'DOWN']]);
    const r = rig(answers);
    await r.limiter.status(1);
    answers.set(1, 'UP');
    await r.clock.advance(60_000);
    expect([await r.limiter.status(1), r.calls]).toEqual(['UP', [1, 1]]);
  });

  test('D.8 a failed query counts as DOWN (Abnormal) and is cached like an answer', async () => {
    const r = rig(new Map([[3, new Error('hccn_tool exited 1')]]));
    expect(await r.limiter.status(3)).toBe('Abnormal');
    expect([await r.limiter.status(3), r.calls]).toEqual(['Abnormal', [3]]);
  });

  test('cachedOnly never queries: undefined before any answer, the cached answer after', async () => {
    const r = rig(new Map([[4, 'DOWN']]));
    expect(await r.limiter.status(4, true)).toBeUndefined();
    await r.limiter.status(4);
    await r.clock.advance(120_000);
    expect([await r.limiter.status(4, true), r.calls]).toEqual(['DOWN', [4]]);
  });
});
