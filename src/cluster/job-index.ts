/**
 * The pod and PodGroup caches of manual separation (cluster-faults §1.3 "Job id", §1.4 PodGroup liveness):
 * node → device name → job id (controller owner UID), from the annotation
 * `ascend.kubectl.kubernetes.io/ascend-910-configuration`; and the set of job ids that have a PodGroup.
 */

/** The pod annotation listing a pod's NPUs (§1.3). */
export const POD_DEVICE_ANNOTATION = 'ascend.kubectl.kubernetes.io/ascend-910-configuration';
/** Largest annotation value read. */
export const MAX_POD_ANNOTATION_BYTES = 64 * 1024;

/** The fields of a pod or PodGroup the index reads. */
export interface OwnedObject {
  metadata?: {
    uid?: string;
    namespace?: string;
    name?: string;
    annotations?: Record<string, string> | null;
    ownerReferences?: { uid?: string; controller?: boolean | null }[] | null;
  };
  spec?: { nodeName?: string | null; [k: string]: unknown } | null;
}

/** Controller owner UID, or "" (§1.3). */
export function controllerUid(o: OwnedObject): string {
  return o.metadata?.ownerReferences?.find((r) => r.controller === true)?.uid ?? '';
}

/** Device ids of the annotation; throws with a reason on a malformed value. */
export function annotationDeviceIds(value: string): string[] {
  // a UTF-16 unit is at most 3 UTF-8 bytes: only a long value is measured
  if (value.length * 3 > MAX_POD_ANNOTATION_BYTES && Buffer.byteLength(value) > MAX_POD_ANNOTATION_BYTES) {
    throw new Error(`exceeds ${MAX_POD_ANNOTATION_BYTES} bytes`);
  }
  const parsed = JSON.parse(value) as { devices?: unknown } | null;
  if (typeof parsed !== 'object' || parsed === null) throw new Error('not a JSON object');
  const devices = parsed.devices;
  if (devices === undefined || devices === null) return [];
  if (!Array.isArray(devices)) throw new Error('devices is not a list');
  const ids = new Array<string>(devices.length);
  for (let i = 0; i < devices.length; i++) {
    const id = (devices[i] as { device_id?: unknown } | null)?.device_id;
    if (typeof id === 'string') ids[i] = id;
    else if (typeof id === 'number') ids[i] = String(id);
    else throw new Error(`devices[${i}].device_id is missing`);
  }
  return ids;
}

interface PodEntry {
  node: string;
  jobId: string;
  deviceIds: string[];
  /** the annotation value `deviceIds` was read from (undefined: none, or it was malformed) */
  annotation: string | undefined;
  /** when the pod's key was first seen: "first pod" of §1.3 is the first in this order */
  seq: number;
}

/** The caches. Pod keys are `<namespace>/<name>`. */
export class JobIndex {
  readonly #pods = new Map<string, PodEntry>();
  /**
   * node → its pods (issue [O]: §1.3's lookup went through every pod of the cluster, a third of the first cycle at
   * 10,000 nodes); the first pod is the one seen first, as in the cluster-wide list.
   */
  readonly #byNode = new Map<string, Map<string, PodEntry>>();
  #seq = 0;
  readonly #podGroupsByKey = new Map<string, string>();
  readonly #podGroupJobs = new Map<string, number>();

  /**
   * Adds or replaces a pod (no phase filter, §5). Returns an error message when its annotation is malformed (the
   * pod is then kept without devices).
   */
  upsertPod(pod: OwnedObject): string | undefined {
    const key = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
    const node = pod.spec?.nodeName ?? '';
    const jobId = controllerUid(pod);
    const value = pod.metadata?.annotations?.[POD_DEVICE_ANNOTATION];
    const old = this.#pods.get(key);
    let deviceIds: string[] = [];
    let annotation: string | undefined;
    let error: string | undefined;
    if (value !== undefined && old?.annotation === value) {
      // an update with the same annotation (a status change, the usual case): the ids read last time (never
      // mutated), not a second parse
      deviceIds = old.deviceIds;
      annotation = value;
    } else if (value !== undefined) {
      try {
        deviceIds = annotationDeviceIds(value);
        annotation = value;
      } catch (e) {
        error = `pod ${key}: annotation ${POD_DEVICE_ANNOTATION}: ${(e as Error).message}`;
      }
    }
    if (old !== undefined) this.#unindex(key, old);
    const entry: PodEntry = { node, jobId, deviceIds, annotation, seq: old?.seq ?? this.#seq++ };
    this.#pods.set(key, entry);
    let onNode = this.#byNode.get(node);
    if (onNode === undefined) this.#byNode.set(node, (onNode = new Map<string, PodEntry>()));
    onNode.set(key, entry);
    return error;
  }

  #unindex(key: string, e: PodEntry): void {
    const onNode = this.#byNode.get(e.node);
    onNode?.delete(key);
    if (onNode?.size === 0) this.#byNode.delete(e.node);
  }

  deletePod(pod: OwnedObject): void {
    const key = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
    const old = this.#pods.get(key);
    if (old === undefined) return;
    this.#unindex(key, old);
    this.#pods.delete(key);
  }

  /** §1.3: the job of the first controller-owned pod on `node` whose annotation lists `dev`, else "". */
  jobOf(node: string, dev: string): string {
    const onNode = this.#byNode.get(node);
    if (onNode === undefined) return '';
    const id = dev.slice(dev.lastIndexOf('-') + 1);
    let best: PodEntry | undefined;
    for (const p of onNode.values()) {
      if (p.jobId !== '' && p.deviceIds.includes(id) && (best === undefined || p.seq < best.seq)) best = p;
    }
    return best?.jobId ?? '';
  }

  upsertPodGroup(pg: OwnedObject): void {
    const key = `${pg.metadata?.namespace ?? ''}/${pg.metadata?.name ?? ''}`;
    this.deletePodGroup(pg);
    const uid = controllerUid(pg);
    this.#podGroupsByKey.set(key, uid);
    this.#podGroupJobs.set(uid, (this.#podGroupJobs.get(uid) ?? 0) + 1);
  }

  deletePodGroup(pg: OwnedObject): void {
    const key = `${pg.metadata?.namespace ?? ''}/${pg.metadata?.name ?? ''}`;
    const uid = this.#podGroupsByKey.get(key);
    if (uid === undefined) return;
    this.#podGroupsByKey.delete(key);
    const n = (this.#podGroupJobs.get(uid) ?? 1) - 1;
    if (n <= 0) this.#podGroupJobs.delete(uid);
    else this.#podGroupJobs.set(uid, n);
  }

  /** §1.4: whether a PodGroup keyed by this controller UID exists. */
  hasPodGroup(jobId: string): boolean {
    return jobId !== '' && this.#podGroupJobs.has(jobId);
  }
}
