/**
 * The Event recorder's token bucket (spec K.1: upstream 10 per minute, burst 10) on the injected monotonic clock:
 * `burst` tokens, one more every `tokenMs` up to `burst`; a job runs when it gets a token, at most `maxWaiting` jobs
 * wait for one, and a job beyond them is refused at once ({@link EventLimitRefused}), as upstream's bucket refuses.
 *
 * It replaces `bottleneck` here, whose reservoir and request spacing are timed with `Date.now()`: with the wall clock
 * stepped back an hour it started no job for that hour, and refilled nothing while the clock stood still (issue [T]
 * item 1).
 */
import type { Clock, TimerHandle } from '../core/clock.js';

/** A job refused: the bucket is empty and the waiting places are taken, or the limiter was stopped. */
export class EventLimitRefused extends Error {
  override readonly name = 'EventLimitRefused';
}

/** Options of {@link EventLimiter}. */
export interface EventLimiterOptions {
  readonly clock: Clock;
  /** Tokens at start and at most. */
  readonly burst: number;
  /** One token comes back every this many ms (monotonic). */
  readonly tokenMs: number;
  /** Jobs that may wait for a token (default 1). */
  readonly maxWaiting?: number;
}

interface Waiting {
  run: () => void;
  refuse: (e: EventLimitRefused) => void;
}

/** A token bucket that runs jobs. */
export class EventLimiter {
  readonly #o: EventLimiterOptions;
  #tokens: number;
  #at: number;
  #waiting: Waiting[] = [];
  #running = 0;
  #timer: TimerHandle | undefined;
  #stopped = false;

  constructor(options: EventLimiterOptions) {
    if (!(options.burst >= 1) || !(options.tokenMs > 0)) {
      throw new RangeError(`bad event limit: burst ${options.burst}, one token per ${options.tokenMs} ms`);
    }
    this.#o = options;
    this.#tokens = options.burst;
    this.#at = options.clock.monotonic();
  }

  /** Jobs waiting for a token, and jobs started and not yet settled. */
  counts(): { waiting: number; running: number } {
    return { waiting: this.#waiting.length, running: this.#running };
  }

  /**
   * Runs `job` when it gets a token (asynchronously, never inside this call); resolves or rejects as the job does.
   * Rejects with {@link EventLimitRefused} at once when no token and no waiting place is free.
   */
  schedule<T>(job: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const run = (): void => {
        this.#running++;
        void Promise.resolve()
          .then(job)
          .then(resolve, reject)
          .finally(() => this.#running--);
      };
      if (this.#stopped) {
        reject(new EventLimitRefused('the event limiter is stopped'));
        return;
      }
      if (this.#waiting.length === 0 && this.#take()) {
        run();
        return;
      }
      if (this.#waiting.length >= (this.#o.maxWaiting ?? 1)) {
        reject(new EventLimitRefused('event rate limit: no token and no waiting place'));
        return;
      }
      this.#waiting.push({ run, refuse: reject });
      this.#arm();
    });
  }

  /** Refuses the waiting jobs and stops; jobs already started run to their end. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const w of waiting) w.refuse(new EventLimitRefused('the event limiter is stopped'));
  }

  #refill(): void {
    const now = this.#o.clock.monotonic();
    if (now > this.#at) this.#tokens = Math.min(this.#o.burst, this.#tokens + (now - this.#at) / this.#o.tokenMs);
    this.#at = Math.max(this.#at, now);
  }

  #take(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Wakes when the next token is due while jobs wait. */
  #arm(): void {
    if (this.#timer !== undefined || this.#waiting.length === 0 || this.#stopped) return;
    this.#refill();
    const ms = Math.max(0, Math.ceil((1 - this.#tokens) * this.#o.tokenMs));
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      while (this.#waiting.length > 0 && this.#take()) this.#waiting.shift()!.run();
      this.#arm();
    }, ms);
  }
}
