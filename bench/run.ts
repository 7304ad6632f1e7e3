/**
 * `npm run bench`: runs every bench and prints a summary plus one JSON line per bench.
 * Environment: BENCH_RUNS (default 5), BENCH_LATENCY_EVENTS (default 3000); the e2e and reset benches read their
 * own (see bench/e2e.ts, bench/reset.ts, bench/lighter.ts). Last, bench/fault-center-real.ts (the fault center at
 * 10k nodes on a real etcd + kube-apiserver, issue [P] item 6) runs as a child process when `npm run build:k8s` has
 * built the control plane; it reads its own `FCR_*` variables (`FCR_BASELINE_JS` for the baseline build), and
 * `BENCH_FAULT_CENTER_REAL=0` skips it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { benchFaultCallback } from './fault-callback.js';
import { benchKubelet } from './kubelet.js';
import { benchLighter, lighterTable } from './lighter.js';
import { benchFaultEngine } from './fault-engine.js';
import { benchConfigMap } from './configmap.js';
import { benchE2e } from './e2e.js';
import { benchFaultCenter } from './fault-center.js';
import { benchPublicFault } from './public-fault.js';
import { benchReset, fmtSummary } from './reset.js';
import { benchStoreCycle } from './store-cycle.js';
import { fmt } from './stats.js';

const log = (line: string): void => void process.stdout.write(`${line}\n`);

log(`node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown cpu'})`);
log('fault-callback: mock DCMI thread -> JS listener');
const fc = await benchFaultCallback(log);
log(
  `  latency at 1000 events/s: p50 ${fmt(fc.latency.p50Ms)} ms, p99 ${fmt(fc.latency.p99Ms)} ms (median of ${fc.runs} runs), ` +
    `max ${fmt(fc.latency.maxMs)} ms`,
);
log(
  `  baseline control-socket round trip: p50 ${fmt(fc.baselineRoundTrip.p50Ms)} ms, p99 ${fmt(fc.baselineRoundTrip.p99Ms)} ms; ` +
    `event latency / round trip: p50 ${fmt(fc.ratio.p50, 2)}x, p99 ${fmt(fc.ratio.p99, 2)}x`,
);
log(JSON.stringify({ bench: 'fault-callback', ...fc }));

log('fault-engine: events through the pure engine (16 chips, shipped rules)');
const fe = benchFaultEngine(log);
log(
  `  one event per cycle: median ${fmt(fe.perEventCycle.eventsPerSec, 0)} events/s over ${fe.runs} runs ` +
    `(cycle p50 ${fmt(fe.perEventCycle.cycleP50Us, 2)} us, p99 ${fmt(fe.perEventCycle.cycleP99Us, 2)} us); ` +
    `batches of 64: median ${fmt(fe.batched64.eventsPerSec, 0)} events/s`,
);
log(
  `  24 h at 10 events/s: heap ${fe.memory.heapMiB.map((h) => `${h.hour} h ${fmt(h.heapUsedMiB, 1)} MiB`).join(', ')}; ` +
    `exported state ${fe.memory.exportedStateBytes} bytes`,
);
log(JSON.stringify({ bench: 'fault-engine', ...fe }));

log('store-cycle: recovery batches through monitor -> store -> kubelet view with a slow DCMI code-list read');
const sc = await benchStoreCycle(log);
log(
  `  recovery batch (${sc.chips} chips) store cycle p50/p99: DCMI read ${sc.slow.dcmiReadMs} ms ` +
    `${fmt(sc.slow.batchCycleP50Ms)}/${fmt(sc.slow.batchCycleP99Ms)} ms vs 0 ms ` +
    `${fmt(sc.baseline.batchCycleP50Ms)}/${fmt(sc.baseline.batchCycleP99Ms)} ms ` +
    `(${fmt(sc.ratio.batchP50, 2)}x / ${fmt(sc.ratio.batchP99, 2)}x); lone recovery ${fmt(sc.ratio.loneP50, 2)}x; ` +
    `DCMI calls inside store cycles ${sc.slow.dcmiCallsInsideCycles + sc.baseline.dcmiCallsInsideCycles}`,
);
log(JSON.stringify({ bench: 'store-cycle', ...sc }));

log('kubelet: Allocate latency and re-registration after a kubelet restart');
const kb = await benchKubelet(log);
const kubeletLine = (name: string, l: { p50Ms: number; p99Ms: number; maxMs: number; samples: number }): void =>
  log(`  ${name}: p50 ${fmt(l.p50Ms)} ms, p99 ${fmt(l.p99Ms)} ms, max ${fmt(l.maxMs)} ms (${l.samples} samples)`);
kubeletLine('Allocate in-process (target p99 < 1 ms)', kb.allocateInProcess);
kubeletLine('Allocate gRPC round trip over UDS', kb.allocateGrpc);
kubeletLine('kubelet.sock re-created -> Register received (target p99 < 300 ms)', kb.reregister);
log(JSON.stringify({ bench: 'kubelet', ...kb }));

log('fault-center: software-fault detector + counter, full cluster re-publish (1,000 nodes x 16 chips, 200 jobs)');
const fcr = benchFaultCenter(log);
log(
  `  detector + counter: ${fmt(fcr.detectorCounter.faultsPerSec, 0)} faults/s (target >= 100,000); ` +
    `one processing cycle ${fmt(fcr.republish.cycleMs, 1)} ms, chunk build ${fmt(fcr.republish.chunkBuildMs, 1)} ms ` +
    `(${fcr.republish.chunks} ConfigMaps; target full re-publish < 1 s)`,
);
log(JSON.stringify({ bench: 'fault-center', ...fcr }));

log('public-fault: SendPublicFault over gRPC on loopback, validation, memory at the 50,000 cap');
const pf = await benchPublicFault(log);
log(
  `  SendPublicFault: median ${fmt(pf.grpc.requestsPerSec, 0)} requests/s (target >= 5,000), ` +
    `p50 ${fmt(pf.grpc.p50Ms, 1)} ms, p99 ${fmt(pf.grpc.p99Ms, 1)} ms; validation ${fmt(pf.validation.faultsPerSec, 0)} faults/s; ` +
    `cap: ${pf.memory.entries} entries, +${fmt(pf.memory.heapMiB, 1)} MiB heap, merge pass ${fmt(pf.memory.processorPassMs, 0)} ms`,
);
log(JSON.stringify({ bench: 'public-fault', ...pf }));

log('configmap: device-info ConfigMap writes during a fault storm on 16 chips (30 s, real clock, API stand-in)');
const cm = await benchConfigMap();
log(
  `  ${fmt(cm.writesPerMinute, 1)} writes/min (target <= 60; shortest gap ${fmt(cm.minGapMs, 0)} ms); ` +
    `state change -> ConfigMap p50 ${fmt(cm.delayP50Ms, 0)} ms, p99 ${fmt(cm.delayP99Ms, 0)} ms (target <= 1100 ms)`,
);
log(JSON.stringify({ bench: 'configmap', ...cm }));

log('e2e: the built agent as a child process on the mock library, kubelet simulator and API stand-in (needs dist/)');
const e2e = await benchE2e(log, {
  faults: Number(process.env.BENCH_FAULTS ?? 1000),
  idleSeconds: Number(process.env.BENCH_IDLE_SECONDS ?? 60),
});
log(
  `  fault -> kubelet Unhealthy: p50 ${fmt(e2e.faultMs.p50)} ms, p99 ${fmt(e2e.faultMs.p99)} ms (target < 20 ms; ` +
    `${fmt(e2e.ratioVsUpstreamTick, 0)}x upstream's 1 s tick, ${fmt(e2e.ratioVsUpstreamPoll, 0)}x its 5 s poll); ` +
    `fault -> ConfigMap p99 ${fmt(e2e.configMapMs.p99, 0)} ms (target <= 1200 ms)`,
);
if (e2e.idle) {
  log(
    `  idle ${e2e.idle.chips} chips ${e2e.idle.seconds} s: CPU ${fmt(e2e.idle.cpuPercent, 2)} % of a core (target < 1 %), ` +
      `RSS max ${fmt(e2e.idle.rssMiB, 0)} MiB, settled ${fmt(e2e.idle.rssEndMiB, 0)} MiB (target ~100 MiB)`,
  );
}
if (e2e.storm) {
  const st = e2e.storm;
  log(
    `  storm ${fmt(st.ratePerSec, 0)} events/s for ${st.seconds} s: crashed ${st.crashed}, final state exact ${st.finalStateExact} ` +
      `(after ${fmt(st.settleMs, 0)} ms), RSS ${fmt(st.rssMiB.before, 0)} -> max ${fmt(st.rssMiB.max, 0)} MiB, CPU ${fmt(st.cpuPercent, 0)} %`,
  );
}
log(JSON.stringify({ bench: 'e2e', ...e2e }));

log('lighter: idle cost, registration and fault path against a baseline build, alternating (issue [P]; needs dist/)');
const li = await benchLighter(log);
log(`  runs ${li.runs}, baseline ${li.baseline.ref}: median (p99) this vs baseline, ratio`);
for (const line of lighterTable(li)) log(line);
log(JSON.stringify({ bench: 'lighter', ...li }));

log('reset: fault -> ring back Healthy with the mock (boot 5 s), offline and online L5; idle CPU of the reset layer');
const rs = await benchReset(log);
if (rs.offline) {
  log(
    `  offline -hotReset=2 (-resetTimePercent=${rs.percent}: idle rule ${rs.offline.scaledIdleRuleMs} ms): fault -> reset done ` +
      `and Healthy ${fmtSummary(rs.offline.healthyMs)}; minus the idle rule ${fmtSummary(rs.offline.afterIdleRuleMs)}`,
  );
}
if (rs.online) {
  log(
    `  online L5 -hotReset=1: fault -> all ranks recovered ${fmtSummary(rs.online.recoveredMs)}; ` +
      `-> training side restarted ${fmtSummary(rs.online.restartedMs)}`,
  );
}
if (rs.idle) {
  log(
    `  idle ${rs.idle.chips} chips ${rs.idle.seconds} s: CPU -hotReset=1 ${fmt(rs.idle.cpuPercentOn, 2)} % vs ` +
      `-hotReset=-1 ${fmt(rs.idle.cpuPercentOff, 2)} % of a core (${fmt(rs.idle.ratio, 2)}x)`,
  );
}
log(JSON.stringify({ bench: 'reset', ...rs }));

// the fault center on the real control plane (issue [P] item 6): a script of its own, run as a child process
const k8sBin = path.join(PROJECT_ROOT, 'test', 'k8s', 'bin');
if (process.env.BENCH_FAULT_CENTER_REAL === '0') {
  log('fault-center-real: skipped (BENCH_FAULT_CENTER_REAL=0)');
} else if (!['etcd', 'kube-apiserver'].every((b) => fs.existsSync(path.join(k8sBin, b)))) {
  log('fault-center-real: skipped (no etcd / kube-apiserver in test/k8s/bin: npm run build:k8s)');
} else {
  const script = path.join(PROJECT_ROOT, 'bench', 'fault-center-real.ts');
  // the same node and tsx loader as this process; the child prints its own summary and JSON lines
  const child = spawn(process.execPath, [...process.execArgv, script], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) {
    log(`fault-center-real: exited with ${code}`);
    process.exitCode = 1;
  }
}
