/**
 * bench/fault-center-intake: the fault center's start-up intake at 10,000 nodes with 50,000 public faults (issue
 * [O], first complete publish < 3 s), each stage alone and in-process, on the code paths the fault center uses:
 *
 * - `device-info`: `DeviceInfoIntake.offer` of every node's device-info ConfigMap as an Add (fault-center.ts
 *   `offer` → `term.core.intake.offer`: CheckCode verification, parsing, fault splitting), then `applyQueued`;
 * - `public-fault`: every public-fault ConfigMap decoded and collected into an empty store
 *   (configmap-source.ts `#submit`: `decodePublicFaultMessage` → `PublicFaultCollector.collect` → the cache);
 * - `pub-processor`: the first `PubFaultProcessor` pass (nothing remembered yet) over fresh clones of every view;
 * - `job-index`: `JobIndex.upsertPod` of every pod (device annotation parsing).
 *
 * Per stage the wall-clock time and the process's CPU time (user + system, the GC's helper threads included: on a
 * shared machine the wall clock also counts waiting for a core). Before/after figures: bench/README.md.
 *
 * The inputs are built as bench/fault-center-e2e-api.ts builds them (16 chips per node, ≈ 4.5 % faulted; 100
 * public faults per ConfigMap; one 16-chip job pod per node); that file runs its stand-in at import, so the
 * generators are copied here. Each run builds fresh state; median and p99 over BENCH_INTAKE_RUNS runs (default 15)
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
import { checkCodeOf } from '../src/kube/device-info.js';
import { fmt, median, percentile } from './stats.js';

const N = Number(process.env.BENCH_INTAKE_NODES ?? 10_000);
const PUBLIC = Number(process.env.BENCH_INTAKE_PUBLIC ?? 50_000);
const RUNS = Number(process.env.BENCH_INTAKE_RUNS ?? 15);
const WARMUP = Number(process.env.BENCH_INTAKE_WARMUP ?? 2);
const CHIPS = 16;
const FAULTED = 0.045;
const SENDERS = ['CCAE', 'fd-online', 'pingmesh', 'Netmind', 'dpcStorage', 'dtfsStorage'];
const CODES: [string, string][] = [
  ['80E01801', 'RestartNPU'],
  ['8C084E00', 'SeparateNPU'],
  ['80E3A201', 'SeparateNPU'],
  ['81078603', 'RestartBusiness'],
];
const NOW = 1_772_359_200_000;

const silent: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
};

// ---- the generators of bench/fault-center-e2e-api.ts (copied: that module starts its stand-in when imported) ----

function hash01(...xs: number[]): number {
  let h = 2166136261;
  for (const x of xs) {
    h ^= x;
    h = Math.imul(h, 16777619) >>> 0;
    h ^= h >>> 13;
  }
  return (h >>> 0) / 4294967296;
}

function fault(dev: string, code: string, level: string, timeMs: number): Record<string, unknown> {
  return {
    fault_type: 'CardUnhealthy',
    npu_name: dev,
    large_model_fault_level: level,
    fault_level: level,
    fault_handling: level,
    fault_code: code,
    fault_time_and_level_map: { [code]: { fault_time: timeMs, fault_level: level } },
  };
}

function deviceInfo(n: number, salt: number) {
  const faults: Record<string, unknown>[] = [];
  const bad = new Set<string>();
  for (let c = 0; c < CHIPS; c++) {
    if (hash01(n, c, salt) >= FAULTED) continue;
    const [code, level] = CODES[Math.floor(hash01(n, c, salt, 7) * CODES.length)]!;
    faults.push(fault(`Ascend910-${c}`, code, level, 1_772_359_200_000 + salt));
    bad.add(`Ascend910-${c}`);
  }
  const all = Array.from({ length: CHIPS }, (_, i) => `Ascend910-${i}`);
  const list: Record<string, string> = {
    'huawei.com/Ascend910': all.filter((d) => !bad.has(d)).join(','),
    'huawei.com/Ascend910-Unhealthy': [...bad].join(','),
    'huawei.com/Ascend910-NetworkUnhealthy': '',
    'huawei.com/Ascend910-Recovering': '',
    'huawei.com/Ascend910-Fault': JSON.stringify(faults),
  };
  const updateTime = 1_772_359_200 + salt;
  return {
    metadata: {
      name: `mindx-dl-deviceinfo-node-${n}`,
      namespace: 'kube-system',
      labels: { 'mx-consumer-cim': 'true' },
    },
    data: {
      DeviceInfoCfg: JSON.stringify({
        DeviceInfo: { DeviceList: list, UpdateTime: updateTime },
        SuperPodID: -2,
        ServerIndex: -2,
        RackID: -2,
        CheckCode: checkCodeOf(list, updateTime),
      }),
    },
  };
}

function publicFaultConfigMaps(total: number) {
  const now = NOW;
  const out = [];
  for (let m = 0; m * 100 < total; m++) {
    const faults = [];
    for (let i = 0; i < 100 && m * 100 + i < total; i++) {
      const k = m * 100 + i;
      const node = `node-${k % N}`;
      const d = Math.floor(hash01(k, 3) * CHIPS);
      const separate = hash01(k, 5) < 0.2;
      faults.push({
        faultId: `bench-pf-${m}-${i}`,
        faultType: 'NPU',
        faultCode: separate ? '220001001' : '010001001',
        faultTime: now - 60_000,
        assertion: 'occur',
        influence: [{ nodeName: node, deviceIds: hash01(k, 9) < 0.5 ? [d] : [d, (d + 1) % CHIPS] }],
      });
    }
    out.push({
      metadata: { name: `public-fault-${m}`, namespace: 'default', labels: { 'mc-consumer-publicfault': 'true' } },
      data: {
        PublicFault: JSON.stringify({
          id: `bench.msg-${m}`.padEnd(8, '0'),
          timestamp: now,
          version: '1.0',
          resource: SENDERS[m % SENDERS.length],
          faults,
        }),
      },
    });
  }
  return out;
}

function pod(n: number) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `train-${n}`,
      namespace: 'default',
      ownerReferences: [
        { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'job', uid: `job-${n}`, controller: true },
      ],
      annotations: {
        'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({
          pod_name: `train-${n}`,
          server_id: '10.0.0.1',
          devices: Array.from({ length: CHIPS }, (_, d) => ({
            device_id: String(d),
            device_ip: `10.1.0.${d}`,
            rank_id: String(d),
          })),
        }),
      },
    },
    spec: { nodeName: `node-${n}`, containers: [{ name: 'c', image: 'x' }] },
  };
}

// ---- inputs (as the informers deliver them: parsed from the list's JSON, one object per item) ----

const reparse = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;
const deviceInfos = Array.from({ length: N }, (_, n) => reparse(deviceInfo(n, 0)));
const publicFaults = reparse(publicFaultConfigMaps(PUBLIC));
const pods = Array.from({ length: N }, (_, n) => reparse(pod(n)));
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
    now: () => NOW,
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

type Stage = 'deviceInfo' | 'publicFault' | 'processor' | 'jobIndex';
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
  return { deviceInfo, publicFault, processor: processorMs, jobIndex };
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
