import { describe, expect, test } from '@jest/globals';
import type { FaultLevel } from '../../src/faults/levels.js';
import type { ChipKind } from '../../src/core/chips.js';
import { ResetCoordinator } from '../../src/reset/coordinator.js';
import {
  DEFAULT_OFFLINE_TIMINGS,
  OFFLINE_OWNER,
  OfflineResetEngine,
  type OfflineChipState,
} from '../../src/reset/offline-engine.js';
import type { OfflineState, OfflineStateStore } from '../../src/reset/offline-state.js';
import { ResetInfoManager, encodeResetInfo, type ResetDev } from '../../src/reset/reset-info.js';
import { resetGroup } from '../../src/reset/rings.js';
import type {
  ChipResetView,
  HotResetMode,
  NodeAnnotationApi,
  ResetChip,
  ResetEvent,
  RingFacts,
} from '../../src/reset/types.js';
import { FakeClock } from '../health/fake-clock.js';
import { FakeResetDcmi } from './fake-dcmi.js';

const S = 1000;
const H = 3_600_000;

class FakeNode implements NodeAnnotationApi {
  writes: string[] = [];
  constructor(public value?: string) {}
  read(): Promise<string | undefined> {
    return Promise.resolve(this.value);
  }
  write(_key: string, value: string): Promise<void> {
    this.writes.push(value);
    this.value = value;
    return Promise.resolve();
  }
}

interface SetupOptions {
  kind?: ChipKind;
  n?: number;
  boardId?: number;
  mode?: HotResetMode;
  excluded?: readonly number[];
  annotation?: string;
  onResettingChange?: (chips: ReadonlySet<number>) => void;
  retryAfter?: number;
  /** Keeps the resets in flight and the buckets (agent restart, issue [T] item 4). */
  store?: OfflineStateStore;
  /** An agent restart: the new engine gets this harness's clock, DCMI and chip views (a new coordinator). */
  from?: { clock: FakeClock; dcmi: FakeResetDcmi; views: Map<number, ChipResetView> };
}

/** A node of `n` chips (logic = phy id; 910A3: card ⌊id/2⌋ die id mod 2, brother cards 0↔1, 2↔3, …). */
function setup(o: SetupOptions = {}) {
  const kind = o.kind ?? 'Ascend910B';
  const n = o.n ?? 8;
  const a3 = kind === 'Ascend910A3';
  const chips: ResetChip[] = Array.from({ length: n }, (_, i) => ({
    logicId: i,
    phyId: i,
    cardId: a3 ? Math.floor(i / 2) : i,
    deviceId: a3 ? i % 2 : 0,
  }));
  const facts: RingFacts = {
    kind,
    usage: 'train',
    boardId: o.boardId ?? 0,
    chips,
    ...(a3 && { brotherCardOf: (card: number) => card ^ 1 }),
  };
  const clock = o.from?.clock ?? new FakeClock();
  const ids = chips.map((c) => c.logicId);
  const dcmi = o.from?.dcmi ?? new FakeResetDcmi({ clock, chips: ids, affects: (id) => resetGroup(facts, id) });
  const coordinator = new ResetCoordinator();
  const node = new FakeNode(o.annotation);
  const resetInfo = new ResetInfoManager({ api: node, clock });
  const resynced: number[][] = [];
  const events: ResetEvent[] = [];
  const views =
    o.from?.views ??
    new Map<number, ChipResetView>(
      ids.map((id) => [id, { logicId: id, level: 'NormalNPU', codes: [], healthy: true, podUsed: false }]),
    );
  const snapshot = (): ChipResetView[] => [...views.values()];
  const excluded = new Set(o.excluded ?? []);
  const engine = new OfflineResetEngine({
    clock,
    mode: o.mode ?? 2,
    timings: DEFAULT_OFFLINE_TIMINGS,
    dcmi,
    facts,
    coordinator,
    resetInfo,
    hooks: { markNeedsResync: (l) => resynced.push([...l]), chips: snapshot },
    events: (e) => events.push(e),
    isExcluded: (id) => excluded.has(id),
    ...(o.onResettingChange ? { onResettingChange: o.onResettingChange } : {}),
    ...(o.retryAfter !== undefined ? { retryAfter: o.retryAfter } : {}),
    ...(o.store ? { store: o.store } : {}),
  });
  const h = {
    clock,
    views,
    dcmi,
    coordinator,
    node,
    resetInfo,
    resynced,
    events,
    engine,
    facts,
    /** The chip gets a fault of this level: Unhealthy, DCMI health 1. */
    fault(id: number, level: FaultLevel = 'RestartNPU') {
      views.set(id, { ...views.get(id)!, level, codes: [0x8c03a000], healthy: false });
      dcmi.set(id, { health: 1 });
    },
    heal(id: number) {
      views.set(id, { ...views.get(id)!, level: 'NormalNPU', codes: [], healthy: true });
      dcmi.set(id, { health: 0 });
    },
    podUse(id: number, used: boolean) {
      views.set(id, { ...views.get(id)!, podUsed: used });
    },
    cycle: () => engine.cycle(snapshot()),
    /** `ms` of 5 s listWatchPeriod ticks, a cycle after each. */
    async run(ms: number) {
      for (let t = 0; t < ms; t += 5 * S) {
        await clock.advance(Math.min(5 * S, ms - t));
        await engine.cycle(snapshot());
      }
    },
    state: (id: number): OfflineChipState => engine.status()[id]!.state,
    resets: (channel: 'inband' | 'outband' = 'inband') =>
      dcmi.callsOf('setDeviceReset').filter((c) => c.arg === channel),
  };
  return h;
}

type Harness = ReturnType<typeof setup>;

/** In-memory {@link OfflineStateStore}. */
class MemoryOfflineStore implements OfflineStateStore {
  state: OfflineState | undefined;
  load(): OfflineState | undefined {
    return this.state === undefined ? undefined : structuredClone(this.state);
  }
  save(state: OfflineState): void {
    this.state = structuredClone(state);
  }
}

const manualOf = (text: string | undefined): number[] =>
  text === undefined ? [] : (JSON.parse(text) as { ManualResetDevs: ResetDev[] }).ManualResetDevs.map((d) => d.PhyID);

describe('offline engine: chips being rebooted are reported (ours, beyond HEAD §J.5)', () => {
  test('§J.2 the whole group is announced while it reboots and released when the reset ends', async () => {
    const seen: number[][] = [];
    const h = setup({ onResettingChange: (c) => seen.push([...c].sort((a, b) => a - b)) });
    h.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { bootSeconds: 5 });
    h.fault(2);
    await h.cycle();
    await h.run(60 * S);
    expect(seen).toEqual([[0, 1, 2, 3, 4, 5, 6, 7]]);
    await h.run(10 * S);
    expect(seen).toEqual([[0, 1, 2, 3, 4, 5, 6, 7], []]);
  });
});

describe('offline engine: debounce (§J.2, HR-23 with HEAD semantics)', () => {
  test.each<[ChipKind, FaultLevel]>([
    ['Ascend910A3', 'RestartNPU'],
    ['Ascend910B', 'RestartNPU'],
    ['Ascend910B', 'FreeRestartNPU'],
    ['Ascend910B', 'RestartBusiness'],
    ['Ascend910B', 'RestartRequest'],
    ['Ascend910', 'RestartNPU'],
  ])('HR-23 §J.2 %s %s: first free pass only records, reset after 60 s idle', async (kind, level) => {
    const h = setup({ kind });
    h.fault(2, level);
    await h.cycle();
    expect(h.state(2)).toBe('debouncing');
    await h.run(55 * S);
    expect(h.resets()).toHaveLength(0);
    await h.run(5 * S);
    expect(h.resets().map((c) => [c.logicId, c.at - h.engine.status()[2]!.idleSince!])).toEqual([[2, 60 * S]]);
  });

  test('§J.2 the engine wakes itself when the debounce expires (no further cycle call needed)', async () => {
    const h = setup();
    h.fault(3);
    const t0 = h.clock.now();
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.resets().map((c) => c.at - t0)).toEqual([60 * S]);
  });

  test('§J.2 nothing to do: no DCMI call and no timer', async () => {
    const h = setup();
    await h.cycle();
    await h.cycle();
    expect(h.dcmi.calls).toEqual([]);
    expect(h.clock.pending()).toBe(0);
  });

  test('§J.2 the idle record is kept when the ring becomes busy again', async () => {
    const h = setup();
    h.fault(2);
    await h.cycle();
    await h.run(30 * S);
    h.podUse(0, true);
    await h.run(40 * S);
    expect(h.resets()).toHaveLength(0);
    h.podUse(0, false);
    await h.cycle();
    expect(h.resets()).toHaveLength(1);
  });
});

describe('offline engine: ring free (§J.6, HR-24)', () => {
  test('HR-24 §J.6 a pod on another chip of the ring: no reset and no debounce record', async () => {
    const h = setup();
    h.fault(2);
    h.podUse(0, true);
    await h.cycle();
    await h.run(120 * S);
    expect(h.resets()).toHaveLength(0);
    expect(h.engine.status()[2]).toMatchObject({ state: 'idle' });
    expect(h.engine.status()[2]!.idleSince).toBeUndefined();
  });

  test('HR-24 §J.6 a process on another chip of the ring: no reset and no debounce record', async () => {
    const h = setup();
    h.fault(2);
    h.dcmi.set(0, { processes: 1 });
    await h.run(120 * S);
    expect(h.resets()).toHaveLength(0);
    expect(h.engine.status()[2]!.idleSince).toBeUndefined();
  });

  test('§J.6 a failing process query counts as busy', async () => {
    const h = setup();
    h.fault(2);
    h.dcmi.set(7, { errors: { getProcessCount: -8005 } });
    await h.run(120 * S);
    expect(h.resets()).toHaveLength(0);
  });

  test('HR-24 §J.2 the debounce starts when the ring becomes free', async () => {
    const h = setup();
    h.fault(2);
    h.dcmi.set(0, { processes: 1 });
    await h.run(100 * S);
    h.dcmi.set(0, { processes: 0 });
    const freeAt = h.clock.now();
    await h.cycle();
    await h.run(60 * S);
    expect(h.resets().map((c) => c.at - freeAt)).toEqual([60 * S]);
  });

  test('§J.3 a single-chip board ignores the other chips', async () => {
    const h = setup({ boardId: 0x33 });
    h.fault(2);
    h.podUse(0, true);
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.resets().map((c) => c.logicId)).toEqual([2]);
    expect(h.dcmi.callsOf('getProcessCount').every((c) => c.logicId === 2)).toBe(true);
  });
});

describe('offline engine: confirmation and tokens (§J.2, HR-26, HR-30)', () => {
  test('HR-26 §J.2 DCMI health 0 at the confirmation: no reset, no token used, group released', async () => {
    const h = setup();
    h.fault(2);
    h.dcmi.set(2, { health: 0 });
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.dcmi.count('getDeviceHealth', 2)).toBe(1);
    expect(h.resets()).toHaveLength(0);
    expect(h.engine.status()[2]).toMatchObject({ tokens: 3, state: 'debouncing' });
    expect(h.coordinator.resetting().size).toBe(0);
  });

  test('§J.2 health error -8012 (device not ready) confirms the reset', async () => {
    const h = setup();
    h.fault(2);
    h.dcmi.set(2, { errors: { getDeviceHealth: -8012 } });
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.resets()).toHaveLength(1);
  });

  test('§J.2 any other health error skips the reset', async () => {
    const h = setup();
    h.fault(2);
    h.dcmi.set(2, { errors: { getDeviceHealth: -8005 } });
    await h.cycle();
    await h.run(120 * S);
    expect(h.resets()).toHaveLength(0);
    expect(h.engine.status()[2]!.tokens).toBe(3);
  });

  test('HR-30 §J.2 at most 3 resets per 6 h; the 4th goes to ManualResetDevs; reset again after the refill', async () => {
    const h = setup();
    h.fault(2); // the fault survives every reset (the re-sync keeps it)
    await h.cycle();
    await h.run(10 * 60 * S);
    expect(h.resets()).toHaveLength(3);
    expect(h.state(2)).toBe('exhausted');
    expect(h.engine.status()[2]!.tokens).toBe(0);
    await h.resetInfo.whenIdle();
    expect(manualOf(h.node.value)).toEqual([2]);
    expect(h.events.filter((e) => e.reason === 'OfflineResetLimitReached')).toHaveLength(1);
    expect(h.node.writes).toHaveLength(1);
    const firstReset = h.resets()[0]!.at;
    await h.run(firstReset + 6 * H - h.clock.now() - 5 * S);
    expect(h.resets()).toHaveLength(3);
    await h.run(10 * S);
    expect(h.resets()).toHaveLength(4);
  });

  test('§J.2 the token is consumed at the confirmation', async () => {
    const h = setup();
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.engine.status()[2]!.tokens).toBe(2);
  });
});

describe('offline engine: executeReset (§J.2)', () => {
  test('§J.2 success: one in-band reset of the faulty chip, every ring chip booted, re-sync, idle forgotten', async () => {
    const h = setup();
    h.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { bootSeconds: 5 });
    h.fault(3);
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.state(3)).toBe('waitingBoot');
    expect(h.engine.status()[3]!.group).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([...h.coordinator.resetting().values()].every((o) => o === OFFLINE_OWNER)).toBe(true);
    await h.clock.advance(5 * S);
    expect(h.resets().map((c) => c.logicId)).toEqual([3]);
    expect(new Set(h.dcmi.callsOf('getBootStatus').map((c) => c.logicId))).toEqual(new Set([0, 1, 2, 3, 4, 5, 6, 7]));
    expect(h.resynced).toEqual([[3]]);
    expect(h.engine.status()[3]).toMatchObject({ state: 'idle' });
    expect(h.engine.status()[3]!.idleSince).toBeUndefined();
    expect(h.coordinator.resetting().size).toBe(0);
    expect(h.events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'OfflineResetSucceeded']]);
  });

  test('§J.2 a reset that hangs (boot never 16) fails after 180 s and releases the group', async () => {
    const h = setup();
    h.dcmi.set(2, { reset: { inband: 'hang', outband: 'ok' } });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S);
    const start = h.resets()[0]!.at;
    await h.clock.advance(179 * S);
    expect(h.state(2)).toBe('waitingBoot');
    expect(h.coordinator.resetting().size).toBe(8);
    await h.clock.advance(1 * S);
    expect(h.clock.now() - start).toBe(180 * S);
    expect(h.coordinator.resetting().size).toBe(0);
    expect(h.engine.status()[2]).toMatchObject({ state: 'debouncing', tokens: 2 });
    expect(h.engine.status()[2]!.lastError).toContain('did not finish booting within 180 s');
    expect(h.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'OfflineResetFailed']]);
    expect(h.resynced).toEqual([]);
  });

  test('§J.2 a failed reset is retried on a later cycle while tokens remain (idle already satisfied)', async () => {
    const h = setup();
    h.dcmi.set(2, { reset: { inband: 'fail', outband: 'ok' } });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.resets()).toHaveLength(1);
    await h.run(5 * S);
    expect(h.resets()).toHaveLength(2);
    await h.run(5 * S);
    expect(h.resets()).toHaveLength(3);
    await h.run(60 * S);
    expect(h.resets()).toHaveLength(3);
    expect(h.state(2)).toBe('exhausted');
    expect(h.resets('outband')).toHaveLength(0); // not a 910A3
  });

  test('issue 12 item 6 §J.2 a failing reset uses one token per listWatchPeriod, even when its end runs a cycle at once', async () => {
    // As the agent wires it: the end of a reset changes the resetting set, the store publishes a snapshot and a
    // cycle runs in the next turn of the event loop.
    const holder: { cycle?: () => Promise<void> } = {};
    const h = setup({ retryAfter: 5 * S, onResettingChange: () => setImmediate(() => void holder.cycle?.()) });
    holder.cycle = h.cycle;
    h.dcmi.set(2, { reset: { inband: 'fail', outband: 'ok' } });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S);
    const first = h.resets()[0]!.at;
    expect(h.resets()).toHaveLength(1);
    expect(h.engine.status()[2]).toMatchObject({ state: 'debouncing', tokens: 2, retryAt: first + 5 * S });
    await h.clock.advance(5 * S - 1);
    expect(h.resets()).toHaveLength(1);
    await h.run(15 * S);
    expect(h.resets().map((c) => c.at - first)).toEqual([0, 5 * S, 10 * S]);
    expect(h.state(2)).toBe('exhausted');
  });

  test('issue 12 item 6 §J.2 a healed chip forgets the retry wait: a new fault is reset after the 60 s debounce', async () => {
    const h = setup({ retryAfter: 120 * S });
    h.dcmi.set(2, { reset: { inband: 'fail', outband: 'ok' } });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S);
    h.heal(2);
    await h.cycle();
    expect(h.engine.status()[2]!.retryAt).toBeUndefined();
    h.fault(2);
    await h.cycle();
    await h.run(55 * S);
    expect(h.resets()).toHaveLength(1);
    await h.run(5 * S);
    expect(h.resets()).toHaveLength(2);
  });

  test('§J.2 a ring where one chip reports a boot-status error: the reset fails at once', async () => {
    const h = setup();
    h.dcmi.set(5, { errors: { getBootStatus: -8005 } });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(61 * S);
    expect(h.engine.status()[2]!.lastError).toBe(
      'boot status of chip 5 failed: fake dcmi getBootStatus(5) failed with -8005 (code -8005)',
    );
    expect(h.coordinator.resetting().size).toBe(0);
    expect(h.resynced).toEqual([]);
  });

  test('§J.2 a ring where one chip never finishes booting fails after the limit, naming it', async () => {
    const h = setup();
    h.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { bootSeconds: 5 });
    h.dcmi.set(6, { bootSeconds: 1000 });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S + 180 * S);
    expect(h.engine.status()[2]!.lastError).toBe('chips 6 did not finish booting within 180 s');
    expect(h.coordinator.resetting().size).toBe(0);
  });

  test('§J.4 910A3: a failing in-band reset falls back to out-of-band on every group chip', async () => {
    const h = setup({ kind: 'Ascend910A3', n: 8 });
    h.dcmi.set(0, { reset: { inband: 'fail', outband: 'ok' } });
    h.fault(0);
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.state(0)).toBe('outOfBand');
    await h.clock.advance(4 * 3 * S + 1 * S);
    const seq = h.dcmi.calls
      .filter((c) => ['getOutbandChannelState', 'preResetSoc', 'setDeviceReset', 'rescanSoc'].includes(c.fn))
      .map((c) => `${c.fn}(${c.logicId}${c.arg === undefined ? '' : `,${c.arg as string}`})`);
    expect(seq).toEqual([
      'setDeviceReset(0,inband)',
      ...[0, 1, 2, 3].flatMap((g) => [
        `getOutbandChannelState(${g})`,
        `preResetSoc(${g})`,
        `setDeviceReset(${g},outband)`,
        `rescanSoc(${g})`,
      ]),
    ]);
    const rescan0 = h.dcmi.callsOf('rescanSoc')[0]!;
    const outband0 = h.resets('outband')[0]!;
    expect(rescan0.at - outband0.at).toBe(3 * S);
    expect(h.resynced).toEqual([[0]]);
    expect(h.coordinator.resetting().size).toBe(0);
    expect(h.events.map((e) => e.reason)).toEqual(['OfflineResetSucceeded']);
  });

  test('§J.4 910A3: an unusable out-of-band channel makes the reset fail', async () => {
    const h = setup({ kind: 'Ascend910A3', n: 8 });
    h.dcmi.set(0, { reset: { inband: 'fail', outband: 'ok' } });
    h.dcmi.setAll([0, 1, 2, 3], { outbandChannel: 0 });
    h.fault(0);
    await h.cycle();
    await h.clock.advance(61 * S);
    expect(h.resets('outband')).toHaveLength(0);
    expect(h.engine.status()[0]!.lastError).toBe(
      'out-of-band reset of chip 3 failed: out-of-band channel of chip 3 is not usable (state 0)',
    );
    expect(h.coordinator.resetting().size).toBe(0);
  });

  test('§J.4 910A3: out-of-band boot wait is limited to 150 s', async () => {
    const h = setup({ kind: 'Ascend910A3', n: 8 });
    h.dcmi.setAll([0, 1, 2, 3], { reset: { inband: 'fail', outband: 'hang' } });
    h.fault(0);
    await h.cycle();
    await h.clock.advance(60 * S + 12 * S);
    const outEnd = h.clock.now();
    await h.clock.advance(149 * S);
    expect(h.state(0)).toBe('outOfBand');
    await h.clock.advance(1 * S);
    expect(h.clock.now() - outEnd).toBe(150 * S);
    expect(h.engine.status()[0]).toMatchObject({ state: 'debouncing' });
    expect(h.engine.status()[0]!.lastError).toContain('within 150 s');
  });

  test('§J.3 910A3: the group is the 4-chip association', async () => {
    const h = setup({ kind: 'Ascend910A3', n: 8 });
    h.podUse(5, true); // other association (cards 2, 3)
    h.fault(1);
    await h.cycle();
    await h.clock.advance(61 * S);
    expect(h.resets().map((c) => c.logicId)).toEqual([1]);
    expect(new Set(h.dcmi.callsOf('getBootStatus').map((c) => c.logicId))).toEqual(new Set([0, 1, 2, 3]));
  });
});

describe('offline engine: upstream defects (hot-reset.md §7, D7)', () => {
  test('§7.6 D7 a code that survives the reset does not isolate the chip: re-sync, then a new 60 s debounce', async () => {
    const h = setup();
    h.fault(2);
    await h.cycle();
    await h.clock.advance(61 * S);
    expect(h.resynced).toEqual([[2]]);
    const done = h.clock.now();
    await h.run(55 * S);
    expect(h.resets()).toHaveLength(1);
    await h.run(10 * S);
    expect(h.resets()).toHaveLength(2);
    expect(h.resets()[1]!.at - done).toBeGreaterThanOrEqual(60 * S);
  });

  test("§7.7 §7.8 910A3: out-of-band only right after this reset's in-band failure, never from an old one", async () => {
    const h = setup({ kind: 'Ascend910A3', n: 8 });
    h.dcmi.set(0, { reset: { inband: 'fail', outband: 'ok' } });
    h.fault(0);
    await h.cycle();
    await h.clock.advance(60 * S + 13 * S);
    expect(h.resets('outband')).toHaveLength(4);
    h.dcmi.set(0, { reset: { inband: 'ok', outband: 'ok' } });
    await h.run(120 * S); // the fault survived: a second reset, in-band only
    expect(h.resets('inband')).toHaveLength(2);
    expect(h.resets('outband')).toHaveLength(4);
    expect(h.dcmi.count('getOutbandChannelState')).toBe(4);
  });
});

describe('offline engine: sharing (D4)', () => {
  test('D4 a ring with a chip of a task handled online is never reset offline, nor queried', async () => {
    const h = setup({ kind: 'Ascend910', excluded: [1] });
    h.fault(2);
    h.fault(5);
    await h.cycle();
    await h.run(120 * S);
    expect(h.resets().map((c) => c.logicId)).toEqual([5]);
    expect(h.dcmi.calls.filter((c) => c.logicId < 4 && c.fn !== 'getBootStatus')).toEqual([]);
  });

  test('D4 a group held by the online engine is skipped', async () => {
    const h = setup();
    h.coordinator.tryAcquire([6], 'online');
    h.fault(2);
    await h.cycle();
    await h.run(120 * S);
    expect(h.resets()).toHaveLength(0);
    h.coordinator.release([6], 'online');
    await h.run(5 * S);
    expect(h.resets()).toHaveLength(1);
  });

  test('D4 two faulty chips of one group: one reset at a time', async () => {
    const h = setup();
    h.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { bootSeconds: 20 });
    h.fault(2);
    h.fault(5);
    await h.cycle();
    await h.run(60 * S);
    expect(h.resets().map((c) => c.logicId)).toEqual([2]);
    expect(h.state(5)).toBe('debouncing');
    await h.run(20 * S);
    const [first, second] = h.resets();
    expect(second?.logicId).toBe(5);
    const firstDone = first!.at + 20 * S;
    expect(second!.at).toBeGreaterThanOrEqual(firstDone);
  });
});

describe('offline engine: ResetInfo (§J.7, HR-27)', () => {
  test('§J.2 SeparateNPU and ManuallySeparateNPU chips go to ManualResetDevs and are not reset', async () => {
    const h = setup();
    h.fault(1, 'SeparateNPU');
    h.fault(4, 'ManuallySeparateNPU');
    h.fault(6, 'PreSeparateNPU');
    await h.cycle();
    await h.run(120 * S);
    await h.resetInfo.whenIdle();
    expect(manualOf(h.node.value)).toEqual([1, 4]);
    expect(h.node.writes).toHaveLength(1);
    expect(h.resets()).toHaveLength(0);
  });

  test('HR-27 §J.2 a Healthy chip forgets its idle record and leaves both lists in one write', async () => {
    const dev = (p: number) => ({ CardId: p, DeviceId: 0, AssociatedCardId: -1, PhyID: p, LogicID: p });
    const h = setup({
      annotation: encodeResetInfo({ ThirdPartyResetDevs: [dev(2), dev(6)], ManualResetDevs: [dev(2)] }),
    });
    h.fault(2);
    h.fault(6, 'PreSeparateNPU'); // not Healthy, not in any list this engine writes: its entry stays
    await h.cycle();
    await h.resetInfo.whenIdle();
    expect(h.node.writes).toEqual([]);
    expect(h.engine.status()[2]!.idleSince).toBeDefined();
    h.heal(2);
    await h.cycle();
    await h.resetInfo.whenIdle();
    expect(h.engine.status()[2]).toMatchObject({ state: 'idle' });
    expect(h.engine.status()[2]!.idleSince).toBeUndefined();
    expect(h.node.writes).toEqual([encodeResetInfo({ ThirdPartyResetDevs: [dev(6)], ManualResetDevs: [] })]);
    await h.cycle();
    await h.resetInfo.whenIdle();
    expect(h.node.writes).toHaveLength(1);
  });

  test('HR-27 §J.2 after healing the debounce starts again from zero', async () => {
    const h = setup();
    h.fault(2);
    await h.cycle();
    await h.run(50 * S);
    h.heal(2);
    await h.cycle();
    h.fault(2);
    const again = h.clock.now();
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(h.resets().map((c) => c.at - again)).toEqual([60 * S]);
  });

  test('§J.2 mode -1: clean-up of Healthy chips only, never a reset', async () => {
    const dev = { CardId: 3, DeviceId: 0, AssociatedCardId: -1, PhyID: 3, LogicID: 3 };
    const h = setup({ mode: -1, annotation: encodeResetInfo({ ThirdPartyResetDevs: [], ManualResetDevs: [dev] }) });
    h.fault(2);
    h.fault(5, 'SeparateNPU');
    await h.run(120 * S);
    await h.resetInfo.whenIdle();
    expect(h.dcmi.calls).toEqual([]);
    expect(h.node.writes).toEqual([encodeResetInfo({ ThirdPartyResetDevs: [], ManualResetDevs: [] })]);
  });
});

describe('offline engine: intervals on the monotonic clock (issue [T] item 1)', () => {
  /** The monotonic times of the in-band resets, relative to `t0`. */
  const resetsSince = (h: ReturnType<typeof setup>, t0: number): number[] => h.resets().map((c) => c.mono - t0);

  test('§J.2 the 60 s debounce holds with the wall clock stepped back one hour in the middle', async () => {
    const h = setup();
    h.fault(3);
    const t0 = h.clock.monotonic();
    await h.cycle();
    await h.clock.advance(30 * S);
    h.clock.stepWall(-H);
    await h.cycle();
    await h.clock.advance(30 * S);
    expect(resetsSince(h, t0)).toEqual([60 * S]);
  });

  test('§J.2 the debounce is not cut short by the wall clock stepped forward one hour', async () => {
    const h = setup();
    h.fault(3);
    const t0 = h.clock.monotonic();
    await h.cycle();
    await h.clock.advance(10 * S);
    h.clock.stepWall(H);
    await h.cycle();
    expect(h.resets()).toHaveLength(0);
    await h.clock.advance(50 * S);
    expect(resetsSince(h, t0)).toEqual([60 * S]);
  });

  test('§J.2 the debounce and the boot wait run with the wall clock frozen', async () => {
    const h = setup();
    h.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { bootSeconds: 5 });
    h.clock.freezeWall();
    h.fault(3);
    const t0 = h.clock.monotonic();
    await h.cycle();
    await h.clock.advance(60 * S);
    expect(resetsSince(h, t0)).toEqual([60 * S]);
    await h.clock.advance(6 * S);
    expect(h.events.map((e) => e.reason)).toEqual(['OfflineResetSucceeded']);
    expect(h.coordinator.resetting().size).toBe(0);
  });

  test('§J.2 a hanging boot fails after 180 s of monotonic time although the wall clock went back an hour', async () => {
    const h = setup();
    h.dcmi.set(2, { reset: { inband: 'hang', outband: 'ok' } });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S);
    const start = h.resets()[0]!.mono;
    await h.clock.advance(90 * S);
    h.clock.stepWall(-H);
    await h.clock.advance(89 * S);
    expect(h.state(2)).toBe('waitingBoot');
    await h.clock.advance(1 * S);
    expect(h.clock.monotonic() - start).toBe(180 * S);
    expect(h.coordinator.resetting().size).toBe(0);
  });

  test('§J.2 a failed reset is retried one listWatchPeriod later although the wall clock went back an hour', async () => {
    const h = setup();
    h.dcmi.set(2, { reset: { inband: 'fail', outband: 'ok' } });
    h.fault(2);
    await h.cycle();
    await h.clock.advance(60 * S);
    const first = h.resets()[0]!.mono;
    h.clock.stepWall(-H);
    await h.run(5 * S);
    expect(h.resets().map((c) => c.mono - first)).toEqual([0, 5 * S]);
  });

  test('§J.2 the 6 h refill comes after 6 h of monotonic time, whatever the wall clock does', async () => {
    const h = setup();
    h.fault(2); // the fault survives every reset
    await h.cycle();
    await h.run(10 * 60 * S);
    expect(h.resets()).toHaveLength(3);
    const firstReset = h.resets()[0]!.mono;
    h.clock.stepWall(6 * H); // a forward step does not refill early
    await h.run(10 * S);
    expect(h.resets()).toHaveLength(3);
    h.clock.stepWall(-7 * H); // nor does a backward one delay it
    await h.run(firstReset + 6 * H - h.clock.monotonic() + 10 * S);
    expect(h.resets()).toHaveLength(4);
  });
});

describe('offline engine: agent restart (issue [T] item 4)', () => {
  /** Engine 1 resets chip 3 (group 0–7 booting `bootSeconds`) and is left at `after` ms past the reset call. */
  async function interrupted(store: MemoryOfflineStore, bootSeconds: number, after: number): Promise<Harness> {
    const h = setup({ store });
    h.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { bootSeconds });
    h.fault(3);
    await h.cycle();
    await h.clock.advance(60 * S + after);
    expect(h.resets()).toHaveLength(1);
    h.engine.close(); // the old process stops; its resets die with it
    return h;
  }

  test('a reset in flight is saved with its group, start time and phase, and the used token', async () => {
    const store = new MemoryOfflineStore();
    const h = await interrupted(store, 30, 2 * S);
    expect(store.state).toEqual({
      resets: [{ logicId: 3, group: [0, 1, 2, 3, 4, 5, 6, 7], startedAt: h.resets()[0]!.at, phase: 'waitingBoot' }],
      buckets: [{ logicId: 3, tokens: 2, lastRefillAt: h.resets()[0]!.at }], // bucket made at its first use
    });
  });

  test('the restarted engine holds the group at once, reports it rebooting, waits for the boot and never resets again', async () => {
    const store = new MemoryOfflineStore();
    const old = await interrupted(store, 30, 2 * S);
    const seen: number[][] = [];
    const h = setup({ store, from: old, onResettingChange: (c) => seen.push([...c].sort((a, b) => a - b)) });
    // at construction, before any cycle
    expect(seen).toEqual([[0, 1, 2, 3, 4, 5, 6, 7]]);
    expect([...h.coordinator.resetting().values()]).toEqual(Array(8).fill(OFFLINE_OWNER));
    expect(h.state(3)).toBe('waitingBoot');
    h.heal(3); // the reset cleared the fault: the chip looks healthy while it boots
    await h.run(20 * S);
    expect(h.coordinator.resetting().size).toBe(8);
    await h.run(10 * S);
    expect(h.coordinator.resetting().size).toBe(0);
    expect(seen.at(-1)).toEqual([]);
    expect(h.resets()).toHaveLength(1); // the old engine's only
    expect(h.resynced).toEqual([[3]]);
    expect(h.events.map((e) => [e.reason, e.message.includes('resumed after an agent restart')])).toEqual([
      ['OfflineResetSucceeded', true],
    ]);
    expect(store.state?.resets).toEqual([]);
  });

  test('the boot limit counts the time before the restart: a group still booting fails when its 180 s are up', async () => {
    const store = new MemoryOfflineStore();
    const old = await interrupted(store, 600, 2 * S);
    await old.clock.advance(170 * S); // the agent was down for 170 s
    const h = setup({ store, from: old });
    await h.clock.advance(7 * S);
    expect(h.coordinator.resetting().size).toBe(8);
    await h.clock.advance(2 * S);
    expect(h.coordinator.resetting().size).toBe(0);
    expect(h.engine.status()[3]!.lastError).toMatch(/did not finish booting within 8 s/);
    expect(h.events.map((e) => e.reason)).toEqual(['OfflineResetFailed']);
  });

  test('a reset saved before its DCMI call went out: released at the first poll, the chip reset again only after a new idle period, with the token already used', async () => {
    const store = new MemoryOfflineStore();
    const h1 = setup({ store });
    h1.fault(3);
    await h1.cycle();
    await h1.clock.advance(60 * S);
    h1.engine.close();
    // as if the process died between the save and the call: phase resetting, the chip never rebooted
    store.state = { ...store.state!, resets: store.state!.resets.map((r) => ({ ...r, phase: 'resetting' as const })) };
    h1.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { bootSeconds: 0 });
    const h = setup({ store, from: h1 });
    await h.clock.advance(1 * S);
    expect(h.coordinator.resetting().size).toBe(0);
    expect(h.engine.status()[3]!.tokens).toBe(2);
    const before = h.resets().length; // the fake DCMI saw engine 1's call; as if it never reached the chip
    const t0 = h.clock.monotonic();
    await h.cycle();
    await h.clock.advance(59 * S);
    expect(h.resets()).toHaveLength(before);
    await h.clock.advance(1 * S);
    expect(
      h
        .resets()
        .slice(before)
        .map((c) => c.mono - t0),
    ).toEqual([60 * S]);
    expect(h.engine.status()[3]!.tokens).toBe(1);
  });

  test('§J.2 the buckets outlive the engine: 3 resets in all per 6 h, not 3 per agent process', async () => {
    const store = new MemoryOfflineStore();
    const h1 = setup({ store });
    h1.dcmi.set(2, { reset: { inband: 'fail', outband: 'ok' } });
    h1.fault(2);
    await h1.cycle();
    await h1.clock.advance(60 * S);
    await h1.run(5 * S);
    expect(h1.resets()).toHaveLength(2);
    h1.engine.close();
    const h = setup({ store, from: h1 });
    await h.cycle();
    await h.run(10 * 60 * S);
    expect(h.resets()).toHaveLength(3);
    expect(h.state(2)).toBe('exhausted');
  });

  test('a saved reset naming a chip the node does not have is ignored, and dropped from the file', () => {
    const store = new MemoryOfflineStore();
    store.state = { resets: [{ logicId: 42, group: [40, 41, 42], startedAt: 0, phase: 'waitingBoot' }], buckets: [] };
    const h = setup({ store });
    expect(h.coordinator.resetting().size).toBe(0);
    expect(store.state).toEqual({ resets: [], buckets: [] });
  });
});

describe('offline engine: input checks', () => {
  test('bad options name the problem', () => {
    const h = setup();
    const base = {
      clock: h.clock,
      mode: 2 as HotResetMode,
      timings: DEFAULT_OFFLINE_TIMINGS,
      dcmi: h.dcmi,
      facts: h.facts,
      coordinator: h.coordinator,
      resetInfo: h.resetInfo,
      hooks: { markNeedsResync: () => undefined, chips: () => [] },
      events: () => undefined,
    };
    expect(() => new OfflineResetEngine({ ...base, mode: 3 as HotResetMode })).toThrow('unknown -hotReset mode 3');
    expect(() => new OfflineResetEngine({ ...base, timings: { ...DEFAULT_OFFLINE_TIMINGS, pollInterval: 0 } })).toThrow(
      'timing pollInterval must be a positive number',
    );
    expect(() => new OfflineResetEngine({ ...base, timings: { ...DEFAULT_OFFLINE_TIMINGS, tokens: 0 } })).toThrow(
      'capacity must be a positive integer',
    );
    expect(() => new OfflineResetEngine({ ...base, retryAfter: -1 })).toThrow(
      'timing retryAfter must be a positive number of ms, got -1',
    );
    expect(() => h.engine.cycle(undefined as unknown as ChipResetView[])).toThrow('needs the array of chip views');
  });

  test('a chip without a reset group (910A3 brother card unknown) is not reset', async () => {
    const h = setup({ kind: 'Ascend910A3', n: 8 });
    (h.facts as { brotherCardOf?: (c: number) => number | undefined }).brotherCardOf = () => undefined;
    h.fault(0);
    await h.run(120 * S);
    expect(h.dcmi.calls).toEqual([]);
  });
});
