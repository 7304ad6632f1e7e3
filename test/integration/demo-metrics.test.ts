/**
 * Issue [J] item 6, the demo (`npm start` = the built `ascend-npu-agent simulate`, a child process): `--help` prints
 * its options and exits 0 (it exited 2, "unknown simulate argument --help"); the agent's metrics URL is printed at
 * the start and answers while the demo runs; `--hold` keeps it answering after the summary until SIGINT.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';

const AGENT_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js');

/** A running `simulate` with its output so far. */
class Demo {
  out = '';
  err = '';
  readonly exited: Promise<number | null>;
  readonly child: ChildProcess;
  constructor(args: string[]) {
    this.child = spawn(process.execPath, [AGENT_JS, 'simulate', ...args], { env: { PATH: process.env.PATH } });
    this.child.stdout!.on('data', (b: Buffer) => (this.out += b.toString()));
    this.child.stderr!.on('data', (b: Buffer) => (this.err += b.toString()));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** Polls the output until `re` matches it; rejects after `timeoutMs` or if the process ends first. */
  async until(re: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this.out);
      if (m) return m;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`no ${String(re)} in the output (exit ${this.child.exitCode}): ${this.out}\n${this.err}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

const URL_LINE = /^metrics (http:\/\/127\.0\.0\.1:\d+\/metrics) \(also \/healthz, \/readyz, \/status\)/m;

async function scrape(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}

describe('issue [J] 6 the demo', () => {
  test('simulate --help prints every option and exits 0', async () => {
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [AGENT_JS, 'simulate', '--help'], { timeout: 20_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/^Usage: ascend-npu-agent simulate \[options\]/);
    for (const option of [
      '--scenario',
      '--timeline',
      '--speed',
      '--dcmiLibrary',
      '--metricsAddress',
      '--hold',
      '--keep',
    ]) {
      expect(r.stdout).toContain(`\n  ${option} `);
    }
  });

  test('the metrics URL is printed before the first step and answers with the agent series while the demo runs', async () => {
    const demo = new Demo(['--speed', '2']);
    try {
      const [, url] = await demo.until(URL_LINE);
      expect(demo.out).not.toMatch(/^summary$/m); // printed at the start, not at the end
      const r = await scrape(url!);
      expect(r.status).toBe(200);
      expect(r.body).toMatch(/^# TYPE ascend_npu_agent_chips gauge$/m);
      expect(await demo.exited).toBe(0);
    } finally {
      demo.kill();
    }
  }, 90_000);

  test('--hold: after the summary the metrics keep answering until SIGINT, then exit 0', async () => {
    const demo = new Demo(['--speed', '50', '--hold']);
    try {
      const [, url] = await demo.until(URL_LINE);
      await demo.until(/^holding: the agent and http:\/\/\S+ keep running until Ctrl-C/m, 60_000);
      expect(demo.out).toMatch(/^summary$/m);
      expect((await scrape(url!)).status).toBe(200);
      demo.child.kill('SIGINT');
      expect(await demo.exited).toBe(0);
      expect(demo.out).toMatch(/^SIGINT: stopping$/m);
    } finally {
      demo.kill();
    }
  }, 90_000);

  test('a reader that goes away (npm start | head) ends the output, not the demo: exit 0, no stack', async () => {
    const demo = new Demo(['--speed', '50']);
    try {
      await demo.until(URL_LINE);
      demo.child.stdout!.destroy();
      expect(await demo.exited).toBe(0);
      expect(demo.err).toBe('');
    } finally {
      demo.kill();
    }
  }, 90_000);

  test('a bad --metricsAddress exits 2 naming it', async () => {
    const demo = new Demo(['--metricsAddress', 'localhost']);
    expect(await demo.exited).toBe(2);
    expect(demo.err).toBe('ascend-npu-agent simulate: --metricsAddress must be [host]:port, got "localhost"\n');
  });
});
