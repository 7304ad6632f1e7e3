/**
 * `-deviceApi=both` (issue [DRA] item 1, docs/dra.md "never the same chip twice"): which chips kubelet has handed
 * out through the device plugin, from kubelet's pod-resources answer for the plugin's resource (spec I.5, the same
 * answer the pod annotator reads). The API side withdraws those chips from the slices ({@link current}, refreshed
 * on every pod change and every `-listWatchPeriod`, src/agent/wire-dra-api.ts), and NodePrepare asks once more
 * before it plans ({@link refresh}): a claim the scheduler allocated from slices older than an Allocate is refused
 * then, not prepared onto a chip a container already has.
 *
 * One query at a time (a call while one runs joins the next); an answer that cannot be had keeps the last set and
 * is logged once per outage (kubelet restarting: its allocations are what they were).
 */
import { errorMessage } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { PodDevices } from '../core/pods.js';

/** Options of {@link DevicePluginHolds}. */
export interface DevicePluginHoldsOptions {
  /** kubelet's pod-resources answer for the plugin's resource (`PodResourcesClient.devicesInUse`). */
  readonly query: () => Promise<readonly PodDevices[]>;
  /** The phy id of a kubelet device id (`Ascend910-3` → 3); undefined: not a chip of this node. */
  readonly phyOf: (deviceId: string) => number | undefined;
  /** After a refresh that changed the set. */
  readonly onChange?: (held: ReadonlySet<number>) => void;
  readonly logger?: Logger;
}

/** The chips (phy ids) held through the device plugin. */
export class DevicePluginHolds {
  readonly #o: DevicePluginHoldsOptions;
  readonly #log: Logger;
  #held: ReadonlySet<number> = new Set();
  #running: Promise<ReadonlySet<number>> | undefined;
  #next: Promise<ReadonlySet<number>> | undefined;
  #failing = false;
  #queries = 0;

  constructor(options: DevicePluginHoldsOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** The set as of the last answer (empty before the first). */
  current(): ReadonlySet<number> {
    return this.#held;
  }

  /** Queries made (tests, metrics). */
  get queries(): number {
    return this.#queries;
  }

  /** Asks kubelet now; resolves with the set (the last one when kubelet does not answer). Never rejects. */
  refresh(): Promise<ReadonlySet<number>> {
    if (!this.#running) {
      this.#running = this.#query().finally(() => (this.#running = undefined));
      return this.#running;
    }
    // a query started before this call may miss what made the caller ask: one more after it
    this.#next ??= this.#running.then(() => {
      this.#next = undefined;
      return this.refresh();
    });
    return this.#next;
  }

  async #query(): Promise<ReadonlySet<number>> {
    this.#queries++;
    let answer: readonly PodDevices[];
    try {
      answer = await this.#o.query();
    } catch (err) {
      if (!this.#failing) {
        this.#log.warn(
          { error: errorMessage(err) },
          'kubelet pod-resources not answering: the chips held by the device plugin are the last known',
        );
      }
      this.#failing = true;
      return this.#held;
    }
    this.#failing = false;
    const next = new Set<number>();
    for (const p of answer) {
      for (const id of p.deviceIds) {
        const phy = this.#o.phyOf(id);
        if (phy !== undefined) next.add(phy);
      }
    }
    const changed = next.size !== this.#held.size || [...next].some((p) => !this.#held.has(p));
    this.#held = next;
    if (changed) {
      this.#log.info({ phyIds: [...next].sort((a, b) => a - b) }, 'chips held through the device plugin');
      this.#o.onChange?.(next);
    }
    return next;
  }
}
