/**
 * NodePrepareResources and NodeUnprepareResources of the DRA driver (issue [DRA] item 1): batched, idempotent,
 * serialised, and crash-safe through the checkpoint.
 *
 * Prepare, per batch: the claims not prepared yet are read from the API first (outside the lock, like the upstream
 * kubeletplugin helper), then, under the lock, each is planned against the store's snapshot — this node's pool,
 * each allocated device mapped to a chip by the device lookup, a chip that is unhealthy, separated or being reset
 * refused (a per-claim error, the fault-aware part), a device another prepared claim holds refused — and then:
 *
 *   1. intent: the checkpoint holds the planned claims as `preparing`            (crash → undone at start)
 *   2. vNPU partitions are created and their vdev ids checkpointed              (crash → destroyed at start)
 *   3. each claim's CDI spec is written                                         (crash → removed at start)
 *   4. commit: the checkpoint holds them as `prepared`                          (crash → kept; kubelet asks again,
 *                                                                                 answered from the checkpoint)
 *   5. the store hears the new set (`setDraClaims`), the answer leaves.
 *
 * A claim already prepared is answered from the checkpoint, unchanged, whatever its chip's health now: kubelet asks
 * again after its own restart and for every pod of a shared claim. Unprepare removes the spec, destroys the
 * vNPUs, then drops the claim from the checkpoint; a claim it does not know is a success (idempotent).
 */
import { qualifiedName } from '../cdi/spec.js';
import { DRA_DRIVER } from '../core/dra-devices.js';
import type { Clock } from '../core/clock.js';
import { errorMessage } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { ChipState, DraClaimHold, NodeState } from '../state/store.js';
import type { ClaimCdi } from './claim-cdi.js';
import { CLAIM_UID, claimCdiName } from './claim-cdi.js';
import { allocationResults, claimKey, type ClaimRef } from './claims.js';
import {
  CheckpointError,
  type CheckpointClaim,
  type CheckpointClaims,
  type CheckpointDevice,
  type DraCheckpoint,
} from './checkpoint.js';
import type { DeviceLookup } from './device-lookup.js';
import type { DeviceRequestAllocationResult, ResourceClaim } from './dra-types.js';

/** The steps after which a prepare or unprepare has changed something durable (crash-test hook points). */
export type PrepareStep =
  'prepare-intent' | 'prepare-vnpu' | 'prepare-cdi' | 'prepare-commit' | 'unprepare-cdi' | 'unprepare-commit';

/** DCMI vNPU calls for partitions (the agent's binding; tests a fake). */
export interface VnpuPort {
  create(chip: ChipState, template: string): { readonly vdevId: number };
  destroy(chip: ChipState, vdevId: number): void;
}

/** What the preparer reads and writes besides the checkpoint and the CDI folder. */
export interface ClaimPreparerOptions {
  /** The pool of this node's ResourceSlices (one pool per node: the node name). */
  readonly poolName: string;
  /** The store: its snapshot, and the one input the driver gives it. */
  readonly store: { snapshot(): NodeState; setDraClaims(claims: Iterable<DraClaimHold>): void };
  readonly claims: { read(ref: ClaimRef): Promise<ResourceClaim>; forget(uid: string): void };
  readonly lookup: DeviceLookup;
  readonly checkpoint: DraCheckpoint;
  readonly cdi: ClaimCdi;
  readonly clock: Clock;
  /** vNPU partitions: absent, a device the lookup maps to a template is refused. */
  readonly vnpu?: VnpuPort;
  /** Whether a task-aware reset runs on the chip (hot-reset §3.10: then reported Healthy, yet not to be handed out). */
  readonly resetting?: (logicId: number) => boolean;
  /**
   * `-deviceApi=both`: the phy ids of the chips kubelet has handed out through the device plugin, asked before each
   * prepare of a new claim; such a chip is refused (docs/dra.md "never the same chip twice").
   */
  readonly pluginHeld?: () => Promise<ReadonlySet<number>>;
  /** Called after each durable step (tests: a kill -9 there). */
  readonly afterStep?: (step: PrepareStep) => void;
  readonly logger?: Logger;
}

/** One prepared device as kubelet gets it (dra/v1 `Device`). */
export interface PreparedDevice {
  readonly requestNames: readonly string[];
  readonly poolName: string;
  readonly deviceName: string;
  readonly cdiDeviceIds: readonly string[];
  readonly shareId?: string;
}

/** The answer for one claim: its devices, or why it was not prepared. */
export type PrepareOutcome = { readonly devices: readonly PreparedDevice[] } | { readonly error: string };

/** What the start-up recovery did. */
export interface RecoveryReport {
  readonly kept: number;
  readonly undone: readonly string[];
  readonly specsRewritten: readonly string[];
  readonly orphanSpecsRemoved: readonly string[];
  /** Set when the checkpoint could not be used (moved aside there; orphan specs are then left alone). */
  readonly unusable?: string;
}

/** Most claims in one request (kubelet sends one pod's claims; far fewer). */
export const MAX_CLAIMS_PER_REQUEST = 1024;
/** Levels that take a chip out of scheduling upstream (spec E.2): a device on such a chip is not prepared. */
const SEPARATED_LEVELS: ReadonlySet<string> = new Set(['PreSeparateNPU', 'SeparateNPU', 'ManuallySeparateNPU']);

const NONE_HELD: ReadonlySet<number> = new Set();

/** resource.k8s.io/v1 `AllocationResultsMaxSize`: the most results one claim can carry. */
export const MAX_RESULTS_PER_CLAIM = 32;

/** Whether an allocation result has the fields read here, as strings (the API server's answer is input too). */
function wellFormed(r: unknown): r is DeviceRequestAllocationResult {
  if (typeof r !== 'object' || r === null) return false;
  const x = r as Record<string, unknown>;
  return ['request', 'driver', 'pool', 'device'].every((k) => typeof x[k] === 'string');
}

/** The base request name (`req/sub` → `req`, kubeletplugin's rule for subrequests). */
function baseRequest(name: string): string {
  const i = name.indexOf('/');
  return i < 0 ? name : name.slice(0, i);
}

/** Why `chip` may not be handed out now, or undefined. */
export function chipRefusal(chip: ChipState, resetting: boolean): string | undefined {
  if (chip.recovering || resetting) return `is being reset (level ${chip.level})`;
  if (chip.manuallySeparated) return `is manually separated (level ${chip.level})`;
  if (chip.health !== 'Healthy') return `is Unhealthy (level ${chip.level})`;
  if (SEPARATED_LEVELS.has(chip.level)) return `is separated (level ${chip.level})`;
  return undefined;
}

/** A claim in the making: its ref and planned devices (vdev ids filled in as vNPUs are created). */
interface Plan {
  readonly ref: ClaimRef;
  devices: CheckpointDevice[];
  error?: string;
}

/** The prepared-claims logic (see the module comment). */
export class ClaimPreparer {
  readonly #o: ClaimPreparerOptions;
  readonly #log: Logger;
  #claims: Record<string, CheckpointClaim> = {};
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ClaimPreparerOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** The prepared claims now (what the store holds). */
  holds(): DraClaimHold[] {
    return Object.entries(this.#claims)
      .filter(([, c]) => c.state === 'prepared')
      .map(([uid, c]) => ({
        uid,
        namespace: c.namespace,
        name: c.name,
        devices: c.devices.map((d) => ({
          device: d.device,
          logicId: d.logicId,
          ...(d.adminAccess ? { adminAccess: true } : {}),
          ...(d.template !== undefined && d.vdevId !== undefined
            ? { vnpu: { template: d.template, vdevId: d.vdevId } }
            : {}),
        })),
      }));
  }

  /**
   * Start-up (before the socket is served): the checkpoint read, `preparing` claims undone, missing specs of
   * prepared claims written again, specs no prepared claim explains removed, the store told. Never throws for a
   * bad checkpoint: it is moved aside and reported.
   */
  recover(): RecoveryReport {
    const { checkpoint, cdi } = this.#o;
    let loaded: CheckpointClaims;
    let unusable: string | undefined;
    try {
      loaded = checkpoint.load();
    } catch (err) {
      if (!(err instanceof CheckpointError)) throw err;
      const aside = checkpoint.setAside(this.#o.clock.now());
      unusable = `${err.message}; moved to ${aside}`;
      this.#log.error(
        { problem: unusable },
        'DRA checkpoint unusable: no claim is known prepared; CDI specs left alone',
      );
      loaded = {};
    }
    const undone: string[] = [];
    const rewritten: string[] = [];
    const claims: Record<string, CheckpointClaim> = {};
    const state = this.#o.store.snapshot();
    for (const [uid, c] of Object.entries(loaded)) {
      if (c.state === 'preparing') {
        this.#undo(uid, c.devices, state); // kubelet had no answer: it asks again
        undone.push(uid);
        continue;
      }
      claims[uid] = c;
      if (!cdi.has(uid)) {
        try {
          cdi.write(uid, c.devices, (id) => this.#phyOf(state, id));
          rewritten.push(uid);
        } catch (err) {
          this.#log.error(
            { claim: `${c.namespace}/${c.name}`, uid, error: errorMessage(err) },
            'CDI spec of a prepared claim cannot be written again',
          );
        }
      }
    }
    const orphans: string[] = [];
    if (unusable === undefined) {
      for (const uid of cdi.onDisk()) {
        if (claims[uid] !== undefined) continue;
        cdi.remove(uid);
        orphans.push(uid);
      }
    }
    this.#claims = claims;
    if (undone.length > 0 || unusable !== undefined) checkpoint.save(claims);
    this.#o.store.setDraClaims(this.holds());
    const report = { kept: Object.keys(claims).length, undone, specsRewritten: rewritten, orphanSpecsRemoved: orphans };
    this.#log.info(report, 'DRA claims recovered from the checkpoint');
    return unusable === undefined ? report : { ...report, unusable };
  }

  /** NodePrepareResources for `refs` (see the module comment); one outcome per distinct uid. */
  async prepare(refs: readonly ClaimRef[]): Promise<Map<string, PrepareOutcome>> {
    const out = new Map<string, PrepareOutcome>();
    const wanted: ClaimRef[] = [];
    for (const ref of refs) {
      const problem = refProblem(ref);
      if (problem !== undefined) out.set(ref.uid, { error: problem });
      else if (!out.has(ref.uid) && !wanted.some((w) => w.uid === ref.uid)) wanted.push(ref);
    }
    // the slow part first, outside the lock: claims not prepared yet are read from the API
    const toRead = wanted.filter((r) => this.#claims[r.uid]?.state !== 'prepared');
    const [read, pluginHeld] = await Promise.all([
      Promise.allSettled(toRead.map((r) => this.#o.claims.read(r))),
      toRead.length > 0 && this.#o.pluginHeld ? this.#o.pluginHeld() : NONE_HELD,
    ]);
    const claimOf = new Map<string, PromiseSettledResult<ResourceClaim>>(toRead.map((r, i) => [r.uid, read[i]!]));
    return this.#locked(() => {
      this.#prepareLocked(wanted, claimOf, pluginHeld, out);
      return out;
    });
  }

  /** NodeUnprepareResources for `refs`: per uid, undefined (done) or an error. */
  unprepare(refs: readonly ClaimRef[]): Promise<Map<string, string | undefined>> {
    return this.#locked(() => this.#unprepareLocked(refs));
  }

  #locked<T>(fn: () => T): Promise<T> {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #step(step: PrepareStep): void {
    this.#o.afterStep?.(step);
  }

  #prepareLocked(
    wanted: readonly ClaimRef[],
    claimOf: ReadonlyMap<string, PromiseSettledResult<ResourceClaim>>,
    pluginHeld: ReadonlySet<number>,
    out: Map<string, PrepareOutcome>,
  ): void {
    const state = this.#o.store.snapshot();
    const plans: Plan[] = [];
    for (const ref of wanted) {
      const known = this.#claims[ref.uid];
      if (known?.state === 'prepared') {
        out.set(ref.uid, { devices: known.devices.map(toPrepared) }); // idempotent: as first answered
        continue;
      }
      const r = claimOf.get(ref.uid);
      if (r === undefined || r.status === 'rejected') {
        out.set(ref.uid, { error: r ? errorMessage(r.reason) : `ResourceClaim ${claimKey(ref)} was not read` });
        continue;
      }
      let planned: CheckpointDevice[] | string;
      try {
        planned = this.#plan(ref, r.value, state, plans, pluginHeld);
      } catch (err) {
        planned = `${claimKey(ref)} cannot be planned: ${errorMessage(err)}`; // a claim no check foresaw: its own error
      }
      if (typeof planned === 'string') out.set(ref.uid, { error: planned });
      else plans.push({ ref, devices: planned });
    }
    if (plans.length === 0) return;
    // 1. intent
    const intent = { ...this.#claims };
    for (const p of plans) intent[p.ref.uid] = { ...refNames(p.ref), state: 'preparing', devices: p.devices };
    try {
      // not fsynced: an intent lost with the power takes nothing with it (its spec, not fsynced either, is an orphan
      // the start-up removes); a kill -9 finds it (the rename is in the page cache)
      this.#o.checkpoint.save(intent, { durable: false });
    } catch (err) {
      const why = `the DRA checkpoint cannot be written: ${errorMessage(err)}`;
      this.#log.error({ error: errorMessage(err) }, 'NodePrepareResources: checkpoint write failed');
      for (const p of plans) out.set(p.ref.uid, { error: why });
      return;
    }
    this.#step('prepare-intent');
    // 2. vNPU partitions
    if (plans.some((p) => p.devices.some((d) => d.template !== undefined))) {
      for (const p of plans) this.#createVnpus(p, state);
      const withVdevs = { ...intent };
      for (const p of plans)
        if (p.error === undefined) withVdevs[p.ref.uid] = { ...intent[p.ref.uid]!, devices: p.devices };
      this.#saveOrFail(withVdevs, plans, state);
      this.#step('prepare-vnpu');
    }
    // 3. CDI specs
    for (const p of plans) {
      if (p.error !== undefined) continue;
      try {
        this.#o.cdi.write(p.ref.uid, p.devices, (id) => this.#phyOf(state, id));
      } catch (err) {
        p.error = `CDI spec of ${claimKey(p.ref)} not written: ${errorMessage(err)}`;
        this.#undo(p.ref.uid, p.devices, state);
      }
    }
    this.#step('prepare-cdi');
    // 4. commit
    const committed = { ...this.#claims };
    for (const p of plans) {
      if (p.error === undefined) committed[p.ref.uid] = { ...refNames(p.ref), state: 'prepared', devices: p.devices };
    }
    if (this.#saveOrFail(committed, plans, state)) this.#claims = committed;
    this.#step('prepare-commit');
    // 5. the store, then the answers
    this.#o.store.setDraClaims(this.holds());
    for (const p of plans) {
      if (p.error !== undefined) {
        out.set(p.ref.uid, { error: p.error });
        this.#log.warn({ claim: claimKey(p.ref), uid: p.ref.uid, error: p.error }, 'claim not prepared');
      } else {
        out.set(p.ref.uid, { devices: p.devices.map(toPrepared) });
        this.#log.info(
          { claim: claimKey(p.ref), uid: p.ref.uid, devices: p.devices.map((d) => d.device) },
          'claim prepared',
        );
      }
    }
  }

  /** Saves `claims`; on failure every plan still going fails and is undone. Returns whether it was saved. */
  #saveOrFail(claims: CheckpointClaims, plans: Plan[], state: NodeState): boolean {
    try {
      this.#o.checkpoint.save(claims);
      return true;
    } catch (err) {
      this.#log.error({ error: errorMessage(err) }, 'NodePrepareResources: checkpoint write failed');
      for (const p of plans) {
        if (p.error !== undefined) continue;
        p.error = `the DRA checkpoint cannot be written: ${errorMessage(err)}`;
        this.#undo(p.ref.uid, p.devices, state);
      }
      return false;
    }
  }

  /** Plans one claim: its devices, or a message why it cannot be prepared. */
  #plan(
    ref: ClaimRef,
    claim: ResourceClaim,
    state: NodeState,
    batch: readonly Plan[],
    pluginHeld: ReadonlySet<number>,
  ): CheckpointDevice[] | string {
    const { poolName, lookup } = this.#o;
    const byDevice = new Map<string, CheckpointDevice>();
    const results: unknown = claim.status?.allocation?.devices?.results ?? [];
    if (!Array.isArray(results)) return `${claimKey(ref)}: status.allocation.devices.results is not a list`;
    if (results.length > MAX_RESULTS_PER_CLAIM) {
      return `${claimKey(ref)} has ${results.length} allocation results, the API allows ${MAX_RESULTS_PER_CLAIM}`;
    }
    for (const r of allocationResults(claim)) {
      if (!wellFormed(r))
        return `${claimKey(ref)} has a malformed allocation result ${JSON.stringify(r).slice(0, 200)}`;
      if (r.driver !== DRA_DRIVER) continue; // another driver's device: that driver prepares it
      if (r.pool !== poolName)
        return `device ${r.device} of ${claimKey(ref)} is allocated from pool ${r.pool}; this node's pool is ${poolName}`;
      const request = baseRequest(r.request);
      const same = byDevice.get(r.device);
      if (same) {
        if (!same.requests.includes(request))
          byDevice.set(r.device, { ...same, requests: [...same.requests, request] });
        continue;
      }
      const target = lookup(r.device, state);
      if (target === undefined) return `device ${r.device} of ${claimKey(ref)} is not a device of this node`;
      const chip = state.chips.find((c) => c.logicId === target.logicId);
      if (chip === undefined)
        return `device ${r.device} of ${claimKey(ref)} names chip ${target.logicId}, not on this node`;
      const admin = r.adminAccess === true;
      if (!admin) {
        const refusal = chipRefusal(chip, this.#o.resetting?.(chip.logicId) ?? false);
        if (refusal !== undefined)
          return `refusing to prepare ${r.device} for ${claimKey(ref)}: chip ${chip.name} ${refusal}`;
        if (pluginHeld.has(chip.phyId)) {
          return `refusing to prepare ${r.device} for ${claimKey(ref)}: chip ${chip.name} is allocated through the device plugin`;
        }
        const holder = this.#holderOf(r.device, chip.logicId, target.template !== undefined, batch);
        if (holder !== undefined) return `device ${r.device} for ${claimKey(ref)}: ${holder}`;
      }
      if (target.template !== undefined && this.#o.vnpu === undefined) {
        return `device ${r.device} is a vNPU partition; this agent creates no vNPUs`;
      }
      byDevice.set(r.device, {
        requests: [request],
        pool: r.pool,
        device: r.device,
        logicId: chip.logicId,
        ...(admin ? { adminAccess: true } : {}),
        ...(typeof r.shareID === 'string' && r.shareID !== '' ? { shareId: r.shareID } : {}),
        ...(target.template !== undefined ? { template: target.template } : {}),
        cdiName: claimCdiName(ref.uid, r.device),
      });
    }
    return [...byDevice.values()];
  }

  /**
   * Who else holds `device` (or its chip) exclusively: another prepared claim or a claim earlier in this batch.
   * A whole chip excludes every partition of it and the other way round; partitions of one chip share it.
   */
  #holderOf(device: string, logicId: number, partition: boolean, batch: readonly Plan[]): string | undefined {
    const holders: [string, readonly CheckpointDevice[]][] = [
      ...Object.values(this.#claims).map((c): [string, readonly CheckpointDevice[]] => [
        `${c.namespace}/${c.name}`,
        c.devices,
      ]),
      ...batch.map((p): [string, readonly CheckpointDevice[]] => [claimKey(p.ref), p.devices]),
    ];
    for (const [who, devices] of holders) {
      for (const d of devices) {
        if (d.adminAccess) continue;
        if (d.device === device) return `already prepared for claim ${who}`;
        if (d.logicId === logicId && (!partition || d.template === undefined)) {
          return `its chip is already held by claim ${who} (${d.device})`;
        }
      }
    }
    return undefined;
  }

  #createVnpus(p: Plan, state: NodeState): void {
    const vnpu = this.#o.vnpu!;
    const made: CheckpointDevice[] = [];
    for (const d of p.devices) {
      if (d.template === undefined) {
        made.push(d);
        continue;
      }
      const chip = state.chips.find((c) => c.logicId === d.logicId)!;
      try {
        const { vdevId } = vnpu.create(chip, d.template);
        made.push({ ...d, vdevId });
      } catch (err) {
        p.error = `vNPU ${d.template} for ${d.device} cannot be created on ${chip.name}: ${errorMessage(err)}`;
        this.#undo(p.ref.uid, made, state);
        return;
      }
    }
    p.devices = made;
  }

  /** Removes what a claim made (its spec, its vNPUs); logs what cannot be undone. */
  #undo(uid: string, devices: readonly CheckpointDevice[], state: NodeState): void {
    try {
      this.#o.cdi.remove(uid);
    } catch (err) {
      this.#log.error({ uid, error: errorMessage(err) }, 'CDI spec of a claim cannot be removed');
    }
    for (const d of devices) {
      if (d.vdevId === undefined) continue;
      const chip = state.chips.find((c) => c.logicId === d.logicId);
      try {
        if (chip) this.#o.vnpu?.destroy(chip, d.vdevId);
      } catch (err) {
        this.#log.error(
          { uid, device: d.device, vdevId: d.vdevId, error: errorMessage(err) },
          'vNPU cannot be destroyed',
        );
      }
    }
  }

  #unprepareLocked(refs: readonly ClaimRef[]): Map<string, string | undefined> {
    const out = new Map<string, string | undefined>();
    const state = this.#o.store.snapshot();
    const gone: string[] = [];
    for (const ref of refs) {
      if (out.has(ref.uid)) continue;
      const c = this.#claims[ref.uid];
      if (c === undefined) {
        out.set(ref.uid, undefined); // idempotent: not (or no longer) prepared
        continue;
      }
      try {
        this.#o.cdi.remove(ref.uid);
        for (const d of c.devices) {
          if (d.vdevId === undefined) continue;
          const chip = state.chips.find((x) => x.logicId === d.logicId);
          if (chip) this.#o.vnpu?.destroy(chip, d.vdevId);
        }
        gone.push(ref.uid);
        out.set(ref.uid, undefined);
      } catch (err) {
        out.set(ref.uid, `${claimKey(ref)} not unprepared: ${errorMessage(err)}`);
      }
    }
    if (gone.length === 0) return out;
    this.#step('unprepare-cdi');
    const next = { ...this.#claims };
    for (const uid of gone) delete next[uid];
    try {
      this.#o.checkpoint.save(next);
    } catch (err) {
      // the specs are gone but the file still lists the claims: at start their specs are written again; kubelet
      // retries the unprepare after this error
      for (const uid of gone) out.set(uid, `the DRA checkpoint cannot be written: ${errorMessage(err)}`);
      return out;
    }
    this.#claims = next;
    this.#step('unprepare-commit');
    for (const uid of gone) this.#o.claims.forget(uid);
    this.#o.store.setDraClaims(this.holds());
    this.#log.info({ uids: gone }, 'claims unprepared');
    return out;
  }

  #phyOf(state: NodeState, logicId: number): number | undefined {
    return state.chips.find((c) => c.logicId === logicId)?.phyId;
  }
}

/** Why kubelet's claim reference cannot be used, or undefined. */
function refProblem(ref: ClaimRef): string | undefined {
  if (!CLAIM_UID.test(ref.uid)) return `claim uid ${JSON.stringify(ref.uid.slice(0, 70))} is not a Kubernetes uid`;
  if (ref.namespace === '' || ref.name === '') return `claim ${ref.uid} has no namespace or name`;
  if (ref.namespace.length > 63 || ref.name.length > 253) return `claim ${ref.uid}: namespace or name too long`;
  return undefined;
}

function refNames(ref: ClaimRef): { namespace: string; name: string } {
  return { namespace: ref.namespace, name: ref.name };
}

function toPrepared(d: CheckpointDevice): PreparedDevice {
  return {
    requestNames: d.requests,
    poolName: d.pool,
    deviceName: d.device,
    cdiDeviceIds: [qualifiedName(d.cdiName)],
    ...(d.shareId !== undefined ? { shareId: d.shareId } : {}),
  };
}
