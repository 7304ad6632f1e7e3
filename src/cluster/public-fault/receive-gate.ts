/**
 * A gate over the requests the gRPC server is receiving at once (issue [K] item 2). grpc-js buffers a request until
 * it is complete and then copies it into one buffer, so every request being received costs up to twice its size
 * (4 MiB max): 32 parallel 2.6 MB messages took 150 MiB of RSS in the transport alone. The server lets a call read
 * its request only when it holds a slot; the others wait in order, their bytes held back by HTTP/2 flow control
 * (one stream window, 64 KiB, each). Pure: no timers, no I/O.
 */

interface Waiter {
  readonly grant: () => void;
  state: 'waiting' | 'holding' | 'done';
}

/** At most {@link slots} holders at once; up to {@link maxWaiting} more wait in arrival order. */
export class ReceiveGate {
  readonly slots: number;
  readonly maxWaiting: number;
  #holding = 0;
  /** insertion-ordered, so the first entry waited longest */
  readonly #waiting = new Set<Waiter>();

  constructor(slots: number, maxWaiting: number) {
    if (!(Number.isInteger(slots) && slots >= 1) || !(Number.isInteger(maxWaiting) && maxWaiting >= 0)) {
      throw new RangeError(`bad receive gate ${slots}/${maxWaiting}`);
    }
    this.slots = slots;
    this.maxWaiting = maxWaiting;
  }

  /** Slots in use. */
  get holding(): number {
    return this.#holding;
  }

  /** Entries waiting for a slot. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /**
   * Calls `grant` (which must not throw) now if a slot is free, else when one frees up. Returns the function that gives the slot back, or
   * withdraws the entry if it is still waiting (idempotent); `undefined` when the queue is full (nothing is kept).
   */
  enter(grant: () => void): (() => void) | undefined {
    if (this.#holding >= this.slots && this.#waiting.size >= this.maxWaiting) return undefined;
    const w: Waiter = { grant, state: 'waiting' };
    this.#waiting.add(w);
    this.#pump();
    return () => this.#leave(w);
  }

  #leave(w: Waiter): void {
    if (w.state === 'holding') this.#holding--;
    else if (w.state === 'waiting') this.#waiting.delete(w);
    w.state = 'done';
    this.#pump();
  }

  #pump(): void {
    while (this.#holding < this.slots && this.#waiting.size > 0) {
      const next = this.#waiting.values().next().value as Waiter;
      this.#waiting.delete(next);
      next.state = 'holding';
      this.#holding++;
      next.grant();
    }
  }
}
