/**
 * The binding conditions of a chip under reset (issue [DRA] item 3; src/dra/device-taints.ts): while one of the node's
 * chips is being reset, and for the scheduler's binding timeout after (600 s at 1.37, `BindingTimeout` of the
 * DynamicResources plugin), the claims of the cluster are watched; a claim allocated to one of our devices with our
 * binding conditions waits in the scheduler's PreBind until the agent gives its verdict in the claim's device status:
 * `ChipReady` once the reset is over and nothing takes the chip off scheduling, `ChipFailed` when something does
 * (the scheduler then undoes the allocation and tries again). The pod is not bound to the node yet at that point, so
 * the pod cache does not show it: only a watch of the claims does.
 *
 * Cost: a list and a watch of every ResourceClaim of the cluster, on this node only while a reset runs (rare); none
 * otherwise.
 */
import type { ChipKind } from '../core/chips.js';
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../core/clock.js';
import { CHIP_FAILED_CONDITION, CHIP_READY_CONDITION, DRA_DRIVER } from '../core/dra-devices.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { ListWatch, type WatchFn } from '../kube/list-watch.js';
import type { BackoffOptions, QueueClock } from '../kube/write-queue.js';
import { listOf, ourDevices } from './claim-devices.js';
import type { ClaimStatusWriter } from './claim-status.js';
import type { DraApi } from './dra-api.js';
import { RESOURCE_CLAIMS_PATH, type ResourceClaim } from './dra-types.js';

/** The scheduler's default binding timeout (k8s.io/kubernetes v1.37.2 `DynamicResourcesBindingTimeoutDefault`). */
export const BINDING_TIMEOUT_MS = 600_000;
/** Page size of the claim list. */
const PAGE = 500;
/** Claims listed at most (a larger cluster's list is refused and retried: size limit on input). */
const MAX_CLAIMS = 200_000;

/** Options of a {@link ClaimBindingWatcher}. */
export interface ClaimBindingWatcherOptions {
  readonly api: Pick<DraApi, 'listResourceClaims'>;
  readonly watch: WatchFn;
  readonly nodeName: string;
  readonly kind: ChipKind;
  readonly status: Pick<ClaimStatusWriter, 'sync'>;
  /** Whether a chip of the node is being reset now (the snapshot: `isResetting` of any chip). */
  readonly resetting: () => boolean;
  readonly clock?: Clock;
  /** How long after the last reset the watch stays (default {@link BINDING_TIMEOUT_MS}). */
  readonly lingerMs?: number;
  readonly backoff?: BackoffOptions;
  readonly logger?: Logger;
}

/** Whether the claim waits for a verdict of ours: our binding condition on one of our devices, none given yet. */
export function waitsForUs(claim: ResourceClaim, pool: string, kind: ChipKind): boolean {
  for (const d of ourDevices(claim, pool, kind)) {
    if (!listOf(d.result.bindingConditions).includes(CHIP_READY_CONDITION)) continue;
    const entry = listOf(claim.status?.devices).find(
      (e) => e?.driver === DRA_DRIVER && e.pool === pool && e.device === d.result.device,
    );
    const given = listOf(entry?.conditions).some(
      (c) => (c?.type === CHIP_READY_CONDITION || c?.type === CHIP_FAILED_CONDITION) && c.status === 'True',
    );
    if (!given) return true;
  }
  return false;
}

/** Watches the claims while a reset runs, and gives the binding verdicts. */
export class ClaimBindingWatcher {
  readonly #o: ClaimBindingWatcherOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  #watch: ListWatch<ResourceClaim> | undefined;
  /** Claims waiting for our verdict (namespace/name → the last version seen). */
  readonly #pending = new Map<string, ResourceClaim>();
  #lingerTimer: TimerHandle | undefined;
  #stopped = false;

  constructor(options: ClaimBindingWatcherOptions) {
    this.#o = options;
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** Whether the claims are being watched now. */
  get active(): boolean {
    return this.#watch !== undefined;
  }

  /** Claims waiting for a verdict. */
  get pending(): number {
    return this.#pending.size;
  }

  /** The snapshot changed: start or stop watching, and give the verdicts a chip's new state allows. */
  changed(): void {
    if (this.#stopped) return;
    if (this.#o.resetting()) {
      if (this.#lingerTimer !== undefined) this.#clock.clearTimeout(this.#lingerTimer);
      this.#lingerTimer = undefined;
      this.#start();
    } else if (this.#watch !== undefined && this.#lingerTimer === undefined) {
      this.#lingerTimer = this.#clock.setTimeout(() => {
        this.#lingerTimer = undefined;
        if (!this.#o.resetting()) this.#stopWatch();
      }, this.#o.lingerMs ?? BINDING_TIMEOUT_MS);
    }
    for (const [key, claim] of this.#pending) this.#sync(key, claim);
  }

  /** Stops watching for good. */
  stop(): void {
    this.#stopped = true;
    if (this.#lingerTimer !== undefined) this.#clock.clearTimeout(this.#lingerTimer);
    this.#stopWatch();
  }

  #start(): void {
    if (this.#watch !== undefined) return;
    // the queue's spacing, backoff and due times run on the clock's monotonic time
    const qclock: QueueClock = this.#clock;
    this.#log.info({ pool: this.#o.nodeName }, 'a chip is being reset: watching claims for binding conditions');
    this.#watch = new ListWatch<ResourceClaim>({
      what: 'resourceclaims (binding conditions)',
      path: RESOURCE_CLAIMS_PATH,
      watch: this.#o.watch,
      clock: qclock,
      ...(this.#o.backoff ? { backoff: this.#o.backoff } : {}),
      logger: this.#log,
      maxItems: MAX_CLAIMS,
      list: () => this.#list(),
      onSync: (items) => {
        this.#pending.clear();
        for (const c of items) this.#see(c);
      },
      onEvent: (type, c) => {
        const key = `${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`;
        if (type === 'DELETED') this.#pending.delete(key);
        else this.#see(c);
      },
    });
    void this.#watch.start();
  }

  #stopWatch(): void {
    if (this.#watch === undefined) return;
    this.#watch.stop();
    this.#watch = undefined;
    this.#pending.clear();
    this.#log.info({ pool: this.#o.nodeName }, 'no chip is being reset: claims no longer watched');
  }

  async #list(): Promise<{ items: ResourceClaim[]; resourceVersion: string }> {
    const items: ResourceClaim[] = [];
    let token = '';
    let rv = '';
    do {
      const page = await this.#o.api.listResourceClaims({
        limit: String(PAGE),
        ...(token !== '' ? { continue: token } : {}),
      });
      items.push(...page.items);
      if (items.length > MAX_CLAIMS) throw new Error(`over ${MAX_CLAIMS} ResourceClaims listed`);
      rv = page.metadata?.resourceVersion ?? rv;
      token = page.metadata?.continue ?? '';
    } while (token !== '');
    return { items, resourceVersion: rv };
  }

  #see(claim: ResourceClaim): void {
    const key = `${claim.metadata.namespace ?? ''}/${claim.metadata.name ?? ''}`;
    if (!waitsForUs(claim, this.#o.nodeName, this.#o.kind)) {
      this.#pending.delete(key);
      return;
    }
    this.#pending.set(key, claim);
    this.#sync(key, claim);
  }

  #sync(key: string, claim: ResourceClaim): void {
    const namespace = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    void this.#o.status.sync(namespace, name, claim).then((r) => {
      if (r === 'gone') this.#pending.delete(key);
    });
  }
}
