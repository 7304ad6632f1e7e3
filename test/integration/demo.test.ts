/**
 * `npm start` (architecture §3): the built `ascend-npu-agent simulate` runs the DCMI demo on the mock library as a
 * child process and reports the injected fault, its recovery and the card drop.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/dcmi/bindings.js';

function runAgent(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js'), ...args],
      { timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('architecture §3 npm start demo', () => {
  test('simulate enumerates the default scenario and shows the injected fault, recovery and card drop', async () => {
    const r = await runAgent(['simulate']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/chip 910B3, board 0x24, 8 chips/);
    expect(r.stdout).toMatch(
      /injected 80E01801 occur on logic 3: event 80E01801 assertion=occur .* codes now 80E01801/,
    );
    expect(r.stdout).toMatch(/injected 80E01801 recover on logic 3: .* codes now \(none\)/);
    expect(r.stdout).toMatch(/card drop on logic 3: codes now 40F84E00/);
  });

  test('--version prints the package version', async () => {
    const r = await runAgent(['--version']);
    expect(r.stdout).toMatch(/^ascend-npu-agent \d+\.\d+\.\d+\n$/);
  });

  test('an unknown argument exits 2 naming it', async () => {
    const r = await runAgent(['--bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown argument --bogus/);
  });
});
