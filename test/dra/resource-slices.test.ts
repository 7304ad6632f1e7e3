/**
 * Issue [DRA] items 2 and 5: the pool projected from the store's snapshot (src/dra/resource-slices.ts) — Huawei's
 * device names and attributes, ours beside them, taints, partitions with shared counters — and cut into slices within
 * the API's per-slice limits, each slice checked by the stand-in's copy of the real server's validation.
 */
import { describe, expect, test } from '@jest/globals';
import { parseDraDeviceName, draChipName, draPartitionName, DRA_DRIVER } from '../../src/core/dra-devices.js';
import { TaintTimes } from '../../src/dra/device-taints.js';
import type { Device, DeviceAttribute } from '../../src/dra/dra-types.js';
import { chipPartitions, templateHbmBytes } from '../../src/dra/partitions.js';
import {
  hccsGroupOf,
  poolOf,
  sliceName,
  slicesOf,
  SLICE_MAX_DEVICES,
  type DraInventory,
} from '../../src/dra/resource-slices.js';
import { RESOURCE_SLICES } from '../../src/sim/kube-api-types.js';
import { validateDra } from '../../src/sim/kube-api-dra.js';
import { testStore } from '../state/helpers.js';

const GIB = 1024 ** 3;
const INV: DraInventory = {
  kind: 'Ascend910B',
  node: { chipKind: 'Ascend910B', boardId: 0x24 },
  chipName: '910B3',
  aiCores: 20,
  hbmBytes: 64 * GIB,
  superPodId: -2,
  serverIndex: -2,
  chips: () => new Map([[1, { superDeviceId: 17 }]]),
};

const attr = (d: Device, k: string): DeviceAttribute | undefined => d.attributes?.[k];
/** Each slice as the real server would validate it (the stand-in's copy of its rules). */
function validSlices(specs: ReturnType<typeof slicesOf>): void {
  specs.forEach((spec, i) =>
    validateDra(RESOURCE_SLICES, {
      metadata: { name: sliceName('node-a', i) },
      spec: { ...spec, pool: { ...spec.pool, generation: 1 } },
    }),
  );
}

describe("issue [DRA] 2 Huawei's device names and attributes", () => {
  test("device name = Huawei's released name and phy id, lower-cased: ascend910-<phy>, A5 npu-<phy>", () => {
    expect(draChipName('Ascend910B', 3)).toBe('ascend910-3');
    expect(draChipName('Ascend910A3', 15)).toBe('ascend910-15');
    expect(draChipName('Ascend910A5', 7)).toBe('npu-7');
    expect(draChipName('Ascend310P', 2)).toBe('ascend310p-2');
  });

  test('deviceType is the chip kind (string) and physicId the phy id (int), as in their driver', () => {
    const { store } = testStore({ chips: 4 });
    const pool = poolOf(store.snapshot(), INV, new TaintTimes());
    const d = pool.devices.find((x) => x.name === 'ascend910-1')!;
    expect(attr(d, 'deviceType')).toEqual({ string: 'Ascend910B' });
    expect(attr(d, 'physicId')).toEqual({ int: 1 });
  });

  test('a device name parses back to its phy id, and a partition to its template and index', () => {
    expect(parseDraDeviceName('ascend910-3')).toEqual({ phyId: 3 });
    expect(parseDraDeviceName(draPartitionName('Ascend910B', 3, 'vir10_3c_16g_nm', 1))).toEqual({
      phyId: 3,
      template: 'vir10_3c_16g_nm',
      index: 1,
    });
    expect(parseDraDeviceName('npu-3', 'Ascend910B')).toBeUndefined();
    expect(parseDraDeviceName('ascend910-300')).toBeUndefined();
    expect(parseDraDeviceName('Ascend910-3')).toBeUndefined();
    expect(parseDraDeviceName('ascend910-3x')).toBeUndefined();
  });
});

describe('issue [DRA] 2 what a scheduler needs beside them', () => {
  test('logic id, card, die, HCCS group, network health, partition, parent on every chip; B.7 where known', () => {
    const { store } = testStore({ chips: 4 });
    const pool = poolOf(store.snapshot(), { ...INV, superPodId: 5, serverIndex: 2, rackId: 1 }, new TaintTimes());
    const d = pool.devices.find((x) => x.name === 'ascend910-1')!;
    expect(d.attributes).toMatchObject({
      logicId: { int: 1 },
      cardId: { int: 1 },
      deviceId: { int: 0 },
      hccsGroup: { int: 0 },
      networkHealthy: { bool: true },
      partition: { string: 'chip' },
      parentDevice: { string: 'ascend910-1' },
      superPodId: { int: 5 },
      serverIndex: { int: 2 },
      superDeviceId: { int: 17 },
      rackId: { int: 1 },
      chipName: { string: '910B3' },
    });
    expect(d.capacity).toEqual({ aiCore: { value: '20' }, hbm: { value: '64Gi' } });
  });

  test('unknown facts (-2 super pod, no NUMA node, no super-device id) are left out, not published as -2', () => {
    const { store } = testStore({ chips: 4 });
    const d = poolOf(store.snapshot(), INV, new TaintTimes()).devices.find((x) => x.name === 'ascend910-0')!;
    expect(Object.keys(d.attributes!)).not.toEqual(expect.arrayContaining(['superPodId']));
    expect(d.attributes!.superPodId).toBeUndefined();
    expect(d.attributes!.numaNode).toBeUndefined();
    expect(d.attributes!.superDeviceId).toBeUndefined();
  });

  test('an AI-core count that is a failed-read marker (8255, B.6) is not published', () => {
    const { store } = testStore({ chips: 2 });
    const d = poolOf(store.snapshot(), { ...INV, aiCores: 8255 }, new TaintTimes()).devices[0]!;
    expect(d.capacity).toEqual({ hbm: { value: '64Gi' } });
  });

  test('HCCS group: ring of 8 on a 910B board, each chip alone on a standalone board (J.3)', () => {
    const chip = (logicId: number) => ({ logicId, cardId: logicId, deviceId: 0 });
    expect([0, 7, 8, 15].map((i) => hccsGroupOf(chip(i), { chipKind: 'Ascend910B', boardId: 0x24 }))).toEqual([
      0, 0, 1, 1,
    ]);
    expect([0, 7].map((i) => hccsGroupOf(chip(i), { chipKind: 'Ascend910B', boardId: 0x28 }))).toEqual([0, 7]);
    expect(
      hccsGroupOf(
        { logicId: 5, cardId: 3, deviceId: 1 },
        { chipKind: 'Ascend910A3', boardId: 0xb0, brotherCards: { 3: 2 } },
      ),
    ).toBe(2);
  });

  test('network health follows the snapshot', () => {
    const { store } = testStore({ chips: 2 });
    const snap = store.snapshot();
    const state = {
      ...snap,
      chips: snap.chips.map((c) => (c.logicId === 1 ? { ...c, networkHealth: 'Unhealthy' as const } : c)),
    };
    const pool = poolOf(state, INV, new TaintTimes());
    expect(pool.devices.map((d) => d.attributes!.networkHealthy)).toEqual([{ bool: true }, { bool: false }]);
  });
});

describe('issue [DRA] 3 taints and binding conditions in the pool', () => {
  test("a fault taints its chip's device and only that one", () => {
    const { store } = testStore({ chips: 4 });
    store.start();
    store.applyEvents([{ logicId: 2, code: 0x80e18402, assertion: 'occur', severity: 2 }]);
    const pool = poolOf(store.snapshot(), INV, new TaintTimes());
    expect(pool.devices.map((d) => (d.taints ?? []).map((t) => t.key))).toEqual([
      [],
      [],
      ['npu.huawei.com/SeparateNPU'],
      [],
    ]);
    expect(pool.devices[2]!.taints![0]!.timeAdded).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test('a chip under reset carries the binding conditions; the others none', () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    store.setResetOverrides(new Set(), new Set(), new Set([0]));
    const pool = poolOf(store.snapshot(), INV, new TaintTimes());
    expect(pool.devices[0]!.bindingConditions).toEqual(['npu.huawei.com/ChipReady']);
    expect(pool.devices[0]!.bindingFailureConditions).toEqual(['npu.huawei.com/ChipFailed']);
    expect(pool.devices[1]!.bindingConditions).toBeUndefined();
  });

  test('-deviceApi=both: a chip held through the device plugin is withdrawn, with its partitions', () => {
    const { store } = testStore({ chips: 2 });
    const pool = poolOf(store.snapshot(), INV, new TaintTimes(), { partitions: true, withdrawn: new Set([1]) });
    expect(pool.devices.filter((d) => d.attributes!.physicId!.int === 1)).toEqual([]);
    expect(pool.devices.some((d) => d.name === 'ascend910-0')).toBe(true);
    // its counter set stays: nothing can consume it while no device of the chip is offered
    expect(pool.counterSets.map((c) => c.name)).toEqual(['ascend910-0', 'ascend910-1']);
  });
});

describe('issue [DRA] 5 partitionable vNPU: templates as partitions of a chip with shared counters', () => {
  test('HBM of a template from its name', () => {
    expect(templateHbmBytes('vir05_1c_16g')).toBe(16 * GIB);
    expect(templateHbmBytes('vir10_3c_16g_nm')).toBe(16 * GIB);
    expect(templateHbmBytes('vir04_3c')).toBeUndefined();
  });

  test('as many partitions of each template as fit the chip alone (cores and HBM)', () => {
    const parts = chipPartitions('Ascend910B', 0, 20, 64 * GIB);
    const count = (t: string): number => parts.filter((p) => p.template === t).length;
    expect(count('vir03_1c_8g')).toBe(6); // ⌊20/3⌋
    expect(count('vir05_1c_16g')).toBe(4);
    expect(count('vir10_3c_32g')).toBe(2); // ⌊20/10⌋, ⌊64/32⌋
    expect(count('vir12_3c_32g')).toBe(1);
    // HBM bounds it: 32 GiB of HBM holds one 32g partition
    expect(chipPartitions('Ascend910B', 0, 20, 32 * GIB).filter((p) => p.template === 'vir10_3c_32g')).toHaveLength(1);
  });

  test('no partitions for a kind without templates, or without a core count read', () => {
    expect(chipPartitions('Ascend910', 0, 32, 32 * GIB)).toEqual([]);
    expect(chipPartitions('Ascend910B', 0, 8255, 64 * GIB)).toEqual([]);
    expect(chipPartitions('Ascend910B', 0, undefined, 64 * GIB)).toEqual([]);
  });

  test('310P templates name no memory: they consume AI cores only', () => {
    const parts = chipPartitions('Ascend310P', 0, 8, undefined);
    expect(parts.map((p) => p.template)).toContain('vir04');
    expect(parts.every((p) => p.hbmBytes === undefined)).toBe(true);
  });

  test('the chip consumes every counter of its set; a partition its cores and memory', () => {
    const { store } = testStore({ chips: 1 });
    const pool = poolOf(store.snapshot(), INV, new TaintTimes(), { partitions: true });
    expect(pool.counterSets).toEqual([
      { name: 'ascend910-0', counters: { aicore: { value: '20' }, hbm: { value: '64Gi' } } },
    ]);
    const chip = pool.devices.find((d) => d.name === 'ascend910-0')!;
    expect(chip.consumesCounters).toEqual([
      { counterSet: 'ascend910-0', counters: { aicore: { value: '20' }, hbm: { value: '64Gi' } } },
    ]);
    const p = pool.devices.find((d) => d.name === 'ascend910-0-vir05-1c-16g-0')!;
    expect(p.consumesCounters).toEqual([
      { counterSet: 'ascend910-0', counters: { aicore: { value: '5' }, hbm: { value: '16Gi' } } },
    ]);
    expect(p.attributes).toMatchObject({
      partition: { string: 'vir05_1c_16g' },
      parentDevice: { string: 'ascend910-0' },
    });
    expect(p.capacity).toEqual({ aiCore: { value: '5' }, hbm: { value: '16Gi' } });
  });

  test('no partition consumes more than its chip has; the sum of one template fits', () => {
    const { store } = testStore({ chips: 1 });
    const pool = poolOf(store.snapshot(), INV, new TaintTimes(), { partitions: true });
    const set = pool.counterSets[0]!;
    const byTemplate = new Map<string, number>();
    for (const d of pool.devices.filter((x) => x.attributes!.partition!.string !== 'chip')) {
      const cores = Number(d.consumesCounters![0]!.counters.aicore!.value);
      expect(cores).toBeLessThanOrEqual(Number(set.counters.aicore!.value));
      const t = d.attributes!.partition!.string!;
      byTemplate.set(t, (byTemplate.get(t) ?? 0) + cores);
    }
    for (const sum of byTemplate.values()) expect(sum).toBeLessThanOrEqual(20);
  });

  test("a faulty chip's partitions carry its taints", () => {
    const { store } = testStore({ chips: 1 });
    store.start();
    store.applyEvents([{ logicId: 0, code: 0x80e18402, assertion: 'occur', severity: 2 }]);
    const pool = poolOf(store.snapshot(), INV, new TaintTimes(), { partitions: true });
    expect(pool.devices.length).toBeGreaterThan(20);
    for (const d of pool.devices) expect(d.taints?.map((t) => t.key)).toEqual(['npu.huawei.com/SeparateNPU']);
  });
});

describe('issue [DRA] 2 slices within the per-slice limits of the API', () => {
  test('one pool named after the node, every slice with the node name, the driver, the right slice count', () => {
    const { store } = testStore({ chips: 16 });
    const specs = slicesOf(poolOf(store.snapshot(), INV, new TaintTimes(), { partitions: true }), 'node-a');
    expect(specs.length).toBeGreaterThan(1);
    for (const s of specs) {
      expect(s).toMatchObject({
        driver: DRA_DRIVER,
        nodeName: 'node-a',
        pool: { name: 'node-a', resourceSliceCount: specs.length },
      });
    }
    validSlices(specs);
  });

  test('16 chips with partitions: ≤ 64 devices per slice, ≤ 8 counter sets, devices and counters never together', () => {
    const { store } = testStore({ chips: 16 });
    const pool = poolOf(store.snapshot(), INV, new TaintTimes(), { partitions: true });
    const specs = slicesOf(pool, 'node-a');
    for (const s of specs) {
      expect((s.devices ?? []).length).toBeLessThanOrEqual(SLICE_MAX_DEVICES);
      expect((s.sharedCounters ?? []).length).toBeLessThanOrEqual(8);
      expect(s.devices !== undefined && s.sharedCounters !== undefined).toBe(false);
    }
    expect(specs.flatMap((s) => s.devices ?? [])).toEqual(pool.devices);
    expect(specs.flatMap((s) => s.sharedCounters ?? [])).toHaveLength(16);
    expect(specs.filter((s) => s.sharedCounters !== undefined)).toHaveLength(2);
  });

  test("a chip's devices stay in one slice", () => {
    const { store } = testStore({ chips: 16 });
    const specs = slicesOf(poolOf(store.snapshot(), INV, new TaintTimes(), { partitions: true }), 'node-a');
    const sliceOf = new Map<string, number>();
    specs.forEach((s, i) => {
      for (const d of s.devices ?? []) {
        const parent = d.attributes!.parentDevice!.string!;
        expect(sliceOf.get(parent) ?? i).toBe(i);
        sliceOf.set(parent, i);
      }
    });
  });

  test('8 chips without partitions: one slice', () => {
    const { store } = testStore({ chips: 8 });
    const specs = slicesOf(poolOf(store.snapshot(), INV, new TaintTimes()), 'node-a');
    expect(specs).toHaveLength(1);
    expect(specs[0]!.devices).toHaveLength(8);
    validSlices(specs);
  });

  test('a pool with nothing to offer is one slice without devices (the pool stays)', () => {
    const { store } = testStore({ chips: 2 });
    const specs = slicesOf(poolOf(store.snapshot(), INV, new TaintTimes(), { withdrawn: new Set([0, 1]) }), 'node-a');
    expect(specs).toEqual([
      {
        driver: DRA_DRIVER,
        pool: { name: 'node-a', generation: 0, resourceSliceCount: 1 },
        nodeName: 'node-a',
        devices: [],
      },
    ]);
    validSlices(specs);
  });

  test('the stand-in refuses what the real server refuses: 65 tainted devices in one slice', () => {
    const devices = Array.from({ length: 65 }, (_, i) => ({
      name: `d-${i}`,
      taints: [{ key: 'npu.huawei.com/SeparateNPU', effect: 'NoExecute' }],
    }));
    const obj = {
      metadata: { name: 's' },
      spec: { driver: DRA_DRIVER, nodeName: 'n', pool: { name: 'n', generation: 1, resourceSliceCount: 1 }, devices },
    };
    expect(() => validateDra(RESOURCE_SLICES, obj)).toThrow(/spec.devices: Too many: 65: must have at most 64 items/);
    obj.spec.devices = devices.slice(0, 64);
    expect(() => validateDra(RESOURCE_SLICES, obj)).not.toThrow();
  });

  test('slice names: <node>-npu.huawei.com-<i>; a long node name is cut and hashed, still unique and ≤ 253', () => {
    expect(sliceName('node-a', 2)).toBe('node-a-npu.huawei.com-2');
    const long1 = `${'a'.repeat(240)}.example1`;
    const long2 = `${'a'.repeat(240)}.example2`;
    const n1 = sliceName(long1, 0);
    expect(n1.length).toBeLessThanOrEqual(253);
    expect(n1).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
    expect(n1).not.toBe(sliceName(long2, 0));
  });
});
