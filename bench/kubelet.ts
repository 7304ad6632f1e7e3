/**
 * bench/kubelet: the kubelet path.
 *
 * - Allocate latency in-process: the allocator the gRPC handler calls (validation, health refusal check, native
 *   response with device specs), on a 16-chip 910B snapshot, requests of 1..8 chips; no volcano pick.
 * - Allocate round trip over gRPC on a Unix socket, kubelet simulator → plugin server → simulator.
 * - Re-registration: time from the simulator serving a new kubelet.sock (a kubelet restart that also wipes the
 *   plugin sockets) to the plugin's Register arriving.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Allocator } from '../src/kubelet/allocate.js';
import { collectDefaultDeviceNodes, InMemoryDeviceNodeProbe } from '../src/kubelet/device-nodes.js';
import { MutableDeviceSource } from '../src/kubelet/device-source.js';
import { KubeletRealMap } from '../src/kubelet/list-watch-view.js';
import { NOOP_LOGGER } from '../src/core/logger.js';
import { DevicePluginManager } from '../src/kubelet/plugin-manager.js';
import { KubeletSimulator } from '../src/sim/kubelet.js';
import { simSnapshot } from '../src/sim/kubelet-devices.js';
import { percentile } from './stats.js';

const ALLOCATE_CALLS = Number(process.env.BENCH_KUBELET_ALLOCATIONS ?? 20_000);
const GRPC_CALLS = Number(process.env.BENCH_KUBELET_GRPC_ALLOCATIONS ?? 3000);
const RESTARTS = Number(process.env.BENCH_KUBELET_RESTARTS ?? 200);

/** Percentiles of one measured quantity, in milliseconds. */
export interface Latency {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Result of {@link benchKubelet}. */
export interface KubeletBenchResult {
  allocateInProcess: Latency;
  allocateGrpc: Latency;
  reregister: Latency;
}

function summary(samples: number[]): Latency {
  return {
    samples: samples.length,
    p50Ms: percentile(samples, 50),
    p99Ms: percentile(samples, 99),
    maxMs: Math.max(...samples),
  };
}

function probe(): InMemoryDeviceNodeProbe {
  const names = ['davinci_manager', 'hisi_hdc', 'devmm_svm'];
  for (let i = 0; i < 16; i++) names.push(`davinci${i}`);
  return new InMemoryDeviceNodeProbe(names);
}

function request(i: number): string[] {
  const size = 1 + (i % 8);
  const start = (i * 3) % (16 - size + 1);
  return Array.from({ length: size }, (_, k) => `Ascend910-${start + k}`);
}

async function allocateInProcess(): Promise<Latency> {
  const snapshot = simSnapshot({ kind: 'Ascend910B', chips: 16 });
  const p = probe();
  const allocator = new Allocator(
    { deviceType: 'Ascend910', volcanoType: false, useAscendDocker: false },
    {
      probe: p,
      defaultNodes: collectDefaultDeviceNodes(p, { chipKind: 'Ascend910B' }),
      kubeletToReal: new KubeletRealMap(),
      logger: NOOP_LOGGER,
    },
  );
  for (let i = 0; i < 2000; i++) await allocator.allocate([request(i)], snapshot);
  const samples: number[] = [];
  for (let i = 0; i < ALLOCATE_CALLS; i++) {
    const req = [request(i)];
    const t0 = performance.now();
    await allocator.allocate(req, snapshot);
    samples.push(performance.now() - t0);
  }
  return summary(samples);
}

/** Runs the kubelet benches; `log` receives progress lines. */
export async function benchKubelet(log: (line: string) => void): Promise<KubeletBenchResult> {
  const allocateInProc = await allocateInProcess();
  log(`  allocate in-process: ${ALLOCATE_CALLS} calls`);

  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-'));
  const dir = path.join(root, 'dp');
  const sim = await KubeletSimulator.start({ dir });
  const manager = new DevicePluginManager({
    kubeletDir: dir,
    source: new MutableDeviceSource(simSnapshot({ kind: 'Ascend910B', chips: 16 })),
    volcanoType: false,
    useAscendDocker: false,
    probe: probe(),
    streamEndGraceMs: 60_000,
  });
  const R = 'huawei.com/Ascend910';
  try {
    await manager.start();
    let last = await sim.waitForRegistration(R);

    for (let i = 0; i < 300; i++) await sim.allocate(R, [request(i)]);
    const grpcSamples: number[] = [];
    for (let i = 0; i < GRPC_CALLS; i++) {
      const t0 = performance.now();
      await sim.allocate(R, [request(i)]);
      grpcSamples.push(performance.now() - t0);
    }
    log(`  allocate over gRPC: ${GRPC_CALLS} calls`);

    const regSamples: number[] = [];
    for (let i = 0; i < RESTARTS; i++) {
      let listeningAt = 0;
      const onListening = (): void => void (listeningAt = performance.now());
      sim.once('listening', onListening);
      const registered = new Promise<number>((resolve) => {
        const before = sim.registrations.length;
        const onChange = (): void => {
          if (sim.registrations.length > before) {
            sim.off('change', onChange);
            resolve(performance.now());
          }
        };
        sim.on('change', onChange);
      });
      await sim.restart();
      const at = await registered;
      regSamples.push(at - listeningAt);
      last = await sim.waitForRegistration(R, last.seq);
    }
    log(`  re-registration: ${RESTARTS} kubelet restarts`);
    return { allocateInProcess: allocateInProc, allocateGrpc: summary(grpcSamples), reregister: summary(regSamples) };
  } finally {
    await manager.stop();
    await sim.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
