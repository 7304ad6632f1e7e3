/**
 * Soft share (spec L.7) units: the annotations and their checks, the `npu_info.config` text, the files on disk
 * (atomic write, smallest free virtual id, quotas per chip, clean-up of gone pods and of crash leftovers), the chip
 * named by the Volcano annotation, and the allocator's soft-share path (Event on a refusal).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { status } from '@grpc/grpc-js';
import { NOOP_LOGGER } from '../../src/core/logger.js';
import type { PodCache, PodView } from '../../src/core/pods.js';
import type { KubeletDevice } from '../../src/kubelet/device-source.js';
import { KubeletRequestError } from '../../src/kubelet/errors.js';
import {
  allocateSoftShare,
  chipOfAnnotation,
  FRESH_MS,
  jobOf,
  npuInfoConfig,
  parseSoftShareRequest,
  requestedCopies,
  SoftShareFiles,
  type SoftShareAllocator,
  type SoftSharePod,
} from '../../src/kubelet/soft-share.js';
import { SoftShareRuntime } from '../../src/kubelet/soft-share-runtime.js';

const R = 'huawei.com/Ascend310P';
const DIE = 'C281A66C-80A047F2-0A645632-CC500485-100301E3';

function pod(o: Partial<SoftSharePod> & { aicore?: string; hbm?: string; policy?: string } = {}): SoftSharePod {
  const { aicore = '20', hbm = '1024', policy = 'elastic', ...rest } = o;
  return {
    uid: 'uid-1',
    namespace: 'default',
    name: 'p-0',
    labels: { 'volcano.sh/job-name': 'job1' },
    annotations: {
      [R]: 'Ascend310P-1',
      'huawei.com/scheduler.softShareDev.aicoreQuota': aicore,
      'huawei.com/scheduler.softShareDev.hbmQuota': hbm,
      'huawei.com/scheduler.softShareDev.policy': policy,
    },
    containerLimits: [{ [R]: Number(aicore) }],
    deleting: false,
    waitingMessages: [],
    ...rest,
  };
}

const refused = (f: () => unknown): KubeletRequestError => {
  try {
    f();
  } catch (err) {
    if (err instanceof KubeletRequestError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
};

describe('L.7 annotations', () => {
  test('L.7 the three annotations are read: quota, memory, policy', () => {
    expect(parseSoftShareRequest(pod({ aicore: '20', hbm: '1024', policy: 'best-effort' }), 20, 24576)).toEqual({
      aicoreQuota: 20,
      hbmQuotaMiB: 1024,
      policy: 'best-effort',
    });
  });
  test('L.7 a missing annotation is refused naming the pod and the annotation', () => {
    const p = pod();
    delete (p.annotations as Record<string, string>)['huawei.com/scheduler.softShareDev.policy'];
    const e = refused(() => parseSoftShareRequest(p, 20));
    expect(e.code).toBe(status.INVALID_ARGUMENT);
    expect(e.message).toBe('pod default/p-0: soft share needs annotation huawei.com/scheduler.softShareDev.policy');
  });
  test.each(['0', '101', '-5', '1.5', '020', ' 20', 'x'])('L.7 AI-core quota %j is refused', (v) => {
    expect(refused(() => parseSoftShareRequest(pod({ aicore: v }), 20)).message).toMatch(
      /aicoreQuota .* is not 1\.\.100/,
    );
  });
  test('L.7 the AI-core quota must equal the copies kubelet allocates (upstream)', () => {
    expect(refused(() => parseSoftShareRequest(pod({ aicore: '20' }), 19)).message).toMatch(
      /aicoreQuota is 20 but kubelet allocates 19 device\(s\)/,
    );
  });
  test('L.7 the memory quota is 1..chip memory', () => {
    expect(parseSoftShareRequest(pod({ hbm: '24576' }), 20, 24576).hbmQuotaMiB).toBe(24576);
    expect(refused(() => parseSoftShareRequest(pod({ hbm: '24577' }), 20, 24576)).message).toMatch(
      /hbmQuota "24577" is not 1\.\.24576 \(MiB\)/,
    );
    expect(refused(() => parseSoftShareRequest(pod({ hbm: '0' }), 20)).message).toMatch(/hbmQuota "0"/);
  });
  test('L.7 policy must be fixed-share, elastic or best-effort', () => {
    expect(refused(() => parseSoftShareRequest(pod({ policy: 'Elastic' }), 20)).message).toMatch(
      /policy "Elastic" is not one of fixed-share, elastic, best-effort/,
    );
  });
  test('bounded text: a 1 MiB annotation is refused quoting at most 32 characters', () => {
    const e = refused(() => parseSoftShareRequest(pod({ hbm: '9'.repeat(1 << 20) }), 20));
    expect(e.message.length).toBeLessThan(200);
  });
  test('I.4 the job name is the first of volcano.sh/job-name, training.kubeflow.org/job-name, deploy-name', () => {
    expect(jobOf(pod({ labels: { 'deploy-name': 'd', 'training.kubeflow.org/job-name': 't' } }))).toBe('t');
    expect(jobOf(pod({ labels: { 'deploy-name': 'd' } }))).toBe('d');
    expect(refused(() => jobOf(pod({ labels: {} }))).message).toMatch(/needs a job name/);
  });
  test('a job name that could leave the folder (../x) is refused', () => {
    expect(refused(() => jobOf(pod({ labels: { 'volcano.sh/job-name': '../x' } }))).message).toMatch(
      /job name "..\/x" is not a valid label value/,
    );
  });
  test('L.7 the Volcano annotation names one chip (or copies of one chip)', () => {
    expect(chipOfAnnotation(pod(), R, ['Ascend310P-3'], 'Ascend310P')).toBe(3);
    expect(chipOfAnnotation(pod(), R, ['Ascend310P-3-0', 'Ascend310P-3-7'], 'Ascend310P')).toBe(3);
    expect(() => chipOfAnnotation(pod(), R, ['Ascend310P-1', 'Ascend310P-2'], 'Ascend310P')).toThrow(/names 2 chips/);
    expect(() => chipOfAnnotation(pod(), R, ['Ascend910-1'], 'Ascend310P')).toThrow(/not a Ascend310P chip/);
  });
  test('L.7 the pick matches a soft-share pod by the copies it requests (its container limits)', () => {
    expect(requestedCopies(pod({ containerLimits: [{ [R]: 30 }, { [R]: 5 }, {}] }), R)).toBe(35);
  });
});

describe('L.7 npu_info.config', () => {
  test('L.7 the lines in order; policies fixed-share→1, elastic→2, best-effort→3', () => {
    const base = { uid: 'u', namespace: 'n', name: 'p', job: 'j', phyId: 3, vnpuId: 7, aicoreQuota: 25, dieId: DIE };
    expect(npuInfoConfig({ ...base, hbmQuotaMiB: 4096, policy: 'fixed-share' })).toBe(
      `physical-npu-id=3\nvirtual-npu-id=7\naicore-quota=25\nmemory-quota=4096\nshm-id=${DIE}\nscheduling-policy=1\n`,
    );
    expect(npuInfoConfig({ ...base, hbmQuotaMiB: 1, policy: 'elastic' })).toMatch(/scheduling-policy=2\n$/);
    expect(npuInfoConfig({ ...base, hbmQuotaMiB: 1, policy: 'best-effort' })).toMatch(/scheduling-policy=3\n$/);
  });
});

describe('L.7 files on disk', () => {
  let dir: string;
  let files: SoftShareFiles;
  const chip = { phyId: 1, dieId: DIE, memoryMiB: 8192 };
  const open = () =>
    new SoftShareFiles({ enpuRoot: path.join(dir, 'enpu'), shmRoot: path.join(dir, 'shm'), logger: NOOP_LOGGER });
  const req = (aicore: number, hbm = 100, policy: 'elastic' | 'fixed-share' = 'elastic') => ({
    aicoreQuota: aicore,
    hbmQuotaMiB: hbm,
    policy,
  });
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'soft-'));
    files = open();
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('L.7 the config is written atomically: no temp file is left, the owner record is beside it', () => {
    files.allocate(pod(), 'job1', req(20), chip);
    expect(fs.readdirSync(path.join(dir, 'enpu', 'default.job1')).sort()).toEqual(['.1_0.owner', '1_0']);
    expect(fs.readdirSync(path.join(dir, 'enpu', 'default.job1', '1_0'))).toEqual(['npu_info.config']);
  });

  test('L.7 the smallest free virtual id is taken, also after a pod in the middle went', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(10), chip);
    files.allocate(pod({ uid: 'b', name: 'p-1' }), 'job1', req(10), chip);
    files.allocate(pod({ uid: 'c', name: 'p-2' }), 'job2', req(10), chip);
    expect(files.reconcile(new Set(['a', 'c']), performance.now() + FRESH_MS)).toEqual(['1_1']);
    files.allocate(pod({ uid: 'd', name: 'p-3' }), 'job3', req(10), chip);
    expect(fs.existsSync(path.join(dir, 'enpu', 'default.job3', '1_1', 'npu_info.config'))).toBe(true);
  });

  test('L.7 virtual ids are per chip: the first vNPU of another chip is 0', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(10), chip);
    files.allocate(pod({ uid: 'b' }), 'job1', req(10), { ...chip, phyId: 2 });
    expect(files.entries().map((e) => `${e.phyId}_${e.vnpuId}`)).toEqual(['1_0', '2_0']);
  });

  test('L.7 AI-core quota over 100 on a chip is refused with nothing written', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(90), chip);
    const e = refused(() => files.allocate(pod({ uid: 'b', name: 'p-1' }), 'job2', req(11), chip));
    expect(e.code).toBe(status.FAILED_PRECONDITION);
    expect(e.message).toBe('pod default/p-1: chip 1 has 10% AI cores left, the pod asks for 11%');
    expect(fs.existsSync(path.join(dir, 'enpu', 'default.job2'))).toBe(false);
  });

  test('L.7 memory quota over the chip memory is refused', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(10, 8000), chip);
    expect(refused(() => files.allocate(pod({ uid: 'b' }), 'job1', req(10, 193), chip)).message).toMatch(
      /chip 1 has 192 MiB left, the pod asks for 193 MiB/,
    );
  });

  test('L.7 a chip is full at 100% AI cores or at its memory; below both it keeps room', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(99, 100), chip);
    expect(files.full(1, 8192)).toBe(false);
    files.allocate(pod({ uid: 'b' }), 'job1', req(1, 100), chip);
    expect(files.full(1, 8192)).toBe(true);
    expect(files.full(2, 8192)).toBe(false);
    files.allocate(pod({ uid: 'c' }), 'job1', req(10, 8192), { ...chip, phyId: 2 });
    expect(files.full(2, 8192)).toBe(true);
  });

  test('ours: pods of another policy on the same chip are refused (Volcano keeps one policy per chip)', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(10), chip);
    expect(refused(() => files.allocate(pod({ uid: 'b' }), 'job1', req(10, 1, 'fixed-share'), chip)).message).toMatch(
      /chip 1 runs policy elastic, the pod asks for fixed-share/,
    );
  });

  test('L.7 a restart reads the vNPUs back from their owner records', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(60), chip);
    const again = open();
    expect(again.entries()).toEqual(files.entries());
    expect(refused(() => again.allocate(pod({ uid: 'b' }), 'job1', req(41), chip)).message).toMatch(
      /40% AI cores left/,
    );
  });

  test('L.7 the job folder goes with its last vNPU; another job is untouched', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(10), chip);
    files.allocate(pod({ uid: 'b' }), 'job2', req(10), chip);
    files.reconcile(new Set(['a', 'b'])); // both seen in the pod cache
    files.reconcile(new Set(['b']));
    expect(fs.readdirSync(path.join(dir, 'enpu'))).toEqual(['default.job2']);
  });

  test('a fresh vNPU whose pod the cache has not shown yet is kept (the pick may list pods live, ahead of it)', () => {
    files.allocate(pod({ uid: 'a' }), 'job1', req(10), chip);
    expect(files.reconcile(new Set())).toEqual([]);
    expect(files.reconcile(new Set(), performance.now() + FRESH_MS)).toEqual(['1_0']);
  });

  test('L.7 crash leftovers without an owner record (a folder, a temp file, a broken record) are removed', () => {
    const job = path.join(dir, 'enpu', 'default.jobx');
    fs.mkdirSync(path.join(job, '1_5'), { recursive: true });
    fs.writeFileSync(path.join(job, '.npu_info.config.tmp-123'), 'x');
    fs.writeFileSync(path.join(job, '.1_6.owner'), '{broken');
    const f = open();
    f.reconcile(new Set());
    expect(fs.existsSync(job)).toBe(false);
  });

  test('a foreign file in a job folder is left alone (only our names are removed)', () => {
    const job = path.join(dir, 'enpu', 'default.joby');
    fs.mkdirSync(job, { recursive: true });
    fs.writeFileSync(path.join(job, 'README'), 'not ours');
    open().reconcile(new Set());
    expect(fs.readdirSync(job)).toEqual(['README']);
  });

  test('L.7 a failed write leaves nothing behind and is refused with INTERNAL', () => {
    fs.writeFileSync(path.join(dir, 'shm'), 'a file where the shm folder must be');
    const e = refused(() => files.allocate(pod(), 'job1', req(10), chip));
    expect(e.code).toBe(status.INTERNAL);
    expect(fs.readdirSync(path.join(dir, 'enpu'))).toEqual([]);
    expect(files.entries()).toEqual([]);
  });
});

describe('L.7 allocator path and runtime', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'soft-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const device = (phyId: number, i: number, health: 'Healthy' | 'Unhealthy' = 'Healthy'): KubeletDevice => ({
    id: `Ascend310P-${phyId}-${i}`,
    logicId: phyId,
    phyId,
    cardId: phyId,
    deviceId: 0,
    health,
    level: 'NormalNPU',
    manuallySeparated: false,
  });
  const cacheOf = (pods: PodView[]): PodCache => ({ pods: () => pods, markAllocated: () => Promise.resolve() });

  function runtime(events: { reason: string; message: string; name?: string }[]): SoftShareRuntime {
    return new SoftShareRuntime({
      enpuRoot: path.join(dir, 'enpu'),
      shmRoot: path.join(dir, 'shm'),
      logger: NOOP_LOGGER,
      deviceType: 'Ascend310P',
      chips: [0, 1].map((phyId) => ({ phyId, cardId: phyId, deviceId: 0 })),
      dieIdOf: (card) => `${DIE.slice(0, -1)}${card}`,
      memoryOf: () => 8192,
      events: { record: (e) => events.push({ reason: e.reason, message: e.message, name: e.involvedPod?.name }) },
    });
  }

  test('L.7 a refusal after the pick names the pod and records an Event on it', async () => {
    const events: { reason: string; message: string; name?: string }[] = [];
    const hook: SoftShareAllocator = runtime(events);
    const devices = new Map(
      [0, 1].flatMap((p) => [0, 1, 2].map((i) => [`Ascend310P-${p}-${i}`, device(p, i)] as const)),
    );
    const bad = pod({ aicore: '2', hbm: 'many' });
    const err = await allocateSoftShare({
      hook,
      podCache: cacheOf([{ ...bad, annotations: { ...bad.annotations, 'predicate-time': '1' } }]),
      logger: NOOP_LOGGER,
      deviceType: 'Ascend310P',
      pick: { attempts: 1 },
      requests: [['Ascend310P-0-0', 'Ascend310P-0-1']],
      devices,
      respond: () => ({}),
    }).catch((e: unknown) => e as KubeletRequestError);
    expect(err).toBeInstanceOf(KubeletRequestError);
    expect((err as KubeletRequestError).message).toMatch(/^pod default\/p-0: annotation .*hbmQuota "many"/);
    expect(events).toEqual([expect.objectContaining({ reason: 'SoftShareAllocateFailed', name: 'p-0' })]);
  });

  test('L.7 an Unhealthy annotated chip is refused naming the pod', async () => {
    const events: { reason: string; message: string; name?: string }[] = [];
    const devices = new Map([[`Ascend310P-1-0`, device(1, 0, 'Unhealthy')]]);
    const err = await allocateSoftShare({
      hook: runtime(events),
      podCache: cacheOf([pod({ aicore: '1' })]),
      logger: NOOP_LOGGER,
      deviceType: 'Ascend310P',
      pick: { attempts: 1 },
      requests: [['Ascend310P-1-0']],
      devices,
      respond: () => ({}),
    }).catch((e: unknown) => e as KubeletRequestError);
    expect((err as KubeletRequestError).message).toBe(
      'pod default/p-0: refusing to allocate: Ascend310P-1 is Unhealthy (level NormalNPU)',
    );
    expect(fs.readdirSync(path.join(dir, 'enpu'))).toEqual([]);
  });

  test('L.7/H.3 the copies of a full chip are the ones left off the schedulable list', () => {
    const rt = runtime([]);
    let changes = 0;
    rt.onChange(() => changes++);
    rt.allocate(pod({ aicore: '100' }), { phyId: 1, cardId: 1, deviceId: 0 }, 100);
    const full = rt.fullCopyNames();
    expect(full.size).toBe(100);
    expect(full.has('Ascend310P-1-0') && full.has('Ascend310P-1-99') && !full.has('Ascend310P-0-0')).toBe(true);
    expect(changes).toBe(1);
    expect(fs.readFileSync(path.join(dir, 'enpu', 'default.job1', '1_0', 'npu_info.config'), 'utf8')).toContain(
      `shm-id=${DIE.slice(0, -1)}1\n`,
    );
  });

  test('L.7 the clean-up waits for a pod cache that has listed (an empty unsynced cache removes nothing)', () => {
    const rt = runtime([]);
    rt.allocate(pod({ aicore: '10' }), { phyId: 0, cardId: 0, deviceId: 0 }, 10);
    rt.podsChanged({ synced: false, pods: () => [] });
    expect(rt.files.entries()).toHaveLength(1);
    rt.podsChanged({ synced: true, pods: () => [pod()] });
    expect(rt.files.entries()).toHaveLength(1);
    rt.podsChanged({ synced: true, pods: () => [] });
    expect(rt.files.entries()).toHaveLength(0);
  });
});
