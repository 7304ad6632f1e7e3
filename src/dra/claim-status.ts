/**
 * Writes the agent's fields of a claim's per-device status (`status.devices`, DRAResourceClaimDeviceStatus, GA at
 * 1.37): the device IP of each chip allocated from this node's pool as `networkData`, and the binding condition of a
 * chip that was under reset (src/dra/claim-devices.ts). Only what differs is written (a PUT of the `status`
 * subresource, conditional on the claim's resourceVersion; a 409 is read again and retried at once, a failure
 * retried with backoff); the other entries and fields of the status are left as they are.
 *
 * RBAC (deploy/components/dra): `resourceclaims/status` get/update, and the synthetic `resourceclaims/driver`
 * subresource with the verb `associated-node:update` for `npu.huawei.com` — the API server allows a device-status
 * write only for the drivers the writer may speak for, and `associated-node:` only from a service account whose pod
 * runs on the node the claim is allocated on.
 */
import type { ChipKind } from '../core/chips.js';
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../core/clock.js';
import { errorMessage, statusOf } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { backoffDelay, type BackoffOptions } from '../kube/write-queue.js';
import { applyDeviceFields, desiredDeviceFields, listOf, type ChipStatusFacts } from './claim-devices.js';
import { metaTime } from './device-taints.js';
import type { DraApi } from './dra-api.js';
import type { ResourceClaim } from './dra-types.js';

/** What one {@link ClaimStatusWriter.sync} did. */
export type ClaimSyncResult = 'written' | 'unchanged' | 'gone' | 'failed';

/** Options of a {@link ClaimStatusWriter}. */
export interface ClaimStatusWriterOptions {
  readonly api: Pick<DraApi, 'readResourceClaim' | 'replaceResourceClaimStatus'>;
  /** The pool (this node's name). */
  readonly nodeName: string;
  readonly kind: ChipKind;
  /** The chip's state now and its C.5 IP. */
  readonly facts: (phyId: number) => ChipStatusFacts;
  readonly clock?: Clock;
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  readonly logger?: Logger;
  /** Conflicts in a row read again before the attempt counts as failed (default 5). */
  readonly maxConflicts?: number;
}

/** Counters. */
export interface ClaimStatusStats {
  writes: number;
  unchanged: number;
  conflicts: number;
  failures: number;
}

/** Keeps the agent's fields of claims' device status current. */
export class ClaimStatusWriter {
  readonly #o: ClaimStatusWriterOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** The sync running per claim, and whether another was asked for meanwhile. */
  readonly #running = new Map<string, Promise<ClaimSyncResult>>();
  readonly #again = new Set<string>();
  readonly #retries = new Map<string, { timer: TimerHandle; attempt: number }>();
  #stopped = false;
  readonly #stats: ClaimStatusStats = { writes: 0, unchanged: 0, conflicts: 0, failures: 0 };

  constructor(options: ClaimStatusWriterOptions) {
    this.#o = options;
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** A copy of the counters. */
  get stats(): ClaimStatusStats {
    return { ...this.#stats };
  }

  /**
   * Brings our fields of the claim up to date. `known` (from a watch or a read) saves the first GET. Calls for a
   * claim whose sync runs are joined: one more runs after it. Never rejects.
   */
  sync(namespace: string, name: string, known?: ResourceClaim): Promise<ClaimSyncResult> {
    const key = `${namespace}/${name}`;
    const running = this.#running.get(key);
    if (running !== undefined) {
      this.#again.add(key);
      return running;
    }
    const p = this.#run(namespace, name, known).finally(() => {
      this.#running.delete(key);
      if (this.#again.delete(key) && !this.#stopped) void this.sync(namespace, name);
    });
    this.#running.set(key, p);
    return p;
  }

  /** No sync or retry starts from now on. */
  stop(): void {
    this.#stopped = true;
    for (const r of this.#retries.values()) this.#clock.clearTimeout(r.timer);
    this.#retries.clear();
  }

  async #run(namespace: string, name: string, known: ResourceClaim | undefined): Promise<ClaimSyncResult> {
    if (this.#stopped) return 'unchanged';
    const key = `${namespace}/${name}`;
    let claim = known;
    let conflicts = 0;
    try {
      for (;;) {
        claim ??= await this.#o.api.readResourceClaim(namespace, name);
        const live = listOf(claim.status?.devices);
        const fields = desiredDeviceFields(
          claim,
          this.#o.nodeName,
          this.#o.kind,
          this.#o.facts,
          metaTime(this.#clock.now()),
        );
        const next = applyDeviceFields(live, fields, this.#o.nodeName);
        if (JSON.stringify(next) === JSON.stringify(live)) {
          this.#stats.unchanged++;
          this.#cancelRetry(key);
          return 'unchanged';
        }
        try {
          await this.#o.api.replaceResourceClaimStatus({
            ...claim,
            status: { ...claim.status, devices: next },
          });
          this.#stats.writes++;
          this.#cancelRetry(key);
          return 'written';
        } catch (e) {
          if (statusOf(e) !== 409 || ++conflicts > (this.#o.maxConflicts ?? 5)) throw e;
          this.#stats.conflicts++;
          claim = undefined; // read again: the scheduler or the node side wrote meanwhile
        }
      }
    } catch (e) {
      const status = statusOf(e);
      if (status === 404) {
        this.#cancelRetry(key);
        return 'gone';
      }
      this.#stats.failures++;
      this.#log.warn({ claim: key, status, error: errorMessage(e) }, 'claim device status not written');
      if (
        status === undefined ||
        status >= 500 ||
        status === 401 ||
        status === 403 ||
        status === 409 ||
        status === 429
      ) {
        this.#retryLater(namespace, name);
      }
      return 'failed';
    }
  }

  #retryLater(namespace: string, name: string): void {
    if (this.#stopped) return;
    const key = `${namespace}/${name}`;
    const prev = this.#retries.get(key);
    if (prev !== undefined) this.#clock.clearTimeout(prev.timer);
    const attempt = (prev?.attempt ?? 0) + 1;
    const timer = this.#clock.setTimeout(
      () => {
        const r = this.#retries.get(key);
        if (r?.timer !== timer) return;
        void this.sync(namespace, name);
      },
      backoffDelay(attempt, this.#o.backoff, this.#o.random),
    );
    this.#retries.set(key, { timer, attempt });
  }

  #cancelRetry(key: string): void {
    const r = this.#retries.get(key);
    if (r === undefined) return;
    this.#clock.clearTimeout(r.timer);
    this.#retries.delete(key);
  }
}
