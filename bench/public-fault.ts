/**
 * bench/public-fault: the public-fault interface of the fault center (issue [G] item 6).
 *
 * - SendPublicFault requests/s over gRPC on loopback (127.0.0.1), with full validation (§2.5) and storage (§2.7):
 *   a client in a worker thread with 64 requests in flight, each one message of one fault with one influence of 2 NPUs; faultIds cycle over 10,000
 *   so the store fills and then sees repeats. The per-sender bucket (1/s) and the global limit (1000/s) would cap
 *   any client far below the target, so the bench raises both: it measures the validation and storage path, not
 *   the limiters. Requests/s per run and per-request latency p50/p99; median over runs.
 * - Validation alone in-process (messages of 100 faults): faults/s.
 * - Memory at the 50,000-entry cap: heap after a forced GC before and after filling the store with 50,000
 *   entries of 8 NPUs each; the statistic-fault-info content at the cap; one PubFaultProcessor pass over 1,000
 *   node views of 16 NPUs with 50 entries each.
 */
import { SYSTEM_CLOCK } from '../src/core/clock.js';
import type { Logger } from '../src/core/logger.js';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Worker } from 'node:worker_threads';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { PublicFaultCache, faultKey } from '../src/cluster/public-fault/cache.js';
import { PublicFaultCollector } from '../src/cluster/public-fault/collector.js';
import { loadPublicFaultConfigFile, PACKAGED_PUBLIC_FAULT_CONFIG } from '../src/cluster/public-fault/config-source.js';
import { PublicFaultGrpcServer } from '../src/cluster/public-fault/grpc-server.js';
import { noopPublicFaultMetrics } from '../src/cluster/public-fault/metrics.js';
import { PubFaultProcessor } from '../src/cluster/public-fault/processor.js';
import { PUBFAULT_PROTO } from '../src/cluster/public-fault/proto.js';
import { statisticsContent } from '../src/cluster/public-fault/statistics.js';
import type { PublicFaultMessage } from '../src/cluster/public-fault/types.js';
import { validateMessage } from '../src/cluster/public-fault/validator.js';
import { cloneView, type NodeDeviceView } from '../src/cluster/device-view.js';
import type { PublicFaultRequest } from '../src/generated/pubfault/PublicFaultRequest.js';
import { fmt, median, percentile } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const REQUESTS = Number(process.env.BENCH_PUBFAULT_REQUESTS ?? 20_000);
/** `BENCH_PUBFAULT_PASS_ONLY=1`: only the memory/processor part (no gRPC, no validation) */
const PASS_ONLY = process.env.BENCH_PUBFAULT_PASS_ONLY === '1';
/** processor passes after the first one (each on fresh clones of the same views, as the processing centre does) */
const PASSES = Number(process.env.BENCH_PUBFAULT_PASSES ?? 10);
const IN_FLIGHT = 64;
const T0 = 1_772_330_400_000;

const silent: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
};

function request(i: number): PublicFaultRequest {
  return {
    id: `bench.msg-${i}`.padEnd(8, '0'),
    timestamp: String(T0),
    version: '1.0',
    resource: 'pingmesh',
    faults: [
      {
        faultId: `pm-link-${i % 10_000}`,
        faultType: 'Network',
        faultCode: '220001001',
        faultTime: String(T0 - 1000),
        assertion: 'occur',
        faultLocation: { npuIp: '10.0.0.1' },
        influence: [{ nodeName: `node-${i % 1000}`, deviceIds: [i % 16, (i + 1) % 16] }],
        description: 'link down',
      },
    ],
  };
}

function gcNow(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}

export interface PublicFaultBenchResult {
  runs: number;
  grpc: { requestsPerSec: number; p50Ms: number; p99Ms: number; perRunRequestsPerSec: number[]; accepted: number };
  validation: { faultsPerSec: number };
  memory: {
    entries: number;
    heapMiB: number;
    bytesPerEntry: number;
    statisticsBytes: number;
    /** the first pass of a new processor (nothing cached) */
    processorPassMs: number;
    /** median of the following passes with nothing changed (fresh view clones each pass) */
    processorRepeatPassMs: number;
    processorRepeatPassesMs: number[];
    /** a pass after one record of one node was replaced (recover + occur) */
    processorOneChangeMs: number;
    /** heap held after the passes (processor caches + last views), after a forced GC */
    processorHeapMiB: number;
  };
}

/**
 * The client runs in a worker thread (its own core), so the figure is the server's rate, not client + server
 * sharing one event loop. The worker is plain CommonJS (eval) loading the same proto.
 */
const CLIENT_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
const req = createRequire(workerData.root + '/package.json');
const grpc = req('@grpc/grpc-js');
const loader = req('@grpc/proto-loader');
const def = grpc.loadPackageDefinition(loader.loadSync(workerData.proto, { longs: String, enums: String, defaults: true, oneofs: true }));
const client = new def.PubFault(workerData.address, grpc.credentials.createInsecure());
parentPort.on('message', async ({ offset, count, inFlight, requests }) => {
  const lat = [];
  let next = 0, ok = 0;
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (next < count) {
      const r = requests[(offset + next++) % requests.length];
      const s = process.hrtime.bigint();
      const code = await new Promise((res, rej) => client.SendPublicFault(r, (e, v) => (e ? rej(e) : res(v.code))));
      lat.push(Number(process.hrtime.bigint() - s) / 1e6);
      if (code === 0) ok++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  parentPort.postMessage({ seconds: Number(process.hrtime.bigint() - t0) / 1e9, lat, ok });
});
`;

interface RunResult {
  perSec: number;
  lat: number[];
  ok: number;
}

function grpcRun(worker: Worker, offset: number, requests: PublicFaultRequest[]): Promise<RunResult> {
  return new Promise((resolve) => {
    worker.once('message', (m: { seconds: number; lat: number[]; ok: number }) =>
      resolve({ perSec: REQUESTS / m.seconds, lat: m.lat, ok: m.ok }),
    );
    worker.postMessage({ offset, count: REQUESTS, inFlight: IN_FLIGHT, requests });
  });
}

export async function benchPublicFault(log: (line: string) => void): Promise<PublicFaultBenchResult> {
  const config = loadPublicFaultConfigFile(PACKAGED_PUBLIC_FAULT_CONFIG);
  // memory at the cap
  gcNow();
  const before = process.memoryUsage().heapUsed;
  const full = new PublicFaultCache();
  const nowS = Math.floor(T0 / 1000);
  for (let i = 0; full.size < full.cap; i++) {
    full.insert(
      `node-${i % 1000}`,
      faultKey('CCAE', `fault-${i}`),
      {
        resource: 'CCAE',
        faultId: `fault-${i}`,
        faultType: 'NPU',
        faultCode: '220001001',
        level: 'SeparateNPU',
        devIds: [0, 1, 2, 3, 4, 5, 6, 7],
        faultTime: nowS,
      },
      nowS,
    );
  }
  gcNow();
  const heap = process.memoryUsage().heapUsed - before;
  const stats = statisticsContent(full);
  const base = new Map<string, NodeDeviceView>();
  for (let n = 0; n < 1000; n++) {
    base.set(`node-${n}`, {
      node: `node-${n}`,
      deviceType: 'Ascend910',
      deviceList: { 'huawei.com/Ascend910': Array.from({ length: 16 }, (_, i) => `Ascend910-${i}`).join(',') },
      updateTime: 0,
      superPodId: -2,
      serverIndex: -2,
      rackId: -2,
      faults: new Map(),
    });
  }
  const fresh = (): Map<string, NodeDeviceView> => new Map([...base].map(([n, v]) => [n, cloneView(v)]));
  gcNow();
  const heapBeforePasses = process.memoryUsage().heapUsed;
  const processor = new PubFaultProcessor(full);
  let views = fresh();
  let t0 = process.hrtime.bigint();
  processor.process(views, T0);
  const processorPassMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const repeat: number[] = [];
  for (let i = 0; i < PASSES; i++) {
    views = fresh();
    t0 = process.hrtime.bigint();
    processor.process(views, T0 + (i + 1) * 1000);
    repeat.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  // one record of node-7 replaced (recover + a new occur with another time)
  const [, key7, rec7] = [...full.entries()].find(([n]) => n === 'node-7')!;
  full.delete('node-7', key7);
  full.insert('node-7', key7, { ...rec7, faultTime: rec7.faultTime + 1 }, nowS + 10);
  views = fresh();
  t0 = process.hrtime.bigint();
  processor.process(views, T0 + (PASSES + 1) * 1000);
  const processorOneChangeMs = Number(process.hrtime.bigint() - t0) / 1e6;
  gcNow();
  const processorHeapMiB = (process.memoryUsage().heapUsed - heapBeforePasses) / 1024 / 1024;
  const memory = {
    entries: full.size,
    heapMiB: heap / 1024 / 1024,
    bytesPerEntry: heap / full.size,
    statisticsBytes: Object.values(stats.data).reduce((a, v) => a + Buffer.byteLength(v), 0),
    processorPassMs,
    processorRepeatPassMs: median(repeat),
    processorRepeatPassesMs: repeat,
    processorOneChangeMs,
    processorHeapMiB,
  };
  log(
    `  at the cap: ${memory.entries} entries, heap +${fmt(memory.heapMiB, 1)} MiB (${fmt(memory.bytesPerEntry, 0)} B/entry), ` +
      `statistic-fault-info ${memory.statisticsBytes} B (${stats.kind}), processor pass over 1,000 nodes ${fmt(processorPassMs, 1)} ms ` +
      `(first), ${fmt(memory.processorRepeatPassMs, 1)} ms (median of ${PASSES} unchanged: ${repeat.map((x) => fmt(x, 1)).join(' / ')}), ` +
      `${fmt(processorOneChangeMs, 1)} ms (one record changed); heap held after the passes +${fmt(processorHeapMiB, 1)} MiB`,
  );
  if (PASS_ONLY) {
    return {
      runs: 0,
      grpc: { requestsPerSec: NaN, p50Ms: NaN, p99Ms: NaN, perRunRequestsPerSec: [], accepted: 0 },
      validation: { faultsPerSec: NaN },
      memory,
    };
  }
  const cache = new PublicFaultCache();
  const collector = new PublicFaultCollector({
    cache,
    clock: SYSTEM_CLOCK,
    logger: silent,
    metrics: noopPublicFaultMetrics,
    nodeBySerial: () => undefined,
    config,
    senderBurst: 1e12,
    senderRatePerSec: 1e12,
  });
  const server = new PublicFaultGrpcServer({
    address: '127.0.0.1:0',
    collect: (m, s) => collector.collect(m, s),
    clock: SYSTEM_CLOCK,
    logger: silent,
    metrics: noopPublicFaultMetrics,
    globalBurst: 1e12,
    globalRatePerSec: 1e12,
  });
  const address = await server.start();
  const worker = new Worker(CLIENT_WORKER, {
    eval: true,
    workerData: { root: PROJECT_ROOT, proto: PUBFAULT_PROTO, address },
  });
  const requests = Array.from({ length: 20_000 }, (_, i) => request(i));
  const perRun: number[] = [];
  const p50s: number[] = [];
  const p99s: number[] = [];
  let accepted = 0;
  try {
    await grpcRun(worker, 0, requests); // warm-up
    for (let run = 0; run < RUNS; run++) {
      const r = await grpcRun(worker, (run + 1) * REQUESTS, requests);
      perRun.push(r.perSec);
      p50s.push(percentile(r.lat, 50));
      p99s.push(percentile(r.lat, 99));
      accepted += r.ok;
      log(
        `  gRPC run ${run + 1}/${RUNS}: ${fmt(r.perSec, 0)} requests/s, p50 ${fmt(p50s[run]!)} ms, p99 ${fmt(p99s[run]!)} ms`,
      );
    }
  } finally {
    await worker.terminate();
    await server.stop();
  }

  // validation alone
  const big: PublicFaultMessage = {
    id: 'bench.validation',
    timestamp: T0,
    version: '1.0',
    resource: 'CCAE',
    faults: Array.from({ length: 100 }, (_, i) => ({
      faultId: `fault-${String(i).padStart(4, '0')}`,
      faultType: 'NPU',
      faultCode: '220001001',
      faultTime: T0,
      assertion: 'occur',
      faultLocation: { npuIp: '10.0.0.1' },
      influence: [{ nodeName: `node-${i}`, nodeSN: '', deviceIds: [0, 1, 2, 3] }],
      description: 'bench',
    })),
  };
  const vRates: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 2000; i++) validateMessage(big, { config, nodeBySerial: () => undefined });
    vRates.push((2000 * 100) / (Number(process.hrtime.bigint() - t0) / 1e9));
  }
  log(`  validation in-process: median ${fmt(median(vRates), 0)} faults/s`);

  return {
    runs: RUNS,
    grpc: {
      requestsPerSec: median(perRun),
      p50Ms: median(p50s),
      p99Ms: median(p99s),
      perRunRequestsPerSec: perRun,
      accepted,
    },
    validation: { faultsPerSec: median(vRates) },
    memory,
  };
}

// `npx tsx bench/public-fault.ts` runs this bench alone
if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchPublicFault((l) => void process.stdout.write(`${l}\n`));
  process.stdout.write(`${JSON.stringify({ bench: 'public-fault', ...r })}\n`);
}
