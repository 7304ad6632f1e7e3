/**
 * bench/dra-taint: fault → device taint in the node's ResourceSlice (issue [DRA] item 3, target p99 < 1.2 s), and the
 * slice writes of an idle node (issue [DRA] "Done when": slice writes per minute idle).
 *
 * The state store with its fault engine (shipped rules, 16 chips, real clock), the pool projection and the
 * ResourceSliceWriter (default minimum interval 200 ms) over the agent's own HTTP client, against the Kubernetes API
 * stand-in over real HTTP (`resource.k8s.io/v1` with the real server's slice validation). Latency = from
 * `store.applyEvents` of a SeparateNPU fault to the moment the stand-in commits the slice whose device carries the
 * taint (its store's change feed, same process, same clock).
 *
 * Two loads: single faults (one fault, wait for its taint, recover, wait, next: the writer idle each time), and a
 * storm of 50 events/s on random chips (a fault arrives while writes are spaced 200 ms apart: the spacing shows in
 * the tail). Baseline in the same run: a bare PUT of the same slice through the same client (the API round trip the
 * writer cannot avoid); ratio = latency / baseline. Idle: 10 s of idle cycles every 100 ms and change notices, writes
 * counted and scaled to a minute. Environment: BENCH_RUNS (default 5), BENCH_DRA_ROUNDS (default 40 single faults),
 * BENCH_DRA_STORM_MS (default 5000), BENCH_DRA_PARTITIONS=1 (publish vNPU partitions: 16 chips → 9 slices).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SYSTEM_CLOCK } from '../src/core/clock.js';
import { DRA_DRIVER, draChipName } from '../src/core/dra-devices.js';
import { draApiOf } from '../src/dra/dra-api.js';
import type { ResourceSlice } from '../src/dra/dra-types.js';
import { poolOf, slicesOf, type DraInventory } from '../src/dra/resource-slices.js';
import { ResourceSliceWriter } from '../src/dra/slice-writer.js';
import { FaultEngine, parsePolicy } from '../src/faults/index.js';
import { KubeClient } from '../src/kube/kube-client.js';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { DRA_RESOURCES, KubeApiStandIn } from '../src/sim/kube-api.js';
import { NodeStateStore } from '../src/state/store.js';
import fs from 'node:fs';
import { fmt, median, percentile } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROUNDS = Number(process.env.BENCH_DRA_ROUNDS ?? 40);
const STORM_MS = Number(process.env.BENCH_DRA_STORM_MS ?? 5000);
const PARTITIONS = process.env.BENCH_DRA_PARTITIONS === '1';
const CHIPS = 16;
const NODE = 'bench-node';
const SEP = 0x80e18402;

export interface DraTaintResult {
  partitions: boolean;
  slices: number;
  singleP50Ms: number;
  singleP99Ms: number;
  stormP50Ms: number;
  stormP99Ms: number;
  baselineP50Ms: number;
  baselineP99Ms: number;
  idleWritesPerMinute: number;
  stormPoolWritesPerS: number;
}

interface RunResult {
  single: number[];
  storm: number[];
  baseline: number[];
  idleWrites: number;
  idleMs: number;
  stormWrites: number;
  slices: number;
}

async function oneRun(): Promise<RunResult> {
  const api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES });
  const client = new KubeClient({ server: api.url, token: 't' });
  const read = (f: string): string => fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8');
  const policy = parsePolicy(read('faultCode.json'), read('faultCustomization.json')).policy!;
  const chips = Array.from({ length: CHIPS }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  const store = new NodeStateStore({
    engine: new FaultEngine(policy, { chips }),
    chips,
    node: { chipKind: 'Ascend910B', boardId: 0x24 },
    clock: SYSTEM_CLOCK,
    listWatchPeriodMs: 5000,
  });
  const inv: DraInventory = {
    kind: 'Ascend910B',
    node: { chipKind: 'Ascend910B', boardId: 0x24 },
    aiCores: 20,
    hbmBytes: 64 * 1024 ** 3,
  };
  const writer = new ResourceSliceWriter({
    api: draApiOf(client),
    nodeName: NODE,
    build: (times) => slicesOf(poolOf(store.snapshot(), inv, times, { partitions: PARTITIONS }), NODE),
  });
  store.onChange(() => writer.changed());
  // the stand-in's commits: for each chip, since when its device has carried the SeparateNPU taint (or not)
  const tainted = new Map<string, boolean>();
  const waiters: { device: string; want: boolean; done: () => void }[] = [];
  const unsubscribe = api.store.subscribe((c) => {
    if (c.type.plural !== 'resourceslices') return;
    const s = c.object as unknown as ResourceSlice;
    for (const d of s.spec.devices ?? []) {
      tainted.set(
        d.name,
        (d.taints ?? []).some((t) => t.key === 'npu.huawei.com/SeparateNPU'),
      );
    }
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      if (tainted.get(w.device) === w.want) {
        waiters.splice(i, 1);
        w.done();
      }
    }
  });
  const until = (device: string, want: boolean): Promise<void> =>
    tainted.get(device) === want ? Promise.resolve() : new Promise((done) => waiters.push({ device, want, done }));
  store.start();
  await writer.start();
  await writer.whenIdle();
  const slices = api.writeCount({ resource: 'resourceslices' });

  // idle: nothing changes, the writer is told anyway
  const idleStart = performance.now();
  const idleBefore = api.writeCount({ resource: 'resourceslices' });
  while (performance.now() - idleStart < 10_000) {
    store.tick();
    writer.changed();
    await new Promise((r) => setTimeout(r, 100));
  }
  const idleWrites = api.writeCount({ resource: 'resourceslices' }) - idleBefore;
  const idleMs = performance.now() - idleStart;

  // single faults, with the bare PUT baseline interleaved
  const single: number[] = [];
  const baseline: number[] = [];
  const dra = draApiOf(client);
  for (let i = 0; i < ROUNDS; i++) {
    const chip = i % CHIPS;
    const name = draChipName('Ascend910B', chip);
    const t0 = performance.now();
    store.applyEvents([{ logicId: chip, code: SEP, assertion: 'occur', severity: 2 }]);
    await until(name, true);
    single.push(performance.now() - t0);
    store.applyEvents([{ logicId: chip, code: SEP, assertion: 'recover', severity: 2 }]);
    await until(name, false);
    await writer.whenIdle();
    const live = (await dra.listResourceSlices(`spec.nodeName=${NODE}`)).items[0]!;
    const b0 = performance.now();
    await dra.replaceResourceSlice(live); // unchanged content: the server's full path, no new version
    baseline.push(performance.now() - b0);
    await new Promise((r) => setTimeout(r, 250)); // past the writer's spacing
  }

  // a storm of 50 events/s on random chips; each occurrence timed to its taint
  const storm: number[] = [];
  const stormBefore = writer.stats.poolWrites;
  const stormStart = performance.now();
  const pending: Promise<void>[] = [];
  /** The occurrence raised on each chip and not written yet: a recovery before its taint makes it invisible. */
  const open = new Map<number, { cancel: () => void }>();
  while (performance.now() - stormStart < STORM_MS) {
    const chip = Math.floor(Math.random() * CHIPS);
    const name = draChipName('Ascend910B', chip);
    if (tainted.get(name) === true || open.has(chip)) {
      open.get(chip)?.cancel();
      open.delete(chip);
      store.applyEvents([{ logicId: chip, code: SEP, assertion: 'recover', severity: 2 }]);
    } else {
      const t0 = performance.now();
      store.applyEvents([{ logicId: chip, code: SEP, assertion: 'occur', severity: 2 }]);
      pending.push(
        new Promise<void>((resolve) => {
          const w = {
            device: name,
            want: true,
            done: () => {
              storm.push(performance.now() - t0);
              open.delete(chip);
              resolve();
            },
          };
          waiters.push(w);
          open.set(chip, {
            cancel: () => {
              waiters.splice(waiters.indexOf(w), 1);
              resolve();
            },
          });
        }),
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const stormWrites = writer.stats.poolWrites - stormBefore;
  await Promise.all(pending);
  unsubscribe();
  writer.stop();
  store.stop();
  client.close();
  await api.stop();
  return { single, storm, baseline, idleWrites, idleMs, stormWrites, slices };
}

export async function benchDraTaint(): Promise<DraTaintResult> {
  const runs: RunResult[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await oneRun());
  const m = (f: (r: RunResult) => number): number => median(runs.map(f));
  return {
    partitions: PARTITIONS,
    slices: runs[0]!.slices,
    singleP50Ms: m((r) => percentile(r.single, 50)),
    singleP99Ms: m((r) => percentile(r.single, 99)),
    stormP50Ms: m((r) => percentile(r.storm, 50)),
    stormP99Ms: m((r) => percentile(r.storm, 99)),
    baselineP50Ms: m((r) => percentile(r.baseline, 50)),
    baselineP99Ms: m((r) => percentile(r.baseline, 99)),
    idleWritesPerMinute: m((r) => (r.idleWrites * 60_000) / r.idleMs),
    stormPoolWritesPerS: m((r) => (r.stormWrites * 1000) / STORM_MS),
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(fileURLToPath(import.meta.url))) {
  const r = await benchDraTaint();
  console.log(
    `dra-taint (${DRA_DRIVER}, ${CHIPS} chips${PARTITIONS ? ', partitions' : ''}, median of ${RUNS} runs): ` +
      `single fault → taint p50 ${fmt(r.singleP50Ms, 1)} / p99 ${fmt(r.singleP99Ms, 1)} ms; ` +
      `storm 50 ev/s p50 ${fmt(r.stormP50Ms, 1)} / p99 ${fmt(r.stormP99Ms, 1)} ms (${fmt(r.stormPoolWritesPerS, 1)} pool writes/s); ` +
      `baseline PUT p50 ${fmt(r.baselineP50Ms, 2)} / p99 ${fmt(r.baselineP99Ms, 2)} ms; idle ${fmt(r.idleWritesPerMinute, 1)} writes/min`,
  );
  console.log(JSON.stringify({ bench: 'dra-taint', ...r }));
}
