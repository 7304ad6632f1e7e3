/**
 * bench/dra-prepare (issue [DRA] "NodePrepare p99"): NodePrepareResources and NodeUnprepareResources of the DRA
 * driver as kubelet calls them — over gRPC on dra.sock, from the DRA kubelet simulator, one claim per call (one pod),
 * each call doing what it does in production: the claim read (a fake API answering at once, so the figure is the
 * driver's own time), the plan against a real store, the checkpoint written and fsynced twice (intent and commit), the
 * CDI spec written and fsynced with every device node stat'ed (nodes made with mknod: run as root). Baseline in the
 * same run: the device plugin's Allocate over gRPC from the device-plugin kubelet simulator (same machine, same
 * moment). Runs interleaved; figures are medians of per-run percentiles.
 *
 * Command: `npx tsx bench/dra-prepare.ts` (BENCH_RUNS, default 5; BENCH_DRA_CALLS per run, default 300).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CdiSpecDir } from '../src/cdi/spec-dir.js';
import { SYSTEM_CLOCK } from '../src/core/clock.js';
import { ClaimCdi } from '../src/dra/claim-cdi.js';
import { ClaimPreparer } from '../src/dra/claim-preparer.js';
import { CachedClaimReader } from '../src/dra/claims.js';
import { DraCheckpoint } from '../src/dra/checkpoint.js';
import { lookupDraDevice } from '../src/dra/device-lookup.js';
import { DraKubeletPlugin } from '../src/dra/kubelet-plugin.js';
import { DRA_DRIVER } from '../src/core/dra-devices.js';
import { loadDraProtos } from '../src/dra/proto.js';
import { DraKubeletSimulator } from '../src/sim/dra-kubelet.js';
import { claimObject, FakeClaimApi, makeCharDevices, result } from '../test/dra/helpers.js';
import { startHarness } from '../test/kubelet/harness.js';
import { testStore } from '../test/state/helpers.js';
import { fmt, median, percentile } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const CALLS = Number(process.env.BENCH_DRA_CALLS ?? 300);
const POOL = 'bench-node';
const log = (line: string): void => void process.stdout.write(`${line}\n`);

interface Percentiles {
  p50: number;
  p99: number;
}

function pcts(samples: readonly number[]): Percentiles {
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** One run of the DRA calls: `CALLS` claims, each prepared then unprepared. */
async function draRun(): Promise<{ prepare: Percentiles; unprepare: Percentiles }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-dra-'));
  const devDir = path.join(dir, 'dev');
  makeCharDevices(devDir, 8);
  fs.mkdirSync(path.join(dir, 'state'));
  const ts = testStore({ chips: 8 });
  const api = new FakeClaimApi();
  const preparer = new ClaimPreparer({
    poolName: POOL,
    store: ts.store,
    claims: new CachedClaimReader({ api, clock: SYSTEM_CLOCK }),
    lookup: lookupDraDevice,
    checkpoint: new DraCheckpoint(path.join(dir, 'state'), POOL),
    cdi: new ClaimCdi({
      dir: new CdiSpecDir(path.join(dir, 'cdi')),
      devDir,
      shared: ['davinci_manager', 'hisi_hdc', 'devmm_svm'].map((n) => ({
        hostPath: path.join(devDir, n),
        containerPath: `/dev/${n}`,
      })),
      mounts: [],
    }),
    clock: SYSTEM_CLOCK,
  });
  const plugin = new DraKubeletPlugin({
    pluginsDir: path.join(dir, 'plugins'),
    registryDir: path.join(dir, 'registry'),
    poolName: POOL,
    protos: loadDraProtos(),
    preparer,
    store: ts.store,
    clock: SYSTEM_CLOCK,
  });
  await plugin.start();
  const sim = DraKubeletSimulator.start({ registryDir: path.join(dir, 'registry'), pollMs: 100 });
  try {
    await sim.waitForRegistration(DRA_DRIVER);
    const prep: number[] = [];
    const unprep: number[] = [];
    for (let i = 0; i < CALLS + 20; i++) {
      const uid = randomUUID();
      const name = `c${i}`;
      api.set(claimObject(uid, name, [result(`ascend910-${i % 8}`, POOL)]));
      const ref = [{ namespace: 'default', name, uid }];
      const t0 = performance.now();
      const res = await sim.prepare(DRA_DRIVER, ref);
      const t1 = performance.now();
      if (res.claims[uid]?.error) throw new Error(`prepare failed: ${res.claims[uid].error}`);
      await sim.unprepare(DRA_DRIVER, ref);
      const t2 = performance.now();
      if (i >= 20) {
        prep.push(t1 - t0);
        unprep.push(t2 - t1);
      }
    }
    return { prepare: pcts(prep), unprepare: pcts(unprep) };
  } finally {
    await sim.close();
    await plugin.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** One run of the baseline: `CALLS` Allocates of one chip over gRPC. */
async function allocateRun(): Promise<Percentiles> {
  const h = await startHarness();
  try {
    await h.sim.waitForRegistration('huawei.com/Ascend910');
    const samples: number[] = [];
    for (let i = 0; i < CALLS + 20; i++) {
      const t0 = performance.now();
      await h.sim.allocate('huawei.com/Ascend910', [[`Ascend910-${i % 8}`]]);
      if (i >= 20) samples.push(performance.now() - t0);
    }
    return pcts(samples);
  } finally {
    await h.close();
  }
}

const prepare: Percentiles[] = [];
const unprepare: Percentiles[] = [];
const allocate: Percentiles[] = [];
for (let r = 0; r < RUNS; r++) {
  const d = await draRun();
  prepare.push(d.prepare);
  unprepare.push(d.unprepare);
  allocate.push(await allocateRun());
  log(`run ${r + 1}: prepare p99 ${fmt(d.prepare.p99)} ms, Allocate p99 ${fmt(allocate.at(-1)!.p99)} ms`);
}
const med = (xs: Percentiles[]): Percentiles => ({
  p50: median(xs.map((x) => x.p50)),
  p99: median(xs.map((x) => x.p99)),
});
const [p, u, a] = [med(prepare), med(unprepare), med(allocate)];
log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}; ${RUNS} runs × ${CALLS} calls`,
);
log(`NodePrepareResources (1 claim) p50 ${fmt(p.p50)} ms, p99 ${fmt(p.p99)} ms`);
log(`NodeUnprepareResources (1 claim) p50 ${fmt(u.p50)} ms, p99 ${fmt(u.p99)} ms`);
log(`baseline device-plugin Allocate (1 chip) p50 ${fmt(a.p50)} ms, p99 ${fmt(a.p99)} ms`);
log(`NodePrepare / Allocate: p50 ${fmt(p.p50 / a.p50, 2)}x, p99 ${fmt(p.p99 / a.p99, 2)}x`);
log(JSON.stringify({ bench: 'dra-prepare', runs: RUNS, calls: CALLS, prepare: p, unprepare: u, allocate: a }));
