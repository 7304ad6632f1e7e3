/**
 * `npm start` (architecture §3, issue [E] item 5): the built `ascend-npu-agent simulate` runs the real agent on the
 * mock library with the embedded kubelet simulator and API stand-in, plays the default timeline and exits 0.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';

function runAgent(args: string[], timeout = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js'), ...args],
      { timeout, env: { PATH: process.env.PATH } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('architecture §3 npm start demo', () => {
  test('simulate shows a fault, a recovery, a FaultFrequency escalation to ManuallySeparateNPU and its release', async () => {
    const r = await runAgent(['simulate', '--speed', '2'], 60_000);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/8 chips \(huawei\.com\/Ascend910\).*registered with the kubelet simulator/);
    expect(r.stdout).toMatch(/assertion=occur\n.*\n\s+Ascend910-3\s+RestartNPU\s+Unhealthy/);
    expect(r.stdout).toMatch(/Ascend910-3\s+ManuallySeparateNPU\s+Unhealthy\s+Healthy\s+yes/);
    expect(r.stdout).toMatch(/ManuallySeparateNPU="Ascend910-3"/);
    expect(r.stdout).toMatch(/summary\n.*\n\s+kubelet\s+8 Healthy/);
    expect(r.stdout).toMatch(/ConfigMap\s+\d+ writes, ManuallySeparateNPU="", CheckCode valid/);
  }, 70_000);

  test('--version prints the package version', async () => {
    const r = await runAgent(['--version']);
    expect(r.stdout).toMatch(/^ascend-npu-agent \d+\.\d+\.\d+\n$/);
  });

  test('architecture §4 exit 3: without the mock library (as in the production image) simulate prints one clear line, no stack', async () => {
    const missing = path.join(PROJECT_ROOT, 'build', 'Release', 'no-such-libdcmi.so');
    const r = await runAgent(['simulate', '--dcmiLibrary', missing]);
    expect([r.code, r.stderr]).toEqual([
      3,
      `ascend-npu-agent simulate: DCMI library unusable: -dcmiLibrary ${missing}: cannot be read: ENOENT\n`,
    ]);
  });

  test('an unknown simulate argument exits 2 naming it', async () => {
    const r = await runAgent(['simulate', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown simulate argument --bogus/);
  });
});
