/**
 * End-to-end bench (issue [E] item 7): the built agent (`dist/cli/agent.js`, run `npm run build` first) as a child
 * process on the mock library, the kubelet simulator and the API stand-in in this process.
 *
 * - fault latency: control-socket injection → the kubelet simulator sees the chip Unhealthy (p50/p99), and the
 *   same for the recovery (which includes upstream's 1 s recovery hold, spec D.4), compared with upstream's design
 *   figures (next 1 s trigger tick when subscribed; up to `listWatchPeriod` = 5 s when polling) as ratios;
 * - fault → the device-info ConfigMap in the stand-in shows it (p99);
 * - idle cost with 16 chips (`scenarios/910a3-16chip.json`): CPU % of one core and RSS over `idleSeconds`;
 * - fault storm (16 chips): 5,000 events/s for `stormSeconds` (the mock's `burst` op, one connection and one mock
 *   thread per chip), then a known final set (every odd chip keeps the code, every even chip recovers it): no
 *   crash, the kubelet view and the ConfigMap match the mock's code lists exactly, RSS sampled every second during
 *   the storm, and the fault latency after the storm compared with the same measurement before it.
 *
 * Run directly: `npx tsc -p tsconfig.build.json && npx tsx bench/e2e.ts`. Environment: BENCH_FAULTS (default
 * 1000), BENCH_IDLE_SECONDS (default 60), BENCH_STORM_SECONDS (default 60; 0 skips the storm), BENCH_STORM_RATE
 * (default 5000 events/s), BENCH_STORM_FLAP (1: every chip gets an occurrence burst and a recovery burst at half the
 * rate each, so its health keeps changing and every cycle publishes a snapshot — the downstream worst case),
 * BENCH_AGENT_JS (another build of the agent, e.g. a checkout of an older commit, for before/after figures),
 * BENCH_AGENT_NODE_ARGS (extra `node` options for the agent, e.g. `--cpu-prof`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { DEVICE_INFO_NAMESPACE, KEY_DEVICE_INFO, deviceInfoConfigMapName } from '../src/kube/device-info.js';
import { MockControlClient } from '../src/sim/mock-control.js';
import { NODE_NAME, RESOURCE } from '../test/helpers/agent-process.js';
import { startBenchAgent, type BenchAgent } from './sandbox.js';
import { percentile } from './stats.js';

const CODE = '80E3A201'; // SeparateNPU, no frequency rule

export interface E2eOptions {
  /** Fault injections measured (default 1000). */
  readonly faults?: number;
  /** Idle measurement length (default 60 s; 0 skips it). */
  readonly idleSeconds?: number;
  /** Storm length (default `BENCH_STORM_SECONDS` or 60 s; 0 skips it). */
  readonly stormSeconds?: number;
  /** Storm rate over all chips (default `BENCH_STORM_RATE` or 5000 events/s). */
  readonly stormRatePerSec?: number;
  /** Occurrence and recovery bursts on every chip (default `BENCH_STORM_FLAP` = 1). */
  readonly stormFlap?: boolean;
}

export interface StormResult {
  readonly chips: number;
  /** Occurrences and recoveries (true) or occurrences only. */
  readonly flap: boolean;
  readonly seconds: number;
  /** Events the mock delivered to the agent (the burst replies' `fired`) and the rate achieved. */
  readonly fired: number;
  readonly ratePerSec: number;
  /** The agent process was alive and registered throughout. */
  readonly crashed: boolean;
  /** Kubelet view and ConfigMap equal the mock's final code lists; time after the storm until they did. */
  readonly finalStateExact: boolean;
  readonly settleMs: number;
  readonly mismatches: readonly string[];
  /** RSS before the storm, max during it (1 s samples) and after settling. */
  readonly rssMiB: { before: number; max: number; after: number };
  /** CPU % of one core during the storm. */
  readonly cpuPercent: number;
  /**
   * From the agent's `/metrics` over the storm and the settling: state snapshots published (one per engine cycle
   * that changed something) and ListAndWatch sends.
   */
  readonly snapshots: number;
  readonly listAndWatchSends: number;
  /** Fault → kubelet Unhealthy before and after the storm (the even chips, 10 rounds, same code). */
  readonly latencyBeforeMs: { p50: number; p99: number; max: number };
  readonly latencyAfterMs: { p50: number; p99: number; max: number };
}

export interface E2eResult {
  readonly faults: number;
  readonly faultMs: { p50: number; p99: number; max: number };
  readonly recoveryMs: { p50: number; p99: number; max: number };
  readonly configMapMs: { p50: number; p99: number; samples: number };
  /** Upstream design p99 (subscribed: next 1 s tick; polling: 5 s period) divided by ours. */
  readonly ratioVsUpstreamTick: number;
  readonly ratioVsUpstreamPoll: number;
  readonly idle?: {
    chips: number;
    seconds: number;
    cpuPercent: number;
    /** Max of 1 s samples over the window, and the last sample. */
    rssMiB: number;
    rssEndMiB: number;
    /** DCMI calls per second while idle (the mock's counters). */
    dcmiCallsPerSec: number;
  };
  readonly storm?: StormResult;
}

interface Sandbox extends BenchAgent {
  /** `http://127.0.0.1:<port>/metrics` of the agent. */
  readonly metricsUrl: string;
  readonly resource: string;
}

/** Extra `node` options for the agent child (`BENCH_AGENT_NODE_ARGS`, space-separated, e.g. `--cpu-prof`). */
function nodeArgs(): string[] {
  return (process.env.BENCH_AGENT_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
}

/** A free TCP port on 127.0.0.1 (for the agent's `-metricsAddress`, so the bench can read its counters). */
/** Sum of every sample of `name` (all label sets) in the agent's `/metrics`. */
async function metricSum(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function startSandbox(scenario: string): Promise<Sandbox> {
  const b = await startBenchAgent({
    prefix: 'npu-e2e-',
    scenario,
    nodeArgs: nodeArgs(),
    ...(process.env.BENCH_AGENT_JS ? { agentJs: process.env.BENCH_AGENT_JS } : {}),
    flags: ['-logLevel=2'],
  });
  return { ...b, metricsUrl: `http://127.0.0.1:${b.metricsPort}/metrics`, resource: RESOURCE };
}

function summary(v: number[]): { p50: number; p99: number; max: number } {
  if (v.length === 0) return { p50: NaN, p99: NaN, max: NaN };
  return { p50: percentile(v, 50), p99: percentile(v, 99), max: Math.max(...v) };
}

async function dcmiCalls(control: MockControlClient): Promise<number> {
  const c = (await control.state()).counters.callsByName;
  return Object.values(c).reduce((a, b) => a + b, 0);
}

function cpuTicks(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(rest[11]) + Number(rest[12]); // utime + stime (fields 14, 15)
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export async function benchE2e(
  log: (line: string) => void = () => undefined,
  options: E2eOptions = {},
): Promise<E2eResult> {
  const total = options.faults ?? 1000;
  const idleSeconds = options.idleSeconds ?? 60;
  const faultMs: number[] = [];
  const recoveryMs: number[] = [];
  const configMapMs: number[] = [];
  if (total > 0) await benchFaults(log, total, faultMs, recoveryMs, configMapMs);
  const idle = idleSeconds > 0 ? await benchIdle(idleSeconds) : undefined;
  const stormSeconds = options.stormSeconds ?? Number(process.env.BENCH_STORM_SECONDS ?? 60);
  const stormRate = options.stormRatePerSec ?? Number(process.env.BENCH_STORM_RATE ?? 5000);
  const flap = options.stormFlap ?? process.env.BENCH_STORM_FLAP === '1';
  const storm = stormSeconds > 0 ? await benchStorm(log, stormSeconds, stormRate, flap) : undefined;
  const f = summary(faultMs);
  return {
    faults: faultMs.length,
    faultMs: f,
    recoveryMs: summary(recoveryMs),
    configMapMs: { p50: percentile(configMapMs, 50), p99: percentile(configMapMs, 99), samples: configMapMs.length },
    ratioVsUpstreamTick: 1000 / f.p99,
    ratioVsUpstreamPoll: 5000 / f.p99,
    ...(idle ? { idle } : {}),
    ...(storm ? { storm } : {}),
  };
}

async function benchFaults(
  log: (line: string) => void,
  total: number,
  faultMs: number[],
  recoveryMs: number[],
  configMapMs: number[],
): Promise<void> {
  const sb = await startSandbox(path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'));
  const cmType = sb.sandbox.api.resourceType('', 'configmaps');
  const cmName = deviceInfoConfigMapName(NODE_NAME);
  const cmShows = (id: string): boolean => {
    const cfg = (
      sb.sandbox.api.store.get(cmType, DEVICE_INFO_NAMESPACE, cmName) as { data?: Record<string, string> } | undefined
    )?.data?.[KEY_DEVICE_INFO];
    if (!cfg) return false;
    const list = (JSON.parse(cfg) as { DeviceInfo: { DeviceList: Record<string, string> } }).DeviceInfo.DeviceList;
    return (list[`${sb.resource}-Unhealthy`] ?? '').split(',').includes(id);
  };
  const health = (id: string): string | undefined =>
    sb.sandbox.kubelet.devices(sb.resource)?.find((d) => d.ID === id)?.health;
  try {
    const chips = 8;
    for (let done = 0; done < total;) {
      const round = Math.min(chips, total - done);
      for (let c = 0; c < round; c++) {
        const id = `Ascend910-${c}`;
        const t0 = performance.now();
        await sb.control.expectOk({ op: 'fault', logicId: c, eventId: CODE, assertion: 'occur' });
        await sb.sandbox.kubelet.waitFor(() => health(id) === 'Unhealthy', `${id} Unhealthy`, 10_000);
        faultMs.push(performance.now() - t0);
        if (c === 0) {
          while (!cmShows(id)) await new Promise((r) => setTimeout(r, 2));
          configMapMs.push(performance.now() - t0);
        }
      }
      await Promise.all(
        Array.from({ length: round }, async (_, c) => {
          const id = `Ascend910-${c}`;
          const t0 = performance.now();
          await sb.control.expectOk({ op: 'fault', logicId: c, eventId: CODE, assertion: 'recover' });
          await sb.sandbox.kubelet.waitFor(() => health(id) === 'Healthy', `${id} Healthy`, 10_000);
          recoveryMs.push(performance.now() - t0);
        }),
      );
      done += round;
      if (done % 200 === 0) log(`e2e: ${done}/${total} faults`);
      // the ConfigMap write policy spaces writes ≥ 1 s apart (H.4): let the next round start from a quiet queue
      while (cmShows('Ascend910-0')) await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    await sb.close();
  }
}

const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function benchIdle(idleSeconds: number): Promise<NonNullable<E2eResult['idle']>> {
  const idleSb = await startSandbox(path.join(PROJECT_ROOT, 'scenarios', '910a3-16chip.json'));
  try {
    await sleepMs(3000);
    const pid = idleSb.child.pid!;
    const hz = 100; // USER_HZ
    const calls0 = await dcmiCalls(idleSb.control);
    const c0 = cpuTicks(pid);
    const t0 = performance.now();
    let rss = 0;
    let last = NaN;
    for (let s = 0; s < idleSeconds; s++) {
      await sleepMs(1000);
      last = rssMiB(pid);
      rss = Math.max(rss, last);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpuPercent = ((cpuTicks(pid) - c0) / hz / seconds) * 100;
    const calls = (await dcmiCalls(idleSb.control)) - calls0 - 1; // minus the first `state` (not a DCMI call)
    return {
      chips: idleSb.sandbox.kubelet.devices(idleSb.resource)?.length ?? 0,
      seconds,
      cpuPercent,
      rssMiB: rss,
      rssEndMiB: last,
      dcmiCallsPerSec: Math.max(0, calls) / seconds,
    };
  } finally {
    await idleSb.close();
  }
}

/**
 * Fault → kubelet Unhealthy on each of `logicIds` in turn, `rounds` times; after each round every chip recovers
 * (in parallel: a recovery is held 1 s, spec D.4).
 */
async function faultLatency(sb: Sandbox, logicIds: readonly number[], rounds: number): Promise<number[]> {
  const health = (id: string): string | undefined =>
    sb.sandbox.kubelet.devices(sb.resource)?.find((d) => d.ID === id)?.health;
  const out: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const logicId of logicIds) {
      const id = `Ascend910-${logicId}`;
      const t0 = performance.now();
      await sb.control.expectOk({ op: 'fault', logicId, eventId: CODE, assertion: 'occur' });
      await sb.sandbox.kubelet.waitFor(() => health(id) === 'Unhealthy', `${id} Unhealthy`, 10_000);
      out.push(performance.now() - t0);
    }
    await Promise.all(
      logicIds.map(async (logicId) => {
        const id = `Ascend910-${logicId}`;
        await sb.control.expectOk({ op: 'fault', logicId, eventId: CODE, assertion: 'recover' });
        await sb.sandbox.kubelet.waitFor(() => health(id) === 'Healthy', `${id} Healthy`, 10_000);
      }),
    );
  }
  return out;
}

/** Differences between the mock's code lists and the agent's kubelet view and ConfigMap; empty when exact. */
async function compareFinal(sb: Sandbox): Promise<string[]> {
  const state = await sb.control.state();
  const cmType = sb.sandbox.api.resourceType('', 'configmaps');
  const cm = (
    sb.sandbox.api.store.get(cmType, DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName(NODE_NAME)) as
      { data?: Record<string, string> } | undefined
  )?.data?.[KEY_DEVICE_INFO];
  const list = cm
    ? (JSON.parse(cm) as { DeviceInfo: { DeviceList: Record<string, string> } }).DeviceInfo.DeviceList
    : undefined;
  const cmUnhealthy = new Set((list?.[`${sb.resource}-Unhealthy`] ?? '').split(',').filter((x) => x !== ''));
  const devices = sb.sandbox.kubelet.devices(sb.resource) ?? [];
  const out: string[] = [];
  if (!list) out.push('no device-info ConfigMap');
  for (const chip of state.chips) {
    const id = `Ascend910-${chip.phyId}`;
    const want = chip.errorCodes.length > 0 ? 'Unhealthy' : 'Healthy';
    const kubelet = devices.find((d) => d.ID === id)?.health;
    if (kubelet !== want) out.push(`${id}: kubelet ${kubelet ?? 'absent'}, mock codes [${chip.errorCodes.join(',')}]`);
    if (cmUnhealthy.has(id) !== (want === 'Unhealthy')) {
      out.push(`${id}: ConfigMap ${cmUnhealthy.has(id) ? 'Unhealthy' : 'not Unhealthy'}, mock ${want}`);
    }
  }
  return out;
}

async function benchStorm(
  log: (line: string) => void,
  seconds: number,
  rate: number,
  flap: boolean,
): Promise<StormResult> {
  log('e2e storm: starting the agent (16 chips)');
  const sb = await startSandbox(path.join(PROJECT_ROOT, 'scenarios', '910a3-16chip.json'));
  const extra: MockControlClient[] = [];
  try {
    const pid = sb.child.pid!;
    const chips = (await sb.control.state()).chips.map((c) => c.logicId);
    const latencyChips = chips.filter((c) => c % 2 === 0); // even chips end healthy
    await sleepMs(2000);
    log('e2e storm: fault latency before the storm');
    const before = await faultLatency(sb, latencyChips, 10);
    const rssBefore = rssMiB(pid);
    // One connection per burst: a connection's later requests wait for its burst.
    const bursts = chips.flatMap((logicId) =>
      (flap ? (['occur', 'recover'] as const) : (['occur'] as const)).map((assertion) => ({ logicId, assertion })),
    );
    const perBurst = rate / bursts.length;
    const count = Math.max(1, Math.round(perBurst * seconds));
    const controlPath = path.join(sb.sandbox.dir, 'mock.sock');
    while (extra.length < bursts.length) extra.push(await MockControlClient.connect(controlPath));
    log(
      `e2e storm: ${chips.length} chips x ${bursts.length / chips.length} bursts x ${count} events at ` +
        `${perBurst.toFixed(1)}/s each (${seconds} s${flap ? ', occurrences and recoveries' : ''})`,
    );
    let rssMax = rssBefore;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await sleepMs(1000);
        if (sb.child.exitCode === null) rssMax = Math.max(rssMax, rssMiB(pid));
      }
    })();
    const snapshots0 = await metricSum(sb.metricsUrl, 'ascend_npu_agent_state_snapshots_total');
    const sends0 = await metricSum(sb.metricsUrl, 'ascend_npu_agent_list_and_watch_sends_total');
    const c0 = cpuTicks(pid);
    const t0 = performance.now();
    const started: Promise<Record<string, unknown>>[] = [];
    for (const assertion of ['occur', 'recover'] as const) {
      // Recovery bursts start last, so the mock's code lists are empty during the storm and a recovery is not
      // ignored as "DCMI still reports the code" (D.6): every chip really flaps.
      if (assertion === 'recover' && flap) await sleepMs(20);
      bursts.forEach((b, i) => {
        if (b.assertion !== assertion) return;
        const req = { op: 'burst', logicId: b.logicId, eventId: CODE, assertion, count, ratePerSec: perBurst };
        started.push(extra[i]!.expectOk(req));
      });
    }
    const replies = await Promise.all(started);
    const stormSeconds = (performance.now() - t0) / 1000;
    const cpuPercent = ((cpuTicks(pid) - c0) / 100 / stormSeconds) * 100;
    sampling = false;
    await sampler;
    const fired = replies.reduce((a, r) => a + Number(r.fired), 0);
    let crashed = sb.child.exitCode !== null;
    // The known final set: even chips recover the code (one event each), odd chips keep it (after a flapping storm
    // the mock's list holds whatever the last burst to start left: odd chips get one more occurrence).
    if (!crashed) {
      for (const logicId of chips) {
        if (logicId % 2 === 0 || flap) {
          const assertion = logicId % 2 === 0 ? 'recover' : 'occur';
          await sb.control.expectOk({ op: 'fault', logicId, eventId: CODE, assertion });
        }
      }
    }
    log(`e2e storm: ${fired} events delivered; waiting for the final state`);
    const tSettle = performance.now();
    let mismatches: string[] = ['not compared'];
    const settleDeadline = tSettle + 60_000;
    while (!crashed && performance.now() < settleDeadline) {
      mismatches = await compareFinal(sb);
      if (mismatches.length === 0) break;
      await sleepMs(100);
      crashed = sb.child.exitCode !== null;
    }
    const settleMs = performance.now() - tSettle;
    const snapshots = crashed
      ? NaN
      : (await metricSum(sb.metricsUrl, 'ascend_npu_agent_state_snapshots_total')) - snapshots0;
    const listAndWatchSends = crashed
      ? NaN
      : (await metricSum(sb.metricsUrl, 'ascend_npu_agent_list_and_watch_sends_total')) - sends0;
    const after = crashed ? [] : await faultLatency(sb, latencyChips, 10);
    crashed ||= sb.child.exitCode !== null;
    return {
      chips: chips.length,
      flap,
      seconds: stormSeconds,
      fired,
      ratePerSec: fired / stormSeconds,
      crashed,
      finalStateExact: !crashed && mismatches.length === 0,
      settleMs,
      mismatches: mismatches.slice(0, 20),
      rssMiB: { before: rssBefore, max: rssMax, after: crashed ? NaN : rssMiB(pid) },
      cpuPercent,
      snapshots,
      listAndWatchSends,
      latencyBeforeMs: summary(before),
      latencyAfterMs: summary(after),
    };
  } finally {
    for (const c of extra) c.close();
    await sb.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(PROJECT_ROOT, 'bench', 'e2e.ts')) {
  const result = await benchE2e((line) => process.stderr.write(`${line}\n`), {
    faults: Number(process.env.BENCH_FAULTS ?? 1000),
    idleSeconds: Number(process.env.BENCH_IDLE_SECONDS ?? 60),
  });
  process.stdout.write(`${JSON.stringify({ bench: 'e2e', ...result })}\n`);
}
