/**
 * One active replica through a `coordination.k8s.io/v1` Lease (architecture §4): a pure decision on the Lease as
 * read, and an elector loop that acquires, renews and gives up leadership. A standby takes over once the holder
 * has not renewed for `leaseDurationSeconds`.
 */
import type * as k8s from '@kubernetes/client-node';
import type { LeaseApi } from '../kube/kube-client.js';
import { MicroTime } from '../core/kube-time.js';

/** The Lease fields the decision reads. */
export interface LeaseView {
  holder: string | undefined;
  /** ms of the last renewal (or acquisition) */
  renewMs: number | undefined;
  durationSec: number;
}

/** What to do with the Lease as read. */
export type LeaseDecision = 'acquire' | 'renew' | 'standby';

/** Pure: renew our own Lease, take a free or expired one, otherwise stand by. */
export function decideLease(lease: LeaseView | undefined, identity: string, nowMs: number): LeaseDecision {
  if (lease === undefined || lease.holder === undefined || lease.holder === '') return 'acquire';
  if (lease.holder === identity) return 'renew';
  if (lease.renewMs === undefined || nowMs - lease.renewMs > lease.durationSec * 1000) return 'acquire';
  return 'standby';
}

/** Options of {@link LeaseElector}. */
export interface LeaseElectorOptions {
  readonly api: LeaseApi;
  readonly name: string;
  readonly namespace: string;
  readonly identity: string;
  /** seconds a Lease stays valid without renewal (written into the Lease; integer ≥ 1) */
  readonly leaseDurationSec: number;
  /** ms between two attempts */
  readonly retryPeriodMs: number;
  /** ms without a successful renewal after which the leader steps down */
  readonly renewDeadlineMs: number;
  readonly now?: () => number;
  readonly onStartedLeading: () => void;
  readonly onStoppedLeading: () => void;
  readonly onError?: (e: unknown) => void;
}

function status(e: unknown): number | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

/** A Lease time as read (a string from the project's client, a `Date` from client-node); `fallback` if unreadable. */
function timeMs(t: Date | string, fallback: number): number {
  const ms = new Date(t).getTime();
  return Number.isNaN(ms) ? fallback : ms;
}

/** The elector loop. */
export class LeaseElector {
  readonly #o: LeaseElectorOptions;
  #timer: NodeJS.Timeout | undefined;
  #leading = false;
  #lastRenewMs = 0;
  #stopped = true;
  #transitions = 0;

  constructor(options: LeaseElectorOptions) {
    this.#o = options;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** Leadership changes seen by this elector. */
  get transitions(): number {
    return this.#transitions;
  }

  start(): void {
    this.#stopped = false;
    void this.#attempt();
  }

  /** Stops campaigning; a leader steps down (the Lease is left to expire unless `release` is true). */
  async stop(release = false): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#leading) {
      this.#setLeading(false);
      if (release) await this.#release().catch((e: unknown) => this.#o.onError?.(e));
    }
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  #setLeading(v: boolean): void {
    if (this.#leading === v) return;
    this.#leading = v;
    this.#transitions++;
    if (v) this.#o.onStartedLeading();
    else this.#o.onStoppedLeading();
  }

  async #attempt(): Promise<void> {
    if (this.#stopped) return;
    try {
      const ok = await this.#tryAcquireOrRenew();
      if (ok) this.#lastRenewMs = this.#now();
      if (this.#stopped) return;
      if (ok) this.#setLeading(true);
      else if (this.#leading) this.#setLeading(false);
    } catch (e) {
      this.#o.onError?.(e);
      if (this.#leading && this.#now() - this.#lastRenewMs > this.#o.renewDeadlineMs) this.#setLeading(false);
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.#attempt(), this.#o.retryPeriodMs);
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { api, name, namespace, identity } = this.#o;
    const now = this.#now();
    const spec = (acquire: boolean, old?: k8s.V1LeaseSpec): k8s.V1LeaseSpec => ({
      holderIdentity: identity,
      leaseDurationSeconds: this.#o.leaseDurationSec,
      // MicroTimes: six fractional digits, or the API server refuses the Lease with 400 (issue [R] item 1)
      acquireTime: new MicroTime(acquire || old?.acquireTime === undefined ? now : timeMs(old.acquireTime, now)),
      renewTime: new MicroTime(now),
      leaseTransitions: (old?.leaseTransitions ?? 0) + (acquire && old !== undefined ? 1 : 0),
    });
    let lease: k8s.V1Lease;
    try {
      lease = await api.readNamespacedLease({ name, namespace });
    } catch (e) {
      if (status(e) !== 404) throw e;
      await api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: spec(true) } });
      return true;
    }
    const view: LeaseView = {
      holder: lease.spec?.holderIdentity,
      renewMs: lease.spec?.renewTime !== undefined ? new Date(lease.spec.renewTime).getTime() : undefined,
      durationSec: lease.spec?.leaseDurationSeconds ?? this.#o.leaseDurationSec,
    };
    const d = decideLease(view, identity, now);
    if (d === 'standby') return false;
    try {
      await api.replaceNamespacedLease({
        name,
        namespace,
        body: { ...lease, spec: spec(d === 'acquire', lease.spec) },
      });
    } catch (e) {
      if (status(e) === 409) return false; // another replica won the race
      throw e;
    }
    return true;
  }

  async #release(): Promise<void> {
    const { api, name, namespace, identity } = this.#o;
    const lease = await api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return;
    await api.replaceNamespacedLease({
      name,
      namespace,
      body: {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: '',
          renewTime: undefined,
          // as read, but a client-node `Date` would go back with three digits: six, as every MicroTime
          ...(lease.spec.acquireTime !== undefined
            ? { acquireTime: new MicroTime(timeMs(lease.spec.acquireTime, this.#now())) }
            : {}),
        },
      },
    });
  }
}
