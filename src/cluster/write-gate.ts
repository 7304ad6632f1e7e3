/**
 * The chunks' writer loop (cluster-faults §0.3 "a writer loop"; issue [P] item 6): at most `limit` chunk writes in
 * flight at once, the others waiting in the order they asked. ClusterD writes its `cluster-info-device-*`
 * ConfigMaps one after the other from one loop; eleven or more 800 KiB writes sent at once share the API server's
 * CPU, so each took as long as all of them together. Through the gate each write is served about as fast as the
 * server can take one, and what it carries is read when it leaves (see `FaultCenter`), so the changes that arrived
 * while it waited go out with it.
 */
export class WriteGate {
  readonly #limit: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  /** `limit`: writes in flight at once (a positive integer; `Infinity` lets every write through at once). */
  constructor(limit: number) {
    if (!(limit >= 1) || (Number.isFinite(limit) && !Number.isInteger(limit)))
      throw new RangeError(`write gate limit ${limit}: not a positive integer`);
    this.#limit = limit;
  }

  /** Writes in flight now. */
  get running(): number {
    return this.#running;
  }

  /** Writes waiting for a turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Runs `task` once a turn is free; the turn is handed on when it settles, whether it succeeded or not. */
  async run<R>(task: () => Promise<R>): Promise<R> {
    if (this.#running >= this.#limit) await new Promise<void>((r) => this.#waiting.push(r));
    else this.#running++;
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      // the turn passes straight to the next waiter (the count stays): no later caller can slip in between
      if (next !== undefined) next();
      else this.#running--;
    }
  }
}
