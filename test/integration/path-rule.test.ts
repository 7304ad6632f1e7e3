/**
 * Issue [T] item 3 with the agent as a child process: the explicit-path rule of architecture §4 (`-dcmiLibrary`,
 * changed) for the three files the privileged agent loads or runs. A refused `-dcmiLibrary` exits 3 (the DCMI
 * library is unusable, §4 exit statuses) naming the folder at fault; a refused `-switchLibrary` turns switch faults
 * off and a refused `-hccnTool` turns link-status checks off, each with one line naming the folder, while the agent
 * keeps serving its chips (upstream disables switch handling when the library fails, and treats a failing tool as a
 * link query error, never as a reason to stop: docs/dcmi.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { MOCK_DCMI_LIBRARY, MOCK_SWITCH_LIBRARY, PROJECT_ROOT } from '../../src/core/paths.js';
import { AgentSandbox, runAgentOnce } from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

/** A folder of the sandbox that anyone may write (no sticky bit): another user could swap what it holds. */
function worldWritable(s: AgentSandbox): string {
  const dir = path.join(fs.realpathSync(s.dir), 'ww');
  fs.mkdirSync(dir);
  fs.chmodSync(dir, 0o777);
  return dir;
}

const FOLDER_RULE = 'is writable by group or others without the sticky bit (mode 777): another user can replace';

describe('architecture §4 explicit paths in the agent (issue [T] item 3)', () => {
  test('-dcmiLibrary: a link to the mock library in a world-writable folder exits 3 naming the folder', async () => {
    sb = await AgentSandbox.create();
    const ww = worldWritable(sb);
    const link = path.join(ww, 'libdcmi.so');
    fs.symlinkSync(MOCK_DCMI_LIBRARY, link);
    const r = await runAgentOnce(sb.flags([`-dcmiLibrary=${link}`]), sb.env());
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`-dcmiLibrary ${link}: folder ${ww} ${FOLDER_RULE}`);
    expect(fs.existsSync(path.join(sb.dir, 'kubelet', 'Ascend910.sock'))).toBe(false);
  });

  test('-dcmiLibrary: the same link in a sticky world-writable folder (like /tmp) is loaded', async () => {
    sb = await AgentSandbox.create();
    const sticky = path.join(fs.realpathSync(sb.dir), 'sticky');
    fs.mkdirSync(sticky);
    fs.chmodSync(sticky, 0o1777);
    const link = path.join(sticky, 'libdcmi.so');
    fs.symlinkSync(MOCK_DCMI_LIBRARY, link);
    const agent = await sb.start([`-dcmiLibrary=${link}`]);
    const line = agent.logs().find((l) => l.msg === 'DCMI library');
    expect(line?.library).toBe(fs.realpathSync(MOCK_DCMI_LIBRARY));
    expect(sb.health('Ascend910-0')).toBe('Healthy');
  });

  test('-switchLibrary: a copy in a world-writable folder turns switch faults off naming the folder', async () => {
    sb = await AgentSandbox.create(path.join(PROJECT_ROOT, 'scenarios', '910a3-switch.json'));
    const s = sb;
    const lib = path.join(worldWritable(s), 'liblingqu-dcmi.so');
    fs.copyFileSync(MOCK_SWITCH_LIBRARY, lib);
    fs.chmodSync(lib, 0o755);
    await s.start([`-switchLibrary=${lib}`]);
    const warning = await s.until(
      () => s.agent!.logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('910A3 switch faults off')),
      'the switch refusal line',
    );
    expect(warning.msg).toBe(
      `910A3 switch faults off: -switchLibrary ${lib}: folder ${path.dirname(lib)} ${FOLDER_RULE} what it holds; run chmod go-w (or chmod +t) on it`,
    );
    expect(s.agent!.logs().some((l) => l.msg === 'init switch library succeeded')).toBe(false);
    expect(s.health('Ascend910-0')).toBe('Healthy');
  });

  test('-hccnTool: a 0755 tool in a world-writable folder is refused naming the folder and never run', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    const counter = path.join(s.dir, 'hccn-runs.txt');
    const tool = path.join(worldWritable(s), 'hccn_tool');
    fs.writeFileSync(tool, `#!/bin/sh\necho run >> '${counter}'\necho 'link status: UP'\n`);
    fs.chmodSync(tool, 0o755);
    const agent = await s.start([`-hccnTool=${tool}`, '-linkQueryInterval=1']);
    const refused = await s.until(
      () => agent.logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('-hccnTool refused')),
      'the refusal log line',
    );
    expect(refused.msg).toBe(
      `-hccnTool refused: ${tool}: folder ${path.dirname(tool)} ${FOLDER_RULE} what it holds; run chmod go-w (or ` +
        'chmod +t) on it; link-status checks and RoCE hang sampling are off for this run',
    );
    await new Promise((r) => setTimeout(r, 2_000)); // two link-query intervals
    expect(fs.existsSync(counter)).toBe(false);
    expect(s.health('Ascend910-0')).toBe('Healthy');
  });
});
