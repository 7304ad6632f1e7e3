/**
 * Issue [P] ("lighter than the Go plugin"): the agent's idle cost, start-up and fault path, this build against a
 * baseline build in the same run, alternating (A B, B A, …) so that both see the same load.
 *
 * Per build and run, the built agent as a child process on the mock library (the sandbox of bench/sandbox.ts):
 * - 8 chips (`scenarios/910b-8chip.json`): exec → kubelet registration; after `settle` seconds, `idle` seconds of
 *   DCMI calls (the mock's counters, per minute), CPU (% of one core) and RSS; then `faults` fault injections →
 *   kubelet sees Unhealthy (p50, p99 of the run);
 * - 16 chips (`scenarios/910a3-16chip.json`): the same registration and idle figures (`BENCH_LIGHTER_SIXTEEN=0`
 *   skips them, for a run that is about the fault path: its figures are then NaN).
 * The fault latency runs from the control request to the kubelet stand-in's `change` event for the stream message
 * that shows the chip Unhealthy (`waitFor` reacts to the stream, it does not poll); the control request's own round
 * trip (until the mock's reply, which it sends after calling the subscriber) is reported beside it, as the part of the
 * harness in the figure (bench/README.md "fault path").
 * Each build runs with the `node` options of its own `#!` line (what the image runs: src/cli/agent.ts).
 *
 * Reported per figure: median and p99 over the runs (nearest rank; with few runs the p99 is the worst run) and the
 * ratio this / baseline of the medians.
 *
 * The baseline: `BENCH_BASELINE_JS` (an `agent.js` of another build), or else `BENCH_BASELINE_REF` (default `main`)
 * exported with `git archive` into a folder under the OS temp folder, linked to this checkout's `node_modules` and
 * native build, and compiled (kept between runs, keyed by commit).
 *
 * The API stand-in runs in a process of its own (test/helpers/api-process.ts), so that the device-info and Event
 * writes each fault causes are not served in the event loop of the kubelet stand-in that times the fault;
 * `BENCH_LIGHTER_API_PROCESS=0` keeps it in the bench's process, as before.
 *
 * Command: `npm run build && npx tsx bench/lighter.ts`. Environment: BENCH_LIGHTER_RUNS (default 3),
 * BENCH_LIGHTER_SETTLE (s, default 10), BENCH_LIGHTER_IDLE (s, default 30), BENCH_LIGHTER_FAULTS (default 40),
 * BENCH_LIGHTER_SIXTEEN (0: no 16-chip part), BENCH_LIGHTER_API_PROCESS (0: the API stand-in in this process).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { AGENT_JS, type AgentSandbox, RESOURCE, SEPARATE_CODE } from '../test/helpers/agent-process.js';
import { measureIdle, shebangNodeArgs } from '../test/helpers/idle-figures.js';
import { fmt, median, percentile } from './stats.js';

/** What one run of one build measured. */
export interface LighterRun {
  readonly registrationMs8: number;
  readonly registrationMs16: number;
  readonly dcmiCallsPerMin8: number;
  readonly cpuPercent8: number;
  readonly rssMiB8: number;
  readonly cpuPercent16: number;
  /** Mean and highest of 1 s samples over the idle window. */
  readonly rssMiB16: number;
  readonly rssMaxMiB16: number;
  readonly threads16: number;
  readonly faultP50Ms: number;
  readonly faultP99Ms: number;
  /** The control request alone: sent → the mock's reply (it replies after calling the subscriber). */
  readonly faultReplyP50Ms: number;
}

/** Median and p99 over runs of each figure. */
export type LighterSummary = Record<keyof LighterRun, { median: number; p99: number }>;

export interface LighterResult {
  readonly runs: number;
  readonly settleSeconds: number;
  readonly idleSeconds: number;
  readonly faults: number;
  readonly build: { agentJs: string; nodeArgs: readonly string[]; summary: LighterSummary };
  readonly baseline: { agentJs: string; ref: string; nodeArgs: readonly string[]; summary: LighterSummary };
  /** this / baseline, of the medians. */
  readonly ratio: Record<keyof LighterRun, number>;
  readonly loadAverage: readonly number[];
}

/** The baseline build's `agent.js`: given, or exported from `ref` and compiled once into the temp folder. */
export function baselineAgent(log: (line: string) => void): { agentJs: string; ref: string } {
  if (process.env.BENCH_BASELINE_JS) return { agentJs: process.env.BENCH_BASELINE_JS, ref: 'BENCH_BASELINE_JS' };
  const ref = process.env.BENCH_BASELINE_REF ?? 'main';
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
  const sha = git('rev-parse', '--verify', `refs/heads/${ref}^{commit}`);
  const dir = path.join(os.tmpdir(), `ascend-bench-baseline-${sha.slice(0, 12)}`);
  const agentJs = path.join(dir, 'dist', 'cli', 'agent.js');
  if (fs.existsSync(agentJs)) return { agentJs, ref: `${ref} ${sha.slice(0, 7)}` };
  log(`lighter: building the baseline ${ref} (${sha.slice(0, 7)}) in ${dir}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'build'), { recursive: true });
  const archive = execFileSync('git', ['archive', sha], { cwd: PROJECT_ROOT, maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  fs.symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  fs.cpSync(path.join(PROJECT_ROOT, 'build', 'Release'), path.join(dir, 'build', 'Release'), { recursive: true });
  execFileSync(
    process.execPath,
    [path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: dir,
      stdio: 'inherit',
    },
  );
  // a baseline from after the start-up bundle is built as `npm run build` builds it (tsc, then the bundle)
  if (fs.existsSync(path.join(dir, 'scripts', 'bundle-agent.ts'))) {
    execFileSync(
      process.execPath,
      [path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'scripts/bundle-agent.ts'],
      {
        cwd: dir,
        stdio: 'inherit',
      },
    );
  }
  return { agentJs, ref: `${ref} ${sha.slice(0, 7)}` };
}

/**
 * Fault → kubelet sees the chip Unhealthy, `count` times over the 8 chips (each round recovers them all); `reply`:
 * the control request's round trip of each.
 */
async function faultLatencies(sb: AgentSandbox, count: number): Promise<{ out: number[]; reply: number[] }> {
  const control = await sb.mockClient();
  const health = (id: string): string | undefined => sb.kubelet.devices(RESOURCE)?.find((d) => d.ID === id)?.health;
  const out: number[] = [];
  const reply: number[] = [];
  while (out.length < count) {
    const round = Math.min(8, count - out.length);
    for (let c = 0; c < round; c++) {
      const id = `Ascend910-${c}`;
      const t0 = performance.now();
      await control.expectOk({ op: 'fault', logicId: c, eventId: SEPARATE_CODE, assertion: 'occur' });
      reply.push(performance.now() - t0);
      await sb.kubelet.waitFor(() => health(id) === 'Unhealthy', `${id} Unhealthy`, 10_000);
      out.push(performance.now() - t0);
    }
    await Promise.all(
      Array.from({ length: round }, async (_, c) => {
        await control.expectOk({ op: 'fault', logicId: c, eventId: SEPARATE_CODE, assertion: 'recover' });
        await sb.kubelet.waitFor(() => health(`Ascend910-${c}`) === 'Healthy', 'Healthy', 10_000);
      }),
    );
  }
  return { out, reply };
}

/** The 16-chip figures of a run that skips them. */
const SKIPPED = {
  registrationMs: Number.NaN,
  cpuPercent: Number.NaN,
  rssMiB: Number.NaN,
  rssMaxMiB: Number.NaN,
  threads: Number.NaN,
} as const;

function summarise(runs: readonly LighterRun[]): LighterSummary {
  const keys = Object.keys(runs[0]!) as (keyof LighterRun)[];
  return Object.fromEntries(
    keys.map((k) => {
      const v = runs.map((r) => r[k]);
      return [k, { median: median(v), p99: percentile(v, 99) }];
    }),
  ) as LighterSummary;
}

export async function benchLighter(log: (line: string) => void = () => undefined): Promise<LighterResult> {
  const runs = Number(process.env.BENCH_LIGHTER_RUNS ?? 3);
  const settleSeconds = Number(process.env.BENCH_LIGHTER_SETTLE ?? 10);
  const idleSeconds = Number(process.env.BENCH_LIGHTER_IDLE ?? 30);
  const faults = Number(process.env.BENCH_LIGHTER_FAULTS ?? 40);
  const sixteenChips = process.env.BENCH_LIGHTER_SIXTEEN !== '0';
  const apiProcess = process.env.BENCH_LIGHTER_API_PROCESS !== '0';
  const base = baselineAgent(log);
  const builds = [
    { name: 'this', agentJs: AGENT_JS, nodeArgs: shebangNodeArgs(AGENT_JS), runs: [] as LighterRun[] },
    { name: 'baseline', agentJs: base.agentJs, nodeArgs: shebangNodeArgs(base.agentJs), runs: [] as LighterRun[] },
  ];
  for (let r = 0; r < runs; r++) {
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      const o = { agentJs: b.agentJs, nodeArgs: b.nodeArgs, settleSeconds, idleSeconds, apiProcess };
      const eight = await measureIdle('910b-8chip.json', o, (sb) => faultLatencies(sb, faults));
      const sixteen = sixteenChips
        ? await measureIdle('910a3-16chip.json', o, () => Promise.resolve(undefined))
        : SKIPPED;
      const run: LighterRun = {
        registrationMs8: eight.registrationMs,
        registrationMs16: sixteen.registrationMs,
        dcmiCallsPerMin8: eight.dcmiCallsPerMin,
        cpuPercent8: eight.cpuPercent,
        rssMiB8: eight.rssMiB,
        cpuPercent16: sixteen.cpuPercent,
        rssMiB16: sixteen.rssMiB,
        rssMaxMiB16: sixteen.rssMaxMiB,
        threads16: sixteen.threads,
        faultP50Ms: percentile(eight.during.out, 50),
        faultP99Ms: percentile(eight.during.out, 99),
        faultReplyP50Ms: percentile(eight.during.reply, 50),
      };
      b.runs.push(run);
      log(
        `lighter: run ${r + 1}/${runs} ${b.name}: registration ${fmt(run.registrationMs8, 0)} / ${fmt(run.registrationMs16, 0)} ms, ` +
          `DCMI ${fmt(run.dcmiCallsPerMin8, 1)}/min (8 chips), CPU ${fmt(run.cpuPercent16, 2)} %, RSS ${fmt(run.rssMiB16, 1)} MiB ` +
          `(16 chips), fault p50 ${fmt(run.faultP50Ms)} ms p99 ${fmt(run.faultP99Ms)} ms (control reply p50 ${fmt(run.faultReplyP50Ms)} ms), load ${os.loadavg()[0]!.toFixed(2)}`,
      );
    }
  }
  const mine = summarise(builds[0]!.runs);
  const theirs = summarise(builds[1]!.runs);
  const ratio = Object.fromEntries(
    (Object.keys(mine) as (keyof LighterRun)[]).map((k) => [k, mine[k].median / theirs[k].median]),
  ) as Record<keyof LighterRun, number>;
  return {
    runs,
    settleSeconds,
    idleSeconds,
    faults,
    build: { agentJs: AGENT_JS, nodeArgs: builds[0]!.nodeArgs, summary: mine },
    baseline: { agentJs: base.agentJs, ref: base.ref, nodeArgs: builds[1]!.nodeArgs, summary: theirs },
    ratio,
    loadAverage: os.loadavg(),
  };
}

/** One line per figure: this build's median (p99), the baseline's, the ratio. */
export function lighterTable(r: LighterResult): string[] {
  return (Object.keys(r.ratio) as (keyof LighterRun)[]).map((k) => {
    const a = r.build.summary[k];
    const b = r.baseline.summary[k];
    return `  ${k}: ${fmt(a.median, 2)} (p99 ${fmt(a.p99, 2)}) vs baseline ${fmt(b.median, 2)} (p99 ${fmt(b.p99, 2)}): ${fmt(r.ratio[k], 2)}x`;
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(PROJECT_ROOT, 'bench', 'lighter.ts')) {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const result = await benchLighter(log);
  for (const line of lighterTable(result)) log(line);
  process.stdout.write(`${JSON.stringify({ bench: 'lighter', ...result })}\n`);
}
