/**
 * The offline reset limit of device-plugin.md §J.2 (upstream `token_bucket.go`): every chip has a bucket of
 * `capacity` tokens (3); one is consumed by every reset that is started. There is no partial refill: when at least
 * `refillMs` (6 h) have passed since the last refill the bucket is set back to full, lazily, on the next access.
 * A chip's bucket is created full, with "last refill" = the moment of its first access.
 *
 * The 6 h are measured on the monotonic clock (issue [T] item 1): a wall clock stepped back would otherwise hold the
 * refill back by the size of the step, a step forward would refill early. {@link nextRefillAt} converts to a wall
 * time for messages; {@link exportState} / {@link restore} carry the buckets across an agent restart (the monotonic
 * clock starts anew with the process) as wall times, the only clock the two processes share.
 */
import type { Clock } from '../core/clock.js';

/** Options of {@link ChipTokenBuckets}. */
export interface TokenBucketOptions {
  readonly clock: Clock;
  /** Tokens per chip (§J.2: 3). */
  readonly capacity: number;
  /** Refill period in ms (§J.2: 6 h). */
  readonly refillMs: number;
}

interface Bucket {
  tokens: number;
  /** Monotonic ms. */
  lastRefill: number;
}

/** One chip's bucket as it is kept across a restart: tokens left and the last refill as a wall time (epoch ms). */
export interface SavedBucket {
  readonly logicId: number;
  readonly tokens: number;
  readonly lastRefillAt: number;
}

/** Per-chip token buckets, keyed by logic id. */
export class ChipTokenBuckets {
  private readonly buckets = new Map<number, Bucket>();
  private readonly clock: Clock;
  private readonly capacity: number;
  private readonly refillMs: number;

  constructor(o: TokenBucketOptions) {
    if (!Number.isSafeInteger(o.capacity) || o.capacity < 1) {
      throw new Error(`token bucket: capacity must be a positive integer, got ${String(o.capacity)}`);
    }
    if (!Number.isFinite(o.refillMs) || o.refillMs <= 0) {
      throw new Error(`token bucket: refill period must be a positive number of ms, got ${String(o.refillMs)}`);
    }
    this.clock = o.clock;
    this.capacity = o.capacity;
    this.refillMs = o.refillMs;
  }

  /** Tokens the chip has now (refilling first when due). */
  available(logicId: number): number {
    return this.access(logicId).tokens;
  }

  /** Consumes one token; false (nothing consumed) when the chip has none. */
  tryConsume(logicId: number): boolean {
    const b = this.access(logicId);
    if (b.tokens === 0) return false;
    b.tokens -= 1;
    return true;
  }

  /** What {@link available} would return, without creating or refilling a bucket (for status and metrics). */
  peek(logicId: number): number {
    const b = this.buckets.get(logicId);
    if (!b || this.clock.monotonic() - b.lastRefill >= this.refillMs) return this.capacity;
    return b.tokens;
  }

  /** When the chip's bucket is next refilled (ms since the epoch); undefined when it has no bucket yet. */
  nextRefillAt(logicId: number): number | undefined {
    const b = this.buckets.get(logicId);
    return b && this.clock.now() + (b.lastRefill + this.refillMs - this.clock.monotonic());
  }

  /** The buckets that are not full (a full bucket is what a chip without one gets), for {@link restore}. */
  exportState(): SavedBucket[] {
    const mono = this.clock.monotonic();
    const wall = this.clock.now();
    const out: SavedBucket[] = [];
    for (const [logicId, b] of this.buckets) {
      if (b.tokens >= this.capacity || mono - b.lastRefill >= this.refillMs) continue;
      out.push({ logicId, tokens: b.tokens, lastRefillAt: wall - (mono - b.lastRefill) });
    }
    return out.sort((a, b) => a.logicId - b.logicId);
  }

  /**
   * Buckets saved by a previous process. The time since each refill is taken from the wall clock and bounded to
   * 0..refill period: a clock stepped back while the agent was down counts as no time passed (the refill comes
   * later, never earlier than its 6 h of monotonic time in this process), one stepped forward at most refills the
   * bucket. Entries that are not valid are skipped and returned as reasons.
   */
  restore(saved: readonly SavedBucket[]): string[] {
    const problems: string[] = [];
    const mono = this.clock.monotonic();
    const wall = this.clock.now();
    for (const s of saved) {
      const ok =
        Number.isSafeInteger(s.logicId) &&
        s.logicId >= 0 &&
        Number.isSafeInteger(s.tokens) &&
        s.tokens >= 0 &&
        s.tokens <= this.capacity &&
        Number.isFinite(s.lastRefillAt);
      if (!ok) {
        problems.push(`token bucket ${JSON.stringify(s)} is not {logicId, tokens 0..${this.capacity}, lastRefillAt}`);
        continue;
      }
      const elapsed = Math.min(this.refillMs, Math.max(0, wall - s.lastRefillAt));
      this.buckets.set(s.logicId, { tokens: s.tokens, lastRefill: mono - elapsed });
    }
    return problems;
  }

  private access(logicId: number): Bucket {
    if (!Number.isSafeInteger(logicId) || logicId < 0) {
      throw new Error(`token bucket: logic id ${String(logicId)} is not a non-negative integer`);
    }
    const now = this.clock.monotonic();
    let b = this.buckets.get(logicId);
    if (!b) {
      b = { tokens: this.capacity, lastRefill: now };
      this.buckets.set(logicId, b);
    } else if (now - b.lastRefill >= this.refillMs) {
      // §J.2: ≥ 6 h since the last refill → back to full, no partial refill.
      b.tokens = this.capacity;
      b.lastRefill = now;
    }
    return b;
  }
}
