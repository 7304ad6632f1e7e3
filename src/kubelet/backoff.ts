/** Exponential backoff: `initialMs`, doubling up to `maxMs`; `reset()` after a success. */
export class Backoff {
  #next: number;

  constructor(
    readonly initialMs = 50,
    readonly maxMs = 5000,
  ) {
    if (!(initialMs > 0) || !(maxMs >= initialMs)) throw new RangeError('backoff needs 0 < initialMs <= maxMs');
    this.#next = initialMs;
  }

  /** The delay to wait now; the following call returns twice as much (capped). */
  next(): number {
    const d = this.#next;
    this.#next = Math.min(this.maxMs, this.#next * 2);
    return d;
  }

  reset(): void {
    this.#next = this.initialMs;
  }
}
