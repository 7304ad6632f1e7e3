/**
 * The store as the one hub (issue 14 item 2): every input enters through a store method, and the snapshot carries
 * what the outputs need (per-code levels, the engine's own health, `recovering`), so no output reads the engine.
 */
import { describe, expect, test } from '@jest/globals';
import type { FaultEvent } from '../../src/faults/index.js';
import { buildDeviceInfo } from '../../src/kube/device-info.js';
import { deviceInfoViewOf } from '../../src/kube/device-info-view.js';
import type { DurableState } from '../../src/state/restore.js';
import type { AppliedFaultEvent, StateChange } from '../../src/state/store.js';
import { testStore, type TestStore } from './helpers.js';

const HBM = 0x80e01801; // RestartBusiness; FaultFrequency 2 in 24 h → ManuallySeparateNPU (shipped)
const SEPARATE = 0x80e18402; // SeparateNPU
const VIEW = { runMode: 'Ascend910', resourceName: 'huawei.com/Ascend910', superPodId: -2, serverIndex: -2 } as const;

function makeStore(loadDurable?: () => DurableState | undefined): TestStore {
  return testStore(loadDurable ? { loadDurable } : {});
}

const ev = (logicId: number, code: number, assertion: FaultEvent['assertion'] = 'occur'): FaultEvent => ({
  logicId,
  code,
  assertion,
  severity: 2,
});

describe('issue 14 item 2: the snapshot carries what the outputs need', () => {
  test('H.3 each current code carries its fault-map level: its own level raised by the chip escalation', () => {
    const { store, clock } = makeStore();
    store.applyEvents([ev(1, HBM)]);
    const first = store.chip(1)!.faultCodeLevels;
    store.applyEvents([ev(1, HBM, 'recover')]);
    clock.t += 1000;
    store.applyEvents([ev(1, HBM)]); // the second occurrence within 24 h: ManuallySeparateNPU (F.3)
    expect([first, store.chip(1)!.faultCodeLevels]).toEqual([['RestartBusiness'], ['ManuallySeparateNPU']]);
  });

  test('E.4 an unconfigured code takes the severity last seen on any chip: the other chip’s per-code level follows', () => {
    const { store } = makeStore();
    const UNCONFIGURED = 0x12345678;
    store.applyEvents([{ logicId: 0, code: UNCONFIGURED, assertion: 'occur', severity: 2 }]);
    const before = store.chip(0)!.faultCodeLevels;
    store.applyEvents([{ logicId: 1, code: UNCONFIGURED, assertion: 'occur', severity: 1 }]); // minor: NotHandle
    expect([before, store.chip(0)!.faultCodeLevels]).toEqual([['SeparateNPU'], ['NotHandleFault']]);
  });

  test('H.3 the device-info view built from the snapshot shows the per-code levels', () => {
    const { store } = makeStore();
    store.applyEvents([ev(2, SEPARATE)]);
    const view = deviceInfoViewOf(store.snapshot().chips, VIEW, 0);
    expect(view.chips[2]!.chipFaults.codes.map((c) => [c.code, c.level])).toEqual([['80E18402', 'SeparateNPU']]);
  });

  test('hot-reset §3.10 the snapshot keeps the engine health beside the filtered one', () => {
    const { store } = makeStore();
    store.applyEvents([ev(3, SEPARATE)]);
    store.setResetOverrides(new Set([3]), new Set());
    expect(store.chip(3)).toMatchObject({ health: 'Healthy', faultHealth: 'Unhealthy', faultNetworkHealth: 'Healthy' });
  });

  test('H.3 a chip already Unhealthy that an offline reset starts rebooting gives a new snapshot listing it -Recovering', () => {
    const { store } = makeStore();
    store.applyEvents([ev(2, SEPARATE)]);
    const seq = store.snapshot().seq;
    store.setResetOverrides(new Set(), new Set(), new Set([2]));
    const content = buildDeviceInfo(deviceInfoViewOf(store.snapshot().chips, VIEW, 0));
    expect([store.snapshot().seq > seq, store.chip(2)!.recovering]).toEqual([true, true]);
    expect(content.deviceList['huawei.com/Ascend910-Recovering']).toBe('Ascend910-2');
  });
});

describe('issue 14 item 2: K.1 Events come from the store, not from the engine', () => {
  test('K.1 every applied fault event is told with its code-only level and the engine spelling', () => {
    const { store } = makeStore();
    const told: AppliedFaultEvent[] = [];
    store.onFaultEvents((e) => told.push(...e));
    store.applyEvents([ev(1, SEPARATE), ev(9, SEPARATE)]); // logic id 9 is no chip of this node: no Event
    expect(told.map((e) => [e.logicId, e.cardId, e.code, e.assertion, e.level])).toEqual([
      [1, 1, '80E18402', 'occur', 'SeparateNPU'],
    ]);
  });

  test('K.1 an event that changes nothing is still told (one Event per fault event)', () => {
    const { store } = makeStore();
    store.applyEvents([ev(1, SEPARATE)]);
    const seq = store.snapshot().seq;
    const told: AppliedFaultEvent[] = [];
    store.onFaultEvents((e) => told.push(...e));
    store.applyEvents([ev(1, SEPARATE, 'once')]);
    expect([store.snapshot().seq, told.map((e) => e.assertion)]).toEqual([seq, ['once']]);
  });
});

describe('issue 14 item 2: inputs through store methods', () => {
  test('G.2 an operator release is one published cycle whose change carries the release transitions', () => {
    const { store, clock } = makeStore();
    store.applyEvents([ev(1, HBM)]);
    clock.t += 1000;
    store.applyEvents([ev(1, HBM)]);
    const changes: StateChange[] = [];
    store.onChange((_, c) => changes.push(c));
    store.release(1);
    expect(changes.map((c) => c.cause)).toEqual(['release']);
    expect(changes[0]!.transitions).toContainEqual({ kind: 'released', logicId: 1, by: 'operator' });
  });

  test('G.3 a restore through the store publishes the restored separation', () => {
    const { store } = makeStore();
    const changes: StateChange[] = [];
    store.onChange((_, c) => changes.push(c));
    const r = store.restore({ found: true, manuallySeparateNPU: 'Ascend910-2', upgradeFaultReason: '{}' });
    expect([r.source, changes.map((c) => c.cause), store.chip(2)!.manuallySeparated]).toEqual([
      'configmap',
      ['restore'],
      true,
    ]);
  });

  test('G.3 the restore reads the state file through loadDurable', () => {
    const first = makeStore();
    first.store.applyEvents([ev(1, HBM)]); // one occurrence of two: only the state file remembers it
    const saved: DurableState = { confirmedManual: '', engine: first.store.exportDurableState() };
    const { store } = makeStore(() => saved);
    const r = store.restore({ found: true, manuallySeparateNPU: '', upgradeFaultReason: '{}' });
    store.applyEvents([ev(1, HBM, 'recover')]);
    store.applyEvents([ev(1, HBM)]);
    expect([r.source, store.chip(1)!.manuallySeparated]).toEqual(['state-file', true]);
  });

  test('D.5 re-sync requests made before the health layer attached are handed over when it attaches', () => {
    const { store } = makeStore();
    store.restore({ found: true, manuallySeparateNPU: '', upgradeFaultReason: '{}' });
    store.requestResync([3], 'reset finished');
    const asked: number[][] = [];
    store.attachResync({ markResync: (ids) => asked.push([...ids]), applied: () => Promise.resolve() });
    store.requestResync([1], 'reset finished');
    expect(asked).toEqual([[0, 1, 2, 3], [1]]);
  });

  test('G.2 confirmWritten marks the written entries durable and keeps the confirmed value', () => {
    const { store, clock } = makeStore();
    store.applyEvents([ev(1, HBM)]);
    clock.t += 1000;
    store.applyEvents([ev(1, HBM)]);
    const revision = store.durableRevision;
    store.confirmWritten([1], 'Ascend910-1');
    expect([store.durableRevision > revision, store.confirmedManual()]).toEqual([true, 'Ascend910-1']);
  });
});

describe('issue 14 item 2: the durable state goes through the store', () => {
  test('durable listeners run after every snapshot listener, in the same call (the same-turn save)', () => {
    const { store } = makeStore();
    const order: string[] = [];
    store.onDurableChange(() => order.push('durable'));
    store.onChange(() => order.push('kubelet'));
    store.onChange(() => order.push('kube'));
    store.applyEvents([ev(1, SEPARATE)]);
    expect(order).toEqual(['kubelet', 'kube', 'durable']);
  });

  test('the exported durable state is the engine state the restore takes back', () => {
    const first = makeStore();
    first.store.applyEvents([ev(1, HBM)]);
    first.clock.t += 1000;
    first.store.applyEvents([ev(1, HBM)]);
    const saved: DurableState = { confirmedManual: 'Ascend910-1', engine: first.store.exportDurableState() };
    const { store } = makeStore(() => saved);
    store.restore({ found: true, manuallySeparateNPU: 'Ascend910-1', upgradeFaultReason: '{}' });
    expect(store.snapshot().manualSeparation).toBe('Ascend910-1');
  });
});
