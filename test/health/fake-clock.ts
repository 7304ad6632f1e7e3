/**
 * A manual clock for the health and state tests: timers fire only when the test advances time.
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
  private timers: Timer[] = [];
  private seq = 0;

  constructor(start = 1_767_225_600_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.push({ id, at: this.t + Math.max(0, ms), fn });
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
    const target = this.t + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.t = Math.max(this.t, due.at);
      due.fn();
      await settle();
    }
    this.t = target;
    await settle();
  }
}
