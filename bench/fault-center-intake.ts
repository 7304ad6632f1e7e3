/**
 * bench/fault-center-intake: the fault center's start-up intake at 10,000 nodes with 50,000 public faults (issue
 * [O], first complete publish < 3 s), each stage alone and in-process, on the code paths the fault center uses:
 *
 * - `device-info`: `DeviceInfoIntake.offer` of every node's device-info ConfigMap as an Add (fault-center.ts
 *   `offer` → `term.core.intake.offer`: CheckCode verification, parsing, fault splitting), then `applyQueued`;
 * - `public-fault`: every public-fault ConfigMap decoded and collected into an empty store
 *   (configmap-source.ts `#submit`: `decodePublicFaultMessage` → `PublicFaultCollector.collect` → the cache);
 * - `pub-processor`: the first `PubFaultProcessor` pass (nothing remembered yet) over fresh clones of every view;
 * - `job-index`: `JobIndex.upsertPod` of every pod (device annotation parsing);
 * - `first-cycle`: the fault center's first cycle as `#lead` runs it, on a `FaultCenterCore` holding all of the
 *   above: slices of 1,000 nodes, smaller at the end (`firstCycleSlice`; `cycle` without the job pass,
 *   `ClusterInfoChunks.apply` sequential), and the
 *   protobuf bytes of every chunk a slice sealed (`rawParts`), then of the rest.
 *
 * Per stage the wall-clock time and the process's CPU time (user + system, the GC's helper threads included: on a
 * shared machine the wall clock also counts waiting for a core). Before/after figures: bench/README.md.
 *
 * The inputs are those bench/fault-center-e2e-api.ts seeds its stand-in with (bench/fault-center-cluster.ts: 16
 * chips per node, ≈ 4.5 % faulted; 100 public faults per ConfigMap; one 16-chip job pod per node). Each run builds fresh state; median and p99 over BENCH_INTAKE_RUNS runs (default 15)
 * after BENCH_INTAKE_WARMUP warm-up runs (default 2, the first of them reported alone: cold code, as at start).
 * Sizes: BENCH_INTAKE_NODES (10,000), BENCH_INTAKE_PUBLIC (50,000). Command: `npx tsx bench/fault-center-intake.ts`.
 * Not a test: figures only.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../src/core/logger.js';
import { cloneView, type NodeDeviceView } from '../src/cluster/device-view.js';
import { DeviceInfoIntake } from '../src/cluster/device-info-intake.js';
import { JobIndex } from '../src/cluster/job-index.js';
import { PublicFaultCache } from '../src/cluster/public-fault/cache.js';
import { PublicFaultCollector } from '../src/cluster/public-fault/collector.js';
import { loadPublicFaultConfigFile, PACKAGED_PUBLIC_FAULT_CONFIG } from '../src/cluster/public-fault/config-source.js';
import { decodePublicFaultMessage } from '../src/cluster/public-fault/message-decode.js';
import { noopPublicFaultMetrics } from '../src/cluster/public-fault/metrics.js';
import { PubFaultProcessor } from '../src/cluster/public-fault/processor.js';
import { ClusterInfoChunks } from '../src/cluster/cluster-info.js';
import { FaultCenterCore } from '../src/cluster/processing-center.js';
import { firstCycleSlice } from '../src/cluster/fault-center.js';
import { deviceInfo, jobPod, publicFaultConfigMaps } from './fault-center-cluster.js';
import { fmt, median, percentile } from './stats.js';

const N = Number(process.env.BENCH_INTAKE_NODES ?? 10_000);
const PUBLIC = Number(process.env.BENCH_INTAKE_PUBLIC ?? 50_000);
const RUNS = Number(process.env.BENCH_INTAKE_RUNS ?? 15);
const WARMUP = Number(process.env.BENCH_INTAKE_WARMUP ?? 2);
const NOW = 1_772_359_200_000;

const silent: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
};

// ---- inputs (as the informers deliver them: parsed from the list's JSON, one object per item) ----

const reparse = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;
const deviceInfos = Array.from({ length: N }, (_, n) => reparse(deviceInfo(n, 0)));
const publicFaults = reparse(publicFaultConfigMaps(PUBLIC, N, NOW));
const pods = Array.from({ length: N }, (_, n) => reparse(jobPod(n)));
const config = loadPublicFaultConfigFile(PACKAGED_PUBLIC_FAULT_CONFIG);

// ---- stages ----

function intakeAll(): DeviceInfoIntake {
  const intake = new DeviceInfoIntake();
  let refused = 0;
  for (const cm of deviceInfos) if (!intake.offer({ type: 'add', cm }).accepted) refused++;
  intake.applyQueued(NOW);
  if (refused > 0) throw new Error(`${refused} device-info ConfigMaps refused`);
  return intake;
}

function collectAll(): PublicFaultCache {
  const cache = new PublicFaultCache();
  const collector = new PublicFaultCollector({
    cache,
    clock: { monotonic: () => NOW },
    logger: silent,
    metrics: noopPublicFaultMetrics,
    nodeBySerial: () => undefined,
    config,
    // 500 ConfigMaps are ≈ 84 per sender, within the default burst of 100; a larger BENCH_INTAKE_PUBLIC would not be
    senderBurst: 1_000_000,
  });
  for (const cm of publicFaults) {
    const msg = decodePublicFaultMessage(cm.data.PublicFault);
    const r = collector.collect(msg, 'configmap', `${cm.metadata.namespace}/${cm.metadata.name}`);
    if (r.code !== 0) throw new Error(`public fault ConfigMap ${cm.metadata.name} refused: ${r.info}`);
  }
  if (cache.size !== PUBLIC) throw new Error(`store holds ${cache.size}, not ${PUBLIC}`);
  return cache;
}

function indexAll(): JobIndex {
  const index = new JobIndex();
  for (const p of pods) {
    const err = index.upsertPod(p);
    if (err !== undefined) throw new Error(err);
  }
  return index;
}

/** A core holding every input, as the center's is when its lists are done (not timed). */
function loadedCore(): FaultCenterCore {
  const core = new FaultCenterCore({ extraProcessors: [new PubFaultProcessor(collectAll())] });
  for (const cm of deviceInfos) if (!core.intake.offer({ type: 'add', cm }).accepted) throw new Error('refused');
  for (const p of pods) {
    const err = core.jobIndex.upsertPod(p);
    if (err !== undefined) throw new Error(err);
  }
  return core;
}

/** The first cycle in slices, with the chunks' protobuf bytes (fault-center.ts `#lead`). */
function firstCycle(core: FaultCenterCore): number {
  const chunks = new ClusterInfoChunks();
  let bytes = 0;
  let written = 0;
  const write = (below: number) => {
    for (const i of chunks.takeDirty(below)) for (const b of chunks.rawParts(i)) bytes += b.length;
    written = below;
  };
  for (let slice = 1000; ; slice = firstCycleSlice(core.pendingNodes)) {
    const r = core.cycle(NOW, { jobPass: false, maxNodes: slice });
    chunks.apply(r.published, { sequential: true });
    if (core.pendingNodes === 0) break;
    if (chunks.sealed > written) write(chunks.sealed);
  }
  write(Infinity);
  if (chunks.nodeCount !== N) throw new Error(`${chunks.nodeCount} nodes published, not ${N}`);
  return bytes;
}

type Stage = 'deviceInfo' | 'publicFault' | 'processor' | 'jobIndex' | 'firstCycle';
/** per stage: wall-clock ms and CPU ms of the process (user + system, GC threads included) */
type Sample = Record<Stage, { wall: number; cpu: number }>;

function timed<T>(f: () => T): [T, { wall: number; cpu: number }] {
  const c = process.cpuUsage();
  const t = process.hrtime.bigint();
  const r = f();
  const wall = Number(process.hrtime.bigint() - t) / 1e6;
  const used = process.cpuUsage(c);
  return [r, { wall, cpu: (used.user + used.system) / 1000 }];
}

function run(): Sample {
  const [intake, deviceInfo] = timed(intakeAll);
  const [cache, publicFault] = timed(collectAll);
  const views = new Map<string, NodeDeviceView>();
  for (const [node, v] of intake.views) views.set(node, cloneView(v));
  const processor = new PubFaultProcessor(cache);
  const [, processorMs] = timed(() => processor.process(views, NOW));
  const [, jobIndex] = timed(indexAll);
  const core = loadedCore();
  const [, firstCycleMs] = timed(() => firstCycle(core));
  return { deviceInfo, publicFault, processor: processorMs, jobIndex, firstCycle: firstCycleMs };
}

/** the first run: cold code, as at the fault center's start */
const first = run();
for (let i = 1; i < WARMUP; i++) run();
const samples: Sample[] = [];
for (let i = 0; i < RUNS; i++) samples.push(run());

const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(
  `fault-center intake: ${N} nodes, ${publicFaults.length} public-fault ConfigMaps (${PUBLIC} faults), ${N} pods; ` +
    `${RUNS} runs after ${WARMUP} warm-up; load average ${load}`,
);
console.log('| stage | wall median ms | wall p99 ms | CPU median ms | CPU p99 ms | first (cold) run: wall / CPU ms |');
console.log('| --- | --- | --- | --- | --- | --- |');
const rows: [string, Stage][] = [
  ['device-info intake (offer + applyQueued)', 'deviceInfo'],
  ['public-fault collection (decode + collect)', 'publicFault'],
  ['PubFaultProcessor first pass', 'processor'],
  ['job index (upsertPod)', 'jobIndex'],
  ['first cycle in slices + chunk bytes', 'firstCycle'],
];
const summary: Record<string, Record<string, number>> = {};
for (const [label, k] of rows) {
  const wall = samples.map((s) => s[k].wall);
  const cpu = samples.map((s) => s[k].cpu);
  summary[k] = {
    wallMedian: median(wall),
    wallP99: percentile(wall, 99),
    cpuMedian: median(cpu),
    cpuP99: percentile(cpu, 99),
    firstWall: first[k].wall,
    firstCpu: first[k].cpu,
  };
  console.log(
    `| ${label} | ${fmt(median(wall), 1)} | ${fmt(percentile(wall, 99), 1)} | ${fmt(median(cpu), 1)} | ` +
      `${fmt(percentile(cpu, 99), 1)} | ${fmt(first[k].wall, 1)} / ${fmt(first[k].cpu, 1)} |`,
  );
}
console.log(
  JSON.stringify({ bench: 'fault-center-intake', nodes: N, publicFaults: PUBLIC, runs: RUNS, load, summary }),
);
