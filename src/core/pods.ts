/**
 * Pods as the agent sees them: the view of a pod bound to this node that the pod cache holds (spec C.3, I.4, I.6),
 * the cache the volcano pick of Allocate reads (the kube layer's informer implements it), Volcano's
 * `predicate-time` annotation, and the devices a pod holds as kubelet's pod-resources API reports them (I.5).
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
  /**
   * DRA: names of the pod's ResourceClaims (in its namespace): `status.resourceClaimStatuses[].resourceClaimName` and
   * the claim the scheduler made for extended resources backed by a DeviceClass
   * (`status.extendedResourceClaimStatus.resourceClaimName`). Absent when there is none.
   */
  readonly resourceClaims?: readonly string[];
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

/** Devices one pod holds for one resource (spec I.5). */
export interface PodDevices {
  readonly namespace: string;
  readonly name: string;
  readonly resourceName: string;
  readonly deviceIds: readonly string[];
}
