/**
 * How the 910A3 switch faults are read (spec L.9, dcmi-abi.md §8, K.4): one query of every fault at start, the
 * subscription (up to three tries), a query every 300 s, and — while the subscription is not in place — a query
 * each main cycle. A batch of subscription events whose delivery overflowed is followed by a query, so nothing is
 * lost silently. The monitor only reads: what the events mean is the listener's business.
 */
import type { SwitchEvent, SwitchLibrary } from './switch.js';

/** Spec K.4: the switch fault poll. */
export const SWITCH_POLL_MS = 300_000;

/** Options of {@link SwitchMonitor}. */
export interface SwitchMonitorOptions {
  readonly lib: Pick<SwitchLibrary, 'missingSymbols' | 'subscribe' | 'unsubscribe' | 'queryFaults'>;
  /** Subscription events, in order. */
  readonly onEvents: (events: readonly SwitchEvent[]) => void;
  /** A query's whole answer (every current fault). */
  readonly onQuery: (events: readonly SwitchEvent[]) => void;
  /** A failed query or subscription (bounded text). */
  readonly onError: (what: string, err: unknown) => void;
  readonly pollMs?: number;
}

/** Reads the switch faults. */
export class SwitchMonitor {
  readonly #o: SwitchMonitorOptions;
  #subscribed = false;
  #timer: NodeJS.Timeout | undefined;
  #querying: Promise<void> | undefined;
  #stopped = false;

  constructor(o: SwitchMonitorOptions) {
    this.#o = o;
  }

  /** Whether the subscription is in place (else each {@link cycle} queries). */
  subscribed(): boolean {
    return this.#subscribed;
  }

  /** The start-up query, the subscription, then the 300 s poll. */
  async start(): Promise<void> {
    await this.query();
    if (this.#stopped) return;
    if (this.#o.lib.missingSymbols().includes('lq_dcmi_subscribe_fault_event')) {
      this.#subscribed = false;
    } else {
      const rc = this.#o.lib.subscribe((events, dropped) => {
        if (events.length > 0) this.#o.onEvents(events);
        if (dropped > 0) void this.query(); // events did not fit the addon's queue: read everything again
      });
      this.#subscribed = rc === 0;
      if (rc !== 0) this.#o.onError('lq_dcmi_subscribe_fault_event', new Error(`return code ${rc} after 3 tries`));
    }
    this.#timer = setInterval(() => void this.query(), this.#o.pollMs ?? SWITCH_POLL_MS);
    this.#timer.unref();
  }

  /** One main cycle (D.2): queries when the subscription is not in place (dcmi-abi.md §8). */
  cycle(): void {
    if (!this.#subscribed && !this.#stopped) void this.query();
  }

  /** One query (a query already running is shared). */
  query(): Promise<void> {
    this.#querying ??= this.#o.lib
      .queryFaults()
      .then(
        (events) => {
          if (!this.#stopped) this.#o.onQuery(events);
        },
        (err: unknown) => this.#o.onError('lq_dcmi_get_fault_info', err),
      )
      .finally(() => {
        this.#querying = undefined;
      });
    return this.#querying;
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#o.lib.unsubscribe();
  }
}
