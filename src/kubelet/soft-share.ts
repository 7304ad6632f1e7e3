/**
 * Soft share (spec L.7; `-shareDevCount=100 -softShareDevConfigDir=<dir> -volcanoType=true`): Volcano places a pod on
 * one chip and gives it a share of the chip's AI cores and memory through three pod annotations; Allocate gives the
 * pod a virtual NPU on that chip by writing `/etc/enpu/<ns>.<job>/<phy>_<vnpu>/npu_info.config` and mounting it with
 * the chip's shared-memory entry (C.4). This module reads and checks the annotations (pure functions) and keeps the
 * files on disk ({@link SoftShareFiles}): written atomically, each with an owner record so that whatever a crash
 * leaves behind can be matched to its pod and removed once the pod is gone.
 *
 * The agent's glue (die ids, chip memory, Events, pod changes) is {@link SoftShareRuntime} (soft-share-runtime.ts).
 *
 * Disk layout under `<hostRoot>/etc/enpu/` (one folder per job, `<ns>.<job>`):
 * - `<phy>_<vnpu>/npu_info.config`: the lines of L.7, mode 0644; the folder is what the container mounts;
 * - `.<phy>_<vnpu>.owner`: JSON of the pod (uid, namespace, name) and the quotas; written before the config, so a
 *   config never exists without its owner (ours, not upstream's: the crash clean-up needs it).
 */
import { status } from '@grpc/grpc-js';
import fs from 'node:fs';
import path from 'node:path';
import type { ContainerAllocateResponse } from '../generated/deviceplugin/v1beta1/ContainerAllocateResponse.js';
import type { Mount } from '../generated/deviceplugin/v1beta1/Mount.js';
import { chipName, resourceName } from '../core/device-names.js';
import type { Logger } from '../core/logger.js';
import type { PodCache, PodView } from '../core/pods.js';
import type { KubeletDevice } from './device-source.js';
import { failedPrecondition, invalidArgument, KubeletRequestError } from './errors.js';
import { pickFromPodAnnotation, type PickOptions } from './volcano-pick.js';

/** The pod annotations Volcano writes for a soft-share pod (spec I.4). */
export const SOFT_SHARE_ANNOTATIONS = {
  aicoreQuota: 'huawei.com/scheduler.softShareDev.aicoreQuota',
  hbmQuota: 'huawei.com/scheduler.softShareDev.hbmQuota',
  policy: 'huawei.com/scheduler.softShareDev.policy',
} as const;

/** `scheduling-policy=` of each policy name (spec L.7). */
export const SCHEDULING_POLICIES = Object.freeze({ 'fixed-share': 1, elastic: 2, 'best-effort': 3 } as const);
/** A policy name of {@link SCHEDULING_POLICIES}. */
export type SchedulingPolicy = keyof typeof SCHEDULING_POLICIES;

/** Copies each chip is advertised as in soft share; also the AI-core quota of a whole chip (spec L.7). */
export const SOFT_SHARE_COPIES = 100;
/** Virtual NPU ids per chip: 0..99 (spec L.7). */
export const MAX_VNPU_ID = 99;
/** Pod labels naming the job, first present wins (spec I.4). */
export const JOB_NAME_LABELS = ['volcano.sh/job-name', 'training.kubeflow.org/job-name', 'deploy-name'] as const;

/** Longest annotation value read; longer values are refused before they are parsed. */
const MAX_VALUE_CHARS = 32;
/** A label value (Kubernetes rules, ≤ 63 chars), safe as a file-name part: no `/`, no `..`. */
const JOB_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DECIMAL = /^[1-9]\d{0,11}$/;
const VNPU_DIR = /^(\d{1,3})_(\d{1,2})$/;
const OWNER_FILE = /^\.(\d{1,3})_(\d{1,2})\.owner$/;
/** Temp files of {@link writeFileAtomic}. */
const TEMP_FILE = /^\..+\.tmp-\d+$/;
/** A job folder `<ns>.<job>` (namespace and label-value rules). */
const JOB_DIR = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/**
 * A vNPU whose pod the pod cache has not shown yet is kept this long (the volcano pick's last attempt lists pods live,
 * ahead of the cache); once the cache has shown the pod, its deletion removes the vNPU at once.
 */
export const FRESH_MS = 60_000;
const CONFIG_FILE = 'npu_info.config';
/** Largest owner record read back. */
const MAX_OWNER_BYTES = 4096;

/** What a soft-share pod asks for, checked (spec L.7). */
export interface SoftShareRequest {
  /** Percent of the chip's AI cores, 1..100; equals the number of copies kubelet allocates. */
  readonly aicoreQuota: number;
  /** MiB of chip memory, ≥ 1. */
  readonly hbmQuotaMiB: number;
  readonly policy: SchedulingPolicy;
}

/** A soft-share pod as the allocator sees it (the pod cache's view; labels carry the job name). */
export type SoftSharePod = PodView & { readonly labels?: Readonly<Record<string, string>> };

/**
 * What Allocate calls in soft share (wired by the agent, {@link SoftShareRuntime}): `allocate` creates the vNPU of the
 * picked pod on `chip` for `copies` kubelet devices and returns the mounts; `refused` is told every refusal after the
 * pod is known (for an Event on it).
 */
export interface SoftShareAllocator {
  allocate(
    pod: SoftSharePod,
    chip: { readonly phyId: number; readonly cardId: number; readonly deviceId: number },
    copies: number,
  ): Mount[];
  refused(pod: SoftSharePod, message: string): void;
}

/** `<ns>/<name>` of a pod, for messages. */
export function podRef(pod: { readonly namespace: string; readonly name: string }): string {
  return `pod ${pod.namespace}/${pod.name}`;
}

function shown(v: string): string {
  return JSON.stringify(v.length > MAX_VALUE_CHARS ? `${v.slice(0, MAX_VALUE_CHARS)}…` : v);
}

/** True when the pod carries any of the three soft-share annotations. */
export function hasSoftShareAnnotations(pod: Pick<PodView, 'annotations'>): boolean {
  return Object.values(SOFT_SHARE_ANNOTATIONS).some((k) => pod.annotations[k] !== undefined);
}

/**
 * The number of copies a pod asks kubelet for (the sum of its containers' limits of `resource`): what the volcano pick
 * matches in soft share, where the pod's annotation names one chip. A pod whose soft-share annotations are wrong is
 * still picked, so that its refusal names it (the AI-core quota must equal this number, upstream's check).
 */
export function requestedCopies(pod: Pick<PodView, 'containerLimits'>, resource: string): number {
  let total = 0;
  for (const limits of pod.containerLimits) total += limits[resource] ?? 0;
  return total;
}

/**
 * Reads and checks the three annotations (spec L.7, I.4). `copies` is the number of device IDs kubelet sent, which
 * must equal the AI-core quota (upstream's check). `chipMemoryMiB` bounds the memory quota when known. Throws an
 * INVALID_ARGUMENT {@link KubeletRequestError} naming the pod, the annotation and the value.
 */
export function parseSoftShareRequest(pod: SoftSharePod, copies: number, chipMemoryMiB?: number): SoftShareRequest {
  const who = podRef(pod);
  const value = (key: string): string => {
    const v = pod.annotations[key];
    if (v === undefined) throw invalidArgument(`${who}: soft share needs annotation ${key}`);
    if (v.length > MAX_VALUE_CHARS) throw invalidArgument(`${who}: annotation ${key} ${shown(v)} is too long`);
    return v;
  };
  const a = value(SOFT_SHARE_ANNOTATIONS.aicoreQuota);
  const h = value(SOFT_SHARE_ANNOTATIONS.hbmQuota);
  const p = value(SOFT_SHARE_ANNOTATIONS.policy);
  if (!DECIMAL.test(a) || Number(a) > SOFT_SHARE_COPIES) {
    throw invalidArgument(`${who}: annotation ${SOFT_SHARE_ANNOTATIONS.aicoreQuota} ${shown(a)} is not 1..100`);
  }
  const aicoreQuota = Number(a);
  if (aicoreQuota !== copies) {
    throw invalidArgument(
      `${who}: annotation ${SOFT_SHARE_ANNOTATIONS.aicoreQuota} is ${aicoreQuota} but kubelet allocates ${copies} device(s); they must be equal`,
    );
  }
  const max = chipMemoryMiB !== undefined && chipMemoryMiB > 0 ? chipMemoryMiB : undefined;
  if (!DECIMAL.test(h) || (max !== undefined && Number(h) > max)) {
    throw invalidArgument(
      `${who}: annotation ${SOFT_SHARE_ANNOTATIONS.hbmQuota} ${shown(h)} is not 1..${max ?? 'the chip memory'} (MiB)`,
    );
  }
  if (!Object.hasOwn(SCHEDULING_POLICIES, p)) {
    throw invalidArgument(
      `${who}: annotation ${SOFT_SHARE_ANNOTATIONS.policy} ${shown(p)} is not one of ${Object.keys(SCHEDULING_POLICIES).join(', ')}`,
    );
  }
  return { aicoreQuota, hbmQuotaMiB: Number(h), policy: p as SchedulingPolicy };
}

/**
 * The chip the pod's Volcano annotation (`huawei.com/<deviceType>`, spec I.4) names: one chip `<type>-<phy>`, or
 * copies `<type>-<phy>-<i>` of one chip. Returns its phy id; throws INVALID_ARGUMENT naming the pod otherwise.
 */
export function chipOfAnnotation(pod: PodView, resource: string, names: readonly string[], deviceType: string): number {
  const phys = new Set<number>();
  const re = new RegExp(`^${deviceType.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d{1,3})(-\\d{1,3})?$`);
  for (const n of names) {
    const m = re.exec(n);
    if (!m) throw invalidArgument(`${podRef(pod)}: annotation ${resource} names ${shown(n)}, not a ${deviceType} chip`);
    phys.add(Number(m[1]));
  }
  if (phys.size !== 1) {
    throw invalidArgument(`${podRef(pod)}: annotation ${resource} names ${phys.size} chips; a soft-share pod uses one`);
  }
  return [...phys][0]!;
}

/** What {@link allocateSoftShare} reads. */
export interface SoftShareAllocateInput {
  readonly hook: SoftShareAllocator;
  readonly podCache?: PodCache;
  readonly logger: Logger;
  readonly deviceType: string;
  readonly pick?: PickOptions;
  readonly requests: readonly (readonly string[])[];
  /** The server's devices by kubelet ID (the copies). */
  readonly devices: ReadonlyMap<string, KubeletDevice>;
  /** The C.3/C.4 response for the chip itself (device specs or environment). */
  readonly respond: (chip: KubeletDevice) => ContainerAllocateResponse;
}

/**
 * Allocate in soft share (spec L.7, after the C.3 input checks): the pod is the one whose AI-core quota equals the
 * number of copies kubelet sent (volcano pick, upstream's `aicoreQuota == len(request)`); its annotation names the
 * chip; the vNPU files are written and mounted (C.4) besides the chip itself. Every refusal after the pick names
 * the pod and is reported on it (an Event, through the hook).
 */
export async function allocateSoftShare(i: SoftShareAllocateInput): Promise<ContainerAllocateResponse> {
  if (i.requests.length !== 1) {
    throw invalidArgument(`soft share: ${i.requests.length} container requests in one Allocate, expected 1`);
  }
  const ids = i.requests[0]!;
  if (!i.podCache) throw failedPrecondition('soft share needs the pod cache (-volcanoType)');
  const resource = resourceName(i.deviceType);
  const { pod, devices: names } = await pickFromPodAnnotation(i.podCache, resource, ids.length, {
    ...i.pick,
    countOf: (p) => requestedCopies(p, resource),
  });
  try {
    const phyId = chipOfAnnotation(pod, resource, names, i.deviceType);
    let chip: KubeletDevice | undefined;
    for (const d of i.devices.values()) {
      if (d.phyId === phyId) {
        chip = d;
        break;
      }
    }
    const name = chipName(i.deviceType, phyId);
    if (!chip) throw failedPrecondition(`annotation ${resource} names ${name}, not on this node`);
    if (chip.manuallySeparated) throw failedPrecondition(`refusing to allocate: ${name} is manually separated`);
    if (chip.health !== 'Healthy') {
      throw failedPrecondition(`refusing to allocate: ${name} is Unhealthy (level ${chip.level})`);
    }
    const mounts = i.hook.allocate(pod, chip, ids.length);
    i.logger.info({ pod: `${pod.namespace}/${pod.name}`, copies: ids.length, chip: name }, 'soft share allocate');
    return { ...i.respond(chip), mounts };
  } catch (err) {
    const e =
      err instanceof KubeletRequestError ? err : new KubeletRequestError(status.INTERNAL, (err as Error).message);
    const message = e.message.includes(podRef(pod)) ? e.message : `${podRef(pod)}: ${e.message}`;
    i.hook.refused(pod, message);
    throw new KubeletRequestError(e.code, message);
  }
}

/** The job of a pod (spec I.4 labels), checked to be safe in a file name; throws INVALID_ARGUMENT otherwise. */
export function jobOf(pod: SoftSharePod): string {
  const labels = pod.labels ?? {};
  const name = JOB_NAME_LABELS.map((l) => labels[l]).find((v) => v !== undefined && v !== '');
  if (name === undefined) {
    throw invalidArgument(`${podRef(pod)}: soft share needs a job name (label ${JOB_NAME_LABELS.join(', ')})`);
  }
  if (!JOB_NAME.test(name)) throw invalidArgument(`${podRef(pod)}: job name ${shown(name)} is not a valid label value`);
  if (!NAMESPACE.test(pod.namespace)) throw invalidArgument(`${podRef(pod)}: namespace is not a valid name`);
  return name;
}

/** One virtual NPU: a pod's share of one chip. */
export interface SoftShareEntry {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly job: string;
  readonly phyId: number;
  readonly vnpuId: number;
  readonly aicoreQuota: number;
  readonly hbmQuotaMiB: number;
  readonly policy: SchedulingPolicy;
  readonly dieId: string;
}

/** The text of `npu_info.config` (spec L.7 line order). */
export function npuInfoConfig(e: SoftShareEntry): string {
  return [
    `physical-npu-id=${e.phyId}`,
    `virtual-npu-id=${e.vnpuId}`,
    `aicore-quota=${e.aicoreQuota}`,
    `memory-quota=${e.hbmQuotaMiB}`,
    `shm-id=${e.dieId}`,
    `scheduling-policy=${SCHEDULING_POLICIES[e.policy]}`,
    '',
  ].join('\n');
}

/** AI-core percent and MiB in use on one chip. */
export interface ChipUsage {
  aicore: number;
  hbmMiB: number;
  readonly policies: Set<SchedulingPolicy>;
}

/** What {@link SoftShareFiles} needs besides paths. */
export interface SoftShareFilesOptions {
  /** `<hostRoot>/etc/enpu`. */
  readonly enpuRoot: string;
  /** `-softShareDevConfigDir`: `<dir>/<phy>/<dieId>` is mounted at `/dev/shm/<dieId>` (C.4). */
  readonly shmRoot: string;
  readonly logger: Logger;
  /**
   * Test hook: called after the config is on disk and before the mounts are returned (the crash window the start-up
   * clean-up covers).
   */
  readonly afterWrite?: () => void;
}

/** The chip an Allocate puts a vNPU on. */
export interface SoftShareChip {
  readonly phyId: number;
  readonly dieId: string;
  /** MiB; undefined or 0 when unknown (then only the AI-core quota bounds the chip). */
  readonly memoryMiB: number | undefined;
}

function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes `file` atomically: a temp file in the same folder, fsync, rename, fsync of the folder. */
export function writeFileAtomic(file: string, text: string, mode: number): void {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.tmp-${process.pid}`);
  const fd = fs.openSync(tmp, 'w', mode);
  try {
    fs.writeSync(fd, text);
    fs.fchmodSync(fd, mode);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dir);
}

function isEntry(v: unknown): v is SoftShareEntry {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    ['uid', 'namespace', 'name', 'job', 'dieId'].every((k) => typeof e[k] === 'string') &&
    ['phyId', 'vnpuId', 'aicoreQuota', 'hbmQuotaMiB'].every((k) => Number.isSafeInteger(e[k])) &&
    typeof e.policy === 'string' &&
    Object.hasOwn(SCHEDULING_POLICIES, e.policy)
  );
}

/** The soft-share files of this node and the vNPUs they record (the disk is the only state: a restart reads it). */
export class SoftShareFiles {
  readonly #o: SoftShareFilesOptions;
  /** `<phy>_<vnpu>` key → entry, as on disk. */
  readonly #entries = new Map<string, SoftShareEntry>();
  /**
   * `<phy>_<vnpu>` key → when this process wrote it (monotonic ms), until the pod cache has shown its pod (see
   * {@link FRESH_MS}).
   */
  readonly #unseen = new Map<string, number>();

  constructor(o: SoftShareFilesOptions) {
    this.#o = o;
    fs.mkdirSync(o.enpuRoot, { recursive: true, mode: 0o755 });
    this.#load();
  }

  /** The vNPUs on disk now. */
  entries(): readonly SoftShareEntry[] {
    return [...this.#entries.values()];
  }

  /** AI-core and memory quotas in use per phy id. */
  usage(): Map<number, ChipUsage> {
    const out = new Map<number, ChipUsage>();
    for (const e of this.#entries.values()) {
      const u = out.get(e.phyId) ?? { aicore: 0, hbmMiB: 0, policies: new Set<SchedulingPolicy>() };
      u.aicore += e.aicoreQuota;
      u.hbmMiB += e.hbmQuotaMiB;
      u.policies.add(e.policy);
      out.set(e.phyId, u);
    }
    return out;
  }

  /**
   * True when a chip has no room left (spec L.7: it stays schedulable while its used AI-core quota is below 100 and
   * its used memory quota below the chip memory).
   */
  full(phyId: number, memoryMiB: number | undefined): boolean {
    const u = this.usage().get(phyId);
    if (!u) return false;
    return u.aicore >= SOFT_SHARE_COPIES || (memoryMiB !== undefined && memoryMiB > 0 && u.hbmMiB >= memoryMiB);
  }

  #jobDir(namespace: string, job: string): string {
    return path.join(this.#o.enpuRoot, `${namespace}.${job}`);
  }

  /** Reads the owner records of every job folder (start-up; the files are the state). */
  #load(): void {
    for (const job of this.#jobDirs()) {
      for (const f of fs.readdirSync(job)) {
        const m = OWNER_FILE.exec(f);
        if (!m) continue;
        const file = path.join(job, f);
        try {
          const st = fs.lstatSync(file);
          if (!st.isFile() || st.size > MAX_OWNER_BYTES) throw new Error('not a small regular file');
          const e: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
          if (!isEntry(e) || `${e.phyId}_${e.vnpuId}` !== `${m[1]}_${m[2]}`) throw new Error('not an owner record');
          this.#entries.set(`${e.phyId}_${e.vnpuId}`, e);
        } catch (err) {
          // kept out of the entries: the clean-up removes its vNPU folder (no live pod owns it)
          this.#o.logger.warn({ file, error: (err as Error).message }, 'soft share: unreadable owner record');
        }
      }
    }
  }

  #jobDirs(): string[] {
    return fs
      .readdirSync(this.#o.enpuRoot, { withFileTypes: true })
      .filter((d) => d.isDirectory() && JOB_DIR.test(d.name))
      .map((d) => path.join(this.#o.enpuRoot, d.name));
  }

  /** Smallest virtual id 0..99 of `phyId` no vNPU (nor any leftover folder) uses; undefined when all are taken. */
  #freeVnpuId(phyId: number): number | undefined {
    const used = new Set<number>();
    for (const e of this.#entries.values()) if (e.phyId === phyId) used.add(e.vnpuId);
    for (const job of this.#jobDirs()) {
      for (const f of fs.readdirSync(job)) {
        const m = VNPU_DIR.exec(f) ?? OWNER_FILE.exec(f);
        if (m && Number(m[1]) === phyId) used.add(Number(m[2]));
      }
    }
    for (let id = 0; id <= MAX_VNPU_ID; id++) if (!used.has(id)) return id;
    return undefined;
  }

  /**
   * Creates the vNPU of `pod` on `chip` and returns the container's mounts (C.4). Refuses (FAILED_PRECONDITION,
   * nothing written) a chip without room for the quotas, a chip whose vNPUs use another policy, a chip without a free
   * virtual id. A write failure removes what was written and rejects with INTERNAL.
   */
  allocate(pod: SoftSharePod, job: string, req: SoftShareRequest, chip: SoftShareChip): Mount[] {
    const who = podRef(pod);
    const u = this.usage().get(chip.phyId);
    const usedCore = u?.aicore ?? 0;
    const usedMem = u?.hbmMiB ?? 0;
    if (usedCore + req.aicoreQuota > SOFT_SHARE_COPIES) {
      throw failedPrecondition(
        `${who}: chip ${chip.phyId} has ${SOFT_SHARE_COPIES - usedCore}% AI cores left, the pod asks for ${req.aicoreQuota}%`,
      );
    }
    if (chip.memoryMiB !== undefined && chip.memoryMiB > 0 && usedMem + req.hbmQuotaMiB > chip.memoryMiB) {
      throw failedPrecondition(
        `${who}: chip ${chip.phyId} has ${chip.memoryMiB - usedMem} MiB left, the pod asks for ${req.hbmQuotaMiB} MiB`,
      );
    }
    const other = [...(u?.policies ?? [])].find((p) => p !== req.policy);
    if (other !== undefined) {
      throw failedPrecondition(`${who}: chip ${chip.phyId} runs policy ${other}, the pod asks for ${req.policy}`);
    }
    const vnpuId = this.#freeVnpuId(chip.phyId);
    if (vnpuId === undefined) throw failedPrecondition(`${who}: chip ${chip.phyId} has no free virtual NPU id (0..99)`);
    const entry: SoftShareEntry = {
      uid: pod.uid,
      namespace: pod.namespace,
      name: pod.name,
      job,
      phyId: chip.phyId,
      vnpuId,
      aicoreQuota: req.aicoreQuota,
      hbmQuotaMiB: req.hbmQuotaMiB,
      policy: req.policy,
      dieId: chip.dieId,
    };
    const key = `${chip.phyId}_${vnpuId}`;
    const jobDir = this.#jobDir(pod.namespace, job);
    const createdJobDir = !fs.existsSync(jobDir);
    const vnpuDir = path.join(jobDir, key);
    const owner = path.join(jobDir, `.${key}.owner`);
    const shm = path.join(this.#o.shmRoot, String(chip.phyId), chip.dieId);
    try {
      fs.mkdirSync(jobDir, { recursive: true, mode: 0o755 });
      writeFileAtomic(owner, `${JSON.stringify(entry)}\n`, 0o600); // first: no config without its owner
      fs.mkdirSync(vnpuDir, { mode: 0o755 });
      writeFileAtomic(path.join(vnpuDir, CONFIG_FILE), npuInfoConfig(entry), 0o644);
      fs.mkdirSync(shm, { recursive: true, mode: 0o755 }); // the chip's shared-memory entry, kept for its other pods
    } catch (err) {
      fs.rmSync(vnpuDir, { recursive: true, force: true });
      fs.rmSync(owner, { force: true });
      if (createdJobDir) fs.rmSync(jobDir, { recursive: true, force: true });
      throw new KubeletRequestError(
        status.INTERNAL,
        `${who}: soft share: writing ${path.join(vnpuDir, CONFIG_FILE)} failed: ${(err as Error).message}`,
      );
    }
    this.#entries.set(key, entry);
    this.#unseen.set(key, performance.now());
    this.#o.logger.info(
      { pod: `${pod.namespace}/${pod.name}`, job, phyId: chip.phyId, vnpuId, aicore: req.aicoreQuota },
      'soft share: vNPU written',
    );
    this.#o.afterWrite?.();
    return [
      { containerPath: `/dev/shm/${chip.dieId}`, hostPath: shm, readOnly: false },
      { containerPath: '/etc/enpu/vcann-rt/', hostPath: `${vnpuDir}/`, readOnly: true },
    ];
  }

  /**
   * Removes the vNPUs whose pod (by uid) is not in `livePods`, then every job folder left without a vNPU (spec L.7:
   * the folder goes with the job's last pod), and leftovers no owner record explains (a crash before the owner was
   * written, an unreadable record, temp files). Returns the keys of the removed vNPUs. `nowMs` is monotonic.
   */
  reconcile(livePods: ReadonlySet<string>, nowMs = performance.now()): string[] {
    const removed: string[] = [];
    for (const [key, e] of [...this.#entries]) {
      if (livePods.has(e.uid)) {
        this.#unseen.delete(key); // the cache knows the pod: from now on its deletion removes the vNPU
        continue;
      }
      if (nowMs - (this.#unseen.get(key) ?? -Infinity) < FRESH_MS) continue;
      this.#unseen.delete(key);
      const jobDir = this.#jobDir(e.namespace, e.job);
      fs.rmSync(path.join(jobDir, key), { recursive: true, force: true });
      fs.rmSync(path.join(jobDir, `.${key}.owner`), { force: true });
      this.#entries.delete(key);
      removed.push(key);
      this.#o.logger.info({ pod: `${e.namespace}/${e.name}`, job: e.job, vnpu: key }, 'soft share: vNPU removed');
    }
    const owned = new Set(
      [...this.#entries.values()].map((e) => `${this.#jobDir(e.namespace, e.job)}/${e.phyId}_${e.vnpuId}`),
    );
    for (const job of this.#jobDirs()) {
      for (const f of fs.readdirSync(job)) {
        const m = VNPU_DIR.exec(f) ?? OWNER_FILE.exec(f);
        const key = m ? `${job}/${m[1]}_${m[2]}` : undefined;
        if (m ? !owned.has(key!) : TEMP_FILE.test(f)) fs.rmSync(path.join(job, f), { recursive: true, force: true });
      }
      if (fs.readdirSync(job).length === 0) {
        fs.rmdirSync(job);
        this.#o.logger.info({ dir: job }, 'soft share: job folder removed (its last pod is gone)');
      }
    }
    return removed;
  }
}
