/**
 * Dynamic vNPU Allocate (spec C.3 steps 1-5, dynamic mode) and the release of vNPUs no pod uses (D.2 step 1):
 * the pod Volcano placed here is found by its `huawei.com/npu-core` annotation, then either a vNPU is created on
 * its chip with `dcmi_create_vdevice` (every vNPU no pod uses destroyed first) or whole chips are mapped. Refusals
 * carry upstream's words (`NoNPUResource`, `NPUSegmentFailed`), name the pod, and are reported on it as an Event.
 * Every DCMI change is serialised by one lock; nothing is created before every check has passed.
 */
import { status } from '@grpc/grpc-js';
import type { ChipKind } from '../core/chips.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { PREDICATE_TIME_ANNOTATION, PREDICATE_TIME_USED, type PodCache, type PodView } from '../core/pods.js';
import type { DeviceSnapshot, KubeletDevice } from './device-source.js';
import { failedPrecondition, KubeletRequestError } from './errors.js';
import {
  chipOfPhy,
  NO_NPU_RESOURCE,
  NPU_CORE_RESOURCE,
  NPU_SEGMENT_FAILED,
  parseNpuCoreAnnotation,
  requestedCores,
  templatesOf,
  vnpuName,
  type NpuCoreRequest,
} from './vnpu-core.js';

const U64_MAX = 2n ** 64n - 1n;
/** C.3 step 2: a container limit outside [0, 3600] makes the pod ineligible. */
const MAX_LIMIT = 3600;
/** Pods named in one "malformed annotation" refusal. */
const MAX_NAMED_PODS = 3;

/** One vNPU as DCMI reports it (dcmi-abi.md §4.5). */
export interface ChipVnpu {
  readonly vdevId: number;
  readonly templateName: string;
  readonly vfgId: number;
}

/** The DCMI calls dynamic vNPU needs, per chip (the agent passes the binding; tests a fake). */
export interface VnpuDriver {
  list(chip: KubeletDevice): readonly ChipVnpu[];
  create(chip: KubeletDevice, template: string): { vdevId: number; vfgId: number };
  destroy(chip: KubeletDevice, vdevId: number): void;
}

/** A pod as an Event names it. */
export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** Options of {@link DynamicVnpu}. */
export interface DynamicVnpuOptions {
  /** Manager name of the chips, e.g. `Ascend310P` (B.3). */
  readonly type: string;
  readonly kind: ChipKind;
  /** AI cores per chip (B.6). */
  readonly coresPerChip: number;
  readonly driver: VnpuDriver;
  readonly podCache: PodCache;
  readonly logger: Logger;
  /** A refused Allocate whose pod is known: the agent records an Event on the pod. */
  readonly onRefused?: (pod: PodRef, message: string) => void;
  /**
   * Spec I.3 for `npu-core` pods: writes `huawei.com/kltDev` and `huawei.com/AscendReal` (a vNPU's name with
   * `_<vfgId>`) on the pod after a granted Allocate. Rejections are logged; Allocate does not wait for it.
   */
  readonly annotate?: (pod: PodRef, annotations: Record<string, string>) => Promise<void>;
  /**
   * The pod cache has its first list (default: always). Until then nothing is destroyed: an empty cache after a
   * restart would otherwise take the vNPUs of running pods.
   */
  readonly ready?: () => boolean;
  /** A pod still holds its devices (default: not being deleted). */
  readonly isActive?: (pod: PodView) => boolean;
  /** Pick attempts (default 3) and the pause between them (default 1000 ms), C.3 step 1. */
  readonly attempts?: number;
  readonly retryDelayMs?: number;
  /** Destroy attempts (default 3) and the pause between them (default 1000 ms), dcmi-abi.md §4.6. */
  readonly destroyAttempts?: number;
  readonly destroyDelayMs?: number;
}

/** What Allocate mounts for one container request. */
export interface DynamicAllocation {
  readonly real: readonly KubeletDevice[];
  /** A vNPU: visible id = its vdev id, `/dev/vdavinci<id>`, `ASCEND_RUNTIME_OPTIONS=VIRTUAL` (C.4). */
  readonly virtual: boolean;
}

interface Holding {
  readonly pod: PodRef;
  /** kubelet core IDs → the phy id of the device they stand for (C.3 step 5). */
  readonly cores: ReadonlyMap<string, number>;
  /** Real device names (a vNPU's or the chips'). */
  readonly real: readonly string[];
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function predicateTime(pod: PodView): bigint {
  const raw = pod.annotations[PREDICATE_TIME_ANNOTATION];
  if (raw === undefined || !/^\d{1,20}$/.test(raw)) return U64_MAX;
  const v = BigInt(raw);
  return v > U64_MAX ? U64_MAX : v;
}

function asksForCores(pod: PodView): boolean {
  let total = 0;
  for (const limits of pod.containerLimits) {
    const v = limits[NPU_CORE_RESOURCE] ?? 0;
    if (!Number.isInteger(v) || v < 0 || v > MAX_LIMIT) return false;
    total += v;
  }
  return total > 0;
}

/** C.3 step 2 without the count test: a pod that may still be waiting for its cores. */
function waiting(pod: PodView): boolean {
  if (!asksForCores(pod) || pod.deleting || pod.annotations[NPU_CORE_RESOURCE] === undefined) return false;
  if (pod.waitingMessages.some((m) => m.includes('PreStartContainer check failed'))) return false;
  if (pod.statusReason === 'UnexpectedAdmissionError') return false;
  return pod.annotations[PREDICATE_TIME_ANNOTATION] !== PREDICATE_TIME_USED;
}

const ref = (pod: PodView): PodRef => ({ namespace: pod.namespace, name: pod.name, uid: pod.uid });
const podText = (pod: PodRef): string => `pod ${pod.namespace}/${pod.name}`;

/** The dynamic vNPU allocator and release of one `npu-core` server. */
export class DynamicVnpu {
  readonly #o: DynamicVnpuOptions;
  readonly #holdings = new Map<string, Holding>();
  #lock: Promise<unknown> = Promise.resolve();
  #chips: readonly KubeletDevice[] = [];

  constructor(options: DynamicVnpuOptions) {
    this.#o = options;
  }

  get coresPerChip(): number {
    return this.#o.coresPerChip;
  }

  /** Device type of the physical chips in the snapshot (e.g. `Ascend310P`). */
  get chipType(): string {
    return this.#o.type;
  }

  /** Held kubelet core IDs → phy id of their real device (C.1 health rule). */
  used(): Map<string, number> {
    const out = new Map<string, number>();
    for (const h of this.#holdings.values()) for (const [core, phy] of h.cores) out.set(core, phy);
    return out;
  }

  /** Real devices each holding pod got, by pod (logs, tests). */
  holdings(): { pod: PodRef; real: readonly string[] }[] {
    return [...this.#holdings.values()].map((h) => ({ pod: h.pod, real: h.real }));
  }

  /** C.3 dynamic mode for one container request of kubelet core IDs `ids`. */
  allocate(ids: readonly string[], snapshot: DeviceSnapshot): Promise<DynamicAllocation> {
    return this.#serial(() => this.#allocate(ids, snapshot));
  }

  /**
   * D.2 step 1: forget the holdings of pods that are gone and destroy every vNPU no pod uses (one that a pod's
   * `huawei.com/AscendReal` names counts as used). Returns the names destroyed.
   */
  release(snapshot?: DeviceSnapshot): Promise<string[]> {
    return this.#serial(() => this.#release(snapshot));
  }

  #serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(f);
    this.#lock = run.catch(() => undefined);
    return run;
  }

  async #allocate(ids: readonly string[], snapshot: DeviceSnapshot): Promise<DynamicAllocation> {
    const pod = await this.#pick(ids.length);
    try {
      const alloc = await this.#grant(pod, ids, snapshot);
      this.#o.logger.info(
        { pod: `${pod.namespace}/${pod.name}`, cores: ids.length, real: alloc.real.map((d) => d.id) },
        'dynamic vNPU allocate',
      );
      this.#annotate(pod, ids, alloc);
      return alloc;
    } catch (err) {
      const message = errorMessage(err);
      this.#o.onRefused?.(ref(pod), message);
      throw err;
    }
  }

  /** I.3: kltDev = sorted kubelet IDs, AscendReal = sorted real names (`_<vfgId>` after a vNPU's name). */
  #annotate(pod: PodView, ids: readonly string[], alloc: DynamicAllocation & { vfgId?: number }): void {
    const annotate = this.#o.annotate;
    if (!annotate) return;
    const sort = (a: string[]): string[] => a.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const real = alloc.real.map((d) => (alloc.virtual && alloc.vfgId !== undefined ? `${d.id}_${alloc.vfgId}` : d.id));
    const annotations = {
      'huawei.com/kltDev': sort([...ids]).join(','),
      'huawei.com/AscendReal': sort(real).join(','),
    };
    annotate(ref(pod), annotations).catch((err: unknown) =>
      this.#o.logger.warn(
        { pod: `${pod.namespace}/${pod.name}`, error: errorMessage(err) },
        'dynamic vNPU: pod annotation failed',
      ),
    );
  }

  /** C.3 steps 1-3: the waiting pod whose annotation asks for `count` cores, oldest `predicate-time` first. */
  async #pick(count: number): Promise<PodView> {
    const { podCache, attempts = 3, retryDelayMs = 1000, coresPerChip } = this.#o;
    let malformed: { pod: PodView; problem: string }[] = [];
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const live = attempt === attempts && attempts > 1 && podCache.listLive !== undefined;
      const pods = live ? await podCache.listLive!() : podCache.pods();
      malformed = [];
      let best: PodView | undefined;
      let bestTime = 0n;
      for (const pod of pods) {
        if (!waiting(pod)) continue;
        const req = parseNpuCoreAnnotation(pod.annotations[NPU_CORE_RESOURCE]!);
        if ('problem' in req) {
          malformed.push({ pod, problem: req.problem });
          continue;
        }
        if (requestedCores(req, coresPerChip) !== count) continue;
        const t = predicateTime(pod);
        const key = `${pod.namespace}/${pod.name}`;
        if (!best || t < bestTime || (t === bestTime && key < `${best.namespace}/${best.name}`)) {
          best = pod;
          bestTime = t;
        }
      }
      if (best) {
        try {
          await podCache.markAllocated(best);
        } catch (err) {
          throw new KubeletRequestError(
            status.INTERNAL,
            `could not mark ${podText(best)} as allocated: ${errorMessage(err)}`,
          );
        }
        return best;
      }
      if (attempt < attempts) await pause(retryDelayMs);
    }
    if (malformed.length > 0) {
      // "Bad input": say which pods Volcano annotated wrongly, on each pod too
      for (const m of malformed) {
        this.#o.onRefused?.(ref(m.pod), `annotation ${NPU_CORE_RESOURCE} ${m.problem}`);
      }
      const named = malformed
        .slice(0, MAX_NAMED_PODS)
        .map((m) => `${podText(m.pod)}: annotation ${NPU_CORE_RESOURCE} ${m.problem}`)
        .join('; ');
      throw failedPrecondition(
        `no pending pod asks for ${count} AI core(s) of ${NPU_CORE_RESOURCE}; ${malformed.length} pod(s) with a malformed annotation: ${named}`,
      );
    }
    throw failedPrecondition(
      `no pending pod on this node has annotation ${NPU_CORE_RESOURCE} for ${count} AI core(s) (volcano pick, ${attempts} attempts)`,
    );
  }

  /** C.3 step 4-5 for the chosen pod: every check, then the one DCMI change. */
  async #grant(
    pod: PodView,
    ids: readonly string[],
    snapshot: DeviceSnapshot,
  ): Promise<DynamicAllocation & { vfgId?: number }> {
    const { type, kind, coresPerChip, driver } = this.#o;
    const req = parseNpuCoreAnnotation(pod.annotations[NPU_CORE_RESOURCE]!) as NpuCoreRequest;
    const chips = snapshot.deviceTypes[type] ?? [];
    this.#chips = chips;
    const who = podText(pod);
    const refuseUnhealthy = (c: KubeletDevice): void => {
      if (c.manuallySeparated || c.health !== 'Healthy') {
        const why = c.manuallySeparated ? 'manually separated' : 'Unhealthy';
        throw failedPrecondition(`${who}: refusing to allocate: ${c.id} is ${why} (level ${c.level})`);
      }
    };
    if (req.kind === 'chips') {
      const missing = req.phyIds.filter((p) => !chipOfPhy(chips, p));
      if (missing.length > 0) {
        throw failedPrecondition(
          `${NO_NPU_RESOURCE}: ${who}: annotation ${NPU_CORE_RESOURCE} names phy id(s) ${missing.join(',')} not on this node`,
        );
      }
      const real = req.phyIds.map((p) => chipOfPhy(chips, p)!);
      real.forEach(refuseUnhealthy);
      await this.#destroyUnused(chips, pod.uid);
      const cores = new Map<string, number>();
      ids.forEach((id, i) => cores.set(id, real[Math.floor(i / coresPerChip)]!.phyId));
      this.#holdings.set(pod.uid, { pod: ref(pod), cores, real: real.map((c) => c.id) });
      return { real, virtual: false };
    }
    const chip = chipOfPhy(chips, req.phyId);
    if (!chip) {
      throw failedPrecondition(
        `${NO_NPU_RESOURCE}: ${who}: annotation ${NPU_CORE_RESOURCE} names phy id ${req.phyId}, not on this node`,
      );
    }
    const offered = templatesOf(kind);
    if (!offered.includes(req.template)) {
      throw failedPrecondition(
        `${NPU_SEGMENT_FAILED}: ${who}: template ${req.template} is not a vNPU template of ${kind} (${offered.join(', ')})`,
      );
    }
    refuseUnhealthy(chip);
    await this.#destroyUnused(chips, pod.uid);
    let out: { vdevId: number; vfgId: number };
    try {
      out = driver.create(chip, req.template);
    } catch (err) {
      throw failedPrecondition(
        `${NPU_SEGMENT_FAILED}: ${who}: creating a ${req.template} vNPU on ${chip.id} failed: ${errorMessage(err)}`,
      );
    }
    const name = vnpuName(type, req.template, out.vdevId, chip.phyId)!;
    const cores = new Map<string, number>(ids.map((id) => [id, chip.phyId]));
    this.#holdings.set(pod.uid, { pod: ref(pod), cores, real: [name] });
    const alloc: DynamicAllocation & { vfgId: number } = {
      real: [{ ...chip, id: name, vdevId: out.vdevId }],
      virtual: true,
      vfgId: out.vfgId,
    };
    return alloc;
  }

  async #release(snapshot: DeviceSnapshot | undefined): Promise<string[]> {
    if (snapshot) this.#chips = snapshot.deviceTypes[this.#o.type] ?? [];
    return this.#destroyUnused(this.#chips);
  }

  /**
   * Drops the holdings of pods no longer active, then destroys every vNPU that no holding or AscendReal names and no
   * allocated pod claims. A claim survives an agent restart: an active pod already picked (`predicate-time`
   * 2^64-1) whose annotation is `<phy>-<template>` and of which this process holds nothing keeps one vNPU of that
   * template on that chip (the agent writes no `AscendReal` for `npu-core` pods, so a restart must not take the
   * vNPUs of running pods).
   */
  async #destroyUnused(chips: readonly KubeletDevice[], granting?: string): Promise<string[]> {
    const { podCache, driver, logger, type, destroyAttempts = 3, destroyDelayMs = 1000 } = this.#o;
    if (this.#o.ready && !this.#o.ready()) {
      logger.debug({}, 'dynamic vNPU: pods not listed yet, no vNPU destroyed');
      return [];
    }
    const isActive = this.#o.isActive ?? ((p: PodView) => !p.deleting);
    const active = podCache.pods().filter(isActive);
    const uids = new Set(active.map((p) => p.uid));
    for (const uid of [...this.#holdings.keys()]) if (!uids.has(uid)) this.#holdings.delete(uid);
    const used = new Set<string>();
    for (const h of this.#holdings.values()) for (const r of h.real) used.add(r);
    const claims = new Map<string, number>();
    for (const p of active) {
      for (const r of (p.annotations['huawei.com/AscendReal'] ?? '').split(',')) used.add(r.split('_')[0]!);
      const value = p.annotations[NPU_CORE_RESOURCE];
      if (this.#holdings.has(p.uid) || p.uid === granting || value === undefined) continue;
      if (p.annotations[PREDICATE_TIME_ANNOTATION] !== PREDICATE_TIME_USED) continue;
      const req = parseNpuCoreAnnotation(value);
      if ('kind' in req && req.kind === 'vnpu') {
        const key = `${req.phyId}|${req.template}`;
        claims.set(key, (claims.get(key) ?? 0) + 1);
      }
    }
    const destroyed: string[] = [];
    for (const chip of chips) {
      let vnpus: readonly ChipVnpu[];
      try {
        vnpus = driver.list(chip);
      } catch (err) {
        logger.warn({ chip: chip.id, error: errorMessage(err) }, 'dynamic vNPU: cannot list the vNPUs of a chip');
        continue;
      }
      for (const v of vnpus) {
        const name = vnpuName(type, v.templateName, v.vdevId, chip.phyId);
        if (name === undefined || used.has(name)) continue; // B.3: a vNPU of an unknown template is not ours
        const key = `${chip.phyId}|${v.templateName}`;
        const claimed = claims.get(key) ?? 0;
        if (claimed > 0) {
          claims.set(key, claimed - 1);
          continue;
        }
        for (let attempt = 1; ; attempt++) {
          try {
            driver.destroy(chip, v.vdevId);
            destroyed.push(name);
            logger.info({ vnpu: name }, 'dynamic vNPU: destroyed a vNPU no pod uses');
            break;
          } catch (err) {
            if (attempt >= destroyAttempts) {
              logger.warn({ vnpu: name, error: errorMessage(err) }, 'dynamic vNPU: destroy failed');
              break;
            }
            await pause(destroyDelayMs);
          }
        }
      }
    }
    return destroyed;
  }
}
