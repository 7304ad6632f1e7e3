/**
 * The A5 port snapshot of spec D.8 ("A5 UBoE: bonding-port down count from the A5 port snapshot"; D.5 hyper plane
 * "analogous with UB port status"): one `hccn_tool -g -dev_info -i <logicId>` per chip per `-linkQueryInterval`, as
 * the RoCE link query (src/health/link-limiter.ts), its port table counted per plane. In between, the cached
 * snapshot stands. A table that cannot be read (the tool failed, a bad shape: src/dcmi/hccn.ts) makes both planes
 * `Abnormal`, which counts as DOWN.
 */
import type { LinkStatus, PortTable, PortType } from '../dcmi/hccn.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import { IntervalCache } from './interval-cache.js';

/** One plane of one chip: UP when every port of its type is UP; `down` ports not UP (Abnormal: unknown, 0). */
export interface PlaneStatus {
  readonly status: LinkStatus;
  readonly down: number;
  readonly total: number;
}

/** The two A5 planes of one chip: UBoE bonding ports (parameter plane) and UB ports (hyper plane). */
export interface PortPlanes {
  readonly uboe: PlaneStatus;
  readonly ub: PlaneStatus;
}

const ABNORMAL: PlaneStatus = { status: 'Abnormal', down: 0, total: 0 };

function plane(table: PortTable & { ok: true }, type: PortType): PlaneStatus {
  const ports = table.ports.filter((p) => p.type === type);
  if (ports.length === 0) return ABNORMAL; // no port of the plane listed: not a readable answer for it
  const down = ports.filter((p) => p.link !== 'UP').length;
  return { status: down > 0 ? 'DOWN' : 'UP', down, total: ports.length };
}

/** The per-plane status of a port table. */
export function portPlanes(table: PortTable): PortPlanes {
  if (!table.ok) return { uboe: ABNORMAL, ub: ABNORMAL };
  return { uboe: plane(table, 'UBoE'), ub: plane(table, 'UB') };
}

export interface PortLimiterOptions {
  /** The real query (`queryPortTable` of src/dcmi/hccn.ts in the agent), by logic id. */
  readonly query: (logicId: number) => Promise<PortTable>;
  readonly clock: Clock;
  /** `-linkQueryInterval` × 1000; default 300 000 (upstream's 5 min, as the RoCE link). */
  readonly intervalMs?: number;
  readonly logger?: Logger;
}

/** One real port-table query per logic id per interval; the cached planes otherwise. */
export class PortLimiter {
  readonly #o: PortLimiterOptions;
  readonly #log: Logger;
  readonly #cache: IntervalCache<number, PortPlanes>;

  constructor(options: PortLimiterOptions) {
    this.#o = options;
    this.#cache = new IntervalCache(options.clock, options.intervalMs ?? 300_000);
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /**
   * The chip's planes: a real query when none was made within the interval, else the cached answer. `cachedOnly`
   * never queries (the confirming read of the periodic reconcile); undefined when nothing is cached.
   */
  planes(logicId: number, cachedOnly = false): Promise<PortPlanes | undefined> {
    return this.#cache.get(logicId, cachedOnly, async () => {
      let table: PortTable;
      try {
        table = await this.#o.query(logicId);
      } catch (err) {
        table = { ok: false, reason: (err as Error).message };
      }
      const planes = portPlanes(table);
      if (!table.ok) this.#log.warn({ logicId, reason: table.reason }, 'A5 port table unreadable; counted as DOWN');
      else if (planes.uboe.status !== 'UP' || planes.ub.status !== 'UP') {
        this.#log.info(
          { logicId, uboe: planes.uboe, ub: planes.ub },
          'A5 ports not all UP (UBoE parameter plane, UB hyper plane)',
        );
      }
      return planes;
    });
  }
}
