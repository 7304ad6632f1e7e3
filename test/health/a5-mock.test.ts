/**
 * A5 UB / UBoE planes from the mock hardware to the store (device-plugin.md D.5, D.6, D.7, D.8): the real mock
 * libdcmi.so with an Ascend950 scenario, the real mock hccn_tool (`-g -dev_info`), the health monitor, the store and
 * the engine with the shipped faultCode.json. Manual clock for the store's and monitor's timers.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { MOCK_HCCN_TOOL } from '../../src/core/paths.js';
import { queryPortTable } from '../../src/dcmi/hccn.js';
import { FaultEngine } from '../../src/faults/index.js';
import { uboeMainBoard } from '../../src/health/a5-planes.js';
import { HealthMonitor } from '../../src/health/monitor.js';
import { NodeStateStore } from '../../src/state/store.js';
import { NOOP_LOGGER } from '../../src/core/logger.js';
import { shippedPolicy } from '../faults/helpers.js';
import { openMock, scenarioChips, waitUntil, type MockHarness, type Scenario } from '../helpers/mock-dcmi.js';
import { FakeClock } from './fake-clock.js';

function scenario(mainboardId: number): Scenario {
  return {
    chipName: 'Ascend950PR',
    boardId: 0x60,
    mainboardId,
    cards: [0, 1, 2, 3].map((i) => ({ cardId: i, chips: [{ deviceId: 0, logicId: i, phyId: i }] })),
  };
}

interface Rig {
  h: MockHarness;
  clock: FakeClock;
  store: NodeStateStore;
  monitor: HealthMonitor;
}

let rig: Rig | undefined;
afterEach(() => {
  rig?.monitor.stop();
  rig?.store.stop();
  rig?.h.close();
  rig = undefined;
});

async function setup(mainboardId: number, before: (h: MockHarness) => Promise<unknown>): Promise<Rig> {
  const h = await openMock(scenario(mainboardId));
  await before(h);
  const clock = new FakeClock();
  const chips = scenarioChips(h.scenario).map((c) => ({
    logicId: c.logicId,
    phyId: c.phyId,
    cardId: c.cardId,
    deviceId: c.deviceId,
  }));
  const store = new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips, hyperPlane: true }),
    chips,
    node: { chipKind: 'Ascend910A5', boardId: 0x60 },
    clock,
    listWatchPeriodMs: 5000,
  });
  const tool = { toolPath: MOCK_HCCN_TOOL, env: { ASCEND_MOCK_CONTROL: h.controlPath } };
  const monitor = new HealthMonitor({
    dcmi: h.dcmi,
    chips,
    chipKind: 'Ascend910A5',
    state: store,
    sink: (batch) => store.applyEvents(batch),
    clock,
    listWatchPeriodMs: 5000,
    portTable: (id) => queryPortTable(tool, id),
    uboePlane: uboeMainBoard(h.dcmi, chips, NOOP_LOGGER),
  });
  store.start();
  await monitor.start();
  rig = { h, clock, store, monitor };
  return rig;
}

describe('D.5/D.8 A5 planes: mock ports to store state', () => {
  test('D.8 a UBoE bonding port DOWN on a 0x23 main board: 81078607 + 110000002, network Unhealthy', async () => {
    const r = await setup(0x23, (h) =>
      h.control.expectOk({ op: 'port', logicId: 1, udie: 1, port: 4, status: 'DOWN' }),
    );
    await waitUntil(() => (r.store.chip(1)?.networkFaultCodes.length ?? 0) > 0, 'network codes of chip 1');
    expect(r.store.chip(1)).toMatchObject({
      networkFaultCodes: ['81078607', '110000002'],
      networkHealth: 'Unhealthy',
      health: 'Healthy',
    });
    expect(r.store.chip(0)?.networkFaultCodes).toEqual([]);
  });

  test('B.5 the same port DOWN on a main board without UBoE (0x21): no network code', async () => {
    const r = await setup(0x21, (h) =>
      h.control.expectOk({ op: 'port', logicId: 1, udie: 1, port: 4, status: 'DOWN' }),
    );
    await r.monitor.idle();
    expect(r.store.chip(1)?.networkFaultCodes).toEqual([]);
  });

  test('D.5/D.6 a UB port DOWN on one chip of four: 81B18603 at once, 020001002 (Unhealthy) at the next tick', async () => {
    const r = await setup(0x23, (h) =>
      h.control.expectOk({ op: 'port', logicId: 2, udie: 0, port: 0, status: 'DOWN' }),
    );
    await waitUntil(() => (r.store.chip(2)?.faultCodes.length ?? 0) > 0, 'chip codes of chip 2');
    expect(r.store.chip(2)).toMatchObject({ faultCodes: ['81B18603'], health: 'Healthy' });
    await r.clock.advance(5000);
    expect(r.store.chip(2)).toMatchObject({ faultCodes: ['81B18603', '020001002'], health: 'Unhealthy' });
  });

  test('D.6 a UB port DOWN on every chip: 020000002 on each, all stay Healthy', async () => {
    const r = await setup(0x23, async (h) => {
      for (const id of [0, 1, 2, 3])
        await h.control.expectOk({ op: 'port', logicId: id, udie: 1, port: 1, status: 'DOWN' });
    });
    await waitUntil(() => [0, 1, 2, 3].every((id) => (r.store.chip(id)?.faultCodes.length ?? 0) === 2), 'all chips');
    for (const id of [0, 1, 2, 3]) {
      expect(r.store.chip(id)).toMatchObject({ faultCodes: ['81B18603', '020000002'], health: 'Healthy' });
    }
  });
});
