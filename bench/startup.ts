/**
 * Start-up only (issue [P] item 3): exec → kubelet registration of the built agent and of a baseline build, started
 * alternately (A B, B A, …) in the benches' sandbox on the mock library, each with the `node` options of its own
 * `#!` line (what the image runs). The registration part of bench/lighter.ts without its idle and fault phases, so
 * that more starts fit in the same minutes. Figures per build and chip count, median and p99 with the ratio of the
 * medians: the wall time, and the agent's CPU time by registration (all threads' schedstat; less sensitive to a
 * loaded machine than the wall time).
 *
 * Command: `npm run build && npx tsx bench/startup.ts`. Environment: BENCH_STARTUP_RUNS (starts per build and chip
 * count, default 8), BENCH_STARTUP_JS (this build's agent.js, default dist/cli/agent.js); the baseline as in bench/lighter.ts (BENCH_BASELINE_REF, default `main`, or BENCH_BASELINE_JS).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { AGENT_JS, AgentSandbox } from '../test/helpers/agent-process.js';
import { shebangNodeArgs } from '../test/helpers/idle-figures.js';
import { baselineAgent } from './lighter.js';
import { fmt, median, percentile } from './stats.js';

/** This build's agent, or a copy of one (a build kept elsewhere while dist/ is rebuilt). */
const THIS_JS = process.env.BENCH_STARTUP_JS ?? AGENT_JS;

/** CPU time of every thread of `pid` so far, in ms (`/proc/<pid>/task/<tid>/schedstat`, first field: ns on a CPU). */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return ns / 1e6;
}

/** One start: exec → registration (wall ms) and the agent's CPU ms by then (less sensitive to the machine's load). */
async function start(
  scenario: string,
  agentJs: string,
  nodeArgs: readonly string[],
): Promise<{ wall: number; cpu: number }> {
  const sb = await AgentSandbox.create(path.join(PROJECT_ROOT, 'scenarios', scenario), {
    prefix: 'npu-startup-',
    podResources: false,
  });
  try {
    const t0 = performance.now();
    const agent = await sb.start(
      ['-listWatchPeriod=5', '-logLevel=2'],
      {},
      {
        agentJs,
        nodeArgs,
        stdio: ['ignore', 'ignore', 'inherit'],
        registrationTimeoutMs: 30_000,
      },
    );
    const wall = performance.now() - t0;
    const cpu = cpuMs(agent.child.pid!);
    agent.child.kill('SIGTERM');
    await agent.exited;
    return { wall, cpu };
  } finally {
    await sb.close();
  }
}

const SCENARIOS = { 8: '910b-8chip.json', 16: '910a3-16chip.json' } as const;

async function main(): Promise<void> {
  const runs = Number(process.env.BENCH_STARTUP_RUNS ?? 8);
  const base = baselineAgent((line) => console.log(line));
  const builds = [
    { name: 'this', agentJs: THIS_JS },
    { name: base.ref, agentJs: base.agentJs },
  ].map((b) => ({
    ...b,
    nodeArgs: shebangNodeArgs(b.agentJs),
    wall: new Map<number, number[]>(),
    cpu: new Map<number, number[]>(),
  }));
  const loads: number[] = [];
  for (let r = 0; r < runs; r++) {
    for (const chips of [8, 16] as const) {
      for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
        const f = await start(SCENARIOS[chips], b.agentJs, b.nodeArgs);
        for (const [m, v] of [
          [b.wall, f.wall],
          [b.cpu, f.cpu],
        ] as const)
          m.set(chips, [...(m.get(chips) ?? []), v]);
        loads.push(os.loadavg()[0]!);
        console.log(
          `startup: run ${r + 1}/${runs} ${chips} chips ${b.name}: ${fmt(f.wall, 0)} ms (CPU ${fmt(f.cpu, 0)} ms), load ${os.loadavg()[0]!.toFixed(2)}`,
        );
      }
    }
  }
  for (const chips of [8, 16] as const) {
    for (const what of ['wall', 'cpu'] as const) {
      const [a, b] = builds.map((x) => x[what].get(chips) ?? []);
      console.log(
        `${what === 'wall' ? 'exec → registration' : 'CPU by registration'}, ${chips} chips: ` +
          `this ${fmt(median(a!), 0)} (p99 ${fmt(percentile(a!, 99), 0)}) ms, ` +
          `${builds[1]!.name} ${fmt(median(b!), 0)} (p99 ${fmt(percentile(b!, 99), 0)}) ms, ratio ${(median(a!) / median(b!)).toFixed(2)}`,
      );
    }
  }
  console.log(`load average over the run ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`);
}

await main();
