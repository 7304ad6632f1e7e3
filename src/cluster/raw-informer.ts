/**
 * The fault center's inputs as list + watch without client-node's informer (issue [O], start-up at 10,000 nodes):
 * the list is one `GET` whose answer is `JSON.parse`d and nothing else (client-node mapped every object into its
 * models and kept a copy of each in its cache: 0.65 s of CPU at start-up, and the copies were garbage collected
 * later), the watch is the kube layer's {@link ListWatch} (re-list on `410 Gone` or a failure, with backoff). Only
 * each object's `resourceVersion` is kept, so that a re-list reports what changed as `add`, `update` and `delete`
 * as an informer does; a `delete` found by a re-list carries the object's name and namespace only.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../core/logger.js';
import { ListWatch, type WatchFn } from '../kube/list-watch.js';
import type { ApiRecovery } from '../kube/write-queue.js';

/** What an input does with its objects. */
export interface RawInformerHandlers<T> {
  add(o: T): void;
  update(o: T): void;
  delete(o: T): void;
}

/** Options of {@link RawInformer}. */
export interface RawInformerOptions {
  /** for logs */
  readonly what: string;
  /** collection path, e.g. `/api/v1/pods` */
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** a client-node kubeconfig to watch through (when `watch` is not given) */
  readonly kubeConfig?: k8s.KubeConfig;
  /** the watch (`KubeClient.watch`); one of `watch` and `kubeConfig` is needed */
  readonly watch?: WatchFn;
  /** `GET` of a path, answered with the parsed JSON */
  readonly getJson: (path: string) => Promise<unknown>;
  readonly logger: Logger;
  readonly recovery?: ApiRecovery;
  /** a list longer than this is refused (logged, retried) */
  readonly maxItems?: number;
}

/** A list answer as read. */
interface RawList<T> {
  metadata?: { resourceVersion?: string };
  items?: T[] | null;
}

const keyOf = (o: k8s.KubernetesObject): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** The list path with its selectors. */
export function listPath(path: string, labelSelector?: string, fieldSelector?: string): string {
  const q = new URLSearchParams();
  if (labelSelector !== undefined) q.set('labelSelector', labelSelector);
  if (fieldSelector !== undefined) q.set('fieldSelector', fieldSelector);
  const qs = q.toString();
  return qs === '' ? path : `${path}?${qs}`;
}

function watchOf(o: RawInformerOptions): WatchFn | k8s.KubeConfig {
  const w = o.watch ?? o.kubeConfig;
  if (w === undefined) throw new Error(`${o.what}: no watch and no kubeconfig`);
  return w;
}

/** One input. */
export class RawInformer<T extends k8s.KubernetesObject> {
  readonly #lw: ListWatch<T>;
  /** key → resourceVersion of every object known */
  readonly #known = new Map<string, string>();

  constructor(o: RawInformerOptions, h: RawInformerHandlers<T>) {
    const url = listPath(o.path, o.labelSelector, o.fieldSelector);
    this.#lw = new ListWatch<T>({
      what: o.what,
      path: o.path,
      ...(o.labelSelector !== undefined ? { labelSelector: o.labelSelector } : {}),
      ...(o.fieldSelector !== undefined ? { fieldSelector: o.fieldSelector } : {}),
      watch: watchOf(o),
      maxItems: o.maxItems ?? 1_000_000,
      logger: o.logger,
      ...(o.recovery !== undefined ? { backoff: { recovery: o.recovery } } : {}),
      list: async () => {
        const l = (await o.getJson(url)) as RawList<T> | null;
        if (
          typeof l !== 'object' ||
          l === null ||
          (l.items !== undefined && l.items !== null && !Array.isArray(l.items))
        )
          throw new Error(`${o.what}: the list answer is not a list`);
        return { items: l.items ?? [], resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onSync: (items) => {
        const seen = new Set<string>();
        for (const obj of items) {
          const k = keyOf(obj);
          seen.add(k);
          const rv = obj.metadata?.resourceVersion ?? '';
          const before = this.#known.get(k);
          this.#known.set(k, rv);
          if (before === undefined) h.add(obj);
          else if (before !== rv || rv === '') h.update(obj);
        }
        for (const k of [...this.#known.keys()]) {
          if (seen.has(k)) continue;
          this.#known.delete(k);
          const slash = k.indexOf('/');
          const namespace = k.slice(0, slash);
          h.delete({ metadata: { name: k.slice(slash + 1), ...(namespace !== '' ? { namespace } : {}) } } as T);
        }
      },
      onEvent: (type, obj) => {
        const k = keyOf(obj);
        if (type === 'DELETED') {
          this.#known.delete(k);
          h.delete(obj);
          return;
        }
        const known = this.#known.has(k);
        this.#known.set(k, obj.metadata?.resourceVersion ?? '');
        if (known) h.update(obj);
        else h.add(obj);
      },
    });
  }

  /** True once a list succeeded. */
  get synced(): boolean {
    return this.#lw.synced;
  }

  /** Lists (every object arrives as `add`) and starts watching; resolves after the first list attempt. */
  start(): Promise<void> {
    return this.#lw.start();
  }

  stop(): void {
    this.#lw.stop();
  }
}
