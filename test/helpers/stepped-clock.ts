/**
 * A real-time {@link Clock} whose wall clock a test can step and freeze (issue [T] item 1), for components that also
 * do real I/O (the fault center against the API stand-in): `monotonic()` and the timers are the process's, `now()`
 * is `Date.now()` moved by the steps, or held while frozen — as an NTP correction or a resumed VM moves it.
 */
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../../src/core/clock.js';

export class SteppedClock implements Clock {
  #offset = 0;
  #frozenAt: number | undefined;

  now(): number {
    return this.#frozenAt ?? Date.now() + this.#offset;
  }

  monotonic(): number {
    return SYSTEM_CLOCK.monotonic();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return SYSTEM_CLOCK.setTimeout(fn, ms);
  }

  clearTimeout(handle: TimerHandle): void {
    SYSTEM_CLOCK.clearTimeout(handle);
  }

  /** Steps the wall clock by `ms` (negative: back); monotonic time and the timers are not touched. */
  stepWall(ms: number): void {
    if (this.#frozenAt !== undefined) this.#frozenAt += ms;
    else this.#offset += ms;
  }

  /** Stops the wall clock where it is (true) or lets it run on from there (false). */
  freezeWall(frozen = true): void {
    if (frozen) {
      this.#frozenAt ??= this.now();
    } else if (this.#frozenAt !== undefined) {
      this.#offset = this.#frozenAt - Date.now();
      this.#frozenAt = undefined;
    }
  }
}
