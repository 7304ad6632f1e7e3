/**
 * Issue [J] item 6: an unknown `npuctl` command (dist/cli/npuctl.js, a child process) gets the closest command and
 * the list of every command, exit 2; before, commander said only "error: unknown command 'bogus'".
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { closestCommand, editDistance } from '../../src/cli/npuctl/commands.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';

const NPUCTL_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'npuctl.js');
const LIST =
  'npuctl commands: config check, policy replay, status, separation list, separation release (npuctl --help)\n';

function npuctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [NPUCTL_JS, ...args], { timeout: 20_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('issue [J] 6 npuctl: unknown commands', () => {
  test('a misspelt command: exit 2, the closest command, then every command', async () => {
    const r = await npuctl(['stauts']);
    expect([r.code, r.stdout, r.stderr]).toEqual([
      2,
      '',
      `npuctl: unknown command "stauts"; did you mean "npuctl status"?\n${LIST}`,
    ]);
  });

  test('a misspelt subcommand: the closest subcommand of that group', async () => {
    const r = await npuctl(['separation', 'relase', '--node', 'n']);
    expect([r.code, r.stderr]).toEqual([
      2,
      `npuctl: unknown command "separation relase"; did you mean "npuctl separation release"?\n${LIST}`,
    ]);
  });

  test('a subcommand without its group: the command that has it', async () => {
    const r = await npuctl(['replay', '--timeline', 'x']);
    expect([r.code, r.stderr]).toEqual([
      2,
      `npuctl: unknown command "replay"; did you mean "npuctl policy replay"?\n${LIST}`,
    ]);
  });

  test('a word like no command: exit 2 and the list, no guess', async () => {
    const r = await npuctl(['bogus']);
    expect([r.code, r.stderr]).toEqual([2, `npuctl: unknown command "bogus"\n${LIST}`]);
  });

  test('known commands still run (help, a command with a bad option keeps its own error)', async () => {
    const help = await npuctl(['help']);
    expect([help.code, help.stdout.startsWith('Usage: npuctl <command>')]).toEqual([0, true]);
    const bad = await npuctl(['config', 'check', '--bogus']);
    expect([bad.code, bad.stderr]).toEqual([2, "error: unknown option '--bogus'\n"]);
  });

  test('closestCommand: one edit per three letters, a transposition is one edit, a prefix of three letters counts', () => {
    expect(editDistance('stauts', 'status')).toBe(1);
    const paths = ['config check', 'policy replay', 'status', 'separation list', 'separation release'];
    expect(closestCommand('confg', paths)).toBe('config check');
    expect(closestCommand('stat', paths)).toBe('status');
    expect(closestCommand('sepration', paths)).toBe('separation list');
    expect(closestCommand('st', paths)).toBeUndefined();
    expect(closestCommand('x'.repeat(100), paths)).toBeUndefined();
  });
});
