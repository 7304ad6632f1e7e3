/**
 * bench/fault-callback: the mock library fires fault events on its own thread; how fast and how completely do they
 * reach a JS listener through the binding's thread-safe function?
 *
 * - latency at 1,000 events/s: mock fire time (CLOCK_MONOTONIC, carried in additional_info) → JS listener
 *   (process.hrtime.bigint(), the same clock); p50/p99 per run, median over runs;
 * - sustained delivery: paced bursts at 50,000 and 100,000 events/s and an unpaced burst; events delivered,
 *   events reported as overflow (never silently lost) and the delivered rate;
 * - baseline in the same run: a control-socket round trip JS → mock thread → JS (the floor for any cross-thread
 *   notification), so latency is also given as a ratio to it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MOCK_DCMI_LIBRARY, PROJECT_ROOT } from '../src/core/paths.js';
import { Dcmi, type FaultEvent, type FaultOverflow } from '../src/dcmi/dcmi.js';
import { MockControlClient } from '../src/sim/mock-control.js';
import { fmt, median, percentile } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 3000);

function fireTimeNs(e: FaultEvent): bigint {
  const text = e.additionalInfo.toString('latin1').replace(/\0.*$/s, '');
  const m = /mono=(\d+)/.exec(text);
  if (!m) throw new Error(`event without mono= timestamp: ${JSON.stringify(text)}`);
  return BigInt(m[1]!);
}

interface Sink {
  events: number;
  latenciesMs: number[];
  serials: Set<number>;
  dropped: number;
  overflowNotices: number;
  firstNs: bigint;
  lastNs: bigint;
  recordLatency: boolean;
}

function newSink(recordLatency: boolean): Sink {
  return {
    events: 0,
    latenciesMs: [],
    serials: new Set(),
    dropped: 0,
    overflowNotices: 0,
    firstNs: 0n,
    lastNs: 0n,
    recordLatency,
  };
}

async function settle(sink: Sink, expected: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (sink.events + sink.dropped < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
}

export interface FaultCallbackResult {
  runs: number;
  latency: { p50Ms: number; p99Ms: number; maxMs: number; perRunP50Ms: number[]; perRunP99Ms: number[] };
  baselineRoundTrip: { p50Ms: number; p99Ms: number };
  ratio: { p50: number; p99: number };
  sustained: {
    ratePerSec: number;
    count: number;
    delivered: number;
    reported: number;
    lost: number;
    deliveredPerSec: number;
  }[];
}

export async function benchFaultCallback(log: (line: string) => void): Promise<FaultCallbackResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const control = path.join(dir, 'ctl.sock');
  const dcmi = Dcmi.open(MOCK_DCMI_LIBRARY);
  dcmi.mockConfigure(path.join(PROJECT_ROOT, 'scenarios', '910a3-16chip.json'), control);
  await dcmi.init();
  const client = await MockControlClient.connect(control);
  let sink = newSink(false);
  dcmi.subscribeFaultEvents({
    onEvent(e: FaultEvent) {
      const now = process.hrtime.bigint();
      if (sink.events === 0) sink.firstNs = now;
      sink.lastNs = now;
      sink.events++;
      sink.serials.add(e.serial);
      if (sink.recordLatency) sink.latenciesMs.push(Number(now - fireTimeNs(e)) / 1e6);
    },
    onOverflow(n: FaultOverflow) {
      sink.dropped += n.dropped;
      sink.overflowNotices++;
    },
  });
  try {
    const p50s: number[] = [];
    const p99s: number[] = [];
    const all: number[] = [];
    const rtts: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      // baseline: control-socket round trips, interleaved with the runs so both see the same machine load
      for (let i = 0; i < 200; i++) {
        const t0 = process.hrtime.bigint();
        await client.expectOk({ op: 'health', logicId: i % 16, value: 0 });
        rtts.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      sink = newSink(true);
      await client.expectOk({
        op: 'burst',
        logicId: run % 16,
        eventId: '80C98009',
        assertion: 'once',
        count: LATENCY_EVENTS,
        ratePerSec: 1000,
      });
      await settle(sink, LATENCY_EVENTS);
      if (sink.events !== LATENCY_EVENTS) throw new Error(`latency run lost events: ${sink.events}/${LATENCY_EVENTS}`);
      p50s.push(percentile(sink.latenciesMs, 50));
      p99s.push(percentile(sink.latenciesMs, 99));
      all.push(...sink.latenciesMs);
      log(`  latency run ${run + 1}/${RUNS}: p50 ${fmt(p50s[run]!)} ms, p99 ${fmt(p99s[run]!)} ms`);
    }
    const sustained: FaultCallbackResult['sustained'] = [];
    for (const [ratePerSec, count] of [
      [50_000, 200_000],
      [100_000, 300_000],
      [0, 500_000],
    ] as const) {
      const perRun: FaultCallbackResult['sustained'] = [];
      for (let run = 0; run < Math.min(RUNS, 3); run++) {
        sink = newSink(false);
        await client.expectOk({ op: 'burst', logicId: 1, eventId: '80C98009', assertion: 'once', count, ratePerSec });
        await settle(sink, count);
        const seconds = Number(sink.lastNs - sink.firstNs) / 1e9;
        perRun.push({
          ratePerSec,
          count,
          delivered: sink.events,
          reported: sink.dropped,
          lost: count - sink.events - sink.dropped,
          deliveredPerSec: seconds > 0 ? sink.events / seconds : Number.NaN,
        });
      }
      const mid = [...perRun].sort((a, b) => a.deliveredPerSec - b.deliveredPerSec)[Math.floor(perRun.length / 2)]!;
      sustained.push({
        ...mid,
        delivered: Math.min(...perRun.map((r) => r.delivered)),
        reported: Math.max(...perRun.map((r) => r.reported)),
        lost: Math.max(...perRun.map((r) => r.lost)),
      });
      log(
        `  sustained ${ratePerSec || 'unpaced'}: median ${fmt(mid.deliveredPerSec, 0)} events/s delivered; ` +
          `worst run: ${Math.min(...perRun.map((r) => r.delivered))} delivered, ` +
          `${Math.max(...perRun.map((r) => r.reported))} reported as overflow, ${Math.max(...perRun.map((r) => r.lost))} lost`,
      );
    }
    const baseline = { p50Ms: percentile(rtts, 50), p99Ms: percentile(rtts, 99) };
    const latency = {
      p50Ms: median(p50s),
      p99Ms: median(p99s),
      maxMs: Math.max(...all),
      perRunP50Ms: p50s,
      perRunP99Ms: p99s,
    };
    return {
      runs: RUNS,
      latency,
      baselineRoundTrip: baseline,
      ratio: { p50: latency.p50Ms / baseline.p50Ms, p99: latency.p99Ms / baseline.p99Ms },
      sustained,
    };
  } finally {
    client.close();
    dcmi.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
