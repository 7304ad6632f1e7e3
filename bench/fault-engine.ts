/**
 * bench/fault-engine: how fast does the fault engine take events, and does its memory stay bounded?
 *
 * - throughput: 16 chips, the shipped faultCode.json / faultCustomization.json, a pre-generated stream of
 *   occurrences, recoveries and notices over shipped codes (frequency-ruled HBM/ECC codes, the duration-ruled link
 *   code, plain codes). Event-driven path: one cycle per event (the agent's worst case), and batches of 64.
 *   Events/s per run, median over runs; per-cycle latency p50/p99 of the one-event path.
 * - memory: 24 h of simulated time at 10 events/s (864,000 events, one cycle each, plus the 5 s idle cycles they
 *   cover, generated on the fly), heap after a forced GC at 0, 1, 6, 12 and 24 h, and the size of the exported
 *   engine state.
 */
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { FaultEngine, exportEngineState, parsePolicy, type FaultEvent, type FaultPolicy } from '../src/faults/index.js';
import { fmt, median, percentile } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const EVENTS = Number(process.env.BENCH_ENGINE_EVENTS ?? 200_000);
const T0 = 1767225600000;
const CHIPS = Array.from({ length: 16 }, (_, i) => ({ logicId: i, phyId: i }));

function shippedPolicy(): FaultPolicy {
  const p = parsePolicy(
    fs.readFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), 'utf8'),
    fs.readFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), 'utf8'),
  );
  if (!p.policy) throw new Error('shipped fault configuration is unusable');
  return p.policy;
}

/** Deterministic pseudo-random stream (xorshift) so every run sees the same events. */
function* eventStream(n: number, stepMs: number): Generator<FaultEvent> {
  const codes = [
    0x80e01801, 0x80e18005, 0x81078603, 0x80e18402, 0x80c98008, 0x8118043c, 0x80e21007, 0x81a3880c, 0x12345678,
  ];
  let x = 0x9e3779b9;
  const rnd = (m: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % m;
  };
  const active = CHIPS.map(() => new Set<number>());
  for (let i = 0; i < n; i++) {
    const logicId = rnd(16);
    const code = codes[rnd(codes.length)]!;
    const on = active[logicId]!;
    const assertion = rnd(10) === 0 ? 'once' : on.has(code) ? 'recover' : 'occur';
    if (assertion === 'occur') on.add(code);
    if (assertion === 'recover') on.delete(code);
    yield { logicId, code, assertion, severity: 2, timeMs: T0 + i * stepMs };
  }
}

function makeEvents(n: number, stepMs: number): FaultEvent[] {
  return [...eventStream(n, stepMs)];
}

export interface FaultEngineResult {
  runs: number;
  events: number;
  perEventCycle: { eventsPerSec: number; perRun: number[]; cycleP50Us: number; cycleP99Us: number };
  batched64: { eventsPerSec: number; perRun: number[] };
  memory: {
    simulatedHours: number;
    events: number;
    heapMiB: { hour: number; heapUsedMiB: number }[];
    exportedStateBytes: number;
  };
}

function forceGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

export function benchFaultEngine(log: (line: string) => void): FaultEngineResult {
  const policy = shippedPolicy();
  const events = makeEvents(EVENTS, 5);
  const perRun: number[] = [];
  const batchedRuns: number[] = [];
  let latencies: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const engine = new FaultEngine(policy, { chips: CHIPS });
    const lat: number[] = [];
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < events.length; i++) {
      const ev = events[i]!;
      const s = i % 64 === 0 ? process.hrtime.bigint() : 0n;
      engine.cycle({ now: ev.timeMs!, events: [ev] });
      if (s !== 0n) lat.push(Number(process.hrtime.bigint() - s) / 1000);
    }
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    perRun.push(events.length / secs);
    if (run === Math.floor(RUNS / 2)) latencies = lat;
    const batched = new FaultEngine(policy, { chips: CHIPS });
    const b0 = process.hrtime.bigint();
    for (let i = 0; i < events.length; i += 64) {
      const slice = events.slice(i, i + 64);
      batched.cycle({ now: slice[slice.length - 1]!.timeMs!, events: slice });
    }
    batchedRuns.push(events.length / (Number(process.hrtime.bigint() - b0) / 1e9));
    log(
      `  run ${run + 1}/${RUNS}: ${fmt(perRun[run]!, 0)} events/s one per cycle, ${fmt(batchedRuns[run]!, 0)} events/s in batches of 64`,
    );
  }
  const gc = forceGc();
  const hours = 24;
  const rate = 10;
  const total = hours * 3600 * rate;
  const engine = new FaultEngine(policy, { chips: CHIPS });
  events.length = 0; // the throughput stream is no longer needed; the 24 h stream is generated on the fly
  const marks = new Set([1, 6, 12, 24].map((h) => h * 3600 * rate));
  const heap: { hour: number; heapUsedMiB: number }[] = [];
  gc();
  heap.push({ hour: 0, heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20 });
  let i = 0;
  for (const ev of eventStream(total, 1000 / rate)) {
    engine.cycle({ now: ev.timeMs!, events: [ev] });
    if (marks.has(i + 1)) {
      gc();
      heap.push({ hour: (i + 1) / 3600 / rate, heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20 });
      log(
        `  memory: after ${(i + 1) / 3600 / rate} h simulated, heap ${fmt(heap[heap.length - 1]!.heapUsedMiB, 1)} MiB`,
      );
    }
    i++;
  }
  const exportedStateBytes = JSON.stringify(exportEngineState(engine)).length;
  return {
    runs: RUNS,
    events: EVENTS,
    perEventCycle: {
      eventsPerSec: median(perRun),
      perRun,
      cycleP50Us: percentile(latencies, 50),
      cycleP99Us: percentile(latencies, 99),
    },
    batched64: { eventsPerSec: median(batchedRuns), perRun: batchedRuns },
    memory: { simulatedHours: hours, events: total, heapMiB: heap, exportedStateBytes },
  };
}

// `npx tsx bench/fault-engine.ts` runs this bench alone.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(fileURLToPath(import.meta.url))) {
  const r = benchFaultEngine((line) => void process.stdout.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify({ bench: 'fault-engine', ...r })}\n`);
}
