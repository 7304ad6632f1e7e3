/**
 * The ResourceClaims NodePrepareResources names (kubelet sends namespace, name and uid only): the part of
 * `resource.k8s.io/v1` ResourceClaim the node side reads, and a small cached reader with a GET fallback.
 *
 * The cache holds claims by uid for a short time: a claim kubelet asks for again (a retry after a per-claim error,
 * a second pod of a shared claim before the first answer) is not read again. A miss, an entry of another uid or one
 * without an allocation is read with a GET, bounded in time. There is deliberately no cluster-wide watch of claims
 * (it would grow with the cluster, not with the node; kubelet and the upstream kubeletplugin helper read claims by
 * GET too), and claims kubelet already saw prepared never need the API at all: the checkpoint answers them.
 */
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import { errorMessage, statusOf } from '../core/errors.js';
import type { DraApi } from './dra-api.js';
import type { DeviceRequestAllocationResult, ResourceClaim } from './dra-types.js';

/** What kubelet names in a request (dra/v1 `Claim`). */
export interface ClaimRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** `namespace/name` of a claim, for messages. */
export function claimKey(ref: Pick<ClaimRef, 'namespace' | 'name'>): string {
  return `${ref.namespace}/${ref.name}`;
}

/** The API call the reader needs: `GET .../namespaces/<ns>/resourceclaims/<name>` (the API side's calls). */
export type ClaimApi = Pick<DraApi, 'readResourceClaim'>;

/** Why a claim could not be used (a per-claim error in the answer to kubelet). */
export class ClaimReadError extends Error {
  override readonly name = 'ClaimReadError';
  constructor(
    message: string,
    /** HTTP status of the API's answer, when there was one. */
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Options of {@link CachedClaimReader}. */
export interface ClaimReaderOptions {
  readonly api: ClaimApi;
  readonly clock: Clock;
  /** How long a read claim is reused (default 30 s). */
  readonly ttlMs?: number;
  /** Claims kept at most (default 512; the oldest go first). */
  readonly maxEntries?: number;
  /** Bound of one GET (default 10 s; kubelet's own call to the plugin times out after 45 s). */
  readonly timeoutMs?: number;
  readonly logger?: Logger;
}

interface Entry {
  readonly claim: ResourceClaim;
  readonly at: number;
}

/** True when `v` looks like a ResourceClaim (an object with a metadata object). */
function isClaim(v: unknown): v is ResourceClaim {
  return typeof v === 'object' && v !== null && typeof (v as { metadata?: unknown }).metadata === 'object';
}

/** The cached reader (see the module comment). */
export class CachedClaimReader {
  readonly #o: ClaimReaderOptions;
  readonly #byUid = new Map<string, Entry>();
  readonly #inFlight = new Map<string, Promise<ResourceClaim>>();
  readonly #log: Logger;
  #gets = 0;

  constructor(options: ClaimReaderOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** GETs sent so far (tests and metrics). */
  get gets(): number {
    return this.#gets;
  }

  /**
   * The claim `ref` names, allocated: from the cache when a fresh entry of the same uid with an allocation is
   * there, else by GET. Rejects with {@link ClaimReadError}: not found, another uid (the claim was replaced), not
   * allocated, an API error or timeout.
   */
  async read(ref: ClaimRef): Promise<ResourceClaim> {
    const hit = this.#byUid.get(ref.uid);
    const now = this.#o.clock.monotonic();
    if (hit && now - hit.at <= (this.#o.ttlMs ?? 30_000) && this.#matches(hit.claim, ref)) return hit.claim;
    const key = `${ref.uid}\0${ref.namespace}\0${ref.name}`;
    let p = this.#inFlight.get(key);
    if (!p) {
      p = this.#get(ref).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, p);
    }
    return p;
  }

  /** Drops the claim of `uid` (it was unprepared: a later claim of that uid must be read again). */
  forget(uid: string): void {
    this.#byUid.delete(uid);
  }

  #matches(claim: ResourceClaim, ref: ClaimRef): boolean {
    const m = claim.metadata;
    return m.uid === ref.uid && m.namespace === ref.namespace && m.name === ref.name && hasAllocation(claim);
  }

  async #get(ref: ClaimRef): Promise<ResourceClaim> {
    const what = `ResourceClaim ${claimKey(ref)}`;
    const timeoutMs = this.#o.timeoutMs ?? 10_000;
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.#o.clock.setTimeout(
        () => reject(new ClaimReadError(`${what}: the API server did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    this.#gets++;
    let raw: unknown;
    try {
      raw = await Promise.race([this.#o.api.readResourceClaim(ref.namespace, ref.name) as Promise<unknown>, timeout]);
    } catch (err) {
      if (err instanceof ClaimReadError) throw err;
      const status = statusOf(err);
      const why = status === 404 ? 'not found' : `cannot be read: ${errorMessage(err).slice(0, 300)}`;
      throw new ClaimReadError(`${what} ${why}`, status, { cause: err });
    } finally {
      if (timer !== undefined) this.#o.clock.clearTimeout(timer);
    }
    if (!isClaim(raw)) throw new ClaimReadError(`${what}: the API server's answer is not a ResourceClaim`);
    // kubeletplugin's rule: a claim of another uid is a new object of the same name (the old one was replaced)
    if (raw.metadata.uid !== ref.uid) {
      throw new ClaimReadError(`${what} has uid ${String(raw.metadata.uid)}, kubelet asked for ${ref.uid} (replaced)`);
    }
    if (!hasAllocation(raw)) throw new ClaimReadError(`${what} is not allocated`);
    this.#remember(ref.uid, raw);
    this.#log.debug({ claim: claimKey(ref), uid: ref.uid }, 'ResourceClaim read');
    return raw;
  }

  #remember(uid: string, claim: ResourceClaim): void {
    this.#byUid.delete(uid);
    this.#byUid.set(uid, { claim, at: this.#o.clock.monotonic() });
    const max = this.#o.maxEntries ?? 512;
    while (this.#byUid.size > max) this.#byUid.delete(this.#byUid.keys().next().value!);
  }
}

/** True when the claim carries an allocation (`status.allocation` set). */
export function hasAllocation(claim: ResourceClaim): boolean {
  return claim.status?.allocation !== undefined && claim.status.allocation !== null;
}

/** The allocation results of the claim (empty when none). */
export function allocationResults(claim: ResourceClaim): readonly DeviceRequestAllocationResult[] {
  return claim.status?.allocation?.devices?.results ?? [];
}
