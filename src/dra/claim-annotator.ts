/**
 * Today's pods, served through DRA (issue [DRA] item 4): the annotations Volcano and the training stack read
 * (`huawei.com/AscendReal`, `huawei.com/kltDev`, the rank table — spec I.3) written for chips allocated through
 * DRA as they are for Allocate, by the kube layer's own {@link PodAnnotator}; and the chips' IPs written into the
 * claims' device status ({@link ClaimStatusWriter}).
 *
 * Which pod holds which chips: a pod bound to this node lists its claims in its status
 * (`status.resourceClaimStatuses`, and `status.extendedResourceClaimStatus` for a pod that asks for
 * `huawei.com/Ascend910: N` served by a DeviceClass); each claim is read once (its allocation does not change while
 * it is reserved), and the devices of our driver and pool in its allocation, in a claim reserved for the pod
 * (`status.reservedFor`), are the pod's chips. The same spec I.5 shape as kubelet's pod-resources answer
 * (`PodDevices`: resource `huawei.com/<deviceType>`, device ids `Ascend910-<phy>`) goes to the annotator; a
 * vNPU partition is left out (its vNPU id is known on the node side only).
 *
 * Passes run one at a time; a request while one runs makes one more after it; a pass reads at most
 * {@link MAX_READS_PER_PASS} claims and asks for another pass when more are waiting.
 */
import type { ChipKind } from '../core/chips.js';
import { chipName, RESOURCE_PREFIX } from '../core/device-names.js';
import { errorMessage, statusOf } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { PodCache, PodDevices, PodView } from '../core/pods.js';
import { ANNOTATION_ASCEND_REAL, type PodAnnotator } from '../kube/pod-annotator.js';
import { desiredDeviceFields, ourDevices, reservedFor, type ChipStatusFacts } from './claim-devices.js';
import type { ClaimStatusWriter } from './claim-status.js';
import type { DraApi } from './dra-api.js';
import type { ResourceClaim } from './dra-types.js';

/** Claims read per pass at most (the rest in the next pass). */
export const MAX_READS_PER_PASS = 32;

/** Options of a {@link ClaimAnnotator}. */
export interface ClaimAnnotatorOptions {
  readonly api: Pick<DraApi, 'readResourceClaim'>;
  /** The node's pods (the pod cache: {@link PodView.resourceClaims}). */
  readonly pods: Pick<PodCache, 'pods'>;
  /** The pool (this node's name). */
  readonly nodeName: string;
  readonly kind: ChipKind;
  /** Spec B.3 device type of the node's chips (`Ascend910`, A5 `npu`): resource and device names of the annotations. */
  readonly deviceType: string;
  /** The spec I.3 annotator (built without `-volcanoType`: DRA's devices are the real ones). */
  readonly annotator: Pick<PodAnnotator, 'annotate'>;
  /** Device IPs (and binding conditions) into the claims' status; absent: not written. */
  readonly status?: ClaimStatusWriter;
  /** The chip facts the status is built from (the same the status writer reads). */
  readonly facts?: (phyId: number) => ChipStatusFacts;
  readonly logger?: Logger;
}

/** Counters. */
export interface ClaimAnnotatorStats {
  passes: number;
  claimReads: number;
  readFailures: number;
}

/** One claim as cached. */
interface CachedClaim {
  readonly claim: ResourceClaim;
  /** Allocated and reserved when read: its allocation does not change any more. */
  readonly final: boolean;
}

/** Writes the annotations and device status of DRA allocations. */
export class ClaimAnnotator {
  readonly #o: ClaimAnnotatorOptions;
  readonly #log: Logger;
  readonly #claims = new Map<string, CachedClaim>();
  /** Claim uid → what was last synced into its status (so an unchanged claim is not looked at again). */
  readonly #synced = new Map<string, string>();
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  readonly #stats: ClaimAnnotatorStats = { passes: 0, claimReads: 0, readFailures: 0 };

  constructor(options: ClaimAnnotatorOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** A copy of the counters. */
  get stats(): ClaimAnnotatorStats {
    return { ...this.#stats };
  }

  /** Asks for a pass; resolves when the passes it started or joined are done. Never rejects. */
  request(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#loop().finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** No pass starts from now on. */
  stop(): void {
    this.#stopped = true;
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false;
      try {
        await this.#pass();
      } catch (err) {
        this.#log.warn({ error: errorMessage(err) }, 'DRA pod annotation pass failed');
      }
    } while (this.#again && !this.#stopped);
  }

  async #pass(): Promise<void> {
    this.#stats.passes++;
    const pods = this.#o.pods.pods().filter((p) => !p.deleting && (p.resourceClaims?.length ?? 0) > 0);
    const referenced = new Set<string>();
    let reads = 0;
    const held: PodDevices[] = [];
    const toSync: { namespace: string; name: string; claim: ResourceClaim }[] = [];
    for (const pod of pods) {
      const chips = new Set<number>();
      for (const name of pod.resourceClaims ?? []) {
        const key = `${pod.namespace}/${name}`;
        referenced.add(key);
        let cached = this.#claims.get(key);
        if (cached === undefined || !cached.final || !reservedFor(cached.claim, pod.uid)) {
          if (reads >= MAX_READS_PER_PASS) {
            this.#again = true; // the rest in the next pass
            continue;
          }
          reads++;
          cached = await this.#read(pod, name);
          if (cached === undefined) continue;
        }
        if (!reservedFor(cached.claim, pod.uid)) continue;
        const ours = ourDevices(cached.claim, this.#o.nodeName, this.#o.kind);
        if (ours.length === 0) continue;
        for (const d of ours) if (d.template === undefined) chips.add(d.phyId);
        toSync.push({ namespace: pod.namespace, name, claim: cached.claim });
      }
      if (chips.size > 0) {
        held.push({
          namespace: pod.namespace,
          name: pod.name,
          resourceName: `${RESOURCE_PREFIX}${this.#o.deviceType}`,
          deviceIds: [...chips].sort((a, b) => a - b).map((phy) => chipName(this.#o.deviceType, phy)),
        });
      }
    }
    for (const key of [...this.#claims.keys()]) if (!referenced.has(key)) this.#claims.delete(key);
    await this.#annotate(pods, held);
    await this.#syncStatus(toSync);
  }

  async #read(pod: PodView, name: string): Promise<CachedClaim | undefined> {
    const key = `${pod.namespace}/${name}`;
    try {
      this.#stats.claimReads++;
      const claim = await this.#o.api.readResourceClaim(pod.namespace, name);
      // allocated and reserved: its allocation is fixed from now on
      const final = claim.status?.allocation !== undefined && reservedFor(claim, pod.uid);
      const cached = { claim, final };
      this.#claims.set(key, cached);
      return cached;
    } catch (e) {
      this.#stats.readFailures++;
      if (statusOf(e) !== 404) {
        this.#log.warn({ claim: key, status: statusOf(e), error: errorMessage(e) }, 'cannot read the claim of a pod');
      }
      this.#claims.delete(key);
      return undefined;
    }
  }

  async #annotate(pods: readonly PodView[], held: readonly PodDevices[]): Promise<void> {
    const waiting = new Set(
      pods.filter((p) => p.annotations[ANNOTATION_ASCEND_REAL] === undefined).map((p) => `${p.namespace}/${p.name}`),
    );
    const todo = held.filter((h) => waiting.has(`${h.namespace}/${h.name}`));
    if (todo.length === 0) return; // the idle case: every pod annotated
    const r = await this.#o.annotator.annotate(this.#o.deviceType, todo);
    if (r.patched.length > 0) this.#log.info({ pods: r.patched }, 'pod annotations written for DRA allocations (I.3)');
    // not again at once: the next pod change or periodic pass tries again
    if (r.failed.length > 0) this.#log.warn({ pods: r.failed }, 'pod annotations for DRA allocations not written');
  }

  async #syncStatus(claims: readonly { namespace: string; name: string; claim: ResourceClaim }[]): Promise<void> {
    const status = this.#o.status;
    const facts = this.#o.facts;
    if (status === undefined || facts === undefined) return;
    const seen = new Set<string>();
    for (const c of claims) {
      const uid = c.claim.metadata.uid ?? `${c.namespace}/${c.name}`;
      if (seen.has(uid)) continue; // a claim shared by several pods
      seen.add(uid);
      // what we would write, without times: unchanged since the last sync → nothing to look at
      const want = JSON.stringify(
        desiredDeviceFields(c.claim, this.#o.nodeName, this.#o.kind, facts, '').map((f) => [
          f.device,
          f.ips,
          f.conditions.map((x) => [x.type, x.status]),
        ]),
      );
      if (this.#synced.get(uid) === want) continue;
      const r = await status.sync(c.namespace, c.name, c.claim);
      if (r === 'written' || r === 'unchanged') this.#synced.set(uid, want);
    }
    for (const uid of [...this.#synced.keys()]) if (!seen.has(uid)) this.#synced.delete(uid);
  }
}
