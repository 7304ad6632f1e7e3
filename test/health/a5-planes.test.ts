/**
 * A5 UB / UBoE planes in D.5 compensation (device-plugin.md D.5 "Parameter-plane … A5: 0x81078607", "Hyper-plane
 * (A5 only): analogous with UB port status", D.8 "A5 UBoE: bonding-port down count from the A5 port snapshot") on a
 * manual clock with a stub DCMI, a stub port table and a stub store view.
 */
import { describe, expect, test } from '@jest/globals';
import type { PortEntry, PortTable } from '../../src/dcmi/hccn.js';
import type { FaultEvent } from '../../src/faults/index.js';
import { Compensation, type CompensationOptions } from '../../src/health/compensation.js';
import { PortLimiter, portPlanes } from '../../src/health/port-limiter.js';
import type { ChipStateView } from '../../src/health/types.js';
import type { ChipKind } from '../../src/core/chips.js';
import { FakeClock } from './fake-clock.js';

const UBOE_DOWN = 0x81078607;
const UBOE_SUB = 0x110000002;
const UBOE_PRE = 0x110001024;
const UB_DOWN = 0x81b18603;
const UB_SEP = 0x020001002;
const hex = (c: number): string => c.toString(16).toUpperCase();

const PORTS: PortEntry[] = [
  { udie: 0, port: 0, type: 'UB', link: 'UP' },
  { udie: 1, port: 0, type: 'UB', link: 'UP' },
  { udie: 0, port: 4, type: 'UBoE', link: 'UP' },
  { udie: 1, port: 4, type: 'UBoE', link: 'UP' },
];

interface Rig {
  clock: FakeClock;
  comp: Compensation;
  batches: FaultEvent[][];
  dcmi: Map<number, number[]>;
  store: Map<number, ChipStateView>;
  /** The port table per logic id (absent: the whole default set, all UP). */
  tables: Map<number, PortTable>;
  queries: number[];
}

function view(codes: number[] = [], net: number[] = []): ChipStateView {
  return {
    health: 'Healthy',
    networkHealth: 'Healthy',
    alarmRaisedTime: 0,
    networkAlarmRaisedTime: 0,
    faultCodes: codes.map(hex),
    networkFaultCodes: net.map(hex),
  };
}

function down(...which: [number, number][]): PortTable {
  return {
    ok: true,
    ports: PORTS.map((p) => (which.some(([u, n]) => p.udie === u && p.port === n) ? { ...p, link: 'DOWN' } : p)),
  };
}

function rig(
  opts: { kind?: ChipKind; uboe?: boolean; intervalMs?: number } = {},
  extra: Partial<CompensationOptions> = {},
): Rig {
  const clock = new FakeClock();
  const batches: FaultEvent[][] = [];
  const dcmi = new Map<number, number[]>([[0, []]]);
  const store = new Map<number, ChipStateView>([[0, view()]]);
  const tables = new Map<number, PortTable>();
  const queries: number[] = [];
  const ports = new PortLimiter({
    clock,
    intervalMs: opts.intervalMs ?? 300_000,
    query: (id) => {
      queries.push(id);
      return Promise.resolve(tables.get(id) ?? { ok: true, ports: PORTS });
    },
  });
  const comp = new Compensation({
    dcmi: {
      getDeviceAllErrorCodes: (card) => ({ codes: [...(dcmi.get(card) ?? [])], cardDropped: false }),
      getDeviceHealth: () => 0,
    },
    chips: [{ logicId: 0, phyId: 0, cardId: 0, deviceId: 0 }],
    chipKind: opts.kind ?? 'Ascend910A5',
    state: { chip: (id) => store.get(id) },
    clock,
    mode: () => 'subscribed',
    isHeld: () => false,
    emit: (b) => batches.push([...b]),
    listWatchPeriodMs: 5000,
    ports,
    uboePlane: opts.uboe ?? true,
    ...extra,
  });
  return { clock, comp, batches, dcmi, store, tables, queries };
}

const codesOf = (r: Rig): string[] => r.batches.flat().map((e) => `${e.assertion}:${hex(e.code)}`);

describe('D.8 the A5 port snapshot per plane', () => {
  test('D.8 the UBoE down count is the bonding ports not UP; the UB plane counts the UB ports', () => {
    expect(portPlanes(down([0, 4], [1, 0]))).toEqual({
      uboe: { status: 'DOWN', down: 1, total: 2 },
      ub: { status: 'DOWN', down: 1, total: 2 },
    });
  });

  test('D.8/dcmi-abi §7 an unreadable table is Abnormal for both planes', () => {
    expect(portPlanes({ ok: false, reason: 'x' })).toMatchObject({
      uboe: { status: 'Abnormal' },
      ub: { status: 'Abnormal' },
    });
  });

  test('D.8 a table without ports of a plane is Abnormal for that plane', () => {
    const onlyUb: PortTable = { ok: true, ports: PORTS.filter((p) => p.type === 'UB') };
    expect(portPlanes(onlyUb).uboe.status).toBe('Abnormal');
    expect(portPlanes(onlyUb).ub.status).toBe('UP');
  });
});

describe('D.5 A5 UBoE parameter plane (UBoE main boards)', () => {
  test('D.5 one bonding port down: 81078607 and the SubHealth derived code 110000002 occur', async () => {
    const r = rig();
    r.tables.set(0, down([0, 4]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual(['occur:81078607', 'occur:110000002']);
  });

  test('D.5 both bonding ports down: 81078607 and the PreSeparate derived code 110001024 occur', async () => {
    const r = rig();
    r.tables.set(0, down([0, 4], [1, 4]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual(['occur:81078607', 'occur:110001024']);
  });

  test('D.5 DCMI listing 81078607 itself: no second 81078607, the derived code still follows the down count', async () => {
    const r = rig();
    r.dcmi.set(0, [UBOE_DOWN]);
    r.tables.set(0, down([0, 4], [1, 4]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual(['occur:81078607', 'occur:110001024']);
  });

  test('D.8/dcmi-abi §7 an unreadable port table counts as DOWN (one UBoE port down) on both planes', async () => {
    const r = rig();
    r.tables.set(0, { ok: false, reason: 'hccn_tool: exit 1' });
    await r.comp.run(false);
    expect(codesOf(r)).toEqual(['occur:81B18603', 'occur:81078607', 'occur:110000002']);
  });

  test('D.5 the ports back UP: 81078607 and its derived code recover', async () => {
    const r = rig();
    r.store.set(0, view([], [UBOE_DOWN, UBOE_SUB]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual(['recover:81078607', 'recover:110000002']);
  });

  test('D.5 one port recovering of two: the derived code moves from 110001024 to 110000002', async () => {
    const r = rig();
    r.store.set(0, view([], [UBOE_DOWN, UBOE_PRE]));
    r.tables.set(0, down([1, 4]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual(['occur:110000002', 'recover:110001024']);
  });

  test('B.5 an A5 board without UBoE has no parameter-plane check: ports down give no network code', async () => {
    const r = rig({ uboe: false });
    r.tables.set(0, down([0, 4], [1, 4]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual([]);
  });
});

describe('D.5 A5 UB hyper plane', () => {
  test('D.5 a UB port down and no hyper-plane code from DCMI: 81B18603 occurs as a chip code', async () => {
    const r = rig();
    r.tables.set(0, down([1, 0]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual(['occur:81B18603']);
  });

  test('D.5 the UB ports back UP: 81B18603 recovers, carrying the DCMI list (D.6)', async () => {
    const r = rig();
    r.store.set(0, view([UB_DOWN]));
    await r.comp.run(false);
    expect(r.batches.flat()).toEqual([expect.objectContaining({ code: UB_DOWN, assertion: 'recover', liveCodes: [] })]);
  });

  test('D.5 the engine-derived UB codes in the chip list are never diffed away', async () => {
    const r = rig();
    r.store.set(0, view([UB_DOWN, UB_SEP]));
    r.tables.set(0, down([0, 0]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual([]);
  });

  test('D.5 the hyper plane is A5 only: a 910B chip never asks for ports', async () => {
    const r = rig({ kind: 'Ascend910B' });
    r.tables.set(0, down([0, 0], [0, 4]));
    await r.comp.run(false);
    expect(codesOf(r)).toEqual([]);
    expect(r.queries).toEqual([]);
  });
});

describe('D.8 the port query is rate-limited like the RoCE link', () => {
  test('D.8 one snapshot per chip per interval serves both planes; the cached one stands in between', async () => {
    const r = rig({ intervalMs: 60_000 });
    await r.comp.run(false);
    expect(r.queries).toEqual([0]);
    r.tables.set(0, down([0, 0]));
    r.comp.markResync([0], 'test');
    await r.clock.advance(0);
    await r.comp.idle();
    expect(r.queries).toEqual([0]);
    expect(codesOf(r)).toEqual([]);
    await r.clock.advance(60_000);
    r.comp.markResync([0], 'test');
    await r.clock.advance(0);
    await r.comp.idle();
    expect(r.queries).toEqual([0, 0]);
    expect(codesOf(r)).toEqual(['occur:81B18603']);
  });
});
