/**
 * The clock and timers every layer takes (health, state, reset, kube), injected so that tests run on a manual clock
 * (architecture §2: time is always passed in; no module-level state).
 *
 * Two clocks (issue [T]): `now()` is the wall clock, for domain timestamps only (receive times, `LastSeparateTime`,
 * the windows of the fault rules, `UpdateTime`, Lease and Event times); `monotonic()` never steps, and times every
 * interval, rate limit, debounce, backoff, timeout and "nothing written for N" check. An NTP correction or a VM
 * resumed from a pause moves the first and not the second. Timers (`setTimeout`) run on the monotonic clock.
 */

/** An opaque timer handle. */
export type TimerHandle = object | number;

export interface Clock {
  /** Wall clock: milliseconds since the epoch. For domain timestamps only; it may step back or forward. */
  now(): number;
  /** Monotonic milliseconds from an arbitrary origin; never steps. For every interval, limit and timeout. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The process clock; timers are `unref`'d so that they never keep the process alive on their own. */
export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn: () => void, ms: number): TimerHandle => setTimeout(fn, ms).unref(),
  clearTimeout: (handle: TimerHandle): void => clearTimeout(handle as NodeJS.Timeout),
});

/** Resolves after `ms` on `clock`. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
