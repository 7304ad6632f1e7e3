/**
 * Issue [DRA] item 3: faults drive taints — the chip's state projected onto device taints (src/dra/device-taints.ts),
 * on a real store over the shipped fault policy.
 */
import { describe, expect, test } from '@jest/globals';
import { CHIP_FAILED_CONDITION, CHIP_READY_CONDITION } from '../../src/core/dra-devices.js';
import {
  bindingConditionsOf,
  chipTaints,
  codesValue,
  isResetting,
  metaTime,
  RESETTING_TAINT_KEY,
  TaintTimes,
  UNHEALTHY_TAINT_KEY,
  type TaintChip,
} from '../../src/dra/device-taints.js';
import { isLabelName } from '../../src/sim/kube-api-dra.js';
import { testStore } from '../state/helpers.js';

const SEPARATE = 0x80e18402; // SeparateNPUCodes
const PRESEPARATE = 0x8118043c; // PreSeparateNPUCodes
const RESTART_NPU = 0x8c03a000; // RestartNPUCodes
const RESTART_REQUEST = 0x80c98008; // RestartRequestCodes
const SUBHEALTH = 0x81a3880c; // SubHealthFaultCodes
const NOT_HANDLE = 0x80e21007; // NotHandleFaultCodes
const HBM = 0x80e01801; // shipped: 2 in 24 h → ManuallySeparateNPU

const occur = (logicId: number, code: number) => ({ logicId, code, assertion: 'occur' as const, severity: 2 });
const recover = (logicId: number, code: number) => ({ logicId, code, assertion: 'recover' as const, severity: 2 });

function taintsAfter(events: Parameters<ReturnType<typeof testStore>['store']['applyEvents']>[0]) {
  const { store } = testStore();
  store.start();
  store.applyEvents(events);
  return chipTaints(store.chip(1)!);
}

describe('issue [DRA] 3 fault levels become taints npu.huawei.com/<level>', () => {
  test('a healthy chip has no taint', () => {
    expect(taintsAfter([])).toEqual([]);
  });

  test('NotHandleFault has no taint (D.7: it stays Healthy)', () => {
    expect(taintsAfter([occur(1, NOT_HANDLE)])).toEqual([]);
  });

  test('SeparateNPU → NoExecute, value = the code', () => {
    expect(taintsAfter([occur(1, SEPARATE)])).toEqual([
      { key: 'npu.huawei.com/SeparateNPU', value: '80E18402', effect: 'NoExecute' },
    ]);
  });

  test('RestartNPU → NoExecute (the chip must be reset)', () => {
    expect(taintsAfter([occur(1, RESTART_NPU)])).toEqual([
      { key: 'npu.huawei.com/RestartNPU', value: '8C03A000', effect: 'NoExecute' },
    ]);
  });

  test('PreSeparateNPU → NoSchedule', () => {
    expect(taintsAfter([occur(1, PRESEPARATE)])).toEqual([
      { key: 'npu.huawei.com/PreSeparateNPU', value: '8118043C', effect: 'NoSchedule' },
    ]);
  });

  test('RestartRequest → NoSchedule (D.7 Unhealthy)', () => {
    expect(taintsAfter([occur(1, RESTART_REQUEST)])).toEqual([
      { key: 'npu.huawei.com/RestartRequest', value: '80C98008', effect: 'NoSchedule' },
    ]);
  });

  test('SubHealthFault → None (informational, still allocatable as in D.7)', () => {
    expect(taintsAfter([occur(1, SUBHEALTH)])).toEqual([
      { key: 'npu.huawei.com/SubHealthFault', value: '81A3880C', effect: 'None' },
    ]);
  });

  test('two levels at once give two taints, sorted by key', () => {
    const t = taintsAfter([occur(1, PRESEPARATE), occur(1, SEPARATE)]);
    expect(t.map((x) => [x.key, x.effect])).toEqual([
      ['npu.huawei.com/PreSeparateNPU', 'NoSchedule'],
      ['npu.huawei.com/SeparateNPU', 'NoExecute'],
    ]);
  });

  test('recovery removes the taint', () => {
    const { store } = testStore();
    store.start();
    store.applyEvents([occur(1, SEPARATE)]);
    expect(chipTaints(store.chip(1)!)).toHaveLength(1);
    store.applyEvents([recover(1, SEPARATE)]);
    expect(chipTaints(store.chip(1)!)).toEqual([]);
  });

  test('ManuallySeparateNPU (FaultFrequency) → NoSchedule; the operator release removes it', async () => {
    const { store, clock } = testStore();
    store.start();
    store.applyEvents([occur(1, HBM)]);
    await clock.advance(1000);
    store.applyEvents([recover(1, HBM)]);
    await clock.advance(1000);
    store.applyEvents([occur(1, HBM)]);
    await clock.advance(1000);
    store.applyEvents([recover(1, HBM)]);
    await clock.advance(1000);
    expect(store.chip(1)!.manuallySeparated).toBe(true);
    expect(chipTaints(store.chip(1)!)).toContainEqual(
      expect.objectContaining({ key: 'npu.huawei.com/ManuallySeparateNPU', effect: 'NoSchedule' }),
    );
    store.release(1);
    expect(chipTaints(store.chip(1)!)).toEqual([]);
  });

  test('a SeparateNPU code on a manually separated chip still evicts (both taints)', () => {
    const chip: TaintChip = {
      level: 'ManuallySeparateNPU',
      faultCodes: ['80E18402'],
      faultCodeLevels: ['ManuallySeparateNPU'],
      manuallySeparated: true,
      health: 'Unhealthy',
      faultHealth: 'Unhealthy',
      recovering: false,
    };
    expect(chipTaints(chip).map((t) => t.key)).toEqual(['npu.huawei.com/ManuallySeparateNPU']);
    const sep: TaintChip = { ...chip, faultCodeLevels: ['SeparateNPU'] };
    expect(chipTaints(sep).map((t) => [t.key, t.effect])).toEqual([
      ['npu.huawei.com/ManuallySeparateNPU', 'NoSchedule'],
      ['npu.huawei.com/SeparateNPU', 'NoExecute'],
    ]);
  });

  test('an Unhealthy chip with no level of its own (health group, D.7 post-rule) → Unhealthy NoSchedule', () => {
    const chip: TaintChip = {
      level: 'NormalNPU',
      faultCodes: [],
      faultCodeLevels: [],
      manuallySeparated: false,
      health: 'Unhealthy',
      faultHealth: 'Unhealthy',
      recovering: false,
    };
    expect(chipTaints(chip)).toEqual([{ key: UNHEALTHY_TAINT_KEY, effect: 'NoSchedule' }]);
  });

  test('every key is a label name and every value a label value (API rule), whatever the codes', () => {
    const codes = Array.from({ length: 40 }, (_, i) => (0x80e18400 + i).toString(16).toUpperCase());
    const chip: TaintChip = {
      level: 'SeparateNPU',
      faultCodes: [...codes, 'not/a code'],
      faultCodeLevels: codes.map(() => 'SeparateNPU' as const).concat(['SeparateNPU']),
      manuallySeparated: true,
      health: 'Unhealthy',
      faultHealth: 'Unhealthy',
      recovering: true,
    };
    for (const t of chipTaints(chip)) {
      expect(isLabelName(t.key)).toBe(true);
      expect((t.value ?? '').length).toBeLessThanOrEqual(63);
      expect(t.value ?? '').toMatch(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/);
    }
  });
});

describe('issue [DRA] 3 codes in the taint value', () => {
  test('joined with ".", cut at a code boundary within 63 characters', () => {
    const codes = Array.from({ length: 10 }, (_, i) => `80E1840${i}`);
    const v = codesValue(codes);
    expect(v.length).toBeLessThanOrEqual(63);
    expect(v.split('.')).toEqual(codes.slice(0, 7)); // 7 × 8 + 6 dots = 62
  });

  test('a code that is not alphanumeric is left out', () => {
    expect(codesValue(['80E18402', 'a b', '80E18403'])).toBe('80E18402.80E18403');
  });
});

describe('issue [DRA] 3 a chip being reset', () => {
  const base: TaintChip = {
    level: 'RestartNPU',
    faultCodes: ['8C03A000'],
    faultCodeLevels: ['RestartNPU'],
    manuallySeparated: false,
    health: 'Unhealthy',
    faultHealth: 'Unhealthy',
    recovering: false,
  };

  test('an offline reset (recovering) → Resetting NoSchedule and binding conditions', () => {
    const chip = { ...base, recovering: true };
    expect(isResetting(chip)).toBe(true);
    expect(chipTaints(chip)).toContainEqual({ key: RESETTING_TAINT_KEY, effect: 'NoSchedule' });
    expect(bindingConditionsOf(chip)).toEqual({
      bindingConditions: [CHIP_READY_CONDITION],
      bindingFailureConditions: [CHIP_FAILED_CONDITION],
    });
  });

  test('a task-aware reset (reported Healthy over an Unhealthy engine health) counts as resetting', () => {
    const chip = { ...base, health: 'Healthy' as const };
    expect(isResetting(chip)).toBe(true);
    expect(chipTaints(chip).map((t) => t.key)).toContain(RESETTING_TAINT_KEY);
  });

  test('no reset: no binding conditions', () => {
    expect(isResetting(base)).toBe(false);
    expect(bindingConditionsOf(base)).toBeUndefined();
  });

  test('through the store: setResetOverrides(recovering) taints the chip, its end lifts the taint', () => {
    const { store } = testStore();
    store.start();
    store.setResetOverrides(new Set(), new Set(), new Set([2]));
    expect(chipTaints(store.chip(2)!).map((t) => t.key)).toContain(RESETTING_TAINT_KEY);
    store.setResetOverrides(new Set(), new Set(), new Set());
    expect(chipTaints(store.chip(2)!)).toEqual([]);
  });
});

describe('issue [DRA] 3 timeAdded: since when a taint is on', () => {
  const sep = { key: 'npu.huawei.com/SeparateNPU', value: '80E18402', effect: 'NoExecute' as const };

  test('metav1.Time: whole seconds, RFC 3339', () => {
    expect(metaTime(Date.UTC(2026, 11, 3, 14, 20, 45, 167))).toBe('2026-12-03T14:20:45Z');
  });

  test('the first projection stamps; later ones keep the time', () => {
    const times = new TaintTimes();
    const t0 = Date.UTC(2026, 0, 1);
    expect(times.stamp('ascend910-1', [sep], t0)[0]!.timeAdded).toBe('2026-01-01T00:00:00Z');
    times.commit();
    expect(times.stamp('ascend910-1', [sep], t0 + 60_000)[0]!.timeAdded).toBe('2026-01-01T00:00:00Z');
  });

  test('a taint gone for one projection is stamped anew when it comes back', () => {
    const times = new TaintTimes();
    times.stamp('d', [sep], 0);
    times.commit();
    times.commit(); // a projection without the taint
    expect(times.stamp('d', [sep], 5000)[0]!.timeAdded).toBe(metaTime(5000));
  });

  test('an effect change is a new taint (new time)', () => {
    const times = new TaintTimes();
    times.stamp('d', [sep], 0);
    times.commit();
    expect(times.stamp('d', [{ ...sep, effect: 'NoSchedule' }], 9000)[0]!.timeAdded).toBe(metaTime(9000));
  });

  test('a time adopted from the live slice survives an agent restart', () => {
    const times = new TaintTimes();
    times.adopt('d', [{ ...sep, timeAdded: '2025-05-05T05:05:05Z' }]);
    expect(times.stamp('d', [sep], Date.UTC(2026, 0, 1))[0]!.timeAdded).toBe('2025-05-05T05:05:05Z');
  });

  test('a garbage live time is not adopted', () => {
    const times = new TaintTimes();
    times.adopt('d', [{ ...sep, timeAdded: 'yesterday' }]);
    expect(times.stamp('d', [sep], 0)[0]!.timeAdded).toBe(metaTime(0));
  });

  test('a wall clock stepped back stamps a new taint with the earlier time (no crash, no negative gap)', () => {
    const times = new TaintTimes();
    times.stamp('d', [sep], Date.UTC(2026, 0, 1));
    times.commit();
    const other = { ...sep, key: 'npu.huawei.com/PreSeparateNPU', effect: 'NoSchedule' as const };
    const out = times.stamp('d', [sep, other], Date.UTC(2025, 0, 1));
    expect(out.map((t) => t.timeAdded)).toEqual(['2026-01-01T00:00:00Z', '2025-01-01T00:00:00Z']);
  });
});
