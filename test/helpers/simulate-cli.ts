/**
 * The built `ascend-npu-agent simulate` as a child process, and readers of its output (the demo tests:
 * demo-modes, demo-switch, demo-a5).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';

export interface SimulateRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `dist/cli/agent.js simulate <args>` with only PATH in its environment. */
export function simulate(args: string[], timeout = 60_000): Promise<SimulateRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js'), 'simulate', ...args],
      { timeout, env: { PATH: process.env.PATH }, maxBuffer: 4 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The lines printed by the step whose title starts with `t=<t> s <op>`. */
export function stepAt(out: string, t: string, op: string): string {
  const i = out.indexOf(`\nt=${t} s ${op}`);
  if (i < 0) return `(no ${op} step at t=${t})`;
  return out.slice(i + 1).split(/\n(?=t=|\nsummary)/)[0]!;
}

/** The `devices` line of `resource` printed by the step whose title starts with `t=<t> s devices`. */
export function devicesAt(out: string, t: string, resource: string): string {
  const block = out.split(`\nt=${t} s devices\n`)[1]?.split('\nt=')[0] ?? '';
  return block.split('\n').find((l) => l.trimStart().startsWith(`${resource}:`)) ?? `(no ${resource} line at t=${t})`;
}
