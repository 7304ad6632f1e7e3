/**
 * A manual clock for the health and state tests: timers fire only when the test advances time. Two clocks, as
 * `Clock` has them: `t` (wall) and `mono` (monotonic) advance together; `stepWall` moves the wall clock alone, as
 * an NTP correction or a resumed VM does, and `freezeWall` stops it while monotonic time goes on.
 */
import type { Clock, TimerHandle } from '../../src/core/clock.js';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

/** Lets pending promise continuations, and native callbacks queued on the loop, run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

export class FakeClock implements Clock {
  t: number;
  /** Monotonic time; timers are due on it. */
  mono = 0;
  /** While true, `advance` moves monotonic time only. */
  wallFrozen = false;
  private timers: Timer[] = [];
  private seq = 0;

  constructor(start = 1_767_225_600_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  monotonic(): number {
    return this.mono;
  }

  /** Steps the wall clock by `ms` (negative: back) without moving monotonic time or firing a timer. */
  stepWall(ms: number): void {
    this.t += ms;
  }

  /** Stops (true) or restarts (false) the wall clock; monotonic time and timers go on. */
  freezeWall(frozen = true): void {
    this.wallFrozen = frozen;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.push({ id, at: this.mono + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  pending(): number {
    return this.timers.length;
  }

  /** Advances time by `ms`, firing due timers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.#moveTo(due.at);
      due.fn();
      await settle();
    }
    this.#moveTo(target);
    await settle();
  }

  #moveTo(mono: number): void {
    if (mono <= this.mono) return;
    if (!this.wallFrozen) this.t += mono - this.mono;
    this.mono = mono;
  }
}
