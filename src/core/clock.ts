/**
 * The clock and timers every layer takes (health, state, reset, kube), injected so that tests run on a manual clock
 * (architecture §2: time is always passed in; no module-level state).
 */

/** An opaque timer handle. */
export type TimerHandle = object | number;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The process clock; timers are `unref`'d so that they never keep the process alive on their own. */
export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (fn: () => void, ms: number): TimerHandle => setTimeout(fn, ms).unref(),
  clearTimeout: (handle: TimerHandle): void => clearTimeout(handle as NodeJS.Timeout),
});

/** Resolves after `ms` on `clock`. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}
