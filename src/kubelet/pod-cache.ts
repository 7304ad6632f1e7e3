/**
 * The pod cache as the volcano pick of Allocate sees it (spec C.3, I.4, I.6). The Kubernetes adapter (issue [E])
 * implements {@link PodCache} over its informer; tests and the simulator use {@link InMemoryPodCache}.
 */

/** Value Volcano's `predicate-time` is set to once a pod has been picked (2^64-1, spec C.3 step 3). */
export const PREDICATE_TIME_USED = '18446744073709551615';

/** Annotation written by Volcano with the scheduling time (unsigned decimal). */
export const PREDICATE_TIME_ANNOTATION = 'predicate-time';

/** The parts of a pod bound to this node that the pick looks at. */
export interface PodView {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly annotations: Readonly<Record<string, string>>;
  /** `resources.limits` of each container, as numbers (a quantity that is not an integer is NaN). */
  readonly containerLimits: readonly Readonly<Record<string, number>>[];
  /** `metadata.deletionTimestamp` is set. */
  readonly deleting: boolean;
  /** `state.waiting.message` of every waiting container. */
  readonly waitingMessages: readonly string[];
  /** `status.reason`, e.g. `UnexpectedAdmissionError`. */
  readonly statusReason?: string;
}

/** Pods on this node, plus the one write the pick needs. */
export interface PodCache {
  /** Pods on this node as the cache knows them now. */
  pods(): readonly PodView[];
  /** Lists the node's active pods live (spec C.3 step 1, last attempt); optional. */
  listLive?(): Promise<readonly PodView[]>;
  /**
   * Marks the pod as consumed: patches `predicate-time` to {@link PREDICATE_TIME_USED} on the API server and in
   * the cache. Rejects when the patch fails.
   */
  markAllocated(pod: PodView): Promise<void>;
}

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
