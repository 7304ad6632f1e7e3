/**
 * hccn_tool output parsing and execution rules (dcmi-abi.md §7).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { MOCK_HCCN_TOOL } from '../../src/dcmi/bindings.js';
import { parseLinkStatus, parseRoceStats, queryLinkStatus, runHccnTool } from '../../src/dcmi/hccn.js';
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
