/**
 * The order in which the Kubernetes API stand-in delivers a write's HTTP response and the watch events of the change
 * it made. A real API server guarantees neither order: the event of a write travels through the watch cache on its
 * own connection and may reach a client before, or after, the write's response. A client that recognises its own
 * writes must cope with both, so tests can pin either one.
 */

/**
 * - `as-is`: the response and the events are written as they happen (the event is written first, but in practice
 *   the client reads the response first);
 * - `watch-first`: the events are written at once and the response `delayMs` later;
 * - `response-first`: the response is written at once and the events `delayMs` later (in their order).
 */
export type WatchOrder = 'as-is' | 'watch-first' | 'response-first';

/** Default gap between the first and the second of the two (long enough for a client to have read the first). */
export const DEFAULT_WATCH_ORDER_DELAY_MS = 50;

/** Holds back write responses or watch events as the {@link WatchOrder} says. */
export class WriteOrdering {
  #order: WatchOrder;
  #delayMs: number;
  readonly #heldEvents: (() => void)[] = [];
  #eventTimer: NodeJS.Timeout | undefined;
  readonly #answerTimers = new Set<NodeJS.Timeout>();

  constructor(order: WatchOrder = 'as-is', delayMs = DEFAULT_WATCH_ORDER_DELAY_MS) {
    this.#order = order;
    this.#delayMs = checkDelay(delayMs);
  }

  get order(): WatchOrder {
    return this.#order;
  }

  /** Changes the order for the writes from now on (events already held are still delivered in order). */
  set(order: WatchOrder, delayMs = this.#delayMs): void {
    this.#order = order;
    this.#delayMs = checkDelay(delayMs);
  }

  /** A watch event of a change, called while the change is committed. */
  event(send: () => void): void {
    if (this.#order !== 'response-first' && this.#heldEvents.length === 0) {
      send();
      return;
    }
    this.#heldEvents.push(send);
    if (this.#eventTimer === undefined) this.#armEvents(this.#order === 'response-first' ? this.#delayMs : 0);
  }

  /** A write's response, called after its change was committed. */
  answer(send: () => void): void {
    if (this.#order !== 'watch-first') {
      send();
      return;
    }
    const t = setTimeout(() => {
      this.#answerTimers.delete(t);
      send();
    }, this.#delayMs);
    this.#answerTimers.add(t);
  }

  /** Drops what is held (the stand-in stops: its connections are closed anyway). */
  close(): void {
    if (this.#eventTimer !== undefined) clearTimeout(this.#eventTimer);
    this.#eventTimer = undefined;
    this.#heldEvents.length = 0;
    for (const t of this.#answerTimers) clearTimeout(t);
    this.#answerTimers.clear();
  }

  /** Delivers the held events after `ms`, oldest first (with those held meanwhile, each after its response). */
  #armEvents(ms: number): void {
    this.#eventTimer = setTimeout(() => {
      this.#eventTimer = undefined;
      const due = this.#heldEvents.splice(0, this.#heldEvents.length);
      for (const send of due) send();
    }, ms);
  }
}

function checkDelay(ms: number): number {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`watch order delay ${ms} ms is not a non-negative number`);
  return ms;
}
