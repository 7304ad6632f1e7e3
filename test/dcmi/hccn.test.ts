/**
 * hccn_tool output parsing and execution rules (dcmi-abi.md §7).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { MOCK_HCCN_TOOL } from '../../src/core/paths.js';
import {
  DEFAULT_HCCN_TOOL,
  HccnToolError,
  hccnToolProblem,
  parseLinkStatus,
  parseRoceStats,
  queryLinkStatus,
  runHccnTool,
} from '../../src/dcmi/hccn.js';
import type { PathEntry, PathInspector } from '../../src/dcmi/library-path.js';
import { tempDir } from '../helpers/mock-dcmi.js';

describe('dcmi-abi §7 link status parsing', () => {
  test.each([
    ['link status: UP\n', 'UP'],
    ['link status: DOWN\n', 'DOWN'],
    ['link status: DOWN', 'DOWN'],
    ['link status:  UP\n', 'Abnormal'],
    ['link status: UNKNOWN\n', 'Abnormal'],
    ['', 'Abnormal'],
    ['link status: UP extra\n', 'Abnormal'],
  ])('%j is %s', (stdout, expected) => {
    expect(parseLinkStatus(stdout)).toBe(expected);
  });
});

describe('dcmi-abi §7 RoCE statistics parsing', () => {
  test('key:value lines with integer values are kept, others skipped', () => {
    const stats = parseRoceStats('roce_tx_all_pkt_num:120\nroce_rx_all_pkt_num: 7\nbad line\na:b:c\nempty:\nx:1.5\n');
    expect([...stats.entries()]).toEqual([
      ['roce_tx_all_pkt_num', 120n],
      ['roce_rx_all_pkt_num', 7n],
    ]);
  });
});

describe('dcmi-abi §7 execution', () => {
  test('a tool path through a symbolic link is refused', async () => {
    const dir = tempDir();
    const link = path.join(dir, 'hccn_tool');
    fs.symlinkSync(MOCK_HCCN_TOOL, link);
    await expect(runHccnTool({ toolPath: link, env: {} }, ['-h'])).rejects.toThrow(/without symbolic links/);
  });

  test('a missing tool is Abnormal with the reason', async () => {
    const r = await queryLinkStatus({ toolPath: path.join(tempDir(), 'hccn_tool'), env: {} }, 0);
    expect(r).toMatchObject({ status: 'Abnormal', error: expect.stringMatching(/ENOENT/) });
  });

  test('the tool gets a minimal environment: PATH, LD_LIBRARY_PATH and ASCEND_MOCK_CONTROL only', async () => {
    const dir = tempDir();
    const script = path.join(dir, 'env-tool');
    fs.writeFileSync(script, '#!/bin/sh\nenv\n');
    fs.chmodSync(script, 0o755);
    const out = await runHccnTool(
      { toolPath: script, env: { PATH: '/usr/bin:/bin', SECRET: 'x', ASCEND_MOCK_CONTROL: '/tmp/c.sock' } },
      [],
    );
    const names = out
      .trim()
      .split('\n')
      .map((l) => l.split('=')[0])
      .filter((n) => n !== 'PWD' && n !== 'SHLVL' && n !== '_');
    expect(names.sort()).toEqual(['ASCEND_MOCK_CONTROL', 'PATH']);
  });

  test('a non-zero exit status is an error carrying the first stderr line', async () => {
    const dir = tempDir();
    const script = path.join(dir, 'failing-tool');
    fs.writeFileSync(script, '#!/bin/sh\necho "device 9 not found" >&2\nexit 3\n');
    fs.chmodSync(script, 0o755);
    await expect(runHccnTool({ toolPath: script, env: { PATH: '/usr/bin:/bin' } }, ['-i', '9'])).rejects.toThrow(
      /device 9 not found/,
    );
  });
});

/** A fake tree (no symbolic links): directories root-owned 0755, files root-owned 0755 unless given. */
function fakeTree(entries: Record<string, Partial<PathEntry>>): PathInspector {
  return {
    lstat(p) {
      const e = entries[p];
      if (!e) return undefined;
      const isDirectory = e.isDirectory ?? !p.endsWith('hccn_tool');
      return {
        uid: e.uid ?? 0,
        mode: e.mode ?? (isDirectory ? 0o40755 : 0o100755),
        isSymbolicLink: false,
        isFile: !isDirectory,
        isDirectory,
      };
    },
    realpath(p) {
      if (!entries[p]) throw Object.assign(new Error(`ENOENT ${p}`), { code: 'ENOENT' });
      return p;
    },
    readlink(p) {
      throw Object.assign(new Error(`EINVAL ${p}`), { code: 'EINVAL' });
    },
  };
}

/** The default location and its folders, all root-owned and not writable by group or others. */
const DEFAULT_TREE: Record<string, Partial<PathEntry>> = {
  '/': {},
  '/usr': {},
  '/usr/local': {},
  '/usr/local/Ascend': {},
  '/usr/local/Ascend/driver': {},
  '/usr/local/Ascend/driver/tools': {},
  [DEFAULT_HCCN_TOOL]: {},
};

/** A fake hccn_tool that appends a line to `counter` each time it runs, in a folder of `dirMode`. */
function countingTool(fileMode: number, dirMode: number): { tool: string; counter: string; runs: () => number } {
  const dir = path.join(tempDir('hccn-'), 'tools');
  fs.mkdirSync(dir);
  const counter = path.join(dir, '..', 'runs.txt');
  const tool = path.join(dir, 'hccn_tool');
  fs.writeFileSync(tool, `#!/bin/sh\necho run >> '${counter}'\necho 'link status: UP'\n`);
  fs.chmodSync(tool, fileMode);
  fs.chmodSync(dir, dirMode);
  const runs = (): number => (fs.existsSync(counter) ? fs.readFileSync(counter, 'utf8').split('\n').length - 1 : 0);
  return { tool: fs.realpathSync(tool), counter, runs };
}

describe('issue [K] 9 -hccnTool gets the file checks of the DCMI library (dcmi-abi §1.2, architecture §4)', () => {
  test('§1.2 the default location, root-owned in root-owned folders, passes', () => {
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 1000, fakeTree(DEFAULT_TREE))).toBeUndefined();
  });

  test('§1.2 the default location owned by another uid is refused naming the file and the owner', () => {
    const tree = fakeTree({ ...DEFAULT_TREE, [DEFAULT_HCCN_TOOL]: { uid: 1234 } });
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 1000, tree)).toEqual({
      reason: `${DEFAULT_HCCN_TOOL}: ${DEFAULT_HCCN_TOOL} is owned by uid 1234, not root`,
      missing: false,
    });
  });

  test('architecture §4 the default location owned by the agent own uid passes', () => {
    const tree = fakeTree({ ...DEFAULT_TREE, [DEFAULT_HCCN_TOOL]: { uid: 1234 } });
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 1234, tree)).toBeUndefined();
  });

  test('§1.2 the default location writable by others (0777) is refused with the chmod to run', () => {
    const tree = fakeTree({ ...DEFAULT_TREE, [DEFAULT_HCCN_TOOL]: { mode: 0o100777 } });
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 0, tree)?.reason).toMatch(
      /hccn_tool is writable by group or others \(mode 777\); run chmod go-w on it/,
    );
  });

  test('§1.2 a parent folder of the default location writable by others is refused naming the folder', () => {
    const tree = fakeTree({ ...DEFAULT_TREE, '/usr/local/Ascend/driver/tools': { mode: 0o40777 } });
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 0, tree)?.reason).toMatch(
      /parent \/usr\/local\/Ascend\/driver\/tools is writable by group or others/,
    );
  });

  test('§1.2 a parent folder of the default location owned by another uid is refused', () => {
    const tree = fakeTree({ ...DEFAULT_TREE, '/usr/local/Ascend': { uid: 1234 } });
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 0, tree)?.reason).toMatch(
      /parent \/usr\/local\/Ascend is owned by uid 1234/,
    );
  });

  test('§1.2 a folder at the tool path is not a regular file', () => {
    const tree = fakeTree({ ...DEFAULT_TREE, [DEFAULT_HCCN_TOOL]: { isDirectory: true } });
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 0, tree)?.reason).toMatch(/is not a regular file/);
  });

  test('a missing tool is reported as missing (not as a refused one)', () => {
    const entries = { ...DEFAULT_TREE };
    delete entries[DEFAULT_HCCN_TOOL];
    expect(hccnToolProblem(DEFAULT_HCCN_TOOL, 0, fakeTree(entries))).toEqual({
      reason: `${DEFAULT_HCCN_TOOL}: ENOENT`,
      missing: true,
    });
  });

  test('architecture §4 an explicit -hccnTool writable by others (0777) is refused', () => {
    const t = countingTool(0o777, 0o755);
    expect(hccnToolProblem(t.tool)?.reason).toBe(
      `${t.tool}: is writable by group or others (mode 777); run chmod go-w on it`,
    );
  });

  test('architecture §4 an explicit -hccnTool that is a folder is refused', () => {
    const dir = fs.realpathSync(tempDir('hccn-'));
    expect(hccnToolProblem(dir)?.reason).toBe(`${dir}: is not a regular file`);
  });

  test('the mock hccn_tool of the build passes the explicit-path rule (the build runs chmod go-w on it)', () => {
    expect(hccnToolProblem(fs.realpathSync(MOCK_HCCN_TOOL))).toBeUndefined();
  });

  test('a relative -hccnTool is refused', () => {
    expect(hccnToolProblem('tools/hccn_tool')?.reason).toBe('tools/hccn_tool: must be an absolute path');
  });

  test('a 0777 tool in a 0777 folder is never executed: 16 queries, 16 refusals naming the file, 0 runs', async () => {
    const t = countingTool(0o777, 0o777);
    for (let i = 0; i < 16; i++) {
      const r = await queryLinkStatus({ toolPath: t.tool, env: { PATH: '/usr/bin:/bin' } }, i % 8);
      expect(r).toEqual({
        status: 'Abnormal',
        error: expect.stringContaining(`${t.tool}: is writable by group or others`),
      });
    }
    await expect(runHccnTool({ toolPath: t.tool, env: {} }, ['-i', '0', '-stat', '-g'])).rejects.toBeInstanceOf(
      HccnToolError,
    );
    expect(t.runs()).toBe(0);
  });

  test('the same fake tool made 0755 runs (so the count above is a real zero)', async () => {
    const t = countingTool(0o755, 0o755);
    const r = await queryLinkStatus({ toolPath: t.tool, env: { PATH: '/usr/bin:/bin' } }, 0);
    expect([r.status, t.runs()]).toEqual(['UP', 1]);
  });

  test('the check runs before each execution: a tool made writable after a good run is not run again', async () => {
    const t = countingTool(0o755, 0o755);
    await queryLinkStatus({ toolPath: t.tool, env: { PATH: '/usr/bin:/bin' } }, 0);
    fs.chmodSync(t.tool, 0o775);
    const r = await queryLinkStatus({ toolPath: t.tool, env: { PATH: '/usr/bin:/bin' } }, 0);
    expect([r.status, t.runs()]).toEqual(['Abnormal', 1]);
  });
});
