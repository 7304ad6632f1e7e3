/**
 * The node's pods by list+watch with the field selector `spec.nodeName=<node>` (spec I.6), keyed by UID: the
 * {@link PodCache} of [C]'s Allocate, and the "chip in use" input of the health rule "PreSeparateNPU while in use"
 * (D.7) and of the device-info schedulable list (H.3), read from the Volcano annotations (I.4).
 */
import type * as k8s from '@kubernetes/client-node';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { PREDICATE_TIME_ANNOTATION, PREDICATE_TIME_USED, type PodCache, type PodView } from '../core/pods.js';
import { ListWatch, type WatchFn } from './list-watch.js';
import { MERGE_PATCH } from './merge-patch.js';
import type { BackoffOptions, QueueClock } from './write-queue.js';

/** Largest annotation value kept (rank tables of big pods stay far below). */
export const MAX_ANNOTATION_CHARS = 256 * 1024;

/** Options of {@link PodCacheWatcher}. */
export interface PodCacheWatcherOptions {
  readonly api: Pick<k8s.CoreV1Api, 'listPodForAllNamespaces' | 'patchNamespacedPod'>;
  readonly watch: WatchFn | k8s.KubeConfig;
  readonly nodeName: string;
  /** Spec I.5 limit (default 10 000 pods). */
  readonly maxPods?: number;
  /** Called after every change of the cache (the store re-evaluates "in use"). */
  readonly onChange?: () => void;
  readonly logger?: Logger;
  readonly clock?: QueueClock;
  readonly backoff?: BackoffOptions;
}

/** A pod as the cache keeps it: the {@link PodView} plus its phase and labels (the reset layer's task name). */
export interface CachedPod extends PodView {
  readonly phase: string;
  readonly labels: Readonly<Record<string, string>>;
}

function limits(q: Record<string, string> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(q ?? {})) out[k] = /^\d+$/.test(String(v)) ? Number(v) : Number.NaN;
  return out;
}

/** Label values are at most 63 characters in Kubernetes; anything else is not kept. */
function labelsOf(raw: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw ?? {})) if (typeof v === 'string' && v.length <= 63) out[k] = v;
  return out;
}

/** The parts of a pod the agent reads (spec I.4), with size limits on annotation values. */
export function podViewOf(p: k8s.V1Pod): CachedPod {
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.metadata?.annotations ?? {})) {
    if (typeof v === 'string' && v.length <= MAX_ANNOTATION_CHARS) annotations[k] = v;
  }
  const waiting = (p.status?.containerStatuses ?? [])
    .map((c) => c.state?.waiting?.message)
    .filter((m): m is string => typeof m === 'string');
  return {
    uid: p.metadata?.uid ?? '',
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    annotations,
    containerLimits: (p.spec?.containers ?? []).map((c) => limits(c.resources?.limits as Record<string, string>)),
    deleting: p.metadata?.deletionTimestamp !== undefined && p.metadata?.deletionTimestamp !== null,
    waitingMessages: waiting,
    ...(p.status?.reason !== undefined ? { statusReason: p.status.reason } : {}),
    ...claimsOf(p),
    phase: p.status?.phase ?? '',
    labels: labelsOf(p.metadata?.labels),
  };
}

/** A pod has at most this many claims in its status (the spec's own limit is far above what a pod uses). */
const MAX_CLAIMS = 64;

/** DRA: the pod's claim names ({@link PodView.resourceClaims}), each once; nothing when there is none. */
function claimsOf(p: k8s.V1Pod): { resourceClaims?: string[] } {
  const names = [
    ...(p.status?.resourceClaimStatuses ?? []).map((c) => c.resourceClaimName),
    p.status?.extendedResourceClaimStatus?.resourceClaimName,
  ].filter((n): n is string => typeof n === 'string' && n !== '' && n.length <= 253);
  const unique = [...new Set(names)].slice(0, MAX_CLAIMS);
  return unique.length > 0 ? { resourceClaims: unique } : {};
}

/** Active = neither finished nor being deleted. */
export function isActivePod(p: CachedPod): boolean {
  return p.phase !== 'Succeeded' && p.phase !== 'Failed' && !p.deleting;
}

/** The pod cache over a watch. */
export class PodCacheWatcher implements PodCache {
  readonly #o: PodCacheWatcherOptions;
  readonly #pods = new Map<string, CachedPod>();
  readonly #watch: ListWatch<k8s.V1Pod>;
  readonly #selector: string;

  constructor(options: PodCacheWatcherOptions) {
    this.#o = options;
    this.#selector = `spec.nodeName=${options.nodeName}`;
    const log = options.logger ?? NOOP_LOGGER;
    this.#watch = new ListWatch<k8s.V1Pod>({
      what: `pods on ${options.nodeName}`,
      path: '/api/v1/pods',
      fieldSelector: this.#selector,
      watch: options.watch,
      maxItems: options.maxPods ?? 10_000,
      logger: log,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      list: async () => {
        const l = await options.api.listPodForAllNamespaces({ fieldSelector: this.#selector });
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onSync: (items) => {
        this.#pods.clear();
        for (const p of items) this.#put(p);
        options.onChange?.();
      },
      onEvent: (type, p) => {
        if (type === 'DELETED') this.#pods.delete(p.metadata?.uid ?? '');
        else if (this.#pods.size < (options.maxPods ?? 10_000) || this.#pods.has(p.metadata?.uid ?? '')) this.#put(p);
        else log.warn({ pod: p.metadata?.name }, 'pod cache full; pod not cached');
        options.onChange?.();
      },
    });
  }

  /** Lists and starts watching; resolves after the first list attempt. */
  start(): Promise<void> {
    return this.#watch.start();
  }

  stop(): void {
    this.#watch.stop();
  }

  /** True once the first list succeeded. */
  get synced(): boolean {
    return this.#watch.synced;
  }

  pods(): readonly CachedPod[] {
    return [...this.#pods.values()];
  }

  async listLive(): Promise<readonly PodView[]> {
    const l = await this.#o.api.listPodForAllNamespaces({ fieldSelector: this.#selector });
    return l.items.slice(0, this.#o.maxPods ?? 10_000).map(podViewOf);
  }

  async markAllocated(pod: PodView): Promise<void> {
    await markAllocatedIn(this.#o.api, this.#pods, pod);
  }

  /**
   * Device names listed by active pods in `huawei.com/<deviceType>` or `huawei.com/AscendReal` (spec I.4: the
   * "in use" test of D.7 and H.3's PodUsed).
   */
  devicesInUse(deviceType: string): Set<string> {
    return devicesInUseOf(this.#pods.values(), deviceType);
  }

  #put(p: k8s.V1Pod): void {
    const v = podViewOf(p);
    if (v.uid !== '') this.#pods.set(v.uid, v);
  }
}

/**
 * Spec C.3: marks a picked pod allocated (its `predicate-time` annotation set to the "used" value) and updates the
 * cached copy so the next pick skips it; shared by the watch cache and the kubelet `/pods` cache.
 */
export async function markAllocatedIn(
  api: Pick<k8s.CoreV1Api, 'patchNamespacedPod'>,
  cache: Map<string, CachedPod>,
  pod: PodView,
): Promise<void> {
  await api.patchNamespacedPod(
    {
      name: pod.name,
      namespace: pod.namespace,
      body: { metadata: { annotations: { [PREDICATE_TIME_ANNOTATION]: PREDICATE_TIME_USED } } },
    },
    MERGE_PATCH,
  );
  const cached = cache.get(pod.uid);
  if (cached !== undefined) {
    cache.set(pod.uid, {
      ...cached,
      annotations: { ...cached.annotations, [PREDICATE_TIME_ANNOTATION]: PREDICATE_TIME_USED },
    });
  }
}

/** Device names listed by active pods in `huawei.com/<deviceType>` or `huawei.com/AscendReal` (spec I.4). */
export function devicesInUseOf(pods: Iterable<CachedPod>, deviceType: string): Set<string> {
  const out = new Set<string>();
  for (const p of pods) {
    if (!isActivePod(p)) continue;
    for (const key of [`huawei.com/${deviceType}`, 'huawei.com/AscendReal']) {
      for (const name of (p.annotations[key] ?? '').split(',')) if (name !== '') out.add(name);
    }
  }
  return out;
}
