/**
 * The Kubernetes side of the reset layer (spec hot-reset.md §2.1, §2.8, §4.3; device-plugin.md §J.7):
 *
 * - {@link ResetConfigMapWatcher}: list+watch of every ConfigMap labelled `reset=true` in all namespaces, kept as
 *   the informer cache the engines read (`reset-config-*`, and `data-trace-*` for the file landing);
 * - {@link resetConfigMapApi}: direct GET + UPDATE (the writes of §2.4 use the object read, for optimistic
 *   concurrency);
 * - {@link nodeAnnotationApi}: the `ResetInfo` annotation read from and merge-patched onto the Node (a merge patch
 *   also creates a missing key, which upstream's JSON-patch `replace` does not — §J.7).
 */
import type * as k8s from '@kubernetes/client-node';
import { statusOf } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { ListWatch, type WatchFn } from '../kube/list-watch.js';
import { MERGE_PATCH } from '../kube/merge-patch.js';
import type { BackoffOptions, QueueClock } from '../kube/write-queue.js';
import type { ConfigMapApi, ConfigMapCache, ConfigMapObject, NodeAnnotationApi } from './types.js';

/** Label of the reset ConfigMaps (§2.1). */
export const RESET_LABEL_SELECTOR = 'reset=true';
/** Largest number of labelled ConfigMaps kept (size limit on input from the API server). */
export const MAX_RESET_CONFIGMAPS = 10_000;
/** Largest value kept per data key (§2.3: the reader refuses more than 1 MiB anyway). */
const MAX_VALUE_CHARS = 1024 * 1024 + 1;

/** The parts of a ConfigMap the reset layer reads; oversized values are cut to one byte over the limit. */
export function configMapObjectOf(cm: k8s.V1ConfigMap): ConfigMapObject {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(cm.data ?? {})) {
    if (typeof v === 'string') data[k] = v.length > MAX_VALUE_CHARS ? v.slice(0, MAX_VALUE_CHARS) : v;
  }
  return {
    namespace: cm.metadata?.namespace ?? '',
    name: cm.metadata?.name ?? '',
    labels: { ...(cm.metadata?.labels ?? {}) },
    data,
    resourceVersion: cm.metadata?.resourceVersion ?? '',
  };
}

/** §2.8 handler filter: only these names matter. */
function relevant(name: string): boolean {
  return name.startsWith('reset-config-') || name.startsWith('data-trace-');
}

export interface ResetConfigMapWatcherOptions {
  readonly api: Pick<k8s.CoreV1Api, 'listConfigMapForAllNamespaces'>;
  readonly watch: WatchFn | k8s.KubeConfig;
  /** After the cache changed (the object as now cached, or as last seen when deleted). */
  readonly onChange?: (cm: ConfigMapObject, deleted: boolean) => void;
  readonly logger?: Logger;
  readonly clock?: QueueClock;
  readonly backoff?: BackoffOptions;
}

/** The informer cache of the reset ConfigMaps. */
export class ResetConfigMapWatcher implements ConfigMapCache {
  readonly #items = new Map<string, ConfigMapObject>();
  readonly #watch: ListWatch<k8s.V1ConfigMap>;
  readonly #o: ResetConfigMapWatcherOptions;

  constructor(options: ResetConfigMapWatcherOptions) {
    this.#o = options;
    const log = options.logger ?? NOOP_LOGGER;
    this.#watch = new ListWatch<k8s.V1ConfigMap>({
      what: `configmaps labelled ${RESET_LABEL_SELECTOR}`,
      path: '/api/v1/configmaps',
      labelSelector: RESET_LABEL_SELECTOR,
      watch: options.watch,
      maxItems: MAX_RESET_CONFIGMAPS,
      logger: log,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      list: async () => {
        const l = await options.api.listConfigMapForAllNamespaces({ labelSelector: RESET_LABEL_SELECTOR });
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onSync: (items) => {
        const before = new Map(this.#items);
        this.#items.clear();
        for (const raw of items) {
          const cm = configMapObjectOf(raw);
          if (!relevant(cm.name)) continue;
          const key = `${cm.namespace}/${cm.name}`;
          this.#items.set(key, cm);
          if (before.get(key)?.resourceVersion !== cm.resourceVersion) this.#o.onChange?.(cm, false);
          before.delete(key);
        }
        for (const gone of before.values()) this.#o.onChange?.(gone, true);
      },
      onEvent: (type, raw) => {
        const cm = configMapObjectOf(raw);
        if (!relevant(cm.name)) return;
        const key = `${cm.namespace}/${cm.name}`;
        if (type === 'DELETED') {
          this.#items.delete(key);
          this.#o.onChange?.(cm, true);
          return;
        }
        if (!this.#items.has(key) && this.#items.size >= MAX_RESET_CONFIGMAPS) {
          log.warn({ configMap: key }, 'reset ConfigMap cache full; not cached');
          return;
        }
        this.#items.set(key, cm);
        this.#o.onChange?.(cm, false);
      },
    });
  }

  start(): Promise<void> {
    return this.#watch.start();
  }

  /** True once the first list has succeeded. */
  get synced(): boolean {
    return this.#watch.synced;
  }

  stop(): void {
    this.#watch.stop();
  }

  get(namespace: string, name: string): ConfigMapObject | undefined {
    return name.startsWith('reset-config-') ? this.#items.get(`${namespace}/${name}`) : undefined;
  }

  dataTrace(namespace: string, name: string): ConfigMapObject | undefined {
    return name.startsWith('data-trace-') ? this.#items.get(`${namespace}/${name}`) : undefined;
  }
}

/**
 * GET + UPDATE of one ConfigMap (§2.4). The UPDATE carries the metadata of the object read (annotations, owner
 * references …) with the labels and resourceVersion the caller hands back, so nothing but the data is changed.
 */
export function resetConfigMapApi(
  api: Pick<k8s.CoreV1Api, 'readNamespacedConfigMap' | 'replaceNamespacedConfigMap'>,
): ConfigMapApi {
  // Metadata of recent reads by namespace/name@resourceVersion (bounded: a read not followed by a write ages out).
  const readMeta = new Map<string, k8s.V1ObjectMeta>();
  const keyOf = (o: Pick<ConfigMapObject, 'namespace' | 'name' | 'resourceVersion'>): string =>
    `${o.namespace}/${o.name}@${o.resourceVersion}`;
  return {
    async get(namespace, name) {
      let raw: k8s.V1ConfigMap;
      try {
        raw = await api.readNamespacedConfigMap({ namespace, name });
      } catch (err) {
        if (statusOf(err) === 404) return undefined;
        throw err;
      }
      const o = configMapObjectOf(raw);
      readMeta.set(keyOf(o), raw.metadata ?? {});
      if (readMeta.size > 64) readMeta.delete(readMeta.keys().next().value!);
      return o;
    },
    async replace(o) {
      const base = readMeta.get(keyOf(o)) ?? {};
      readMeta.delete(keyOf(o));
      await api.replaceNamespacedConfigMap({
        namespace: o.namespace,
        name: o.name,
        body: {
          metadata: {
            ...base,
            name: o.name,
            namespace: o.namespace,
            labels: { ...o.labels },
            resourceVersion: o.resourceVersion,
          },
          data: { ...o.data },
        },
      });
    },
  };
}

/** The Node's annotations through read + merge patch. */
export function nodeAnnotationApi(
  api: Pick<k8s.CoreV1Api, 'readNode' | 'patchNode'>,
  nodeName: string,
): NodeAnnotationApi {
  return {
    async read(key) {
      const node = await api.readNode({ name: nodeName });
      const v = node.metadata?.annotations?.[key];
      return typeof v === 'string' ? v : undefined;
    },
    async write(key, value) {
      await api.patchNode({ name: nodeName, body: { metadata: { annotations: { [key]: value } } } }, MERGE_PATCH);
    },
  };
}
