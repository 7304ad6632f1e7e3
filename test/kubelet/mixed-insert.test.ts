/**
 * Issue 17 item 4: 310P mixed insert (`-use310PMixedInsert=true`). Spec B.3 (per-product-type resources
 * `Ascend310P-V`, `Ascend310P-VPro`, `Ascend310P-IPro`, names `<type>-<phy>`), A.1 (the product-type rule), H.3.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { mixedInsertType } from '../../src/core/device-names.js';
import { FaultEngine } from '../../src/faults/index.js';
import { buildDeviceList } from '../../src/kube/device-info.js';
import { deviceInfoViewOf } from '../../src/kube/device-info-view.js';
import { StoreDeviceSource, toDeviceSnapshot } from '../../src/kubelet/store-device-source.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from '../health/fake-clock.js';
import { startHarness, type Harness } from './harness.js';

const SEPARATE = 0x80e18402;
const TYPES: ReadonlyMap<number, string> = new Map([
  [0, 'Ascend310P-VPro'],
  [1, 'Ascend310P-V'],
  [2, 'Ascend310P-IPro'],
  [3, 'Ascend310P-IPro'],
]);

function store310p(chips = 4): NodeStateStore {
  const list = Array.from({ length: chips }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  return new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips: list, runMode: 'Ascend310P' }),
    chips: list,
    node: { chipKind: 'Ascend310P', boardId: 0x35, productTypes: ['Atlas 300V Pro', 'Atlas 300V', 'Atlas 300I Pro'] },
    clock: new FakeClock(),
    listWatchPeriodMs: 5000,
    runMode: 'Ascend310P',
  });
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('B.3 mixed-insert device types', () => {
  test('B.3 upstream Get310PProductType: 300V Pro, 300V, 300I Pro; anything else cannot be mixed', () => {
    expect(mixedInsertType('Atlas 300V Pro')).toBe('Ascend310P-VPro');
    expect(mixedInsertType('Atlas 300V')).toBe('Ascend310P-V');
    expect(mixedInsertType('Atlas 300I Pro')).toBe('Ascend310P-IPro');
    expect(mixedInsertType('Atlas 300I Duo')).toBeUndefined();
    expect(mixedInsertType('toString')).toBeUndefined();
  });

  test('B.3 chips grouped by product type, one device type each, named <type>-<phy>', () => {
    const snap = toDeviceSnapshot(store310p().snapshot(), { mixedTypes: TYPES });
    const ids = Object.fromEntries(Object.entries(snap.deviceTypes).map(([t, d]) => [t, d.map((x) => x.id)]));
    expect(ids).toEqual({
      'Ascend310P-VPro': ['Ascend310P-VPro-0'],
      'Ascend310P-V': ['Ascend310P-V-1'],
      'Ascend310P-IPro': ['Ascend310P-IPro-2', 'Ascend310P-IPro-3'],
    });
  });

  test('B.3 a chip without a type is not advertised', () => {
    const snap = toDeviceSnapshot(store310p().snapshot(), { mixedTypes: new Map([[2, 'Ascend310P-IPro']]) });
    expect(
      Object.values(snap.deviceTypes)
        .flat()
        .map((d) => d.id),
    ).toEqual(['Ascend310P-IPro-2']);
  });

  test('C.1 a fault on chip 3 reaches the IPro type only', () => {
    const store = store310p();
    const src = new StoreDeviceSource(store, { mixedTypes: TYPES });
    store.applyEvents([{ logicId: 3, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    const unhealthy = Object.values(src.snapshot().deviceTypes)
      .flat()
      .filter((d) => d.health === 'Unhealthy')
      .map((d) => d.id);
    expect(unhealthy).toEqual(['Ascend310P-IPro-3']);
    src.close();
  });
});

describe('C.3 one device-plugin server per product type', () => {
  test('A.4/C.3 three resources registered; Allocate on each maps to its chip; an ID of another type is unknown', async () => {
    const source = new StoreDeviceSource(store310p(), { mixedTypes: TYPES });
    h = await startHarness({ snapshot: source.snapshot(), manager: { useAscendDocker: true } });
    for (const t of ['Ascend310P-V', 'Ascend310P-VPro', 'Ascend310P-IPro']) {
      await h.sim.waitForRegistration(`huawei.com/${t}`);
    }
    expect(h.sim.devices('huawei.com/Ascend310P-IPro')!.map((d) => d.ID)).toEqual([
      'Ascend310P-IPro-2',
      'Ascend310P-IPro-3',
    ]);
    const c = (await h.sim.allocate('huawei.com/Ascend310P-V', [['Ascend310P-V-1']])).containerResponses[0]!;
    expect(c.envs.ASCEND_VISIBLE_DEVICES).toBe('1');
    const err = await h.sim.allocate('huawei.com/Ascend310P-V', [['Ascend310P-IPro-2']]).then(
      () => undefined,
      (e: unknown) => e as { details: string },
    );
    expect(err?.details).toContain('unknown device ID "Ascend310P-IPro-2" for huawei.com/Ascend310P-V');
    source.close();
  });
});

describe('H.3 device-info on a mixed node (as upstream)', () => {
  function list(faultOn?: number): Record<string, string> {
    const store = store310p();
    if (faultOn !== undefined)
      store.applyEvents([{ logicId: faultOn, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    const o = {
      runMode: 'Ascend310P' as const,
      resourceName: 'huawei.com/Ascend310P',
      superPodId: -2,
      serverIndex: -2,
    };
    return buildDeviceList(deviceInfoViewOf(store.snapshot().chips, { ...o, mixedTypes: TYPES }, 0));
  }

  test('H.3 the schedulable list huawei.com/Ascend310P is empty (upstream reads the Ascend310P type)', () => {
    expect(list()['huawei.com/Ascend310P']).toBe('');
  });

  test('H.3 -Unhealthy and the fault list name the chip by its per-type name', () => {
    const l = list(1);
    expect(l['huawei.com/Ascend310P-Unhealthy']).toBe('Ascend310P-V-1');
    const faults = JSON.parse(l['huawei.com/Ascend310P-Fault']!) as { npu_name: string }[];
    expect(faults.map((f) => f.npu_name)).toEqual(['Ascend310P-V-1']);
  });
});
