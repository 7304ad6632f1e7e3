/**
 * Chip-reset bench (issue [F] item 7): the built agent (`dist/cli/agent.js`) as a child process on the mock library,
 * the kubelet simulator and the API stand-in in this process; every reset boots for `bootSeconds` (default 5 s,
 * the mock's `resetResult` through the control socket).
 *
 * - offline (`-hotReset=2`, 8-chip 910B, no pod): a RestartNPU code on an idle chip → the 60 s idle rule → in-band
 *   reset → boot → re-read → kubelet sees the chip Healthy again. The fixed reset timings are scaled by
 *   `-resetTimePercent` (default 5: idle rule 3 s, boot-status poll 50 ms, boot limit 9 s); the mock's boot time is
 *   NOT scaled, so the figure is dominated by the boot. Reported: fault → Unhealthy, fault → Healthy, and
 *   Healthy − scaled idle rule (the part that does not depend on the idle rule).
 * - online L5 (`-hotReset=1`, same node): a training pod holding the 8-chip ring (task `job1`), its
 *   `reset-config-job1` ConfigMap, and the {@link TrainingSimulator} (stops its processes `stopAfterMs` after it
 *   reads `unrecovered`, restarts them on `recovered`). A RestartNPU code → policy `reset` (§3.7) → unrecovered →
 *   processes to zero → reset → boot → recovered. kubelet health is filtered during the episode (§3.10), so the
 *   end points are the ConfigMap (every rank `recovered`) and the simulator's restart. Timings scaled the same way
 *   (WaitProcessReadCMTime 30 s → 1.5 s, WaitDeviceResetTime 150 s → 7.5 s, WaitNpuReadyTime likewise).
 * - idle CPU (16-chip 910A3, a 16-chip training pod and its reset ConfigMap, no faults): `-hotReset=1` and
 *   `-hotReset=-1` in the same run, each for `idleSeconds`, production timings; CPU % of one core and the ratio.
 *
 * Run: `npx tsc -p tsconfig.build.json && npx tsx bench/reset.ts`. Environment: BENCH_RESET_RUNS (runs per flow,
 * default 5, at most 8: one chip per run, 3 offline tokens per chip), BENCH_RESET_PERCENT (`-resetTimePercent`,
 * default 5; below 4 the scaled boot limit is shorter than the 5 s boot), BENCH_RESET_BOOT_SECONDS (default 5),
 * BENCH_RESET_STOP_MS (training side's stop delay, default 1000), BENCH_IDLE_SECONDS (default 60; 0 skips),
 * BENCH_RESET_FLOWS (comma list of offline,online,idle; default all), BENCH_RESET_LOG_DIR (keep each agent's log).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { encodeResetJson, parseResetJson } from '../src/reset/reset-configmap.js';
import { KubeApiStandIn } from '../src/sim/kube-api.js';
import { MockControlClient } from '../src/sim/mock-control.js';
import { TrainingSimulator } from '../src/sim/training-sim.js';
import { NODE_NAME, RESOURCE } from '../test/helpers/agent-process.js';
import { startBenchAgent, type BenchAgent } from './sandbox.js';
import { median, percentile } from './stats.js';

/** RestartNPU in the shipped faultCode.json, in no FaultFrequency / FaultDuration rule. */
const RESTART_NPU_CODE = '8C03A000';
const JOB = 'job1';
const NAMESPACE = 'default';
/** §J.2 idle rule and §5 defaults, ms (scaled by -resetTimePercent in the agent). */
const IDLE_RULE_MS = 60_000;

export interface ResetBenchOptions {
  readonly runs?: number;
  readonly percent?: number;
  readonly bootSeconds?: number;
  readonly stopAfterMs?: number;
  readonly idleSeconds?: number;
  readonly flows?: readonly ('offline' | 'online' | 'idle')[];
}

export interface Summary {
  readonly p50: number;
  readonly p99: number;
  readonly min: number;
  readonly max: number;
  readonly samples: number;
}

export interface ResetBenchResult {
  readonly percent: number;
  readonly bootSeconds: number;
  readonly offline?: {
    /** Fault → kubelet Unhealthy, ms. */
    readonly unhealthyMs: Summary;
    /** Fault → the reset finished (its `OfflineResetSucceeded` Event) and kubelet sees the chip Healthy, ms. */
    readonly healthyMs: Summary;
    /** healthyMs − the scaled idle rule: boot + re-read + reporting. */
    readonly afterIdleRuleMs: Summary;
    readonly scaledIdleRuleMs: number;
    /**
     * Runs where kubelet saw the chip Healthy before the reset finished, and by how much (ms): the mock clears the
     * codes when the reset starts, and the agent's periodic re-read can see the clean list while the chip boots.
     */
    readonly earlyHealthyMs: readonly number[];
    readonly failures: readonly string[];
  };
  readonly online?: {
    /** Fault → first `unrecovered` in the reset ConfigMap. */
    readonly unrecoveredMs: Summary;
    /** Fault → the mock saw the reset. */
    readonly resetMs: Summary;
    /** Fault → every rank `recovered` in the reset ConfigMap. */
    readonly recoveredMs: Summary;
    /** Fault → the training simulator restarted its processes. */
    readonly restartedMs: Summary;
    /** Per run, about how long (10 ms samples) kubelet saw the faulty chip not Healthy (§3.10 filter: ≈ 0 expected). */
    readonly kubeletNotHealthyMs: readonly number[];
    readonly stopAfterMs: number;
    readonly failures: readonly string[];
  };
  readonly idle?: {
    readonly chips: number;
    readonly seconds: number;
    readonly cpuPercentOn: number;
    readonly cpuPercentOff: number;
    /** on / off. */
    readonly ratio: number;
    readonly rssMiBOn: number;
    readonly rssMiBOff: number;
  };
}

function summary(v: readonly number[]): Summary {
  if (v.length === 0) return { p50: NaN, p99: NaN, min: NaN, max: NaN, samples: 0 };
  return { p50: median(v), p99: percentile(v, 99), min: Math.min(...v), max: Math.max(...v), samples: v.length };
}

const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(check: () => T | undefined | false, what: string, timeoutMs: number, stepMs = 10): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleepMs(stepMs);
  }
}

interface Sandbox extends BenchAgent {
  health(logicId: number): string | undefined;
}

/** A training pod holding `chips` (rank index 0) and its reset ConfigMap (§2.1: label reset=true, UpdateTime 0). */
function createTask(api: KubeApiStandIn, chips: number): void {
  api.store.create(api.resourceType('', 'pods'), NAMESPACE, {
    metadata: {
      name: `${JOB}-0`,
      namespace: NAMESPACE,
      uid: `uid-${JOB}-0`,
      labels: { 'volcano.sh/job-name': JOB },
      annotations: {
        [RESOURCE]: Array.from({ length: chips }, (_, i) => `Ascend910-${i}`).join(','),
        'hccl/rankIndex': '0',
      },
    },
    spec: { nodeName: NODE_NAME, containers: [{ name: 'train', image: 'x' }] },
    status: { phase: 'Running' },
  });
  const resetJson = encodeResetJson({
    RankList: [],
    UpdateTime: 0,
    RetryTime: 0,
    FaultFlushing: false,
    GracefulExit: 0,
    RestartFaultProcess: false,
  });
  api.store.create(api.resourceType('', 'configmaps'), NAMESPACE, {
    metadata: { name: `reset-config-${JOB}`, namespace: NAMESPACE, labels: { reset: 'true' } },
    data: { 'reset.json': resetJson, restartType: 'hotReset' },
  });
}

async function startSandbox(
  scenario: string,
  flags: readonly string[],
  setup?: (api: KubeApiStandIn) => void,
): Promise<Sandbox> {
  // BENCH_RESET_LOG_DIR: keep each agent's log (info level) there, for a run that fails
  const logDir = process.env.BENCH_RESET_LOG_DIR;
  const logFd = logDir ? fs.openSync(path.join(logDir, `agent-${Date.now()}-${process.pid}.log`), 'w') : 'ignore';
  try {
    const b = await startBenchAgent({
      prefix: 'npu-reset-bench-',
      scenario,
      flags: [logDir ? '-logLevel=-1' : '-logLevel=1', ...flags],
      stdout: logFd,
      ...(setup ? { setup } : {}),
    });
    return {
      ...b,
      health: (logicId) => b.sandbox.kubelet.devices(RESOURCE)?.find((d) => d.ID === `Ascend910-${logicId}`)?.health,
    };
  } finally {
    if (typeof logFd === 'number') fs.closeSync(logFd);
  }
}

/**
 * A RestartNPU fault as the hardware shows it: the code (event + code list) and `dcmi_get_device_health` non-zero,
 * which the offline engine confirms before resetting (§J.2). The mock's reset clears codes, health and processes.
 */
async function injectFault(control: MockControlClient, logicId: number): Promise<void> {
  await control.expectOk({ op: 'health', logicId, value: 2 });
  await control.expectOk({ op: 'fault', logicId, eventId: RESTART_NPU_CODE, assertion: 'occur' });
}

/** Events of `reason` the agent recorded in the stand-in (an aggregated Event counts its `count`). */
function eventCount(api: KubeApiStandIn, reason: string): number {
  let n = 0;
  for (const e of api.store.list(api.resourceType('', 'events'), undefined) as {
    reason?: string;
    count?: number;
    series?: { count?: number };
  }[]) {
    if (e.reason === reason) n += Math.max(e.count ?? 1, e.series?.count ?? 1);
  }
  return n;
}

async function resetsOf(control: MockControlClient, logicId: number): Promise<number> {
  return (await control.state()).chips.find((c) => c.logicId === logicId)?.resets ?? 0;
}

async function benchOffline(
  log: (line: string) => void,
  runs: number,
  percent: number,
  bootSeconds: number,
): Promise<NonNullable<ResetBenchResult['offline']>> {
  const sb = await startSandbox(path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'), [
    '-hotReset=2',
    `-resetTimePercent=${percent}`,
  ]);
  const unhealthy: number[] = [];
  const healthy: number[] = [];
  const failures: string[] = [];
  const earlyHealthy: number[] = [];
  const scaledIdle = Math.max(1, Math.round(IDLE_RULE_MS * (percent / 100)));
  try {
    for (let c = 0; c < 8; c++) {
      await sb.control.expectOk({ op: 'resetResult', logicId: c, result: 'ok', bootSeconds });
    }
    for (let r = 0; r < runs; r++) {
      const chip = r % 8;
      const before = await resetsOf(sb.control, chip);
      const eventsBefore = eventCount(sb.sandbox.api, 'OfflineResetSucceeded');
      const t0 = performance.now();
      try {
        await injectFault(sb.control, chip);
        await until(() => sb.health(chip) === 'Unhealthy', `chip ${chip} Unhealthy`, 10_000);
        unhealthy.push(performance.now() - t0);
        // the end: the reset finished (its Event, recorded after the boot wait) and kubelet sees the chip Healthy
        let firstHealthy: number | undefined;
        await until(
          () => {
            if (firstHealthy === undefined && sb.health(chip) === 'Healthy') firstHealthy = performance.now() - t0;
            return eventCount(sb.sandbox.api, 'OfflineResetSucceeded') > eventsBefore && sb.health(chip) === 'Healthy';
          },
          `chip ${chip} reset and Healthy`,
          scaledIdle + 60_000,
        );
        const t = performance.now() - t0;
        const after = await resetsOf(sb.control, chip);
        if (after <= before) throw new Error(`chip ${chip} turned Healthy without a reset (resets ${before})`);
        healthy.push(t);
        if (firstHealthy !== undefined && firstHealthy < t - 50) earlyHealthy.push(t - firstHealthy);
        log(
          `reset offline: run ${r + 1}/${runs} chip ${chip}: reset done and Healthy after ${t.toFixed(0)} ms` +
            (firstHealthy !== undefined && firstHealthy < t - 50
              ? ` (kubelet already saw it Healthy at ${firstHealthy.toFixed(0)} ms)`
              : ''),
        );
      } catch (err) {
        failures.push(`run ${r + 1} chip ${chip}: ${(err as Error).message}`);
        log(`reset offline: run ${r + 1} failed: ${(err as Error).message}`);
      }
      await sleepMs(500);
    }
  } finally {
    await sb.close();
  }
  return {
    unhealthyMs: summary(unhealthy),
    healthyMs: summary(healthy),
    afterIdleRuleMs: summary(healthy.map((h) => h - scaledIdle)),
    scaledIdleRuleMs: scaledIdle,
    earlyHealthyMs: earlyHealthy,
    failures,
  };
}

/** The ranks of the reset ConfigMap's reset.json (§2.2), or undefined while UpdateTime is 0. */
function rankStatuses(api: KubeApiStandIn): { statuses: string[]; updateTime: number } | undefined {
  const cm = api.store.get(api.resourceType('', 'configmaps'), NAMESPACE, `reset-config-${JOB}`) as
    { data?: Record<string, string> } | undefined;
  const text = cm?.data?.['reset.json'];
  if (text === undefined) return undefined;
  try {
    const doc = parseResetJson(text);
    if (doc.UpdateTime === 0) return undefined;
    return { statuses: doc.RankList.map((r) => r.Status), updateTime: doc.UpdateTime };
  } catch {
    return undefined;
  }
}

async function benchOnline(
  log: (line: string) => void,
  runs: number,
  percent: number,
  bootSeconds: number,
  stopAfterMs: number,
): Promise<NonNullable<ResetBenchResult['online']>> {
  const sb = await startSandbox(
    path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'),
    ['-hotReset=1', `-resetTimePercent=${percent}`],
    (api) => createTask(api, 8),
  );
  const simControl = await MockControlClient.connect(sb.sandbox.control);
  const sim = new TrainingSimulator({
    hostRoot: path.join(sb.sandbox.dir, 'host'),
    namespace: NAMESPACE,
    job: JOB,
    logicIds: [0, 1, 2, 3, 4, 5, 6, 7],
    stopAfterMs,
    pollMs: 50,
    control: simControl,
  });
  const unrecovered: number[] = [];
  const reset: number[] = [];
  const recovered: number[] = [];
  const restarted: number[] = [];
  const notHealthyMs: number[] = [];
  const failures: string[] = [];
  // WaitProcessReadCMTime after the final write (§3.7), scaled, plus a margin: the episode must end before the next
  const episodeTail = Math.round(30_000 * (percent / 100)) + 2000;
  try {
    for (let c = 0; c < 8; c++) {
      await sb.control.expectOk({ op: 'resetResult', logicId: c, result: 'ok', bootSeconds });
    }
    await sim.start();
    await sleepMs(3000); // the pod cache, the task discovery and the ConfigMap watch settle
    for (let r = 0; r < runs; r++) {
      const chip = r % 8;
      const restartsBefore = sim.restarts;
      const resetsBefore = await resetsOf(sb.control, chip);
      const wallBefore = Math.floor(Date.now() / 1000);
      const t0 = performance.now();
      // §3.10: while the episode runs kubelet should keep seeing the ring Healthy; sample the faulty chip
      let unhealthySamples = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          if (sb.health(chip) !== 'Healthy') unhealthySamples++;
          await sleepMs(10);
        }
      })();
      try {
        await injectFault(sb.control, chip);
        await until(
          () => {
            const s = rankStatuses(sb.sandbox.api);
            return s !== undefined && s.updateTime >= wallBefore && s.statuses.includes('unrecovered');
          },
          'unrecovered in the reset ConfigMap',
          20_000,
        );
        unrecovered.push(performance.now() - t0);
        for (;;) {
          if ((await resetsOf(sb.control, chip)) > resetsBefore) break;
          if (performance.now() - t0 > 60_000) throw new Error(`no reset of chip ${chip} within 60 s`);
          const s = rankStatuses(sb.sandbox.api);
          if (s?.statuses.includes('failed')) throw new Error(`ranks failed: ${s.statuses.join(',')}`);
          await sleepMs(20);
        }
        reset.push(performance.now() - t0);
        await until(
          () => {
            const s = rankStatuses(sb.sandbox.api);
            if (s?.statuses.includes('failed')) throw new Error(`ranks failed: ${s.statuses.join(',')}`);
            return s !== undefined && s.statuses.length > 0 && s.statuses.every((x) => x === 'recovered');
          },
          'every rank recovered',
          60_000,
        );
        recovered.push(performance.now() - t0);
        await until(() => sim.restarts > restartsBefore, 'the training side restarted', 20_000);
        const t = performance.now() - t0;
        restarted.push(t);
        log(`reset online L5: run ${r + 1}/${runs} chip ${chip}: recovered and restarted after ${t.toFixed(0)} ms`);
      } catch (err) {
        failures.push(`run ${r + 1} chip ${chip}: ${(err as Error).message}`);
        log(`reset online L5: run ${r + 1} failed: ${(err as Error).message}`);
      } finally {
        sampling = false;
        await sampler;
      }
      // ≈ ms the faulty chip was not Healthy for kubelet (10 ms samples)
      notHealthyMs.push(unhealthySamples * 10);
      await sleepMs(episodeTail);
    }
  } finally {
    sim.stop();
    simControl.close();
    await sb.close();
  }
  return {
    unrecoveredMs: summary(unrecovered),
    resetMs: summary(reset),
    recoveredMs: summary(recovered),
    restartedMs: summary(restarted),
    kubeletNotHealthyMs: notHealthyMs,
    stopAfterMs,
    failures,
  };
}

function cpuTicks(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(rest[11]) + Number(rest[12]); // utime + stime
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function idleCpu(hotReset: number, seconds: number): Promise<{ cpu: number; rss: number; chips: number }> {
  const sb = await startSandbox(
    path.join(PROJECT_ROOT, 'scenarios', '910a3-16chip.json'),
    [`-hotReset=${hotReset}`],
    (api) => createTask(api, 16),
  );
  try {
    for (let c = 0; c < 16; c++) await sb.control.expectOk({ op: 'processes', logicId: c, count: 1 });
    await sleepMs(5000); // start-up work (first list, pod cache, ConfigMap watch) out of the window
    const pid = sb.child.pid!;
    const c0 = cpuTicks(pid);
    const t0 = performance.now();
    let rss = 0;
    for (let s = 0; s < seconds; s++) {
      await sleepMs(1000);
      rss = Math.max(rss, rssMiB(pid));
    }
    const elapsed = (performance.now() - t0) / 1000;
    return {
      cpu: ((cpuTicks(pid) - c0) / 100 / elapsed) * 100, // USER_HZ = 100
      rss,
      chips: sb.sandbox.kubelet.devices(RESOURCE)?.length ?? 0,
    };
  } finally {
    await sb.close();
  }
}

export async function benchReset(
  log: (line: string) => void = () => undefined,
  options: ResetBenchOptions = {},
): Promise<ResetBenchResult> {
  const runs = Math.min(8, Math.max(1, options.runs ?? Number(process.env.BENCH_RESET_RUNS ?? 5)));
  const percent = options.percent ?? Number(process.env.BENCH_RESET_PERCENT ?? 5);
  const bootSeconds = options.bootSeconds ?? Number(process.env.BENCH_RESET_BOOT_SECONDS ?? 5);
  const stopAfterMs = options.stopAfterMs ?? Number(process.env.BENCH_RESET_STOP_MS ?? 1000);
  const idleSeconds = options.idleSeconds ?? Number(process.env.BENCH_IDLE_SECONDS ?? 60);
  const flows =
    options.flows ??
    ((process.env.BENCH_RESET_FLOWS ?? 'offline,online,idle').split(',') as ('offline' | 'online' | 'idle')[]);
  if (!Number.isInteger(percent) || percent < 1 || percent > 100) {
    throw new RangeError(`BENCH_RESET_PERCENT must be an integer 1..100, got ${percent}`);
  }
  const offline = flows.includes('offline') ? await benchOffline(log, runs, percent, bootSeconds) : undefined;
  const online = flows.includes('online') ? await benchOnline(log, runs, percent, bootSeconds, stopAfterMs) : undefined;
  let idle: ResetBenchResult['idle'];
  if (flows.includes('idle') && idleSeconds > 0) {
    log(`reset idle: -hotReset=-1, 16 chips, ${idleSeconds} s`);
    const off = await idleCpu(-1, idleSeconds);
    log(`reset idle: -hotReset=1, 16 chips, ${idleSeconds} s`);
    const on = await idleCpu(1, idleSeconds);
    idle = {
      chips: on.chips,
      seconds: idleSeconds,
      cpuPercentOn: on.cpu,
      cpuPercentOff: off.cpu,
      ratio: on.cpu / off.cpu,
      rssMiBOn: on.rss,
      rssMiBOff: off.rss,
    };
  }
  return {
    percent,
    bootSeconds,
    ...(offline && { offline }),
    ...(online && { online }),
    ...(idle && { idle }),
  };
}

/** One line for a summary. */
export function fmtSummary(s: Summary): string {
  return `p50 ${s.p50.toFixed(0)} ms, p99 ${s.p99.toFixed(0)} ms (min ${s.min.toFixed(0)}, max ${s.max.toFixed(0)}, n=${s.samples})`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(PROJECT_ROOT, 'bench', 'reset.ts')) {
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  const r = await benchReset(log);
  if (r.offline) {
    log(`offline (-hotReset=2, -resetTimePercent=${r.percent}, boot ${r.bootSeconds} s):`);
    log(`  fault -> Unhealthy ${fmtSummary(r.offline.unhealthyMs)}`);
    log(`  fault -> Healthy again ${fmtSummary(r.offline.healthyMs)}`);
    log(`  minus the scaled idle rule (${r.offline.scaledIdleRuleMs} ms): ${fmtSummary(r.offline.afterIdleRuleMs)}`);
    if (r.offline.earlyHealthyMs.length > 0) {
      log(`  kubelet saw the chip Healthy before its reset finished in ${r.offline.earlyHealthyMs.length} runs`);
    }
  }
  if (r.online) {
    log(
      `online L5 (-hotReset=1, -resetTimePercent=${r.percent}, boot ${r.bootSeconds} s, stop ${r.online.stopAfterMs} ms):`,
    );
    log(`  fault -> unrecovered ${fmtSummary(r.online.unrecoveredMs)}`);
    log(`  fault -> reset ${fmtSummary(r.online.resetMs)}`);
    log(`  fault -> all ranks recovered ${fmtSummary(r.online.recoveredMs)}`);
    log(`  fault -> training side restarted ${fmtSummary(r.online.restartedMs)}`);
    log(`  kubelet saw the faulty chip not Healthy for ≈ ${r.online.kubeletNotHealthyMs.join(' / ')} ms per run`);
  }
  if (r.idle) {
    log(
      `idle ${r.idle.chips} chips ${r.idle.seconds} s: CPU -hotReset=1 ${r.idle.cpuPercentOn.toFixed(2)} %, ` +
        `-hotReset=-1 ${r.idle.cpuPercentOff.toFixed(2)} % (ratio ${r.idle.ratio.toFixed(2)}x); ` +
        `RSS max ${r.idle.rssMiBOn.toFixed(0)} / ${r.idle.rssMiBOff.toFixed(0)} MiB`,
    );
  }
  log(JSON.stringify({ bench: 'reset', ...r }));
}
