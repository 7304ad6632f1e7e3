/**
 * Issue [H] item 3 with spec D.6 "a recovery of a code DCMI still reports is ignored": the health layer reads DCMI
 * when it releases a held recovery and attaches the list to the event; the store cycle (engine + listeners) never
 * calls DCMI. Monitor + real store + real engine, stub DCMI, manual clock.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import type { FaultSubscription } from '../../src/dcmi/dcmi.js';
import { FaultEngine } from '../../src/faults/index.js';
import { HealthMonitor } from '../../src/health/monitor.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from './fake-clock.js';

const SEP = 0x80e18402;

interface Rig {
  clock: FakeClock;
  store: NodeStateStore;
  monitor: HealthMonitor;
  /** What the stub DCMI lists per chip. */
  dcmi: Map<number, number[]>;
  calls: { total: number; insideStoreCycle: number };
  fire(logicId: number, code: number, assertion: 'occur' | 'recover'): void;
}

let current: Rig | undefined;
afterEach(() => {
  current?.monitor.stop();
  current?.store.stop();
  current = undefined;
});

async function setup(): Promise<Rig> {
  const clock = new FakeClock();
  const chips = [0, 1].map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  const store = new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips }),
    chips,
    node: { chipKind: 'Ascend910B', boardId: 0x24 },
    clock,
    listWatchPeriodMs: 5000,
  });
  const dcmi = new Map<number, number[]>(chips.map((c) => [c.logicId, []]));
  const calls = { total: 0, insideStoreCycle: 0 };
  let inCycle = false;
  let sub: FaultSubscription | undefined;
  const monitor = new HealthMonitor({
    dcmi: {
      subscribeFaultEvents: (s) => void (sub = s),
      unsubscribeFaultEvents: () => undefined,
      getDeviceAllErrorCodes: (card) => {
        calls.total++;
        if (inCycle) calls.insideStoreCycle++;
        return { codes: [...(dcmi.get(card) ?? [])], cardDropped: false };
      },
      getDeviceHealth: () => 0,
    },
    chips,
    chipKind: 'Ascend910B',
    state: store,
    sink: (batch) => {
      inCycle = true;
      try {
        store.applyEvents(batch);
      } finally {
        inCycle = false;
      }
    },
    clock,
    listWatchPeriodMs: 5000,
  });
  store.start();
  await monitor.start();
  const fire = (logicId: number, code: number, assertion: 'occur' | 'recover'): void =>
    sub!.onEvent({ eventId: code, logicId, severity: 2, assertion } as never);
  current = { clock, store, monitor, dcmi, calls, fire };
  return current;
}

describe('[H] 3 the engine never calls the hardware (D.6 live codes on the event)', () => {
  test('D.6 a recovery of a code DCMI still reports is ignored, and the store cycle made no DCMI call', async () => {
    const r = await setup();
    r.fire(0, SEP, 'occur');
    await r.clock.advance(0);
    expect(r.store.chip(0)!.health).toBe('Unhealthy');
    r.dcmi.set(0, [SEP]); // the hardware still lists the code when its recovery arrives
    const before = r.calls.total;
    r.fire(0, SEP, 'recover');
    await r.clock.advance(1000);
    expect(r.store.chip(0)).toMatchObject({ health: 'Unhealthy', faultCodes: ['80E18402'] });
    expect([r.calls.total - before, r.calls.insideStoreCycle]).toEqual([1, 0]);
  });

  test('D.6 a recovery of a code DCMI no longer reports removes it; still no DCMI call inside the cycle', async () => {
    const r = await setup();
    r.fire(1, SEP, 'occur');
    await r.clock.advance(0);
    r.fire(1, SEP, 'recover');
    await r.clock.advance(1000);
    expect(r.store.chip(1)).toMatchObject({ health: 'Healthy', faultCodes: [] });
    expect(r.calls.insideStoreCycle).toBe(0);
  });
});
