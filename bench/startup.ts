/**
 * Start-up only (issue [P] item 3): exec → kubelet registration of the built agent and of a baseline build, started
 * alternately (A B, B A, …) in the benches' sandbox on the mock library, each with the `node` options of its own
 * `#!` line (what the image runs). The registration part of bench/lighter.ts without its idle and fault phases, so
 * that more starts fit in the same minutes. Figures: median and p99 per build and chip count, ratio of the medians.
 *
 * Command: `npm run build && npx tsx bench/startup.ts`. Environment: BENCH_STARTUP_RUNS (starts per build and chip
 * count, default 8); the baseline as in bench/lighter.ts (BENCH_BASELINE_REF, default `main`, or BENCH_BASELINE_JS).
 */
import os from 'node:os';
import { AGENT_JS } from '../test/helpers/agent-process.js';
import { measureIdle, shebangNodeArgs } from '../test/helpers/idle-figures.js';
import { baselineAgent } from './lighter.js';
import { fmt, median, percentile } from './stats.js';

const SCENARIOS = { 8: '910b-8chip.json', 16: '910a3-16chip.json' } as const;

async function main(): Promise<void> {
  const runs = Number(process.env.BENCH_STARTUP_RUNS ?? 8);
  const base = baselineAgent((line) => console.log(line));
  const builds = [
    {
      name: 'this',
      agentJs: AGENT_JS,
      nodeArgs: shebangNodeArgs(AGENT_JS),
      ms: { 8: [] as number[], 16: [] as number[] },
    },
    {
      name: base.ref,
      agentJs: base.agentJs,
      nodeArgs: shebangNodeArgs(base.agentJs),
      ms: { 8: [] as number[], 16: [] as number[] },
    },
  ];
  const loads: number[] = [];
  for (let r = 0; r < runs; r++) {
    for (const chips of [8, 16] as const) {
      for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
        const o = { agentJs: b.agentJs, nodeArgs: b.nodeArgs, settleSeconds: 0, idleSeconds: 0 };
        const f = await measureIdle(SCENARIOS[chips], o, () => Promise.resolve(undefined));
        b.ms[chips].push(f.registrationMs);
        loads.push(os.loadavg()[0]!);
        console.log(
          `startup: run ${r + 1}/${runs} ${chips} chips ${b.name}: ${fmt(f.registrationMs, 0)} ms, load ${os.loadavg()[0]!.toFixed(2)}`,
        );
      }
    }
  }
  for (const chips of [8, 16] as const) {
    const [a, b] = builds.map((x) => x.ms[chips]);
    console.log(
      `exec → registration, ${chips} chips: this ${fmt(median(a!), 0)} (p99 ${fmt(percentile(a!, 99), 0)}) ms, ` +
        `${builds[1]!.name} ${fmt(median(b!), 0)} (p99 ${fmt(percentile(b!, 99), 0)}) ms, ratio ${(median(a!) / median(b!)).toFixed(2)}`,
    );
  }
  console.log(`load average over the run ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`);
}

await main();
