/**
 * bench/store-cycle: does a store cycle wait on DCMI? (issue [H] item 3: "the engine never calls the hardware").
 *
 * The health monitor, the state store with its fault engine (shipped rules) and the kubelet projection
 * (`StoreDeviceSource`) on a manual clock, 8 chips, with a stub DCMI whose code-list read
 * (`dcmi_get_device_errorcode_v2`) blocks the JS thread for `N` ms (`Atomics.wait`: a slow synchronous call). Each round raises 80E18402 on every chip, then recovers it:
 * the monitor holds the recoveries 1 s (D.4) and releases them, and the store applies the batch. Measured:
 *
 * - store cycle time (`store.applyEvents`, i.e. engine cycle + snapshot + listeners + the kubelet projection) of
 *   each recovery batch (all 8 chips) and of a lone recovery (one chip), p50/p99 per run, median over runs;
 * - DCMI code-list reads made inside a store cycle, and outside (in the health layer's own turn);
 * - the release turn (clock advance that fires the hold timer: DCMI reads + the cycle), for scale.
 *
 * N = `BENCH_STORE_CYCLE_DCMI_MS` (default 20) against a baseline N = 0 in the same run; the ratio of their cycle
 * times is the figure. In the baseline the thread is blocked just as long in the release turn, by a timer outside
 * DCMI: a cycle that follows any block of the thread runs ≈ 0.1–0.2 ms slower (cold caches), which is not DCMI inside
 * the cycle. The hot baseline (N = 0, no pause) is reported too. Environment: BENCH_RUNS (default 5),
 * BENCH_STORE_CYCLE_ROUNDS (default 25).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROJECT_ROOT } from '../src/core/paths.js';
import type { FaultSubscription } from '../src/dcmi/dcmi.js';
import { FaultEngine, parsePolicy, type FaultEvent, type FaultPolicy } from '../src/faults/index.js';
import { HealthMonitor } from '../src/health/monitor.js';
import { StoreDeviceSource } from '../src/kubelet/store-device-source.js';
import { NodeStateStore } from '../src/state/store.js';
import { FakeClock } from '../test/health/fake-clock.js';
import { median, percentile } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROUNDS = Number(process.env.BENCH_STORE_CYCLE_ROUNDS ?? 25);
const SLOW_MS = Number(process.env.BENCH_STORE_CYCLE_DCMI_MS ?? 20);
const CHIPS = 8;
const SEP = 0x80e18402;

/** Figures of one DCMI read time. */
export interface StoreCyclePoint {
  /** Time each code-list read blocks, ms. */
  dcmiReadMs: number;
  /** Blocking pause per released recovery in the release turn, outside DCMI (the baseline's control), ms. */
  pauseMs: number;
  /** Store cycle of a recovery batch on every chip: median over runs of per-run p50 / p99, ms. */
  batchCycleP50Ms: number;
  batchCycleP99Ms: number;
  /** Store cycle of a lone recovery (one chip). */
  loneCycleP50Ms: number;
  loneCycleP99Ms: number;
  /** The turn that releases a held batch (DCMI reads of the health layer + the cycle), median of per-run p50. */
  releaseTurnP50Ms: number;
  /** Code-list reads inside store cycles / outside them, summed over runs (first-start compensation excluded). */
  dcmiCallsInsideCycles: number;
  dcmiCallsOutsideCycles: number;
  /** Recovery batches measured, summed over runs. */
  samples: number;
}

export interface StoreCycleResult {
  runs: number;
  rounds: number;
  chips: number;
  /** DCMI reads 0 ms; the thread blocked in the release turn as long as the slow reads take, outside DCMI. */
  baseline: StoreCyclePoint;
  /** DCMI reads 0 ms, no pause (hot caches: the fastest the cycle gets). */
  hot: StoreCyclePoint;
  slow: StoreCyclePoint;
  /** slow / baseline cycle time (≈ 1 when the cycle does not wait on DCMI). */
  ratio: { batchP50: number; batchP99: number; loneP50: number };
}

function shippedPolicy(): FaultPolicy {
  const p = parsePolicy(
    fs.readFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), 'utf8'),
    fs.readFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), 'utf8'),
  );
  if (!p.policy) throw new Error('shipped fault configuration is unusable');
  return p.policy;
}

/** Blocks the JS thread for `ms`, as a slow synchronous DCMI call does (no allocation, no CPU spent). */
function blockFor(ms: number, cell: Int32Array): void {
  if (ms > 0) Atomics.wait(cell, 0, 0, ms);
}

const msSince = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

interface RunSamples {
  batch: number[];
  lone: number[];
  release: number[];
  inside: number;
  outside: number;
}

/**
 * One run. `pauseMs`: the thread is blocked that long per released recovery by a timer due with the hold, i.e. in
 * the release turn but outside any DCMI call (the baseline's control: a cycle right after the thread blocked runs
 * slower on its own — cold caches — whatever blocked it).
 */
async function oneRun(policy: FaultPolicy, dcmiReadMs: number, pauseMs: number): Promise<RunSamples> {
  const clock = new FakeClock();
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const chips = Array.from({ length: CHIPS }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  const store = new NodeStateStore({
    engine: new FaultEngine(policy, { chips }),
    chips,
    node: { chipKind: 'Ascend910B', boardId: 0x24 },
    clock,
    listWatchPeriodMs: 3_600_000, // no idle cycle during the run
  });
  const kubelet = new StoreDeviceSource(store);
  let kubeletSends = 0;
  kubelet.onChange(() => kubeletSends++);
  let inCycle = false;
  let counting = false;
  const calls = { inside: 0, outside: 0 };
  let sub: FaultSubscription | undefined;
  const cycles: { events: readonly FaultEvent[]; ms: number }[] = [];
  const monitor = new HealthMonitor({
    dcmi: {
      subscribeFaultEvents: (s) => void (sub = s),
      unsubscribeFaultEvents: () => undefined,
      getDeviceAllErrorCodes: () => {
        if (counting) {
          if (inCycle) calls.inside++;
          else calls.outside++;
        }
        blockFor(dcmiReadMs, cell);
        return { codes: [], cardDropped: false }; // the recovered code is gone from DCMI
      },
      getDeviceHealth: () => 0,
    },
    chips,
    chipKind: 'Ascend910B',
    state: store,
    clock,
    listWatchPeriodMs: 3_600_000, // no periodic reconcile during the run
    sink: (batch) => {
      inCycle = true;
      const t0 = process.hrtime.bigint();
      store.applyEvents(batch);
      cycles.push({ events: batch, ms: msSince(t0) });
      inCycle = false;
    },
  });
  store.start();
  await monitor.start();
  counting = true;
  const fire = (logicId: number, assertion: 'occur' | 'recover'): void =>
    sub!.onEvent({ eventId: SEP, logicId, severity: 2, assertion } as never);
  const out: RunSamples = { batch: [], lone: [], release: [], inside: 0, outside: 0 };
  /** Store-cycle time spent on the released recoveries (one cycle here; main's one timer per recovery made more). */
  const recoveryCycle = (): number => {
    const c = cycles.filter((x) => x.events.some((e) => e.assertion === 'recover'));
    if (c.length === 0) throw new Error('no recovery cycle');
    return c.reduce((sum, x) => sum + x.ms, 0);
  };
  for (let round = 0; round < ROUNDS; round++) {
    // every chip: occurrence, then recovery (one batch after the 1 s hold)
    for (let i = 0; i < CHIPS; i++) fire(i, 'occur');
    await clock.advance(0);
    if (pauseMs > 0) clock.setTimeout(() => blockFor(CHIPS * pauseMs, cell), 1000);
    for (let i = 0; i < CHIPS; i++) fire(i, 'recover');
    cycles.length = 0;
    const t0 = process.hrtime.bigint();
    await clock.advance(1000);
    out.release.push(msSince(t0));
    out.batch.push(recoveryCycle());
    if (store.snapshot().chips.some((c) => c.health !== 'Healthy')) throw new Error('a chip did not recover');
    // one chip alone
    fire(round % CHIPS, 'occur');
    await clock.advance(0);
    if (pauseMs > 0) clock.setTimeout(() => blockFor(pauseMs, cell), 1000);
    fire(round % CHIPS, 'recover');
    cycles.length = 0;
    await clock.advance(1000);
    out.lone.push(recoveryCycle());
  }
  if (kubeletSends < 4 * ROUNDS) throw new Error(`the kubelet projection saw only ${kubeletSends} changes`);
  monitor.stop();
  store.stop();
  kubelet.close();
  out.inside = calls.inside;
  out.outside = calls.outside;
  return out;
}

async function point(policy: FaultPolicy, dcmiReadMs: number, pauseMs = 0): Promise<StoreCyclePoint> {
  const runs: RunSamples[] = [];
  for (let r = 0; r < RUNS; r++) runs.push(await oneRun(policy, dcmiReadMs, pauseMs));
  const per = (pick: (s: RunSamples) => number[], p: number): number => median(runs.map((s) => percentile(pick(s), p)));
  return {
    dcmiReadMs,
    pauseMs,
    batchCycleP50Ms: per((s) => s.batch, 50),
    batchCycleP99Ms: per((s) => s.batch, 99),
    loneCycleP50Ms: per((s) => s.lone, 50),
    loneCycleP99Ms: per((s) => s.lone, 99),
    releaseTurnP50Ms: per((s) => s.release, 50),
    dcmiCallsInsideCycles: runs.reduce((n, s) => n + s.inside, 0),
    dcmiCallsOutsideCycles: runs.reduce((n, s) => n + s.outside, 0),
    samples: runs.reduce((n, s) => n + s.batch.length, 0),
  };
}

/** Runs the bench: the two baselines (DCMI read 0 ms, with and without the pause), then slow reads. */
export async function benchStoreCycle(log: (line: string) => void = () => undefined): Promise<StoreCycleResult> {
  const policy = shippedPolicy();
  await point(policy, 0); // warm-up (JIT)
  const hot = await point(policy, 0);
  const baseline = await point(policy, 0, SLOW_MS);
  log(`  baselines (DCMI read 0 ms, with and without the pause) done`);
  const slow = await point(policy, SLOW_MS);
  return {
    runs: RUNS,
    rounds: ROUNDS,
    chips: CHIPS,
    baseline,
    hot,
    slow,
    ratio: {
      batchP50: slow.batchCycleP50Ms / baseline.batchCycleP50Ms,
      batchP99: slow.batchCycleP99Ms / baseline.batchCycleP99Ms,
      loneP50: slow.loneCycleP50Ms / baseline.loneCycleP50Ms,
    },
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(fileURLToPath(import.meta.url))) {
  const r = await benchStoreCycle((l) => void process.stdout.write(`${l}\n`));
  process.stdout.write(`${JSON.stringify({ bench: 'store-cycle', ...r })}\n`);
}
