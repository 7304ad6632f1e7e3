/**
 * A state store over a fresh engine with the shipped policy, on a manual clock: chips 0..n-1 with phy id = logic id
 * = card id, device id 0, on a 910B node.
 */
import { FaultEngine } from '../../src/faults/index.js';
import type { DurableState } from '../../src/state/restore.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from '../health/fake-clock.js';

export interface TestStore {
  readonly store: NodeStateStore;
  readonly clock: FakeClock;
  readonly engine: FaultEngine;
}

export function testStore(
  o: {
    chips?: number;
    loadDurable?: () => DurableState | undefined;
    outputQuietMs?: number;
  } = {},
): TestStore {
  const clock = new FakeClock();
  const list = Array.from({ length: o.chips ?? 4 }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  const engine = new FaultEngine(shippedPolicy(), { chips: list });
  const store = new NodeStateStore({
    engine,
    chips: list,
    node: { chipKind: 'Ascend910B', boardId: 0x24 },
    clock,
    listWatchPeriodMs: 5000,
    ...(o.loadDurable ? { loadDurable: o.loadDurable } : {}),
    ...(o.outputQuietMs !== undefined ? { outputQuietMs: o.outputQuietMs } : {}),
  });
  return { store, clock, engine };
}
