/**
 * The health layer on the mock DCMI library: events → store → DeviceSource, compensation, polling, card drop,
 * link status, overflow. Time is a manual clock; DCMI and hccn_tool are the real mock.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { queryLinkStatus } from '../../src/dcmi/hccn.js';
import { FaultEngine, type FaultEvent } from '../../src/faults/index.js';
import type { DeviceSnapshot } from '../../src/kubelet/device-source.js';
import { discoverNode } from '../../src/health/discovery.js';
import { HANG_FAULT_CODE } from '../../src/health/hang-detector.js';
import { RECONCILE_SWEEP_PERIODS } from '../../src/health/compensation.js';
import { HealthMonitor, type HealthMonitorOptions } from '../../src/health/monitor.js';
import { runModeOf } from '../../src/core/chips.js';
import { StoreDeviceSource } from '../../src/kubelet/store-device-source.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { openMock, waitUntil, type MockHarness, type Scenario, loadScenario } from '../helpers/mock-dcmi.js';
import { FakeClock } from './fake-clock.js';

const SEPARATE = '80E18402';
const PERIOD = 5000;

interface Rig {
  h: MockHarness;
  clock: FakeClock;
  store: NodeStateStore;
  monitor: HealthMonitor;
  source: StoreDeviceSource;
}

let rig: Rig | undefined;

afterEach(() => {
  rig?.monitor.stop();
  rig?.store.stop();
  rig?.source.close();
  rig?.h.close();
  rig = undefined;
});

async function setup(
  scenario: string | Scenario,
  extra: Partial<HealthMonitorOptions> & { link?: boolean } = {},
): Promise<Rig> {
  const h = await openMock(scenario);
  const clock = new FakeClock();
  const chips = h.dcmi.enumerate();
  const { facts } = discoverNode(h.dcmi, chips);
  const engine = new FaultEngine(shippedPolicy(), { chips, runMode: runModeOf(facts.chipKind) });
  const store = new NodeStateStore({
    engine,
    chips,
    node: facts,
    clock,
    listWatchPeriodMs: PERIOD,
  });
  const toolPath = fs.realpathSync(path.join(PROJECT_ROOT, 'build/Release/hccn_tool'));
  const monitor = new HealthMonitor({
    dcmi: h.dcmi,
    chips,
    chipKind: facts.chipKind,
    state: store,
    sink: (events) => store.applyEvents(events),
    clock,
    listWatchPeriodMs: PERIOD,
    ...(extra.link
      ? {
          linkStatus: async (phy: number) =>
            (await queryLinkStatus({ toolPath, env: { ASCEND_MOCK_CONTROL: h.controlPath } }, phy)).status,
          linkQueryIntervalMs: PERIOD,
        }
      : {}),
    ...extra,
  });
  const source = new StoreDeviceSource(store);
  rig = { h, clock, store, monitor, source };
  store.start();
  const started = monitor.start();
  // subscription retries (D.3) wait on the manual clock
  for (let i = 0; i < 3; i++) await clock.advance(1000);
  await started;
  await monitor.idle();
  return rig;
}

/**
 * One sweep of the periodic reconcile (every chip diffed once: {@link RECONCILE_SWEEP_PERIODS} periods) plus the
 * confirming read, letting async work finish.
 */
async function period(r: Rig): Promise<void> {
  for (let i = 0; i < RECONCILE_SWEEP_PERIODS; i++) {
    await r.clock.advance(PERIOD);
    await r.monitor.idle();
  }
  await r.clock.advance(2000);
  await r.monitor.idle();
}

describe('D.3 fault event subscription', () => {
  test('a fault event reaches the store snapshot and the DeviceSource listener', async () => {
    const r = await setup('910b-8chip');
    expect(r.monitor.mode()).toBe('subscribed');
    const seen: DeviceSnapshot[] = [];
    r.source.onChange((s) => seen.push(s));
    await r.h.control.request({ op: 'fault', logicId: 3, eventId: SEPARATE, assertion: 'occur' });
    await waitUntil(() => r.store.chip(3)!.health === 'Unhealthy', 'chip 3 Unhealthy');
    expect(r.store.chip(3)!.faultCodes).toEqual([SEPARATE]);
    expect(seen.at(-1)!.deviceTypes.Ascend910![3]).toMatchObject({ id: 'Ascend910-3', health: 'Unhealthy' });
  });

  test('D.4 a recovery is held 1 s, then the chip is Healthy', async () => {
    const r = await setup('910b-8chip');
    await r.h.control.request({ op: 'fault', logicId: 2, eventId: SEPARATE, assertion: 'occur' });
    await waitUntil(() => r.store.chip(2)!.health === 'Unhealthy', 'chip 2 Unhealthy');
    await r.h.control.request({ op: 'fault', logicId: 2, eventId: SEPARATE, assertion: 'recover' });
    await waitUntil(() => r.monitor.stats().received === 2, 'the recovery event');
    expect(r.store.chip(2)!.health).toBe('Unhealthy');
    await r.clock.advance(1000);
    expect(r.store.chip(2)).toMatchObject({ health: 'Healthy', faultCodes: [] });
  });

  test('D.3 subscription failure → polling, which finds a fault within one period', async () => {
    const s = loadScenario('910b-8chip');
    const r = await setup({ ...s, subscribe: 'fail' });
    expect(r.monitor.mode()).toBe('polling');
    const state = await r.h.control.state();
    expect(state.counters.subscribeCalls).toBe(3);
    await r.h.control.request({ op: 'fault', logicId: 4, eventId: SEPARATE, assertion: 'occur' });
    await r.clock.advance(PERIOD);
    await r.monitor.idle();
    expect(r.store.chip(4)).toMatchObject({ health: 'Unhealthy', faultCodes: [SEPARATE] });
  });

  test('B.5/D.3 a 310P node always polls and never subscribes', async () => {
    const r = await setup('310p-4chip');
    expect(r.monitor.mode()).toBe('polling');
    expect((await r.h.control.state()).counters.subscribeCalls).toBe(0);
  });
});

describe('D.5 lost-event compensation', () => {
  test('first start: codes DCMI already reports are loaded into the store', async () => {
    const s = loadScenario('910b-8chip');
    s.cards[1]!.chips[0]!.errorCodes = [SEPARATE];
    const r = await setup(s);
    expect(r.store.chip(1)).toMatchObject({ health: 'Unhealthy', faultCodes: [SEPARATE] });
  });

  test('beyond upstream: a silentFault on a healthy chip is found by the per-period reconcile', async () => {
    const r = await setup('910b-8chip');
    await r.h.control.request({ op: 'silentFault', logicId: 6, eventId: SEPARATE, assertion: 'occur' });
    await period(r);
    expect(r.store.chip(6)).toMatchObject({ health: 'Unhealthy', faultCodes: [SEPARATE] });
    await r.h.control.request({ op: 'silentFault', logicId: 6, eventId: SEPARATE, assertion: 'recover' });
    await period(r);
    expect(r.store.chip(6)).toMatchObject({ health: 'Healthy', faultCodes: [] });
  });

  test("D.9 the hang detector's synthetic code is not cancelled by the reconcile (DCMI never lists it)", async () => {
    const r = await setup('910b-8chip');
    r.store.applyEvents([{ logicId: 2, code: HANG_FAULT_CODE, assertion: 'occur', severity: 2 }]);
    await period(r);
    await period(r);
    expect(r.store.chip(2)!.faultCodes).toEqual(['200001002']);
  });

  test('beyond upstream: an event in flight during the reconcile is not counted twice', async () => {
    const r = await setup('910b-8chip');
    // DCMI has the code but the event is only delivered after the first read: the confirming read sees the
    // store has it and sends nothing.
    await r.h.control.request({ op: 'silentFault', logicId: 5, eventId: SEPARATE, assertion: 'occur' });
    for (let i = 0; i < 3; i++) {
      // chip 5 is in the third slice of the reconcile (8 chips, 2 a period)
      await r.clock.advance(PERIOD);
      await r.monitor.idle();
    }
    r.store.applyEvents([{ logicId: 5, code: 0x80e18402, assertion: 'occur', severity: 2 }]);
    const synthesized = r.monitor.stats().synthesized;
    await r.clock.advance(2000);
    await r.monitor.idle();
    expect(r.monitor.stats().synthesized).toBe(synthesized);
  });

  test('card drop synthesises 0x40F84E00; restore synthesises its recovery', async () => {
    const r = await setup('910b-8chip');
    await r.h.control.request({ op: 'drop', logicId: 7 });
    await period(r);
    expect(r.store.chip(7)).toMatchObject({ health: 'Unhealthy', faultCodes: ['40F84E00'] });
    await r.h.control.request({ op: 'restore', logicId: 7 });
    await period(r);
    expect(r.store.chip(7)).toMatchObject({ health: 'Healthy', faultCodes: [] });
  });

  test('D.4 reset finished (8C2FA009) re-reads the chip from DCMI', async () => {
    const r = await setup('910b-8chip');
    await r.h.control.request({ op: 'silentFault', logicId: 0, eventId: SEPARATE, assertion: 'occur' });
    await r.h.control.request({ op: 'fault', logicId: 0, eventId: '8C2FA009', assertion: 'once' });
    await waitUntil(() => r.monitor.stats().received === 1, 'the reset-finished event');
    await r.clock.advance(0);
    await r.monitor.idle();
    expect(r.store.chip(0)!.faultCodes).toEqual([SEPARATE]);
  });
});

describe('D.8 network link status through hccn_tool', () => {
  test('link DOWN → 0x81078603 → network Unhealthy (after the 20 s FaultDuration), kubelet health untouched', async () => {
    const r = await setup('910b-8chip', { link: true });
    let kubeletNotified = 0;
    r.source.onChange(() => kubeletNotified++);
    await r.h.control.request({ op: 'link', logicId: 1, status: 'DOWN' });
    await period(r);
    expect(r.store.chip(1)!.networkFaultCodes).toEqual(['81078603']);
    for (let i = 0; i < 5; i++) await period(r);
    expect(r.store.chip(1)).toMatchObject({ networkHealth: 'Unhealthy', health: 'Healthy' });
    expect(kubeletNotified).toBe(0);
  });

  test('the limiter allows one real query per chip per linkQueryInterval', async () => {
    const calls: number[] = [];
    const r = await setup('910b-8chip', {
      linkStatus: (phy) => {
        calls.push(phy);
        return Promise.resolve('UP');
      },
      linkQueryIntervalMs: 60_000,
    });
    const first = calls.length;
    expect(first).toBe(8); // first start
    await period(r);
    await period(r);
    expect(calls.length).toBe(first);
  });
});

describe('architecture §2 nothing dropped silently', () => {
  test('binding overflow → the chip is re-synchronised from DCMI and the drop is counted', async () => {
    const r = await setup('910b-8chip', { bindingQueue: 16 });
    await r.h.control.request({ op: 'silentFault', logicId: 5, eventId: '80E3A201', assertion: 'occur' });
    await r.h.control.request({ op: 'burst', logicId: 5, eventId: SEPARATE, assertion: 'occur', count: 5000 });
    await waitUntil(() => r.monitor.stats().droppedResynced > 0, 'an overflow notice');
    await r.clock.advance(0);
    await r.monitor.idle();
    expect(new Set(r.store.chip(5)!.faultCodes)).toEqual(new Set([SEPARATE, '80E3A201']));
  });

  test('intake queue full → the event is counted and its chip re-synchronised', async () => {
    const clock = new FakeClock();
    let sub: Parameters<HealthMonitorOptions['dcmi']['subscribeFaultEvents']>[0] | undefined;
    const live = new Map<number, number[]>([[0, [0x80e18402]]]);
    const batches: FaultEvent[][] = [];
    const dropped: number[] = [];
    const chips = [{ logicId: 0, phyId: 0, cardId: 0, deviceId: 0 }];
    const monitor = new HealthMonitor({
      dcmi: {
        subscribeFaultEvents: (s) => void (sub = s),
        unsubscribeFaultEvents: () => undefined,
        getDeviceAllErrorCodes: (card) => ({ codes: live.get(card) ?? [], cardDropped: false }),
        getDeviceHealth: () => 0,
      },
      chips,
      chipKind: 'Ascend910B',
      state: {
        chip: () => ({
          health: 'Healthy',
          networkHealth: 'Healthy',
          alarmRaisedTime: 0,
          networkAlarmRaisedTime: 0,
          faultCodes: [],
          networkFaultCodes: [],
        }),
      },
      sink: (b) => batches.push([...b]),
      clock,
      listWatchPeriodMs: PERIOD,
      queueCapacity: 2,
      observer: { droppedResynced: (_ids, n) => dropped.push(n) },
    });
    await monitor.start();
    batches.length = 0;
    for (let i = 0; i < 5; i++) {
      sub!.onEvent({ eventId: 0x80e18402, logicId: 0, severity: 2, assertion: 'occur' } as never);
    }
    expect(dropped).toEqual([1, 1, 1]);
    await clock.advance(0);
    await monitor.idle();
    expect(batches[0]).toHaveLength(2); // the two that fitted
    expect(batches[1]).toEqual([expect.objectContaining({ code: 0x80e18402, assertion: 'occur', severity: 0 })]);
    monitor.stop();
  });

  test('D.4 event id 0 is ignored', async () => {
    const clock = new FakeClock();
    let sub: Parameters<HealthMonitorOptions['dcmi']['subscribeFaultEvents']>[0] | undefined;
    const batches: FaultEvent[][] = [];
    const monitor = new HealthMonitor({
      dcmi: {
        subscribeFaultEvents: (s) => void (sub = s),
        unsubscribeFaultEvents: () => undefined,
        getDeviceAllErrorCodes: () => ({ codes: [], cardDropped: false }),
        getDeviceHealth: () => 0,
      },
      chips: [{ logicId: 0, phyId: 0, cardId: 0, deviceId: 0 }],
      chipKind: 'Ascend910B',
      state: { chip: () => undefined },
      sink: (b) => batches.push([...b]),
      clock,
      listWatchPeriodMs: PERIOD,
    });
    await monitor.start();
    sub!.onEvent({ eventId: 0, logicId: 0, severity: 2, assertion: 'occur' } as never);
    await clock.advance(0);
    expect([batches, monitor.stats().ignored]).toEqual([[], 1]);
    monitor.stop();
  });
});

describe('D.4 intake batching (fault storm)', () => {
  function fakeMonitor(clock: FakeClock, batches: FaultEvent[][], extra: Partial<HealthMonitorOptions> = {}) {
    let sub: Parameters<HealthMonitorOptions['dcmi']['subscribeFaultEvents']>[0] | undefined;
    const monitor = new HealthMonitor({
      dcmi: {
        subscribeFaultEvents: (s) => void (sub = s),
        unsubscribeFaultEvents: () => undefined,
        getDeviceAllErrorCodes: () => ({ codes: [], cardDropped: false }),
        getDeviceHealth: () => 0,
      },
      chips: [0, 1].map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 })),
      chipKind: 'Ascend910B',
      state: { chip: () => undefined },
      sink: (b) => batches.push([...b]),
      clock,
      listWatchPeriodMs: PERIOD,
      ...extra,
    });
    const fire = (logicId: number): void =>
      sub!.onEvent({ eventId: 0x80e18402, logicId, severity: 2, assertion: 'occur' } as never);
    return { monitor, fire };
  }

  test('events delivered as separate callbacks of one loop turn leave as one batch', async () => {
    const clock = new FakeClock();
    const batches: FaultEvent[][] = [];
    const { monitor, fire } = fakeMonitor(clock, batches);
    await monitor.start();
    batches.length = 0;
    // three callbacks from the binding, each followed by a microtask checkpoint as Node does
    fire(0);
    await Promise.resolve();
    fire(1);
    await Promise.resolve();
    fire(0);
    await clock.advance(0);
    expect(batches.map((b) => b.length)).toEqual([3]);
    monitor.stop();
  });

  test('a lone event after a batch of one is not delayed; after a burst the next batch waits for the window', async () => {
    const clock = new FakeClock();
    const batches: FaultEvent[][] = [];
    const { monitor, fire } = fakeMonitor(clock, batches, { coalesceWindowMs: 2 });
    await monitor.start();
    batches.length = 0;
    fire(0);
    await clock.advance(0);
    fire(1); // same clock time, but the previous batch held one event: no window
    await clock.advance(0);
    expect(batches.map((b) => b.length)).toEqual([1, 1]);
    fire(0);
    fire(1); // a burst: one batch of two
    await clock.advance(0);
    fire(0);
    await clock.advance(0);
    fire(1);
    await clock.advance(1);
    expect(batches.map((b) => b.length)).toEqual([1, 1, 2]); // the next batch waits 2 ms after the burst
    await clock.advance(1);
    expect(batches.map((b) => b.length)).toEqual([1, 1, 2, 2]);
    fire(0); // that batch held two events too: the window applies again
    await clock.advance(0);
    expect(batches).toHaveLength(4);
    await clock.advance(2);
    expect(batches.map((b) => b.length)).toEqual([1, 1, 2, 2, 1]);
    fire(1); // after a batch of one: at once
    await clock.advance(0);
    expect(batches.map((b) => b.length)).toEqual([1, 1, 2, 2, 1, 1]);
    monitor.stop();
  });

  test('coalesceWindowMs 0 never holds a batch back', async () => {
    const clock = new FakeClock();
    const batches: FaultEvent[][] = [];
    const { monitor, fire } = fakeMonitor(clock, batches, { coalesceWindowMs: 0 });
    await monitor.start();
    batches.length = 0;
    fire(0);
    fire(1);
    await clock.advance(0);
    fire(0);
    await clock.advance(0);
    expect(batches.map((b) => b.length)).toEqual([2, 1]);
    monitor.stop();
  });
});
