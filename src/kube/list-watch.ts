/**
 * List, then watch from the list's resourceVersion, for one collection (optionally narrowed by field and label
 * selectors): the input side of the kube layer (ConfigMaps an operator edits, the node's pods). client-node's
 * informer cannot take a field selector (1.4.0), so this small loop does what it does: re-list on `410 Gone` or
 * after a failure (with backoff and jitter), re-watch from the last resourceVersion after a clean close. A backoff
 * ends early when the shared {@link ApiRecovery} of `backoff.recovery` sees the API server back (issue [K] item 8:
 * an operator's edit made right after an outage is seen within about a second, not after up to 30 s). Every wait
 * is timed on the monotonic clock (`clock.monotonic()` through {@link RetryTimer}, issue [T] item 1): a wall clock
 * stepped back cannot hold a re-list.
 */
import type * as k8s from '@kubernetes/client-node';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import {
  backoffDelay,
  RetryTimer,
  systemQueueClock,
  type ApiRecovery,
  type BackoffOptions,
  type QueueClock,
} from './write-queue.js';
import { statusOf } from '../core/errors.js';

/** A list answer: the objects and the collection's resourceVersion. */
export interface ListResult<T> {
  readonly items: readonly T[];
  readonly resourceVersion: string;
}

/** Watch event types delivered to the callback (ERROR and BOOKMARK are handled here). */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** client-node's `Watch.watch` signature (injectable for tests). */
export type WatchFn = (
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  callback: (type: string, obj: unknown) => void,
  done: (err: unknown) => void,
) => Promise<AbortController>;

/** Options of a {@link ListWatch}. */
export interface ListWatchOptions<T> {
  /** For logs, e.g. `configmap kube-system/mindx-dl-fault-config`. */
  readonly what: string;
  /** Collection path, e.g. `/api/v1/namespaces/kube-system/configmaps`. */
  readonly path: string;
  readonly fieldSelector?: string;
  readonly labelSelector?: string;
  readonly list: () => Promise<ListResult<T>>;
  /**
   * A watch function (`KubeClient.watch`, client-node's `new k8s.Watch(kc).watch`), or a client-node kubeconfig to
   * build client-node's from (client-node is then loaded on the first watch, not with this module).
   */
  readonly watch: WatchFn | k8s.KubeConfig;
  /** After every successful (re)list: the complete current set. */
  readonly onSync: (items: readonly T[]) => void;
  readonly onEvent: (type: WatchEventType, obj: T) => void;
  /** A list longer than this is refused (logged, retried): size limit on input from the API server. */
  readonly maxItems?: number;
  readonly clock?: QueueClock;
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  readonly logger?: Logger;
}

/** One list+watch loop. */
export class ListWatch<T extends k8s.KubernetesObject> {
  readonly #o: ListWatchOptions<T>;
  readonly #clock: QueueClock;
  readonly #watch: WatchFn;
  #rv = '';
  #failures = 0;
  #controller: AbortController | undefined;
  readonly #retry: RetryTimer;
  readonly #recovery: ApiRecovery | undefined;
  #stopped = false;
  #synced = false;
  #lists = 0;

  constructor(options: ListWatchOptions<T>) {
    this.#o = options;
    this.#clock = options.clock ?? systemQueueClock;
    this.#recovery = options.backoff?.recovery;
    this.#retry = new RetryTimer(this.#clock, this.#recovery);
    const w = options.watch;
    if (typeof w === 'function') {
      this.#watch = w;
    } else {
      let watcher: Promise<k8s.Watch> | undefined;
      this.#watch = async (p, q, cb, done) => {
        watcher ??= import('@kubernetes/client-node').then((m) => new m.Watch(w));
        return (await watcher).watch(p, q, cb, done);
      };
    }
  }

  /** True once a list succeeded. */
  get synced(): boolean {
    return this.#synced;
  }

  /** Number of successful lists (the first and every re-list). */
  get lists(): number {
    return this.#lists;
  }

  /** Lists and starts watching; resolves after the first list attempt (a failure is retried in the background). */
  async start(): Promise<void> {
    await this.#relist();
  }

  /** Stops the loop and closes the watch. */
  stop(): void {
    this.#stopped = true;
    this.#retry.cancel();
    this.#controller?.abort();
    this.#controller = undefined;
  }

  async #relist(): Promise<void> {
    if (this.#stopped) return;
    let result: ListResult<T>;
    try {
      result = await this.#o.list();
    } catch (e) {
      this.#recovery?.reportFailure(statusOf(e));
      this.#retryLater(e, 'list');
      return;
    }
    this.#recovery?.reportSuccess();
    const max = this.#o.maxItems ?? 10_000;
    if (result.items.length > max) {
      this.#retryLater(new Error(`${result.items.length} objects listed, over the limit ${max}`), 'list');
      return;
    }
    if (this.#stopped) return;
    this.#retry.succeeded();
    this.#failures = 0;
    this.#synced = true;
    this.#lists++;
    this.#rv = result.resourceVersion;
    this.#o.onSync(result.items);
    await this.#startWatch();
  }

  #retryLater(e: unknown, step: string): void {
    if (this.#stopped) return;
    this.#failures++;
    const delay = backoffDelay(this.#failures, this.#o.backoff, this.#o.random);
    (this.#o.logger ?? NOOP_LOGGER).warn(
      { what: this.#o.what, step, status: statusOf(e), error: String(e), retryInMs: delay },
      'list/watch failed; re-listing later',
    );
    this.#retry.arm(delay, () => void this.#relist());
  }

  async #startWatch(): Promise<void> {
    if (this.#stopped) return;
    let relist = false;
    let events = 0;
    const query: Record<string, string | boolean> = { resourceVersion: this.#rv, allowWatchBookmarks: true };
    if (this.#o.fieldSelector !== undefined) query.fieldSelector = this.#o.fieldSelector;
    if (this.#o.labelSelector !== undefined) query.labelSelector = this.#o.labelSelector;
    const onEvent = (type: string, raw: unknown): void => {
      if (this.#stopped || relist) return;
      const obj = raw as T | undefined;
      if (type === 'ERROR') {
        relist = true; // 410 Gone (history expired) or another server-side error: start over from a list
        return;
      }
      const rv = obj?.metadata?.resourceVersion;
      if (rv !== undefined) this.#rv = rv;
      if (type === 'BOOKMARK' || obj === undefined) return;
      if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
      if (events++ === 0) this.#recovery?.reportSuccess();
      this.#o.onEvent(type, obj);
    };
    const done = (err: unknown): void => {
      if (this.#stopped) return;
      this.#controller = undefined;
      if (err !== null && err !== undefined) {
        this.#recovery?.reportFailure(statusOf(err));
        this.#retryLater(err, 'watch');
      } else if (relist) {
        this.#retry.arm(0, () => void this.#relist(), false);
      } else {
        // A clean close (server timeout, API server restart): resume from the last resourceVersion. A close
        // without any event counts as a failure so a server that closes at once is not hammered.
        if (events === 0) this.#failures++;
        const delay = events === 0 ? backoffDelay(this.#failures, this.#o.backoff, this.#o.random) : 0;
        this.#retry.arm(delay, () => void this.#startWatch(), events === 0);
      }
    };
    try {
      const c = await this.#watch(this.#o.path, query, onEvent, done);
      if (this.#stopped) c.abort();
      else this.#controller = c;
    } catch (e) {
      this.#recovery?.reportFailure(statusOf(e));
      this.#retryLater(e, 'watch');
    }
  }
}
