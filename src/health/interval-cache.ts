/**
 * Spec D.8's query limit, shared by the RoCE link status (link-limiter.ts) and the A5 port table (port-limiter.ts):
 * one real query per key per interval (upstream: 5 min, burst 1); in between, the cached answer stands.
 */
import type { Clock } from '../core/clock.js';

export class IntervalCache<K, V> {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  /** Last real answer per key, with the monotonic time it was asked at (a wall step must not renew or age it). */
  readonly #cache = new Map<K, { at: number; value: V }>();

  constructor(clock: Clock, intervalMs: number) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
  }

  /**
   * The cached answer when one was fetched within the interval, else `fetch()`'s (cached from now on). `cachedOnly`
   * never fetches (the confirming read of the periodic reconcile); undefined when nothing is cached. `fetch` must
   * not throw: it turns a failure into its own answer (a failed query counts as DOWN).
   */
  async get(key: K, cachedOnly: boolean, fetch: () => Promise<V>): Promise<V | undefined> {
    const cached = this.#cache.get(key);
    const now = this.#clock.monotonic();
    if (cachedOnly || (cached && now - cached.at < this.#intervalMs)) return cached?.value;
    const value = await fetch();
    this.#cache.set(key, { at: now, value });
    return value;
  }
}
