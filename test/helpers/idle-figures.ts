/**
 * The agent's idle figures (issue [P]): the built agent on the mock library in an {@link AgentSandbox}, with the
 * `node` options of its own `#!` line (what the image runs), measured from outside — exec → kubelet registration,
 * DCMI calls per minute (the mock's counters), CPU (% of one core) and RSS from /proc. Used by bench/lighter.ts and
 * by the CI budget test (test/integration/idle-budget.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { AgentSandbox } from './agent-process.js';

/** The `node` options of an agent script's `#!/usr/bin/env -S node …` line (none for `#!/usr/bin/env node`). */
export function shebangNodeArgs(agentJs: string): string[] {
  const first = fs.readFileSync(agentJs, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\S*env(?: -S)? node((?: \S+)*)\s*$/.exec(first);
  return m?.[1] ? m[1].trim().split(' ') : [];
}

const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * CPU time of a process's threads in ns (the first field of each `/proc/<pid>/task/<tid>/schedstat`). The 10 ms
 * clock ticks of `/proc/<pid>/stat` were too coarse for an idle agent: 0.1 % of a core over 30 s is 3 ticks.
 */
function cpuNs(pid: number): number {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns;
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Idle figures of one agent over `idleSeconds`, after `settleSeconds`. */
export interface IdleFigures {
  readonly registrationMs: number;
  readonly dcmiCallsPerMin: number;
  readonly cpuPercent: number;
  readonly rssMiB: number;
  readonly rssMaxMiB: number;
  readonly threads: number;
}

/**
 * Starts `agentJs` (with `nodeArgs`) on `scenario`, measures its idle figures, then runs `during` on the running
 * agent before stopping it. Shared with the CI budget test (test/integration/idle-budget.test.ts).
 */
export async function measureIdle<T>(
  scenario: string,
  o: {
    agentJs: string;
    nodeArgs: readonly string[];
    settleSeconds: number;
    idleSeconds: number;
    /** the API stand-in in its own process (SandboxOptions.apiProcess) */
    apiProcess?: boolean;
  },
  during: (sb: AgentSandbox) => Promise<T>,
): Promise<IdleFigures & { during: T }> {
  const sb = await AgentSandbox.create(path.join(PROJECT_ROOT, 'scenarios', scenario), {
    prefix: 'npu-lighter-',
    podResources: false,
    ...(o.apiProcess === true ? { apiProcess: true } : {}),
  });
  try {
    const t0 = performance.now();
    const agent = await sb.start(
      ['-listWatchPeriod=5', '-logLevel=2'],
      {},
      {
        agentJs: o.agentJs,
        nodeArgs: o.nodeArgs,
        stdio: ['ignore', 'ignore', 'inherit'],
        registrationTimeoutMs: 30_000,
      },
    );
    const registrationMs = performance.now() - t0;
    const pid = agent.child.pid!;
    try {
      const control = await sb.mockClient();
      const calls = async (): Promise<number> =>
        Object.values((await control.state()).counters.callsByName).reduce((a, b) => a + b, 0);
      await sleepMs(o.settleSeconds * 1000);
      const calls0 = await calls();
      const c0 = cpuNs(pid);
      const w0 = performance.now();
      const rss: number[] = [];
      for (let s = 0; s < o.idleSeconds; s++) {
        await sleepMs(1000);
        rss.push(rssMiB(pid));
      }
      const seconds = (performance.now() - w0) / 1000;
      const cpuPercent = ((cpuNs(pid) - c0) / 1e9 / seconds) * 100;
      const callsPerMin = ((await calls()) - calls0) / (seconds / 60);
      const threads = fs.readdirSync(`/proc/${pid}/task`).length;
      const result = await during(sb);
      return {
        registrationMs,
        dcmiCallsPerMin: callsPerMin,
        cpuPercent,
        rssMiB: rss.reduce((a, b) => a + b, 0) / rss.length,
        rssMaxMiB: Math.max(...rss),
        threads,
        during: result,
      };
    } finally {
      agent.child.kill('SIGTERM');
      const kill = setTimeout(() => agent.child.kill('SIGKILL'), 15_000); // a wedged agent cannot wedge the caller
      await agent.exited;
      clearTimeout(kill);
    }
  } finally {
    await sb.close();
  }
}
