/**
 * Issue 12 items 5 and 8: when the engine state is saved (an escalation change at once, a storm folded into one
 * follow-up save per interval, other changes within the debounce), what a save over the limit does, what a start
 * with a file over the limit does, and that the largest legal configuration gives a state that can be saved and
 * loaded again.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  exportEngineState,
  FaultEngine,
  MAX_CONFIG_BYTES,
  importEngineState,
  parsePolicy,
} from '../../src/faults/index.js';
import {
  EngineStatePersistence,
  MAX_STATE_BYTES,
  SAVE_BURST,
  SAVE_DEBOUNCE_MS,
  SAVE_MIN_INTERVAL_MS,
  SaveScheduler,
  reduceState,
  type DurableSource,
} from '../../src/kube/engine-state-persistence.js';
import type { Logger } from '../../src/core/logger.js';
import { Harness, shippedPolicy } from '../faults/helpers.js';
import { FakeClock, settle } from '../health/fake-clock.js';
import { EventList, NODE } from './harness.js';

const SEP = 0x80e18402; // SeparateNPU, no FaultFrequency rule
const FREQ = 0x80b78000; // shipped FaultFrequency: 2 in 24 h -> ManuallySeparateNPU

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-persist-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** What the file holds now, as a new agent would read it. */
const onDisk = (): ReturnType<EngineStatePersistence['load']> =>
  new EngineStatePersistence({ dir, nodeName: NODE }).load();

/** Polls (real time) until `cond` holds; the writes themselves are real file I/O. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A scheduler whose saves finish when the test says so. */
function gatedScheduler(clock: FakeClock): { s: SaveScheduler; finish: () => Promise<void> } {
  const open: (() => void)[] = [];
  const s = new SaveScheduler({ clock, run: () => new Promise<void>((r) => open.push(r)) });
  return {
    s,
    finish: async () => {
      open.shift()?.();
      await settle();
    },
  };
}

function captureLog(): { log: Logger; errors: string[] } {
  const errors: string[] = [];
  const fn = (a: object | string, b?: string): void => void errors.push(typeof a === 'string' ? a : (b ?? ''));
  const noop = (): void => undefined;
  return { log: { debug: noop, info: noop, warn: noop, error: fn }, errors };
}

/** Chip 2 separated by FaultFrequency, chip 3 one occurrence short of it, chip 1 with a plain fault. */
/** The engine as a durable source (the agent gives the state store, which owns its engine). */
function durable(engine: FaultEngine): DurableSource {
  return {
    get durableRevision() {
      return engine.durableRevision;
    },
    exportDurableState: () => exportEngineState(engine),
  };
}

function busy(): Harness {
  const h = new Harness(shippedPolicy());
  h.occur(0, 1, SEP);
  h.occur(1000, 2, FREQ);
  h.recover(2000, 2, FREQ);
  h.occur(3000, 2, FREQ);
  h.occur(4000, 3, FREQ);
  return h;
}

describe('issue 12 item 8: save scheduling (injected clock)', () => {
  test('a save asked for at once starts at once', () => {
    const clock = new FakeClock();
    const { s } = gatedScheduler(clock);
    s.request(0);
    expect(s.started).toBe(1);
  });

  test('requests made while a save is in flight are folded into one follow-up save', async () => {
    const clock = new FakeClock();
    const { s, finish } = gatedScheduler(clock);
    s.request(0);
    for (let i = 0; i < 50; i++) s.request(0);
    await finish();
    await clock.advance(SAVE_MIN_INTERVAL_MS);
    await finish();
    await clock.advance(10 * SAVE_DEBOUNCE_MS);
    expect([s.started, s.pending]).toEqual([2, false]);
  });

  test('a storm of changes starts at most one save per minimum interval after a short burst', async () => {
    const clock = new FakeClock();
    const s = new SaveScheduler({ clock, run: () => Promise.resolve() });
    for (let ms = 0; ms < 1000; ms++) {
      s.request(0);
      await clock.advance(1);
    }
    expect(s.started).toBeLessThanOrEqual(1000 / SAVE_MIN_INTERVAL_MS + SAVE_BURST);
  });

  test('issue [P] item 5: a save due at its timer starts in `defer`; one asked for at once does not wait for it', async () => {
    const clock = new FakeClock();
    const lane: (() => void)[] = [];
    const s = new SaveScheduler({ clock, run: () => undefined, defer: (run) => lane.push(run) });
    s.request(SAVE_DEBOUNCE_MS);
    await clock.advance(SAVE_DEBOUNCE_MS);
    const held = [s.started, lane.length];
    for (const run of lane.splice(0)) run();
    const debounced = s.started;
    s.request(0);
    expect([held, debounced, s.started]).toEqual([[0, 1], 1, 2]);
  });

  test('a few changes in quick succession are each saved at once', () => {
    const clock = new FakeClock();
    const s = new SaveScheduler({ clock, run: () => undefined });
    for (let i = 0; i < SAVE_BURST; i++) s.request(0);
    expect(s.started).toBe(SAVE_BURST);
  });

  test('a storm of changes still saves the latest: one save follows the last request', async () => {
    const clock = new FakeClock();
    const s = new SaveScheduler({ clock, run: () => Promise.resolve() });
    for (let ms = 0; ms < 100; ms++) {
      s.request(0);
      await clock.advance(1);
    }
    const before = s.started;
    s.request(0);
    await clock.advance(SAVE_MIN_INTERVAL_MS);
    expect([s.started, s.pending]).toEqual([before + 1, false]);
  });

  test('a debounced request waits the debounce and a later one does not postpone it', async () => {
    const clock = new FakeClock();
    const s = new SaveScheduler({ clock, run: () => Promise.resolve() });
    s.request(SAVE_DEBOUNCE_MS);
    await clock.advance(SAVE_DEBOUNCE_MS / 2);
    s.request(SAVE_DEBOUNCE_MS);
    const halfway = s.started;
    await clock.advance(SAVE_DEBOUNCE_MS / 2);
    expect([halfway, s.started]).toEqual([0, 1]);
  });

  test('an at-once request overtakes a debounced one, which is then not saved again', async () => {
    const clock = new FakeClock();
    const s = new SaveScheduler({ clock, run: () => Promise.resolve() });
    s.request(SAVE_DEBOUNCE_MS);
    s.request(0);
    await clock.advance(2 * SAVE_DEBOUNCE_MS);
    expect(s.started).toBe(1);
  });

  test('flush runs a pending save at once', async () => {
    const clock = new FakeClock();
    const s = new SaveScheduler({ clock, run: () => Promise.resolve() });
    s.request(SAVE_DEBOUNCE_MS);
    await s.flush();
    expect([s.started, s.pending]).toEqual([1, false]);
  });
});

describe('issue 12 item 8: what is saved at once', () => {
  test('a FaultFrequency occurrence is on disk when noteChange returns, with its count', async () => {
    const clock = new FakeClock();
    const h = new Harness(shippedPolicy());
    const p = new EngineStatePersistence({ dir, nodeName: NODE, clock });
    p.noteChange(durable(h.engine), () => undefined);
    await clock.advance(SAVE_MIN_INTERVAL_MS);
    h.occur(0, 3, FREQ);
    p.noteChange(durable(h.engine), () => undefined);
    // No await: the file is written (and renamed) in the caller's turn, before any output of the cycle leaves.
    const saved = onDisk()?.engine.chips.find((c) => c.logicId === 3)?.frequency;
    expect(saved?.map((f) => f.times?.length)).toEqual([1]);
  });

  test('the written state is fsynced afterwards', async () => {
    const h = new Harness(shippedPolicy());
    const p = new EngineStatePersistence({ dir, nodeName: NODE });
    h.occur(0, 3, FREQ);
    p.noteChange(durable(h.engine), () => undefined);
    await p.flush();
    expect([p.stats.saves, p.stats.syncs >= 1, fs.readdirSync(dir)]).toEqual([1, true, ['engine-state.json']]);
  });

  test('beyond the burst, changes are folded into one save per interval', async () => {
    const clock = new FakeClock();
    const h = new Harness(shippedPolicy());
    const p = new EngineStatePersistence({ dir, nodeName: NODE, clock });
    for (let i = 0; i < 8; i++) {
      h.occur(i, i, FREQ);
      p.noteChange(durable(h.engine), () => undefined);
    }
    const atOnce = p.saves;
    await clock.advance(SAVE_MIN_INTERVAL_MS);
    const counted = onDisk()?.engine.chips.filter((c) => c.frequency.length > 0).length;
    expect([atOnce, p.saves, counted]).toEqual([SAVE_BURST, SAVE_BURST + 1, 8]);
  });

  test('a fault without an escalation rule waits the debounce', async () => {
    const clock = new FakeClock();
    const h = new Harness(shippedPolicy());
    const p = new EngineStatePersistence({ dir, nodeName: NODE, clock });
    p.noteChange(durable(h.engine), () => undefined);
    await until(() => p.saves === 1, 'the first save');
    await clock.advance(SAVE_MIN_INTERVAL_MS);
    h.occur(0, 1, SEP);
    p.noteChange(durable(h.engine), () => undefined);
    await settle();
    const early = p.saves;
    await clock.advance(SAVE_DEBOUNCE_MS);
    await until(() => p.saves === 2, 'the debounced save');
    expect(early).toBe(1);
  });

  test('a change of the confirmed ManuallySeparateNPU value is saved at once', async () => {
    const clock = new FakeClock();
    const h = new Harness(shippedPolicy());
    const p = new EngineStatePersistence({ dir, nodeName: NODE, clock });
    p.noteChange(durable(h.engine), () => '');
    await until(() => p.saves === 1, 'the first save');
    await clock.advance(SAVE_MIN_INTERVAL_MS);
    p.noteChange(durable(h.engine), () => 'Ascend910-2');
    await until(() => p.saves === 2, 'the save of the confirmed value');
    expect(onDisk()?.confirmedManual).toBe('Ascend910-2');
  });

  test('after a failed save, saves wait the debounce (no write loop against a broken disk)', async () => {
    const clock = new FakeClock();
    const notADir = path.join(dir, 'file');
    fs.writeFileSync(notADir, '');
    const { log } = captureLog();
    const h = new Harness(shippedPolicy());
    const p = new EngineStatePersistence({ dir: notADir, nodeName: NODE, clock, logger: log });
    p.noteChange(durable(h.engine), () => undefined);
    await until(() => p.stats.failures === 1, 'the failed save');
    await clock.advance(SAVE_MIN_INTERVAL_MS);
    h.occur(0, 3, FREQ);
    p.noteChange(durable(h.engine), () => undefined);
    await settle();
    const early = p.stats.failures;
    await clock.advance(SAVE_DEBOUNCE_MS);
    await until(() => p.stats.failures === 2, 'the debounced retry');
    expect(early).toBe(1);
  });
});

describe("the previous run's state", () => {
  test('G.3 load() after this process has saved still returns the state the previous run left', async () => {
    const first = busy();
    const before = new EngineStatePersistence({ dir, nodeName: NODE });
    await before.save(before.capture(durable(first.engine), 'Ascend910-2'));
    const p = new EngineStatePersistence({ dir, nodeName: NODE });
    await p.save(p.capture(durable(new Harness(shippedPolicy()).engine), '')); // a fresh engine saves before the restore
    expect([p.load()?.confirmedManual, onDisk()?.confirmedManual]).toEqual(['Ascend910-2', '']);
  });

  test('an unusable previous file is moved aside and reported before the first save replaces it', async () => {
    fs.writeFileSync(path.join(dir, 'engine-state.json'), '{"format": "ascend-npu-agent/engine-st');
    const events = new EventList();
    const { log } = captureLog();
    const p = new EngineStatePersistence({ dir, nodeName: NODE, now: () => 42, events, logger: log });
    await p.save(p.capture(durable(new Harness(shippedPolicy()).engine), ''));
    expect([p.load(), fs.readdirSync(dir).sort(), events.reasons()]).toEqual([
      undefined,
      ['engine-state.json', 'engine-state.json.corrupt-42'],
      ['EngineStateDiscarded'],
    ]);
  });
});

describe('issue 12 item 5: state limit', () => {
  test('a state over the limit is saved reduced, and every escalation survives the reload', async () => {
    const h = busy();
    // 300 faults without a rule on every chip: fault lists, fault times and severities, re-learnt from DCMI.
    h.cycle(
      5000,
      Array.from({ length: 8 * 300 }, (_, i) => ({ logicId: i % 8, code: 0x12340000 + Math.floor(i / 8) })),
    );
    const state = new EngineStatePersistence({ dir, nodeName: NODE }).capture(durable(h.engine), 'Ascend910-2');
    const full = JSON.stringify(state).length;
    const limit = JSON.stringify(reduceState(state, 2)).length + 500;
    const events = new EventList();
    const { log, errors } = captureLog();
    const p = new EngineStatePersistence({ dir, nodeName: NODE, maxBytes: limit, events, logger: log });
    await p.save(p.capture(durable(h.engine), 'Ascend910-2'));
    const loaded = onDisk();
    const fresh = new Harness(shippedPolicy());
    const r = importEngineState(fresh.engine, loaded?.engine);
    fresh.occur(10_000, 3, FREQ);
    expect([
      full > limit,
      fs.statSync(p.file).size <= limit,
      p.stats.reduced,
      r.ok,
      fresh.engine.manuallySeparated(),
      events.reasons(),
      errors.length,
    ]).toEqual([true, true, 1, true, [2, 3], ['EngineStateReduced'], 1]);
  });

  test('a state that does not fit even reduced is not written, and the previous file stays', async () => {
    const h = busy();
    const first = new EngineStatePersistence({ dir, nodeName: NODE });
    const limit = JSON.stringify(first.capture(durable(h.engine), undefined)).length + 2000;
    const good = new EngineStatePersistence({ dir, nodeName: NODE, maxBytes: limit });
    await good.save(good.capture(durable(h.engine), undefined));
    const before = fs.readFileSync(good.file, 'utf8');
    // Every shipped FaultFrequency code on every chip: escalation state alone is over the limit now.
    const codes = [...shippedPolicy().customization.frequency.keys()];
    h.cycle(
      10_000,
      codes.flatMap((code) => Array.from({ length: 8 }, (_, logicId) => ({ logicId, code }))),
    );
    const { log } = captureLog();
    const p = new EngineStatePersistence({ dir, nodeName: NODE, maxBytes: limit, logger: log });
    await p.save(p.capture(durable(h.engine), undefined));
    expect([before.length < limit, p.stats.oversize, fs.readFileSync(good.file, 'utf8') === before]).toEqual([
      true,
      1,
      true,
    ]);
  });

  test('a state file over the limit at start is moved aside, logged and reported as an Event', () => {
    fs.writeFileSync(path.join(dir, 'engine-state.json'), 'x'.repeat(2000));
    const events = new EventList();
    const { log, errors } = captureLog();
    const p = new EngineStatePersistence({ dir, nodeName: NODE, maxBytes: 1000, now: () => 42, events, logger: log });
    expect([p.load(), fs.readdirSync(dir), events.reasons(), errors.length, p.stats.rejected]).toEqual([
      undefined,
      ['engine-state.json.corrupt-42'],
      ['EngineStateDiscarded'],
      1,
      1,
    ]);
  });

  test('the Event of a discarded state file has bounded text', () => {
    const events = new EventList();
    const p = new EngineStatePersistence({ dir, nodeName: NODE, events });
    p.reject('y'.repeat(100_000));
    expect(events.events[0]!.message.length).toBeLessThan(1000);
  });

  test('the largest legal configuration gives a state that is saved and loaded whole', async () => {
    // Both files at the configuration limit, naming as many distinct codes as fit (shortest spellings first):
    // the code spellings are the part of the state that grows with the configuration.
    let n = 0;
    const fill = (budget: number): string[] => {
      const out: string[] = [];
      for (let len = 0; ; n++) {
        const s = n.toString(16);
        if (len + s.length + 3 > budget) return out;
        out.push(s);
        len += s.length + 3;
      }
    };
    const fc = JSON.stringify({ NotHandleFaultCodes: fill(MAX_CONFIG_BYTES - 30) });
    const ids = fill(MAX_CONFIG_BYTES - 120);
    const cu = JSON.stringify({
      FaultFrequency: [{ EventId: ids, TimeWindow: 86400, Times: 2, FaultHandling: 'ManuallySeparateNPU' }],
    });
    const parsed = parsePolicy(fc, cu);
    const engine = new FaultEngine(parsed.policy!, {
      chips: Array.from({ length: 16 }, (_, i) => ({ logicId: i, phyId: i })),
    });
    // Every chip carries 64 faults with a frequency rule, one occurrence each (half-way to the threshold).
    const T = 1_767_225_600_000;
    const events = Array.from({ length: 16 * 64 }, (_, i) => ({
      logicId: i % 16,
      code: Number.parseInt(ids[i]!, 16),
      assertion: 'occur' as const,
      severity: 2,
      timeMs: T,
    }));
    engine.cycle({ now: T, events });
    const p = new EngineStatePersistence({ dir, nodeName: NODE });
    await p.save(p.capture(durable(engine), undefined));
    const size = fs.statSync(p.file).size;
    const loaded = onDisk();
    const again = new FaultEngine(parsed.policy!, {
      chips: Array.from({ length: 16 }, (_, i) => ({ logicId: i, phyId: i })),
    });
    const r = importEngineState(again, loaded?.engine);
    expect([size <= MAX_STATE_BYTES, p.stats.reduced, r.ok, again.formats.entries().length]).toEqual([
      true,
      0,
      true,
      engine.formats.entries().length,
    ]);
  });
});
