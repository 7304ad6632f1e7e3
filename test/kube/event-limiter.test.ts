/**
 * The Event recorder's token bucket (src/kube/event-limiter.ts; spec K.1: 10 a minute, burst 10) on the manual
 * clock: burst, one waiting place, refusal beyond it, refill on the monotonic clock only (issue [T] item 1).
 */
import { describe, expect, test } from '@jest/globals';
import { EventLimiter, EventLimitRefused } from '../../src/kube/event-limiter.js';
import { FakeClock, settle } from '../health/fake-clock.js';

const HOUR = 3_600_000;

function setup(burst = 3, tokenMs = 1000) {
  const clock = new FakeClock();
  const limiter = new EventLimiter({ clock, burst, tokenMs });
  const ran: number[] = [];
  const outcomes: string[] = [];
  const offer = (i: number): void =>
    void limiter
      .schedule(() => Promise.resolve(void ran.push(i)))
      .then(
        () => outcomes.push(`ran ${i}`),
        (e: unknown) => outcomes.push(e instanceof EventLimitRefused ? `refused ${i}` : `failed ${i}`),
      );
  return { clock, limiter, ran, outcomes, offer };
}

describe('K.1 event limiter', () => {
  test('K.1 the bucket starts full: burst jobs run at once, one more waits, the next is refused at once', async () => {
    const s = setup();
    for (let i = 0; i < 5; i++) s.offer(i);
    await settle();
    expect([s.ran, s.outcomes.filter((o) => o.startsWith('refused')), s.limiter.counts().waiting]).toEqual([
      [0, 1, 2],
      ['refused 4'],
      1,
    ]);
  });

  test('K.1 the waiting job runs when the next token is due, not before', async () => {
    const s = setup();
    for (let i = 0; i < 4; i++) s.offer(i);
    await s.clock.advance(999);
    expect(s.ran).toEqual([0, 1, 2]);
    await s.clock.advance(1);
    expect(s.ran).toEqual([0, 1, 2, 3]);
  });

  test('issue [T] item 1: a step of the wall clock neither gives nor withholds a token', async () => {
    const s = setup();
    for (let i = 0; i < 4; i++) s.offer(i);
    await settle();
    s.clock.stepWall(HOUR);
    await settle();
    expect(s.ran).toEqual([0, 1, 2]);
    s.clock.stepWall(-2 * HOUR);
    await s.clock.advance(1000);
    expect(s.ran).toEqual([0, 1, 2, 3]);
  });

  test('K.1 tokens come back up to the burst, not beyond', async () => {
    const s = setup();
    await s.clock.advance(60_000);
    for (let i = 0; i < 5; i++) s.offer(i);
    await settle();
    expect(s.ran).toEqual([0, 1, 2]);
  });

  test('a stopped limiter refuses the waiting job and every new one', async () => {
    const s = setup(1);
    s.offer(0);
    s.offer(1);
    await settle();
    s.limiter.stop();
    s.offer(2);
    await settle();
    expect(s.outcomes).toEqual(['ran 0', 'refused 1', 'refused 2']);
    expect(s.clock.pending()).toBe(0);
  });

  test('a job that throws rejects its own promise and frees nothing else', async () => {
    const clock = new FakeClock();
    const limiter = new EventLimiter({ clock, burst: 1, tokenMs: 1000 });
    await expect(limiter.schedule(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(limiter.counts()).toEqual({ waiting: 0, running: 0 });
  });

  test('a burst below 1 or a token interval of 0 is refused at construction', () => {
    const clock = new FakeClock();
    expect(() => new EventLimiter({ clock, burst: 0, tokenMs: 1000 })).toThrow(RangeError);
    expect(() => new EventLimiter({ clock, burst: 1, tokenMs: 0 })).toThrow(RangeError);
  });
});
