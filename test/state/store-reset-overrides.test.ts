/**
 * The reset layer's health filter as a store input (hot-reset §3.10, architecture §2): while a task-aware reset
 * runs, the chips it names are reported Healthy in the snapshot every output reads, and their real health returns
 * the moment the filter is lifted.
 */
import { describe, expect, test } from '@jest/globals';
import type { FaultEvent } from '../../src/faults/index.js';
import { NodeStateStore, type StateChange } from '../../src/state/store.js';
import { testStore } from './helpers.js';

const RESTART_NPU = 0x8c03a000; // RestartNPU in the shipped faultCode.json

function makeStore(): NodeStateStore {
  return testStore({ chips: 8 }).store;
}

const fault = (logicId: number): FaultEvent => ({ logicId, code: RESTART_NPU, assertion: 'occur', severity: 2 });

describe('hot-reset §3.10 health filter in the store', () => {
  test('§3.10 a filtered chip is published Healthy with its fault codes kept', () => {
    const store = makeStore();
    store.applyEvents([fault(3)]);
    expect(store.snapshot().chips[3]!.health).toBe('Unhealthy');
    const changes: StateChange[] = [];
    store.onChange((_, c) => changes.push(c));
    store.setResetOverrides(new Set([3]), new Set());
    const chip = store.snapshot().chips[3]!;
    expect(chip.health).toBe('Healthy');
    expect(chip.faultCodes).toEqual(['8C03A000']);
    expect(changes).toHaveLength(1);
    expect(changes[0]!.changed).toEqual([3]);
  });

  test('§3.10 the filter lifted → the chip is published with its real health again', () => {
    const store = makeStore();
    store.applyEvents([fault(3)]);
    store.setResetOverrides(new Set([3]), new Set());
    store.setResetOverrides(new Set(), new Set());
    expect(store.snapshot().chips[3]!.health).toBe('Unhealthy');
  });

  test('§3.10 a filtered chip stays Healthy through later fault events', () => {
    const store = makeStore();
    store.setResetOverrides(new Set([3]), new Set());
    store.applyEvents([fault(3)]);
    expect(store.snapshot().chips[3]!.health).toBe('Healthy');
    expect(store.snapshot().chips[3]!.level).toBe('RestartNPU');
  });

  test('§3.10 the snapshot carries the filtered health and the engine health the reset engines decide on', () => {
    const store = makeStore();
    store.applyEvents([fault(3)]);
    store.setResetOverrides(new Set([3]), new Set([0, 1]));
    expect(store.snapshot().chips[3]).toMatchObject({ health: 'Healthy', faultHealth: 'Unhealthy' });
  });

  test('a chip an offline reset is rebooting is published Unhealthy and NetworkUnhealthy, then its own health', () => {
    const store = makeStore();
    store.setResetOverrides(new Set([2]), new Set([2]), new Set([2, 3]));
    expect(store.snapshot().chips[2]).toMatchObject({ health: 'Unhealthy', networkHealth: 'Unhealthy' });
    expect(store.snapshot().chips[3]).toMatchObject({ health: 'Unhealthy', networkHealth: 'Unhealthy' });
    store.setResetOverrides(new Set(), new Set(), new Set());
    expect(store.snapshot().chips[3]).toMatchObject({ health: 'Healthy', networkHealth: 'Healthy' });
  });

  test('an unchanged filter publishes no new snapshot', () => {
    const store = makeStore();
    store.applyEvents([fault(3)]);
    store.setResetOverrides(new Set([3]), new Set());
    const seq = store.snapshot().seq;
    store.setResetOverrides(new Set([3]), new Set());
    expect(store.snapshot().seq).toBe(seq);
  });
});
