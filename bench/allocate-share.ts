/**
 * bench/allocate-share: Allocate in-process in 310P share mode (issue 17 item 1; spec B.3, C.3, C.4).
 *
 * The allocator the gRPC handler calls (validation, health refusal check, native response with device specs) over
 * the kubelet view of a real store (`StoreDeviceSource`): 4 chips × 100 copies (400 device IDs), requests of 1..4
 * copies on distinct chips with random copy indices. Baseline in the same run: the same store as whole chips (4
 * device IDs), requests of 1..4 chips. Per run: p50 and p99 of `BENCH_SHARE_CALLS` calls (after a warm-up); the
 * figures are the median over `BENCH_RUNS` runs, the two modes interleaved run by run.
 *
 * Command: `npx tsx bench/allocate-share.ts` (prints a table and one JSON line).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SYSTEM_CLOCK } from '../src/core/clock.js';
import { NOOP_LOGGER } from '../src/core/logger.js';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { FaultEngine, parsePolicy, type FaultPolicy } from '../src/faults/index.js';
import { Allocator } from '../src/kubelet/allocate.js';
import { collectDefaultDeviceNodes, InMemoryDeviceNodeProbe } from '../src/kubelet/device-nodes.js';
import type { DeviceSnapshot } from '../src/kubelet/device-source.js';
import { KubeletRealMap } from '../src/kubelet/list-watch-view.js';
import { StoreDeviceSource } from '../src/kubelet/store-device-source.js';
import { NodeStateStore } from '../src/state/store.js';
import { fmt, median, percentile } from './stats.js';

const CHIPS = 4;
const COPIES = 100;
const CALLS = Number(process.env.BENCH_SHARE_CALLS ?? 20_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const WARMUP = 2000;

/** Median over runs of per-run percentiles, in milliseconds. */
export interface ShareLatency {
  p50Ms: number;
  p99Ms: number;
  worstRunP99Ms: number;
}

/** Result of {@link benchAllocateShare}. */
export interface AllocateShareResult {
  devices: { share: number; whole: number };
  share: ShareLatency;
  whole: ShareLatency;
  /** share / whole, of the medians. */
  ratioP50: number;
  ratioP99: number;
}

function shippedPolicy(): FaultPolicy {
  const p = parsePolicy(
    fs.readFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), 'utf8'),
    fs.readFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), 'utf8'),
  );
  if (!p.policy) throw new Error('shipped fault configuration is unusable');
  return p.policy;
}

function store310p(): NodeStateStore {
  const chips = Array.from({ length: CHIPS }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  return new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips, runMode: 'Ascend310P' }),
    chips,
    node: { chipKind: 'Ascend310P', boardId: 0x35, productTypes: ['Atlas 300I Pro'] },
    clock: SYSTEM_CLOCK,
    listWatchPeriodMs: 5000,
    runMode: 'Ascend310P',
  });
}

function allocator(): Allocator {
  const names = ['davinci_manager', 'hisi_hdc', 'devmm_svm'];
  for (let i = 0; i < CHIPS; i++) names.push(`davinci${i}`);
  const probe = new InMemoryDeviceNodeProbe(names);
  return new Allocator(
    { deviceType: 'Ascend310P', volcanoType: false, useAscendDocker: false },
    {
      probe,
      defaultNodes: collectDefaultDeviceNodes(probe, { chipKind: 'Ascend310P' }),
      kubeletToReal: new KubeletRealMap(),
      logger: NOOP_LOGGER,
    },
  );
}

/** Deterministic pseudo-random stream (xorshift32). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x1_0000_0000;
  };
}

function requestOf(share: boolean, i: number, rand: () => number): string[] {
  const size = 1 + (i % CHIPS);
  const first = Math.floor(rand() * CHIPS);
  return Array.from({ length: size }, (_, k) => {
    const phy = (first + k) % CHIPS;
    return share ? `Ascend310P-${phy}-${Math.floor(rand() * COPIES)}` : `Ascend310P-${phy}`;
  });
}

async function oneRun(share: boolean, snapshot: DeviceSnapshot, seed: number): Promise<{ p50: number; p99: number }> {
  const a = allocator();
  const rand = rng(seed);
  for (let i = 0; i < WARMUP; i++) await a.allocate([requestOf(share, i, rand)], snapshot);
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const req = [requestOf(share, i, rand)];
    const t0 = performance.now();
    await a.allocate(req, snapshot);
    samples.push(performance.now() - t0);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** Runs the bench (both modes, interleaved run by run). */
export async function benchAllocateShare(): Promise<AllocateShareResult> {
  const store = store310p();
  const shared = new StoreDeviceSource(store, { shareCount: COPIES });
  const whole = new StoreDeviceSource(store);
  const runs = { share: [] as { p50: number; p99: number }[], whole: [] as { p50: number; p99: number }[] };
  for (let r = 0; r < RUNS; r++) {
    runs.share.push(await oneRun(true, shared.snapshot(), 1000 + r));
    runs.whole.push(await oneRun(false, whole.snapshot(), 1000 + r));
  }
  shared.close();
  whole.close();
  const sum = (xs: { p50: number; p99: number }[]): ShareLatency => ({
    p50Ms: median(xs.map((x) => x.p50)),
    p99Ms: median(xs.map((x) => x.p99)),
    worstRunP99Ms: Math.max(...xs.map((x) => x.p99)),
  });
  const s = sum(runs.share);
  const w = sum(runs.whole);
  return {
    devices: {
      share: shared.snapshot().deviceTypes.Ascend310P!.length,
      whole: whole.snapshot().deviceTypes.Ascend310P!.length,
    },
    share: s,
    whole: w,
    ratioP50: s.p50Ms / w.p50Ms,
    ratioP99: s.p99Ms / w.p99Ms,
  };
}

async function main(): Promise<void> {
  const r = await benchAllocateShare();
  const out = process.stdout;
  out.write(`allocate-share: ${RUNS} runs × ${CALLS} calls, median of per-run percentiles\n`);
  out.write(
    `  share mode (${r.devices.share} IDs): p50 ${fmt(r.share.p50Ms, 4)} ms, p99 ${fmt(r.share.p99Ms, 4)} ms ` +
      `(worst run p99 ${fmt(r.share.worstRunP99Ms, 4)} ms)\n`,
  );
  out.write(
    `  whole chips (${r.devices.whole} IDs): p50 ${fmt(r.whole.p50Ms, 4)} ms, p99 ${fmt(r.whole.p99Ms, 4)} ms ` +
      `(worst run p99 ${fmt(r.whole.worstRunP99Ms, 4)} ms)\n`,
  );
  out.write(`  ratio share / whole: p50 ${fmt(r.ratioP50, 2)}×, p99 ${fmt(r.ratioP99, 2)}×\n`);
  out.write(`${JSON.stringify({ bench: 'allocate-share', ...r })}\n`);
}

await main();
