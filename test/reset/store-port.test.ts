/**
 * The reset layer's side of the state store (issue 14 item 2/4, hot-reset §3.10): it reads the engine's own health
 * from the snapshot, not the health its filter makes the other outputs see, and its requests go through the store.
 */
import { describe, expect, test } from '@jest/globals';
import { resetStorePort } from '../../src/reset/store-port.js';
import { NodeStateStore } from '../../src/state/store.js';
import { testStore } from '../state/helpers.js';

const RESTART_NPU = 0x8c03a000; // RestartNPU in the shipped faultCode.json

const makeStore = (): NodeStateStore => testStore().store;

describe('reset layer ↔ state store', () => {
  test('§3.10 a chip the filter reports Healthy is still unhealthy, with its codes, for the reset engines', () => {
    const store = makeStore();
    store.applyEvents([{ logicId: 3, code: RESTART_NPU, assertion: 'occur', severity: 2 }]);
    const port = resetStorePort(store);
    port.setResetOverrides(new Set([3]), new Set(), new Set());
    expect([store.chip(3)!.health, port.chips()[3]]).toEqual([
      'Healthy',
      { logicId: 3, level: 'RestartNPU', codes: [RESTART_NPU], healthy: false, podUsed: false },
    ]);
  });

  test('D.5 a re-sync the reset layer asks for reaches the health layer attached to the store', async () => {
    const store = makeStore();
    const asked: [number[], string | undefined][] = [];
    let applied = 0;
    store.attachResync({
      markResync: (ids, why) => asked.push([[...ids], why]),
      applied: () => Promise.resolve(void applied++),
    });
    const port = resetStorePort(store);
    port.markResync([2], 'chip reset finished');
    await port.resyncApplied();
    expect([asked, applied]).toEqual([[[[2], 'chip reset finished']], 1]);
  });
});
