/**
 * D.5 compensation on a manual clock with a stub DCMI and a stub store view: which chips are read and why, the
 * synthetic events, the card-drop check, the periodic reconcile with its confirming read, and the D.6 code list on
 * synthetic recoveries.
 */
import { describe, expect, test } from '@jest/globals';
import { DcmiError } from '../../src/dcmi/errors.js';
import type { FaultEvent } from '../../src/faults/index.js';
import { Compensation, type CompensationOptions } from '../../src/health/compensation.js';
import { LinkLimiter } from '../../src/health/link-limiter.js';
import type { ChipStateView, HealthMode } from '../../src/health/types.js';
import { FakeClock } from './fake-clock.js';

const SEP = 0x80e18402;
const HBM = 0x80e01801;
const CARD_DROP = 0x40f84e00;
const PERIOD = 5000;
const hex = (c: number): string => c.toString(16).toUpperCase();

interface Rig {
  clock: FakeClock;
  comp: Compensation;
  batches: FaultEvent[][];
  /** What DCMI lists per logic id (a missing chip: the read fails). */
  dcmi: Map<number, number[]>;
  dropped: Set<number>;
  store: Map<number, ChipStateView>;
  setMode(m: HealthMode): void;
  held: Set<string>;
  /** DCMI calls by name: `health`, `all` (list + health), `list` (the list alone), per logic id. */
  calls: { fn: 'health' | 'all' | 'list'; id: number }[];
}

function view(codes: number[] = [], extra: Partial<ChipStateView> = {}): ChipStateView {
  return {
    health: codes.length > 0 ? 'Unhealthy' : 'Healthy',
    networkHealth: 'Healthy',
    alarmRaisedTime: 0,
    networkAlarmRaisedTime: 0,
    faultCodes: codes.map(hex),
    networkFaultCodes: [],
    ...extra,
  };
}

function rig(extra: Partial<CompensationOptions> = {}, chips = 2): Rig {
  const clock = new FakeClock();
  const batches: FaultEvent[][] = [];
  const dcmi = new Map<number, number[]>();
  const dropped = new Set<number>();
  const store = new Map<number, ChipStateView>();
  const held = new Set<string>();
  const calls: Rig['calls'] = [];
  let mode: HealthMode = 'subscribed';
  const list = Array.from({ length: chips }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  for (const c of list) {
    dcmi.set(c.logicId, []);
    store.set(c.logicId, view());
  }
  const comp = new Compensation({
    dcmi: {
      getDeviceAllErrorCodes: (card) => {
        calls.push({ fn: 'all', id: card });
        const codes = dcmi.get(card);
        if (!codes) throw new DcmiError(-8005, 'dcmi_get_device_errorcode_v2');
        return { codes: [...codes], cardDropped: false };
      },
      getDeviceErrorCodes: (card) => {
        calls.push({ fn: 'list', id: card });
        const codes = dcmi.get(card);
        if (!codes) throw new DcmiError(-8005, 'dcmi_get_device_errorcode_v2');
        return [...codes];
      },
      getDeviceHealth: (card) => {
        calls.push({ fn: 'health', id: card });
        if (dropped.has(card)) throw new DcmiError(-8012, 'dcmi_get_device_health');
        return 0;
      },
    },
    chips: list,
    chipKind: 'Ascend910B',
    state: { chip: (id) => store.get(id) },
    clock,
    mode: () => mode,
    isHeld: (id, code) => held.has(`${id}/${code}`),
    emit: (b) => batches.push([...b]),
    listWatchPeriodMs: PERIOD,
    ...extra,
  });
  return { clock, comp, batches, dcmi, dropped, store, held, calls, setMode: (m) => (mode = m) };
}

/** Lets a run (and the re-sync timer) finish. */
async function settled(r: Rig, ms = 0): Promise<void> {
  await r.clock.advance(ms);
  await r.comp.idle();
}

describe('D.5 which chips are read', () => {
  test('D.5 first start: every chip is diffed; DCMI-only codes become synthetic occurrences (severity 0, now)', async () => {
    const r = rig();
    r.dcmi.set(1, [SEP]);
    await r.comp.run(false);
    expect(r.batches).toEqual([[{ logicId: 1, code: SEP, assertion: 'occur', severity: 0, timeMs: r.clock.now() }]]);
  });

  test('D.5 after the first start a subscribed, healthy chip is not read by a non-periodic run', async () => {
    const r = rig();
    await r.comp.run(false);
    r.dcmi.set(0, [SEP]);
    await r.comp.run(false);
    expect(r.batches).toEqual([]);
  });

  test('D.4/D.5 a re-sync mark reads that chip at once (timer 0); unknown logic ids are ignored', async () => {
    const r = rig();
    await r.comp.run(false);
    r.dcmi.set(0, [SEP]);
    r.dcmi.set(1, [HBM]);
    r.comp.markResync([0, 99], 'test');
    await settled(r);
    expect(r.batches).toEqual([[expect.objectContaining({ logicId: 0, code: SEP, assertion: 'occur' })]]);
  });

  test('D.5 polling mode reads every chip every run', async () => {
    const r = rig();
    r.setMode('polling');
    await r.comp.run(false);
    r.dcmi.set(1, [SEP]);
    await r.comp.run(false);
    expect(r.batches).toEqual([[expect.objectContaining({ logicId: 1, code: SEP })]]);
  });

  test('D.5 a chip Unhealthy for more than 5 min is read again', async () => {
    const r = rig({ longUnhealthyMs: 300_000 });
    await r.comp.run(false);
    r.store.set(0, view([SEP], { alarmRaisedTime: r.clock.now() - 300_000 }));
    await r.comp.run(false);
    expect(r.batches).toEqual([]); // exactly 5 min: not yet (strict)
    await r.clock.advance(1);
    await r.comp.run(false);
    expect(r.batches).toEqual([[expect.objectContaining({ logicId: 0, code: SEP, assertion: 'recover' })]]);
  });

  test('D.5 a DCMI read that fails keeps the chip marked: the next run reads it again', async () => {
    const r = rig();
    r.dcmi.delete(1);
    await r.comp.run(false);
    r.dcmi.set(1, [SEP]);
    await r.comp.run(false);
    expect(r.batches).toEqual([[expect.objectContaining({ logicId: 1, code: SEP })]]);
  });
});

describe('D.5 the diff', () => {
  test('D.6 a synthetic recovery carries the DCMI code list it was derived from', async () => {
    const r = rig();
    r.store.set(0, view([SEP, HBM]));
    r.dcmi.set(0, [HBM]);
    await r.comp.run(false);
    expect(r.batches).toEqual([
      [expect.objectContaining({ logicId: 0, code: SEP, assertion: 'recover', severity: 0, liveCodes: [HBM] })],
    ]);
  });

  test('D.4 a code whose recovery the intake holds is left out (the recovery is on its way)', async () => {
    const r = rig();
    r.store.set(0, view([SEP]));
    r.held.add(`0/${SEP}`);
    await r.comp.run(false);
    expect(r.batches).toEqual([]);
  });

  test('D.8 no parameter-plane code from DCMI and the link not UP → 0x81078603', async () => {
    const link = new LinkLimiter({ clock: new FakeClock(), query: () => Promise.resolve('DOWN') });
    const r = rig({ link });
    await r.comp.run(false);
    expect(r.batches.flat().map((e) => [e.logicId, e.code])).toEqual([
      [0, 0x81078603],
      [1, 0x81078603],
    ]);
  });
  test("issue [P] item 3: the first run asks up to 8 link statuses at once; the events keep DCMI's chip order", async () => {
    const waiting: { phy: number; answer: (s: 'DOWN') => void }[] = [];
    let most = 0;
    const query = (phy: number): Promise<'DOWN'> =>
      new Promise((answer) => {
        waiting.push({ phy, answer });
        most = Math.max(most, waiting.length);
      });
    const link = new LinkLimiter({ clock: new FakeClock(), query });
    const r = rig({ link }, 12);
    const run = r.comp.run(false);
    await new Promise((resolve) => setImmediate(resolve));
    // answered last first: chip 7's answer arrives before chip 0's
    while (waiting.length > 0) {
      waiting.pop()!.answer('DOWN');
      await new Promise((resolve) => setImmediate(resolve));
    }
    await run;
    expect([most, r.batches.flat().map((e) => e.logicId)]).toEqual([8, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]]);
  });
});

describe('D.5 card drop', () => {
  test('D.5 while subscribed, -8012 synthesises 0x40F84E00 and the diff leaves that code to the tracker', async () => {
    const r = rig();
    await r.comp.run(false);
    r.dropped.add(1);
    r.comp.markResync([1], 'test'); // the diff runs too: it must not cancel the card-drop code
    await settled(r);
    expect(r.batches).toEqual([[expect.objectContaining({ logicId: 1, code: CARD_DROP, assertion: 'occur' })]]);
    r.store.set(1, view([CARD_DROP]));
    r.dropped.delete(1);
    await r.comp.run(false);
    expect(r.batches[1]).toEqual([expect.objectContaining({ logicId: 1, code: CARD_DROP, assertion: 'recover' })]);
  });

  test('D.5 in polling mode the tracker is not asked (the code list carries 0x40F84E00)', async () => {
    const r = rig();
    r.setMode('polling');
    r.dropped.add(0);
    await r.comp.run(false);
    expect(r.batches).toEqual([]);
  });
});

describe('beyond upstream: periodic reconcile', () => {
  test('a difference on a healthy chip is sent only after the confirming read agrees', async () => {
    const r = rig({ confirmMs: 2000 });
    await r.comp.run(false);
    r.dcmi.set(0, [SEP]);
    await r.comp.run(true);
    expect(r.batches).toEqual([]);
    await settled(r, 2000);
    expect(r.batches).toEqual([[expect.objectContaining({ logicId: 0, code: SEP, assertion: 'occur' })]]);
  });

  test('what the confirming read no longer sees is not sent (an event was in flight)', async () => {
    const r = rig({ confirmMs: 2000 });
    await r.comp.run(false);
    r.dcmi.set(0, [SEP]);
    await r.comp.run(true);
    r.store.set(0, view([SEP])); // the in-flight event arrived meanwhile
    await settled(r, 2000);
    expect([r.batches, r.comp.synthesized]).toEqual([[], 0]);
  });

  test('the periodic run repeats every listWatchPeriod once started, and stop ends it', async () => {
    const r = rig({ confirmMs: 10, sweepPeriods: 1 });
    await r.comp.run(false);
    r.comp.startPeriod();
    r.dcmi.set(1, [SEP]);
    await settled(r, PERIOD);
    await settled(r, 10);
    expect(r.batches).toHaveLength(1);
    r.comp.stop();
    r.dcmi.set(0, [SEP]);
    await settled(r, 2 * PERIOD);
    expect([r.batches.length, r.clock.pending()]).toEqual([1, 0]);
  });
});

describe('issue [P] item 2: idle DCMI calls no more than upstream', () => {
  /** The calls of one periodic run, by kind. */
  async function periodicCalls(r: Rig): Promise<Rig['calls']> {
    r.calls.length = 0;
    await r.comp.run(true);
    return [...r.calls];
  }

  test('D.5 while subscribed: one health read per chip per period (the card-drop check), as upstream', async () => {
    const r = rig({}, 8);
    await r.comp.run(false);
    const calls = await periodicCalls(r);
    expect(calls.filter((c) => c.fn === 'health').map((c) => c.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('a chip whose health the card-drop check just asked is read with the code list alone (no second health read)', async () => {
    const r = rig({}, 8);
    await r.comp.run(false);
    const calls = await periodicCalls(r);
    expect([calls.filter((c) => c.fn === 'all').length, calls.filter((c) => c.fn === 'list').length]).toEqual([0, 2]);
  });

  test('the reconcile diffs ⌈chips / 4⌉ chips a period in turn: every chip once in 4 periods', async () => {
    const r = rig({}, 8);
    await r.comp.run(false);
    const slices: number[][] = [];
    for (let i = 0; i < 5; i++) slices.push((await periodicCalls(r)).filter((c) => c.fn === 'list').map((c) => c.id));
    expect(slices).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
      [0, 1],
    ]);
  });

  test('a lost event on a healthy chip is found within sweepPeriods periods (plus the confirming read)', async () => {
    const r = rig({ confirmMs: 2000, sweepPeriods: 4 }, 8);
    await r.comp.run(false);
    await r.comp.run(true); // chips 0 and 1 this period
    r.dcmi.set(1, [SEP]); // lost right after its turn: the worst case
    for (let i = 0; i < 3; i++) await r.comp.run(true);
    expect(r.batches).toEqual([]);
    await r.comp.run(true); // chip 1's turn again
    await settled(r, 2000);
    expect(r.batches).toEqual([[expect.objectContaining({ logicId: 1, code: SEP, assertion: 'occur' })]]);
  });

  test('D.5 polling mode still reads every chip with the list and the health (0x40F84E00 from the list call)', async () => {
    const r = rig({}, 4);
    r.setMode('polling');
    await r.comp.run(false);
    const calls = await periodicCalls(r);
    expect([calls.filter((c) => c.fn === 'all').length, calls.filter((c) => c.fn !== 'all').length]).toEqual([4, 0]);
  });

  test('a chip read for a D.5 reason while subscribed (re-sync) is read with the list alone after its health', async () => {
    const r = rig({}, 2);
    await r.comp.run(false);
    r.comp.markResync([1], 'test');
    r.calls.length = 0;
    await settled(r);
    expect(r.calls).toEqual([
      { fn: 'health', id: 0 },
      { fn: 'health', id: 1 },
      { fn: 'list', id: 1 },
    ]);
  });
});
