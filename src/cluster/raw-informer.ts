/**
 * The fault center's inputs as list + watch without client-node's informer (issue [O], start-up at 10,000 nodes):
 * the list is one `GET` whose answer is `JSON.parse`d and nothing else (client-node mapped every object into its
 * models and kept a copy of each in its cache: 0.65 s of CPU at start-up, and the copies were garbage collected
 * later), the watch is the kube layer's {@link ListWatch} (re-list on `410 Gone` or a failure, with backoff). Only
 * each object's `resourceVersion` is kept, so that a re-list reports what changed as `add`, `update` and `delete`
 * as an informer does; a `delete` found by a re-list carries the object's name and namespace only.
 *
 * Lists are read in pages (`limit` / `continue`, the Kubernetes API's "list chunking", as client-go's pager does with
 * 500 objects a page): each page is handed to the handlers as it arrives while the next one is already requested,
 * so the API server's serialising of page k + 1 overlaps this process's handling of page k (issue [O] start-up: one
 * 11–16 MB answer per list kept this process idle until the server had written the whole of it, and the server
 * wrote nothing else meanwhile). Every page is at the first page's resourceVersion (the server keeps the list
 * consistent); a continue token that expired meanwhile (`410 Gone`, the server compacted) makes the list start
 * over in one piece, without `limit`, as client-go's pager does. A server that ignores `limit` answers with the whole
 * list and no token: one page.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../core/logger.js';
import { statusOf } from '../core/errors.js';
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
  /** objects per list page (`limit`); default {@link DEFAULT_PAGE_SIZE}, 0 = the whole list in one answer */
  readonly pageSize?: number;
}

/** Objects per list page, client-go's pager default. */
export const DEFAULT_PAGE_SIZE = 500;

/** A list answer as read. */
interface RawList<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[] | null;
}

const keyOf = (o: k8s.KubernetesObject): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** The list path with its selectors (and a page's `limit` and `continue`). */
export function listPath(
  path: string,
  labelSelector?: string,
  fieldSelector?: string,
  page?: { limit: number; continue?: string },
): string {
  const q = new URLSearchParams();
  if (labelSelector !== undefined) q.set('labelSelector', labelSelector);
  if (fieldSelector !== undefined) q.set('fieldSelector', fieldSelector);
  if (page !== undefined && page.limit > 0) {
    q.set('limit', String(page.limit));
    if (page.continue !== undefined) q.set('continue', page.continue);
  }
  const qs = q.toString();
  return qs === '' ? path : `${path}?${qs}`;
}

/** A list answer checked for shape. */
function checkedList<T>(what: string, l: unknown): RawList<T> {
  const list = l as RawList<T> | null;
  if (
    typeof list !== 'object' ||
    list === null ||
    Array.isArray(list) ||
    (list.items !== undefined && list.items !== null && !Array.isArray(list.items))
  )
    throw new Error(`${what}: the list answer is not a list`);
  return list;
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

  /** keys seen by the last complete list (its deletes are reported once it is complete) */
  #listed = new Set<string>();

  constructor(o: RawInformerOptions, h: RawInformerHandlers<T>) {
    const maxItems = o.maxItems ?? 1_000_000;
    const pageSize = o.pageSize ?? DEFAULT_PAGE_SIZE;
    /** One object of a list: add when new, update when its resourceVersion changed (or is unknown). */
    const listed = (obj: T, seen: Set<string>): void => {
      const k = keyOf(obj);
      seen.add(k);
      const rv = obj.metadata?.resourceVersion ?? '';
      const before = this.#known.get(k);
      this.#known.set(k, rv);
      if (before === undefined) h.add(obj);
      else if (before !== rv || rv === '') h.update(obj);
    };
    /** The whole list, page by page (each handed over as it arrives, the next one requested meanwhile). */
    const list = async (limit: number): Promise<{ seen: Set<string>; resourceVersion: string }> => {
      const seen = new Set<string>();
      const get = (token?: string) =>
        o.getJson(
          listPath(
            o.path,
            o.labelSelector,
            o.fieldSelector,
            limit > 0 ? { limit, ...(token !== undefined ? { continue: token } : {}) } : undefined,
          ),
        );
      let resourceVersion: string | undefined;
      let count = 0;
      let pages = 0;
      const tokens = new Set<string>();
      let next: Promise<unknown> | undefined = get();
      while (next !== undefined) {
        const page: RawList<T> = checkedList<T>(o.what, await next);
        resourceVersion ??= page.metadata?.resourceVersion ?? '';
        const items = page.items ?? [];
        count += items.length;
        // the size limit is checked before the objects are handed over
        if (count > maxItems) throw new Error(`${o.what}: ${count} objects listed, over the limit ${maxItems}`);
        const token: string | undefined = page.metadata?.continue;
        const more = limit > 0 && typeof token === 'string' && token !== '';
        // a server answering with the token it was given (or ever more empty pages) would page forever
        if (more && (tokens.has(token) || ++pages > maxItems / limit + 1000))
          throw new Error(
            `${o.what}: the API server repeated a continue token or never ended the list (page ${pages})`,
          );
        if (more) tokens.add(token);
        next = more ? get(token) : undefined;
        // a page still being requested must not become an unhandled rejection while this one is handed over
        next?.catch(() => undefined);
        for (const obj of items) listed(obj, seen);
      }
      return { seen, resourceVersion: resourceVersion ?? '' };
    };
    this.#lw = new ListWatch<T>({
      what: o.what,
      path: o.path,
      ...(o.labelSelector !== undefined ? { labelSelector: o.labelSelector } : {}),
      ...(o.fieldSelector !== undefined ? { fieldSelector: o.fieldSelector } : {}),
      watch: watchOf(o),
      maxItems,
      logger: o.logger,
      ...(o.recovery !== undefined ? { backoff: { recovery: o.recovery } } : {}),
      list: async () => {
        let r: { seen: Set<string>; resourceVersion: string };
        try {
          r = await list(pageSize);
        } catch (e) {
          // the continue token expired between two pages (the server compacted): start over in one piece
          if (pageSize <= 0 || statusOf(e) !== 410) throw e;
          o.logger.info({ what: o.what }, 'list continue token expired; listing again in one piece');
          r = await list(0);
        }
        this.#listed = r.seen;
        // the objects were handed over page by page; what is left for the sync is the deletes
        return { items: [], resourceVersion: r.resourceVersion };
      },
      onSync: () => {
        const seen = this.#listed;
        this.#listed = new Set();
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
