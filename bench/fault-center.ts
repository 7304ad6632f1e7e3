/**
 * bench/fault-center: the manual-separation core at cluster scale (issue [G] item 6): 1,000 nodes × 16 chips,
 * 200 jobs; job detector + counter throughput (target ≥ 100,000 faults/s) and a full re-publish of the processed
 * view into `cluster-info-device-*` chunks (target < 1 s). In-process, injected clock, no API server.
 */
import { buildChunks } from '../src/cluster/cluster-info.js';
import { ManualSeparation } from '../src/cluster/manual-separation.js';
import { parsePolicy } from '../src/cluster/policy.js';
import { FaultCenterCore } from '../src/cluster/processing-center.js';
import { checkCodeOf } from '../src/kube/device-info.js';
import { fmt, median } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const NODES = 1000;
const CHIPS = 16;
const JOBS = 200;
const POLICY = parsePolicy(
  'enabled: true\nseparate:\n  fault_window_hours: 24\n  fault_threshold: 3\nrelease:\n  fault_free_hours: 48\n',
);

export interface FaultCenterBenchResult {
  runs: number;
  detectorCounter: { faults: number; faultsPerSec: number };
  republish: { nodes: number; chunks: number; cycleMs: number; chunkBuildMs: number };
}

function detectorRun(faults: number): number {
  const m = new ManualSeparation();
  m.setPolicy(POLICY);
  const t0 = 1772359200000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < faults; i++) {
    const node = i % NODES;
    const chip = (i >> 3) % CHIPS;
    m.intake(
      {
        jobId: `job-${node % JOBS}`,
        node: `node-${node}`,
        dev: `Ascend910-${chip}`,
        code: i % 7 === 0 ? '80E01801' : `8C0${i % 5}4E00`,
        receivedTime: t0 + i,
      },
      t0 + i,
    );
    if (i % 10_000 === 9_999) m.jobPass(t0 + i + 31_000, () => true);
  }
  m.jobPass(t0 + faults + 31_000, () => true);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function clusterCm(node: number): { metadata: { name: string; namespace: string }; data: Record<string, string> } {
  const faults =
    node % 10 === 0
      ? [
          {
            fault_type: 'CardUnhealthy',
            npu_name: 'Ascend910-1',
            large_model_fault_level: 'RestartNPU',
            fault_level: 'RestartNPU',
            fault_handling: 'RestartNPU',
            fault_code: '80E01801',
            fault_time_and_level_map: { '80E01801': { fault_time: 1, fault_level: 'RestartNPU' } },
          },
        ]
      : [];
  const list: Record<string, string> = {
    'huawei.com/Ascend910': Array.from({ length: CHIPS }, (_, i) => `Ascend910-${i}`).join(','),
    'huawei.com/Ascend910-Unhealthy': '',
    'huawei.com/Ascend910-NetworkUnhealthy': '',
    'huawei.com/Ascend910-Recovering': '',
    'huawei.com/Ascend910-Fault': JSON.stringify(faults),
  };
  const cfg = {
    DeviceInfo: { DeviceList: list, UpdateTime: 1 },
    SuperPodID: -2,
    ServerIndex: -2,
    RackID: -2,
    CheckCode: checkCodeOf(list, 1),
  };
  return {
    metadata: { name: `mindx-dl-deviceinfo-node-${node}`, namespace: 'kube-system' },
    data: { DeviceInfoCfg: JSON.stringify(cfg) },
  };
}

/** Runs the bench; `log` receives progress lines. */
export function benchFaultCenter(log: (line: string) => void = () => undefined): FaultCenterBenchResult {
  const faults = 200_000;
  detectorRun(20_000); // warm-up
  const detMs: number[] = [];
  for (let r = 0; r < RUNS; r++) detMs.push(detectorRun(faults));
  const core = new FaultCenterCore();
  core.manual.setPolicy(POLICY);
  for (let n = 0; n < NODES; n++) core.intake.offer({ type: 'add', cm: clusterCm(n) });
  const cycleMs: number[] = [];
  const chunkMs: number[] = [];
  let chunks = 0;
  for (let r = 0; r < RUNS; r++) {
    const a = process.hrtime.bigint();
    core.cycle(1772359200000 + r * 1000);
    const b = process.hrtime.bigint();
    chunks = buildChunks(core.processed).length;
    const c = process.hrtime.bigint();
    cycleMs.push(Number(b - a) / 1e6);
    chunkMs.push(Number(c - b) / 1e6);
  }
  const res: FaultCenterBenchResult = {
    runs: RUNS,
    detectorCounter: { faults, faultsPerSec: faults / (median(detMs) / 1000) },
    republish: { nodes: NODES, chunks, cycleMs: median(cycleMs), chunkBuildMs: median(chunkMs) },
  };
  log(
    `  detector+counter: ${fmt(res.detectorCounter.faultsPerSec, 0)} faults/s; cycle ${fmt(res.republish.cycleMs, 1)} ms, chunks ${fmt(res.republish.chunkBuildMs, 1)} ms (${chunks} ConfigMaps)`,
  );
  return res;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(benchFaultCenter((l) => console.log(l))));
}
