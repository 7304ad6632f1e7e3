/**
 * A token bucket on an injected monotonic clock (issue [T] item 1: fed the wall clock, a bucket refilled only
 * while that clock moved forward, nothing for an hour after a step back): the per-sender limiter of public faults (spec cluster-faults.md §2.4: burst
 * 100, 1 token/s, starting full) and the global gRPC request limit (1000/s, burst 1000).
 */

/** A bucket of `capacity` tokens refilled continuously at `ratePerSec`; it starts full. */
export class TokenBucket {
  readonly capacity: number;
  readonly ratePerSec: number;
  readonly #now: () => number;
  #tokens: number;
  #lastMs: number;

  /** `now` returns monotonic milliseconds (`clock.monotonic`). */
  constructor(capacity: number, ratePerSec: number, now: () => number) {
    if (!(capacity > 0) || !(ratePerSec >= 0)) throw new RangeError(`bad token bucket ${capacity}/${ratePerSec}`);
    this.capacity = capacity;
    this.ratePerSec = ratePerSec;
    this.#now = now;
    this.#tokens = capacity;
    this.#lastMs = now();
  }

  #refill(): void {
    const now = this.#now();
    // A clock that goes back refills nothing (and does not move the reference back).
    if (now > this.#lastMs) {
      this.#tokens = Math.min(this.capacity, this.#tokens + ((now - this.#lastMs) / 1000) * this.ratePerSec);
      this.#lastMs = now;
    }
  }

  /** Takes one token if there is a whole one; false when the bucket is empty. */
  tryTake(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Tokens available now (fractional while refilling). */
  available(): number {
    this.#refill();
    return this.#tokens;
  }
}

/** Why a sender's request was refused by {@link SenderLimiter}. */
export type LimitRefusal = 'unknown-sender' | 'rate-limited';

/**
 * One {@link TokenBucket} per allowed sender (§2.4). A sender without a bucket is refused like an empty bucket
 * (§2.4: 410, not 409). {@link reset} recreates every bucket, full — upstream does so on every configuration change.
 */
export class SenderLimiter {
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #now: () => number;
  readonly #capacity: number;
  readonly #ratePerSec: number;

  /** `now` returns monotonic milliseconds (`clock.monotonic`). */
  constructor(senders: readonly string[], now: () => number, capacity = 100, ratePerSec = 1) {
    this.#now = now;
    this.#capacity = capacity;
    this.#ratePerSec = ratePerSec;
    this.reset(senders);
  }

  /** Recreates the buckets for exactly `senders`. */
  reset(senders: readonly string[]): void {
    this.#buckets.clear();
    for (const s of senders) this.#buckets.set(s, new TokenBucket(this.#capacity, this.#ratePerSec, this.#now));
  }

  /** Takes a token for `sender`; undefined when allowed, else why not. */
  take(sender: string): LimitRefusal | undefined {
    const bucket = this.#buckets.get(sender);
    if (bucket === undefined) return 'unknown-sender';
    return bucket.tryTake() ? undefined : 'rate-limited';
  }

  /** The configured senders (one bucket each). */
  senders(): string[] {
    return [...this.#buckets.keys()];
  }
}
