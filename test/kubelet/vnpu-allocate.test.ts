/**
 * Issue 17 item 3: the dynamic vNPU allocator (spec C.3 dynamic mode, D.2 step 1) over a fake DCMI driver and an
 * in-memory pod cache: the pick by the `huawei.com/npu-core` annotation, create or map, the refusals ("Bad
 * input": the pod named, an Event, nothing created), the release of vNPUs no pod uses, and the restart claim.
 */
import { describe, expect, test } from '@jest/globals';
import { status } from '@grpc/grpc-js';
import type { DeviceSnapshot, KubeletDevice } from '../../src/kubelet/device-source.js';
import { InMemoryPodCache } from '../../src/kubelet/pod-cache.js';
import { DynamicVnpu, type ChipVnpu, type PodRef, type VnpuDriver } from '../../src/kubelet/vnpu-allocate.js';
import { NPU_CORE_RESOURCE } from '../../src/kubelet/vnpu-core.js';
import { NOOP_LOGGER } from '../../src/core/logger.js';
import { PREDICATE_TIME_USED, type PodView } from '../../src/core/pods.js';

const CORES = 8;

function chip(phyId: number, health: 'Healthy' | 'Unhealthy' = 'Healthy'): KubeletDevice {
  return {
    id: `Ascend310P-${phyId}`,
    logicId: phyId,
    phyId,
    cardId: phyId,
    deviceId: 0,
    health,
    level: health === 'Healthy' ? 'NormalNPU' : 'SeparateNPU',
    manuallySeparated: false,
  };
}

function snapshot(chips: KubeletDevice[] = [chip(0), chip(1), chip(2)]): DeviceSnapshot {
  return {
    node: { chipKind: 'Ascend310P' } as DeviceSnapshot['node'],
    deviceTypes: { Ascend310P: chips },
  };
}

/** A fake chip driver with AI-core accounting like the mock's. */
class FakeDriver implements VnpuDriver {
  readonly vnpus = new Map<number, (ChipVnpu & { cores: number })[]>();
  creates = 0;
  failCreate: Error | undefined;
  failDestroy = 0;
  list(c: KubeletDevice): readonly ChipVnpu[] {
    return this.vnpus.get(c.phyId) ?? [];
  }
  create(c: KubeletDevice, template: string): { vdevId: number; vfgId: number } {
    this.creates++;
    if (this.failCreate) throw this.failCreate;
    const list = this.vnpus.get(c.phyId) ?? [];
    const cores = Number(/^vir(\d+)/.exec(template)![1]);
    if (list.reduce((n, v) => n + v.cores, 0) + cores > CORES) throw new Error('dcmi_create_vdevice returned -8008');
    const vdevId = 100 + list.length + (list.at(-1)?.vdevId ?? 99) - 99;
    list.push({ vdevId, templateName: template, vfgId: list.length, cores });
    this.vnpus.set(c.phyId, list);
    return { vdevId, vfgId: list.length - 1 };
  }
  destroy(c: KubeletDevice, vdevId: number): void {
    if (this.failDestroy > 0) {
      this.failDestroy--;
      throw new Error('dcmi_set_destroy_vdevice returned -8005');
    }
    this.vnpus.set(
      c.phyId,
      (this.vnpus.get(c.phyId) ?? []).filter((v) => v.vdevId !== vdevId),
    );
  }
}

function pod(uid: string, annotation: string, cores: number, extra: Record<string, string> = {}): PodView {
  return {
    uid,
    namespace: 'default',
    name: uid,
    annotations: { [NPU_CORE_RESOURCE]: annotation, 'predicate-time': '10', ...extra },
    containerLimits: [{ [NPU_CORE_RESOURCE]: cores }],
    deleting: false,
    waitingMessages: [],
  };
}

function setup(pods: PodView[] = []) {
  const cache = new InMemoryPodCache(pods);
  const driver = new FakeDriver();
  const refused: { pod: PodRef; message: string }[] = [];
  const annotated: { pod: string; annotations: Record<string, string> }[] = [];
  const vnpu = new DynamicVnpu({
    type: 'Ascend310P',
    kind: 'Ascend310P',
    coresPerChip: CORES,
    driver,
    podCache: cache,
    logger: NOOP_LOGGER,
    onRefused: (p, message) => refused.push({ pod: p, message }),
    annotate: (p, annotations) => {
      annotated.push({ pod: p.name, annotations });
      return Promise.resolve();
    },
    attempts: 1,
    destroyDelayMs: 0,
  });
  return { cache, driver, refused, vnpu, annotated };
}

const ids = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `npu-core-${from + i}`);

async function rejection(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  return p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: { code: number; message: string }) => e,
  );
}

describe('C.3 dynamic mode: pick and create', () => {
  test('a vNPU of the annotated template is created on the annotated chip and named as B.3 says', async () => {
    const { vnpu, driver, cache } = setup([pod('p1', '1-vir02', 2)]);
    const a = await vnpu.allocate(ids(2), snapshot());
    expect(a.virtual).toBe(true);
    expect(a.real.map((d) => [d.id, d.vdevId, d.phyId])).toEqual([['Ascend310P-2c-100-1', 100, 1]]);
    expect(driver.list(chip(1)).map((v) => v.templateName)).toEqual(['vir02']);
    expect(cache.get('p1')!.annotations['predicate-time']).toBe(PREDICATE_TIME_USED);
    expect([...vnpu.used()]).toEqual([
      ['npu-core-0', 1],
      ['npu-core-1', 1],
    ]);
  });

  test('I.3 the pod gets kltDev (sorted kubelet IDs) and AscendReal (the vNPU with _<vfgId>)', async () => {
    const { vnpu, annotated } = setup([pod('p1', '1-vir02', 2)]);
    await vnpu.allocate(['npu-core-9', 'npu-core-10'], snapshot());
    expect(annotated).toEqual([
      {
        pod: 'p1',
        annotations: {
          'huawei.com/kltDev': 'npu-core-10,npu-core-9',
          'huawei.com/AscendReal': 'Ascend310P-2c-100-1_0',
        },
      },
    ]);
  });

  test('the oldest predicate-time wins among pods asking for the same number of cores', async () => {
    const { vnpu } = setup([
      pod('young', '0-vir02', 2, { 'predicate-time': '20' }),
      pod('old', '2-vir02', 2, { 'predicate-time': '5' }),
    ]);
    const a = await vnpu.allocate(ids(2), snapshot());
    expect(a.real[0]!.phyId).toBe(2);
  });

  test('whole chips map cores-per-chip consecutive cores to each chip, no vNPU', async () => {
    const { vnpu, driver } = setup([pod('p1', '0,2', 16)]);
    const a = await vnpu.allocate(ids(16), snapshot());
    expect(a).toMatchObject({ virtual: false });
    expect(a.real.map((d) => d.id)).toEqual(['Ascend310P-0', 'Ascend310P-2']);
    expect(vnpu.used().get('npu-core-7')).toBe(0);
    expect(vnpu.used().get('npu-core-8')).toBe(2);
    expect(driver.creates).toBe(0);
  });

  test('unused vNPUs are destroyed before a create (upstream DestroyNotUsedVNPU)', async () => {
    const { vnpu, driver } = setup([pod('p1', '1-vir04', 4)]);
    driver.vnpus.set(1, [{ vdevId: 105, templateName: 'vir04', vfgId: 0, cores: 4 }]);
    driver.vnpus.set(2, [{ vdevId: 100, templateName: 'vir08', vfgId: 0, cores: 8 }]);
    await vnpu.allocate(ids(4), snapshot());
    expect(driver.list(chip(1)).map((v) => v.vdevId)).not.toContain(105);
    expect(driver.list(chip(2))).toEqual([]);
  });
});

describe('Bad input: refusals name the pod, report it, and leave nothing created', () => {
  test('a template the chip kind does not offer: NPUSegmentFailed before any DCMI call', async () => {
    const { vnpu, driver, refused } = setup([pod('p1', '0-vir16', 16)]);
    const e = await rejection(vnpu.allocate(ids(16), snapshot()));
    expect(e.message).toMatch(
      /^NPUSegmentFailed: pod default\/p1: template vir16 is not a vNPU template of Ascend310P/,
    );
    expect(driver.creates).toBe(0);
    expect(refused).toEqual([{ pod: { namespace: 'default', name: 'p1', uid: 'p1' }, message: e.message }]);
  });

  test('a DCMI create failure (full chip): NPUSegmentFailed with the DCMI text, nothing recorded', async () => {
    const { vnpu, driver } = setup([pod('p1', '1-vir02', 2)]);
    driver.failCreate = new Error('dcmi_create_vdevice returned -8008');
    const e = await rejection(vnpu.allocate(ids(2), snapshot()));
    expect(e.message).toContain('NPUSegmentFailed: pod default/p1: creating a vir02 vNPU on Ascend310P-1 failed');
    expect(e.message).toContain('-8008');
    expect(vnpu.used().size).toBe(0);
  });

  test('a phy id not on the node: NoNPUResource', async () => {
    const { vnpu } = setup([pod('p1', '0,7', 16)]);
    const e = await rejection(vnpu.allocate(ids(16), snapshot()));
    expect(e.message).toContain('NoNPUResource: pod default/p1: annotation huawei.com/npu-core names phy id(s) 7');
  });

  test('an Unhealthy chip is refused (FAILED_PRECONDITION) before its vNPU is created', async () => {
    const { vnpu, driver } = setup([pod('p1', '1-vir02', 2)]);
    const e = await rejection(vnpu.allocate(ids(2), snapshot([chip(0), chip(1, 'Unhealthy')])));
    expect(e.code).toBe(status.FAILED_PRECONDITION);
    expect(e.message).toContain('Ascend310P-1 is Unhealthy');
    expect(driver.creates).toBe(0);
  });

  test('a malformed annotation is named with its pod in the refusal and reported on that pod', async () => {
    const { vnpu, refused } = setup([pod('odd', 'one-two-three', 2)]);
    const e = await rejection(vnpu.allocate(ids(2), snapshot()));
    expect(e.message).toContain('pod default/odd: annotation huawei.com/npu-core "one-two-three"');
    expect(refused.map((r) => r.pod.name)).toEqual(['odd']);
  });

  test('no pod asks for that many cores: FAILED_PRECONDITION saying so', async () => {
    const { vnpu } = setup([pod('p1', '1-vir02', 2)]);
    const e = await rejection(vnpu.allocate(ids(4), snapshot()));
    expect(e.message).toContain('no pending pod on this node has annotation huawei.com/npu-core for 4 AI core(s)');
  });

  test('a pod that cannot be marked as allocated is refused with INTERNAL and nothing is created', async () => {
    const { vnpu, cache, driver } = setup([pod('p1', '1-vir02', 2)]);
    cache.failMarkWith = new Error('apiserver down');
    const e = await rejection(vnpu.allocate(ids(2), snapshot()));
    expect(e.code).toBe(status.INTERNAL);
    expect(driver.creates).toBe(0);
  });
});

describe('D.2 step 1: release', () => {
  test('the vNPU of a deleted pod is destroyed and its cores are free again', async () => {
    const { vnpu, driver, cache } = setup([pod('p1', '1-vir02', 2)]);
    await vnpu.allocate(ids(2), snapshot());
    expect(await vnpu.release(snapshot())).toEqual([]);
    cache.remove('p1');
    expect(await vnpu.release(snapshot())).toEqual(['Ascend310P-2c-100-1']);
    expect(driver.list(chip(1))).toEqual([]);
    expect(vnpu.used().size).toBe(0);
  });

  test('a vNPU named in a pod AscendReal (with its _vfgId) is kept', async () => {
    const { vnpu, driver } = setup([
      pod('p1', '1-vir02', 2, { 'huawei.com/AscendReal': 'Ascend310P-2c-100-1_0', 'predicate-time': '1' }),
    ]);
    driver.vnpus.set(1, [{ vdevId: 100, templateName: 'vir02', vfgId: 0, cores: 2 }]);
    expect(await vnpu.release(snapshot())).toEqual([]);
  });

  test('after a restart, an allocated pod (predicate-time 2^64-1) keeps one vNPU of its template on its chip', async () => {
    const { vnpu, driver } = setup([pod('p1', '1-vir02', 2, { 'predicate-time': PREDICATE_TIME_USED })]);
    driver.vnpus.set(1, [
      { vdevId: 100, templateName: 'vir02', vfgId: 0, cores: 2 },
      { vdevId: 101, templateName: 'vir02', vfgId: 1, cores: 2 },
    ]);
    expect(await vnpu.release(snapshot())).toEqual(['Ascend310P-2c-101-1']);
    expect(driver.list(chip(1)).map((v) => v.vdevId)).toEqual([100]);
  });

  test('nothing is destroyed before the pod cache has its first list (a restart with running pods)', async () => {
    const cache = new InMemoryPodCache();
    const driver = new FakeDriver();
    driver.vnpus.set(1, [{ vdevId: 100, templateName: 'vir02', vfgId: 0, cores: 2 }]);
    let listed = false;
    const vnpu = new DynamicVnpu({
      type: 'Ascend310P',
      kind: 'Ascend310P',
      coresPerChip: CORES,
      driver,
      podCache: cache,
      logger: NOOP_LOGGER,
      ready: () => listed,
    });
    expect(await vnpu.release(snapshot())).toEqual([]);
    expect(driver.list(chip(1))).toHaveLength(1);
    listed = true;
    expect(await vnpu.release(snapshot())).toEqual(['Ascend310P-2c-100-1']);
  });

  test('dcmi-abi §4.6 a failing destroy is retried (3 attempts)', async () => {
    const { vnpu, driver } = setup();
    driver.vnpus.set(0, [{ vdevId: 100, templateName: 'vir01', vfgId: 0, cores: 1 }]);
    driver.failDestroy = 2;
    expect(await vnpu.release(snapshot())).toEqual(['Ascend310P-1c-100-0']);
  });

  test('B.3 a vNPU of a template unknown to the agent is left alone', async () => {
    const { vnpu, driver } = setup();
    driver.vnpus.set(0, [{ vdevId: 100, templateName: 'custom7', vfgId: 0, cores: 1 }]);
    expect(await vnpu.release(snapshot())).toEqual([]);
    expect(driver.list(chip(0))).toHaveLength(1);
  });
});
