/**
 * The offline reset limit of device-plugin.md §J.2 (upstream `token_bucket.go`): every chip has a bucket of
 * `capacity` tokens (3); one is consumed by every reset that is started. There is no partial refill: when at least
 * `refillMs` (6 h) have passed since the last refill the bucket is set back to full, lazily, on the next access.
 * A chip's bucket is created full, with "last refill" = the moment of its first access.
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
  lastRefill: number;
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
    if (!b || this.clock.now() - b.lastRefill >= this.refillMs) return this.capacity;
    return b.tokens;
  }

  /** When the chip's bucket is next refilled (ms since the epoch); undefined when it has no bucket yet. */
  nextRefillAt(logicId: number): number | undefined {
    const b = this.buckets.get(logicId);
    return b && b.lastRefill + this.refillMs;
  }

  private access(logicId: number): Bucket {
    if (!Number.isSafeInteger(logicId) || logicId < 0) {
      throw new Error(`token bucket: logic id ${String(logicId)} is not a non-negative integer`);
    }
    const now = this.clock.now();
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
