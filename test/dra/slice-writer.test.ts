/**
 * Issue [DRA] item 2: the ResourceSlice writer (src/dra/slice-writer.ts) against the Kubernetes API stand-in over real
 * HTTP, through the agent's own client (KubeClient.requestJson): written on change only, the generation bumped on
 * every change, the slice count right, taints written from faults and lifted on recovery, an agent restart that
 * writes nothing and keeps the taints' times, slices put back when someone else changes or deletes them, conflicts
 * and outages retried, another node's slices never touched.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { SYSTEM_CLOCK } from '../../src/core/clock.js';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { draApiOf, type DraApi } from '../../src/dra/dra-api.js';
import type { ResourceSlice } from '../../src/dra/dra-types.js';
import { poolOf, slicesOf, type DraInventory, type PoolOptions } from '../../src/dra/resource-slices.js';
import { ResourceSliceWriter } from '../../src/dra/slice-writer.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { DRA_RESOURCES, KubeApiStandIn, RESOURCE_SLICES } from '../../src/sim/kube-api.js';
import type { NodeStateStore } from '../../src/state/store.js';
import { FakeClock } from '../health/fake-clock.js';
import { testStore } from '../state/helpers.js';

const NODE = 'node-a';
const SEP = 0x80e18402;
const INV: DraInventory = {
  kind: 'Ascend910B',
  node: { chipKind: 'Ascend910B', boardId: 0x24 },
  aiCores: 20,
  hbmBytes: 64 * 1024 ** 3,
};

let api: KubeApiStandIn;
let client: KubeClient;
let dra: DraApi;
let writers: ResourceSliceWriter[];

beforeEach(async () => {
  api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES });
  client = new KubeClient({ server: api.url, token: 't' });
  dra = draApiOf(client);
  writers = [];
});

afterEach(async () => {
  for (const w of writers) w.stop();
  client.close();
  await api.stop();
});

function writerFor(
  store: NodeStateStore,
  o: { options?: () => PoolOptions; watch?: boolean; clock?: FakeClock; minIntervalMs?: number; api?: DraApi } = {},
): ResourceSliceWriter {
  const w = new ResourceSliceWriter({
    api: o.api ?? dra,
    ...(o.watch === true ? { watch: client.watch } : {}),
    nodeName: NODE,
    build: (times) => slicesOf(poolOf(store.snapshot(), INV, times, o.options?.() ?? {}), NODE),
    clock: o.clock ?? SYSTEM_CLOCK,
    minIntervalMs: o.minIntervalMs ?? 0,
    backoff: { initialMs: 20, maxMs: 200 },
  });
  store.onChange(() => w.changed());
  writers.push(w);
  return w;
}

const slices = (node = NODE): ResourceSlice[] =>
  api.store
    .list(RESOURCE_SLICES, undefined, [], [])
    .map((o) => o as unknown as ResourceSlice)
    .filter((s) => s.spec.nodeName === node)
    .sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
const writes = (): number => api.writeCount({ resource: 'resourceslices' });
const device = (name: string) =>
  slices()
    .flatMap((s) => s.spec.devices ?? [])
    .find((d) => d.name === name);
const occur = (logicId: number, code = SEP) => ({ logicId, code, assertion: 'occur' as const, severity: 2 });
const recover = (logicId: number, code = SEP) => ({ logicId, code, assertion: 'recover' as const, severity: 2 });

/** Polls (real time) until `cond` holds. */
async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('issue [DRA] 2 the pool written from the snapshot', () => {
  test('start: one slice, driver npu.huawei.com, pool = node name, generation 1, resourceSliceCount 1', async () => {
    const { store } = testStore({ chips: 4 });
    store.start();
    const w = writerFor(store);
    await w.start();
    await w.whenIdle();
    const [s, ...rest] = slices();
    expect(rest).toEqual([]);
    expect(s!.metadata.name).toBe('node-a-npu.huawei.com-0');
    expect(s!.spec).toMatchObject({
      driver: DRA_DRIVER,
      nodeName: NODE,
      pool: { name: NODE, generation: 1, resourceSliceCount: 1 },
    });
    expect(s!.spec.devices!.map((d) => d.name)).toEqual(['ascend910-0', 'ascend910-1', 'ascend910-2', 'ascend910-3']);
  });

  test('no write when nothing changed: idle cycles and change notices without a change write nothing', async () => {
    const { store, clock } = testStore({ chips: 4 });
    store.start();
    const w = writerFor(store);
    await w.start();
    await w.whenIdle();
    const before = writes();
    for (let i = 0; i < 20; i++) {
      store.tick();
      w.changed();
      await clock.advance(5000);
      await w.whenIdle();
    }
    expect(writes()).toBe(before);
    expect(w.stats.unchanged).toBeGreaterThan(0);
    expect(w.stats.poolWrites).toBe(1);
  });

  test('a fault taints its device, the generation is bumped; recovery lifts it and bumps it again', async () => {
    const { store } = testStore({ chips: 4 });
    store.start();
    const w = writerFor(store);
    await w.start();
    await w.whenIdle();
    store.applyEvents([occur(2)]);
    await w.whenIdle();
    expect(device('ascend910-2')!.taints).toEqual([
      expect.objectContaining({ key: 'npu.huawei.com/SeparateNPU', value: '80E18402', effect: 'NoExecute' }),
    ]);
    expect(device('ascend910-1')!.taints).toBeUndefined();
    expect(slices()[0]!.spec.pool.generation).toBe(2);
    store.applyEvents([recover(2)]);
    await w.whenIdle();
    expect(device('ascend910-2')!.taints).toBeUndefined();
    expect(slices()[0]!.spec.pool.generation).toBe(3);
  });

  test('agent restart with the state unchanged: no write, and a taint keeps its timeAdded', async () => {
    const { store, clock } = testStore({ chips: 4 });
    store.start();
    store.applyEvents([occur(1)]);
    const w1 = writerFor(store);
    await w1.start();
    await w1.whenIdle();
    const time = device('ascend910-1')!.taints![0]!.timeAdded;
    w1.stop();
    await clock.advance(3_600_000); // an hour later
    const before = writes();
    const w2 = writerFor(store);
    await w2.start();
    await w2.whenIdle();
    expect(writes()).toBe(before);
    // a further change is written with the time the restart adopted
    store.applyEvents([occur(3)]);
    await w2.whenIdle();
    expect(device('ascend910-1')!.taints![0]!.timeAdded).toBe(time);
    expect(device('ascend910-3')!.taints![0]!.timeAdded).not.toBe(time);
  });

  test('live slices of an older run: the generation continues past the highest live one', async () => {
    api.store.create(RESOURCE_SLICES, undefined, {
      metadata: { name: 'node-a-npu.huawei.com-0' },
      spec: {
        driver: DRA_DRIVER,
        nodeName: NODE,
        pool: { name: NODE, generation: 7, resourceSliceCount: 2 },
        devices: [],
      },
    });
    api.store.create(RESOURCE_SLICES, undefined, {
      metadata: { name: 'node-a-npu.huawei.com-1' },
      spec: {
        driver: DRA_DRIVER,
        nodeName: NODE,
        pool: { name: NODE, generation: 7, resourceSliceCount: 2 },
        devices: [],
      },
    });
    const { store } = testStore({ chips: 2 });
    const w = writerFor(store);
    await w.start();
    await w.whenIdle();
    expect(slices().map((s) => [s.metadata.name, s.spec.pool.generation, s.spec.pool.resourceSliceCount])).toEqual([
      ['node-a-npu.huawei.com-0', 8, 1],
    ]);
  });

  test("another node's slices are never listed as ours, changed or deleted", async () => {
    const other = {
      metadata: { name: 'node-b-npu.huawei.com-0' },
      spec: {
        driver: DRA_DRIVER,
        nodeName: 'node-b',
        pool: { name: 'node-b', generation: 3, resourceSliceCount: 1 },
        devices: [],
      },
    };
    api.store.create(RESOURCE_SLICES, undefined, other);
    const { store } = testStore({ chips: 2 });
    store.start();
    const w = writerFor(store);
    await w.start();
    store.applyEvents([occur(0)]);
    await w.whenIdle();
    expect(slices('node-b')).toEqual([expect.objectContaining({ spec: other.spec })]);
    expect(api.writeCount({ resource: 'resourceslices', name: 'node-b-npu.huawei.com-0' })).toBe(0); // seeded directly
  });
});

describe('issue [DRA] 2 the pool changes shape', () => {
  test('partitions on: several slices, one generation, resourceSliceCount = their number; off: the extra deleted', async () => {
    const { store } = testStore({ chips: 16 });
    store.start();
    let partitions = true;
    const w = writerFor(store, { options: () => ({ partitions }) });
    await w.start();
    await w.whenIdle();
    const many = slices();
    expect(many.length).toBeGreaterThan(2);
    expect(new Set(many.map((s) => s.spec.pool.generation))).toEqual(new Set([1]));
    expect(many.every((s) => s.spec.pool.resourceSliceCount === many.length)).toBe(true);
    partitions = false;
    w.changed();
    await w.whenIdle();
    expect(slices().map((s) => [s.metadata.name, s.spec.pool.generation, s.spec.pool.resourceSliceCount])).toEqual([
      ['node-a-npu.huawei.com-0', 2, 1],
    ]);
  });

  test('several slices: a fault on one chip rewrites its slice only, at the generation the pool has', async () => {
    const { store } = testStore({ chips: 16 });
    store.start();
    const w = writerFor(store, { options: () => ({ partitions: true }) });
    await w.start();
    await w.whenIdle();
    const before = slices();
    const sliceWrites = w.stats.sliceWrites;
    store.applyEvents([occur(5)]);
    await w.whenIdle();
    expect(w.stats.sliceWrites - sliceWrites).toBe(1);
    const after = slices();
    const changed = after.filter((s, i) => s.metadata.resourceVersion !== before[i]!.metadata.resourceVersion);
    expect(changed.map((s) => s.spec.devices!.some((d) => d.name === 'ascend910-5'))).toEqual([true]);
    expect(new Set(after.map((s) => s.spec.pool.generation))).toEqual(new Set([1]));
    // two chips in two slices at once: every slice, a new generation
    store.applyEvents([occur(0), occur(15)]);
    await w.whenIdle();
    expect(new Set(slices().map((s) => s.spec.pool.generation))).toEqual(new Set([2]));
  });

  test('-deviceApi=both: a chip allocated through the device plugin is withdrawn, and comes back when released', async () => {
    const { store } = testStore({ chips: 4 });
    store.start();
    let held = new Set<number>();
    const w = writerFor(store, { options: () => ({ withdrawn: held }) });
    await w.start();
    await w.whenIdle();
    held = new Set([2]);
    w.changed();
    await w.whenIdle();
    expect(device('ascend910-2')).toBeUndefined();
    held = new Set();
    w.changed();
    await w.whenIdle();
    expect(device('ascend910-2')).toBeDefined();
  });
});

describe('issue [DRA] 2 someone else changes our slices', () => {
  test('a deleted slice is written back (watch)', async () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    const w = writerFor(store, { watch: true });
    await w.start();
    await w.whenIdle();
    api.store.delete(RESOURCE_SLICES, undefined, 'node-a-npu.huawei.com-0');
    await until(() => slices().length === 1);
    expect(slices()[0]!.spec.pool.generation).toBe(2);
    expect(w.stats.foreignChanges).toBe(1);
  });

  test('a taint removed by hand is put back (watch)', async () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    store.applyEvents([occur(1)]);
    const w = writerFor(store, { watch: true });
    await w.start();
    await w.whenIdle();
    const s = slices()[0]!;
    const edited = structuredClone(s);
    delete edited.spec.devices![1]!.taints;
    api.store.update(RESOURCE_SLICES, undefined, s.metadata.name!, edited as never);
    await until(() => device('ascend910-1')?.taints !== undefined);
    expect(device('ascend910-1')!.taints![0]!.key).toBe('npu.huawei.com/SeparateNPU');
  });

  test('our own writes seen by the watch are not taken for foreign changes', async () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    const w = writerFor(store, { watch: true });
    await w.start();
    await w.whenIdle();
    for (let i = 0; i < 5; i++) {
      store.applyEvents([i % 2 === 0 ? occur(0) : recover(0)]);
      await w.whenIdle();
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(w.stats.foreignChanges).toBe(0);
    expect(w.stats.poolWrites).toBe(6);
  });

  test('409: a slice changed between our read and our write is read again and written', async () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    const w = writerFor(store); // no watch: the conflict is found by the write
    await w.start();
    await w.whenIdle();
    const s = slices()[0]!;
    api.store.update(RESOURCE_SLICES, undefined, s.metadata.name!, {
      ...(s as never as Record<string, unknown>),
      metadata: { ...s.metadata, labels: { touched: 'yes' } },
    });
    store.applyEvents([occur(0)]);
    await w.whenIdle();
    expect(device('ascend910-0')!.taints).toHaveLength(1);
    expect(w.stats.conflicts).toBeGreaterThanOrEqual(1);
  });
});

describe('issue [DRA] 2 failures', () => {
  test('API server down: retried with backoff, the final state written once it is back', async () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    const w = writerFor(store);
    await w.start();
    await w.whenIdle();
    api.setAvailable(false);
    store.applyEvents([occur(0)]);
    store.applyEvents([occur(1)]);
    await until(() => w.stats.failures >= 2);
    api.setAvailable(true);
    await w.whenIdle();
    expect(device('ascend910-0')!.taints).toHaveLength(1);
    expect(device('ascend910-1')!.taints).toHaveLength(1);
  });

  test('a slice the server refuses (422) is counted as rejected; the writer keeps going', async () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    let bad = true;
    const w = new ResourceSliceWriter({
      api: dra,
      nodeName: NODE,
      build: (times) => {
        const specs = slicesOf(poolOf(store.snapshot(), INV, times), NODE);
        if (bad) specs[0]!.devices![0]!.name = 'Not_A_Label';
        return specs;
      },
      minIntervalMs: 0,
    });
    writers.push(w);
    await w.start();
    await w.whenIdle();
    expect(w.stats.rejected).toBe(1);
    expect(slices()).toEqual([]);
    bad = false;
    w.changed();
    await w.whenIdle();
    expect(slices()).toHaveLength(1);
  });
});

describe('issue [DRA] 2 a fault storm', () => {
  test('writes are at least the minimum interval apart (monotonic clock), and the last state is written', async () => {
    const { store } = testStore({ chips: 8 });
    const clock = new FakeClock();
    store.start();
    const w = writerFor(store, { clock, minIntervalMs: 200 });
    await w.start();
    await w.whenIdle();
    const before = w.stats.poolWrites;
    for (let i = 0; i < 100; i++) {
      store.applyEvents([i % 2 === 0 ? occur(i % 8) : recover((i - 1) % 8)]);
      await clock.advance(10); // 100 changes in 1 s of monotonic time
      await new Promise((r) => setTimeout(r, 2));
    }
    await clock.advance(400);
    await w.whenIdle();
    const done = w.stats.poolWrites - before;
    expect(done).toBeGreaterThanOrEqual(1);
    expect(done).toBeLessThanOrEqual(7); // ≤ 1 s / 200 ms + the last
    const want = store.snapshot().chips.map((c) => c.level !== 'NormalNPU');
    expect(store.snapshot().chips.map((c) => (device(`ascend910-${c.phyId}`)!.taints ?? []).length > 0)).toEqual(want);
  });
});
