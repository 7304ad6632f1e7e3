/**
 * The link-status limiter of spec D.8: `hccn_tool -i <phy> -link -g` is asked at most once per chip per
 * `-linkQueryInterval` (upstream: 5 min, burst 1); in between, the cached answer stands. A query that fails counts as
 * DOWN (reported `Abnormal`). The status only matters inside compensation (D.5), which asks it when DCMI lists no
 * parameter-plane code for a chip with a RoCE plane.
 */
import type { LinkStatus } from '../dcmi/hccn.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import { IntervalCache } from './interval-cache.js';

export interface LinkLimiterOptions {
  /** The real query (`queryLinkStatus` of src/dcmi/hccn.ts in the agent). */
  readonly query: (phyId: number) => Promise<LinkStatus>;
  readonly clock: Clock;
  /** `-linkQueryInterval` × 1000; default 300 000 (upstream's 5 min). */
  readonly intervalMs?: number;
  readonly logger?: Logger;
}

/** One real query per phy id per interval; the cached status otherwise. */
export class LinkLimiter {
  readonly #o: LinkLimiterOptions;
  readonly #log: Logger;
  readonly #cache: IntervalCache<number, LinkStatus>;

  constructor(options: LinkLimiterOptions) {
    this.#o = options;
    this.#cache = new IntervalCache(options.clock, options.intervalMs ?? 300_000);
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /**
   * The chip's link status: a real query when none was made within the interval, else the cached answer.
   * `cachedOnly` never queries (the confirming read of the periodic reconcile); undefined when nothing is cached.
   */
  status(phyId: number, cachedOnly = false): Promise<LinkStatus | undefined> {
    return this.#cache.get(phyId, cachedOnly, async () => {
      let status: LinkStatus;
      try {
        status = await this.#o.query(phyId);
      } catch (err) {
        this.#log.warn({ err, phyId }, 'link status query failed; counted as DOWN');
        status = 'Abnormal';
      }
      if (status !== 'UP') this.#log.info({ phyId, status }, 'link status is not UP');
      return status;
    });
  }
}
