/**
 * An in-memory pod cache for tests and the simulator. The {@link PodCache} the volcano pick of Allocate reads is
 * core vocabulary (src/core/pods.ts); the Kubernetes adapter implements it over its informer.
 */
import { PREDICATE_TIME_ANNOTATION, PREDICATE_TIME_USED, type PodCache, type PodView } from '../core/pods.js';

/** In-memory {@link PodCache} for tests and the simulator. */
export class InMemoryPodCache implements PodCache {
  readonly #pods = new Map<string, PodView>();
  /** When set, `markAllocated` rejects with this error. */
  failMarkWith: Error | undefined;
  /** Pods that only a live list returns (simulates a stale cache). */
  livePods: PodView[] | undefined;

  constructor(pods: Iterable<PodView> = []) {
    for (const p of pods) this.#pods.set(p.uid, p);
  }

  /** Adds or replaces a pod. */
  upsert(pod: PodView): void {
    this.#pods.set(pod.uid, pod);
  }

  remove(uid: string): void {
    this.#pods.delete(uid);
  }

  get(uid: string): PodView | undefined {
    return this.#pods.get(uid);
  }

  pods(): readonly PodView[] {
    return [...this.#pods.values()];
  }

  listLive(): Promise<readonly PodView[]> {
    return Promise.resolve(this.livePods ?? this.pods());
  }

  markAllocated(pod: PodView): Promise<void> {
    if (this.failMarkWith) return Promise.reject(this.failMarkWith);
    const annotations = { ...pod.annotations, [PREDICATE_TIME_ANNOTATION]: PREDICATE_TIME_USED };
    this.#pods.set(pod.uid, { ...pod, annotations });
    if (this.livePods) {
      this.livePods = this.livePods.map((p) => (p.uid === pod.uid ? { ...p, annotations } : p));
    }
    return Promise.resolve();
  }
}

/** A pod with the fields the pick needs; the rest defaulted (tests and the simulator). */
export function volcanoPod(p: {
  uid: string;
  name?: string;
  namespace?: string;
  resource: string;
  devices: readonly string[];
  predicateTime?: string;
  extraAnnotations?: Record<string, string>;
}): PodView {
  return {
    uid: p.uid,
    namespace: p.namespace ?? 'default',
    name: p.name ?? p.uid,
    annotations: {
      [p.resource]: p.devices.join(','),
      ...(p.predicateTime === undefined ? {} : { [PREDICATE_TIME_ANNOTATION]: p.predicateTime }),
      ...p.extraAnnotations,
    },
    containerLimits: [{ [p.resource]: p.devices.length }],
    deleting: false,
    waitingMessages: [],
  };
}
