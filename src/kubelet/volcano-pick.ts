/**
 * `-volcanoType` pick (spec C.3 pickFromPodAnnotation, static devices): find the pod Volcano placed on this node
 * for a request of N devices, take the devices it wrote in its `huawei.com/<deviceType>` annotation, and mark the
 * pod as consumed.
 */
import { status } from '@grpc/grpc-js';
import { failedPrecondition, KubeletRequestError } from './errors.js';
import { PREDICATE_TIME_ANNOTATION, PREDICATE_TIME_USED, type PodCache, type PodView } from '../core/pods.js';

const U64_MAX = 2n ** 64n - 1n;
/** Spec C.3 step 2: a container limit outside [0, 3600] makes the pod ineligible. */
const MAX_LIMIT = 3600;

/** Tunables of the pick; the defaults are upstream's. */
export interface PickOptions {
  /** Attempts in all; the last one lists pods live when the cache offers it (default 3). */
  readonly attempts?: number;
  /** Pause between attempts (default 1000 ms). */
  readonly retryDelayMs?: number;
  /**
   * The number of kubelet devices a pod is matched by (default: the devices its annotation names). Soft share (L.7)
   * matches the AI-core quota instead: the annotation names one chip, kubelet allocates one copy per percent.
   */
  readonly countOf?: (pod: PodView) => number | undefined;
}

/** The pod chosen and the real devices it names. */
export interface PickResult {
  readonly pod: PodView;
  readonly devices: readonly string[];
}

function predicateTime(pod: PodView): bigint {
  const raw = pod.annotations[PREDICATE_TIME_ANNOTATION];
  if (raw === undefined || !/^\d{1,20}$/.test(raw)) return U64_MAX;
  const v = BigInt(raw);
  return v > U64_MAX ? U64_MAX : v;
}

function requestsResource(pod: PodView, resource: string): boolean {
  let total = 0;
  for (const limits of pod.containerLimits) {
    const v = limits[resource] ?? 0;
    if (!Number.isInteger(v) || v < 0 || v > MAX_LIMIT) return false;
    total += v;
  }
  return total > 0;
}

/** Spec C.3 step 2 (static mode): is `pod` a candidate for a request of `count` devices of `resource`? */
export function isCandidate(
  pod: PodView,
  resource: string,
  count: number,
  countOf?: (pod: PodView) => number | undefined,
): boolean {
  if (!requestsResource(pod, resource)) return false;
  const annotation = pod.annotations[resource];
  if (annotation === undefined || pod.deleting) return false;
  if (pod.waitingMessages.some((m) => m.includes('PreStartContainer check failed'))) return false;
  if (pod.statusReason === 'UnexpectedAdmissionError') return false;
  if (pod.annotations[PREDICATE_TIME_ANNOTATION] === PREDICATE_TIME_USED) return false;
  return (countOf ? countOf(pod) : annotation.split(',').length) === count;
}

/** The candidate with the smallest `predicate-time` (ties: namespace/name order), or undefined. */
export function chooseCandidate(
  pods: readonly PodView[],
  resource: string,
  count: number,
  countOf?: (pod: PodView) => number | undefined,
): PodView | undefined {
  let best: PodView | undefined;
  let bestTime = 0n;
  for (const pod of pods) {
    if (!isCandidate(pod, resource, count, countOf)) continue;
    const t = predicateTime(pod);
    const key = `${pod.namespace}/${pod.name}`;
    if (!best || t < bestTime || (t === bestTime && key < `${best.namespace}/${best.name}`)) {
      best = pod;
      bestTime = t;
    }
  }
  return best;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs the pick. Rejects with FAILED_PRECONDITION when no pod qualifies after every attempt, INTERNAL when the
 * pod cannot be marked as consumed.
 */
export async function pickFromPodAnnotation(
  cache: PodCache,
  resource: string,
  count: number,
  opts: PickOptions = {},
): Promise<PickResult> {
  const attempts = opts.attempts ?? 3;
  const delay = opts.retryDelayMs ?? 1000;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const live = attempt === attempts && attempts > 1 && cache.listLive !== undefined;
    const pods = live ? await cache.listLive!() : cache.pods();
    const pod = chooseCandidate(pods, resource, count, opts.countOf);
    if (pod) {
      try {
        await cache.markAllocated(pod);
      } catch (err) {
        throw new KubeletRequestError(
          status.INTERNAL,
          `could not mark pod ${pod.namespace}/${pod.name} as allocated: ${(err as Error).message}`,
        );
      }
      return { pod, devices: pod.annotations[resource]!.split(',') };
    }
    if (attempt < attempts) await pause(delay);
  }
  throw failedPrecondition(
    `no pending pod on this node has annotation ${resource} with ${count} device(s) (volcano pick, ${attempts} attempts)`,
  );
}
