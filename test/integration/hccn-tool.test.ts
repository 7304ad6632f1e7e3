/**
 * Issue [K] item 9 with the agent as a child process: `-hccnTool` is under the DCMI library's file checks. A tool
 * writable by others, in a folder writable by others, is never executed; the agent logs one error naming the file
 * and the rule, keeps serving kubelet, and runs without link-status checks.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { AgentSandbox } from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

/** A fake hccn_tool in the sandbox that appends a line to a counter file at every run and answers "UP". */
function countingTool(s: AgentSandbox, mode: number): { tool: string; runs: () => number } {
  const dir = path.join(fs.realpathSync(s.dir), 'tools');
  fs.mkdirSync(dir);
  const counter = path.join(s.dir, 'hccn-runs.txt');
  const tool = path.join(dir, 'hccn_tool');
  fs.writeFileSync(tool, `#!/bin/sh\necho run >> '${counter}'\necho 'link status: UP'\n`);
  fs.chmodSync(tool, mode);
  fs.chmodSync(dir, mode);
  return {
    tool,
    runs: () => (fs.existsSync(counter) ? fs.readFileSync(counter, 'utf8').split('\n').length - 1 : 0),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('issue [K] 9 -hccnTool file checks in the agent', () => {
  test('a 0777 tool in a 0777 folder is refused at start and never run; kubelet is still served', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    const t = countingTool(s, 0o777);
    // the flag given last wins over the sandbox's mock tool
    const agent = await s.start([`-hccnTool=${t.tool}`, '-linkQueryInterval=1']);
    const refused = await s.until(
      () => agent.logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('-hccnTool refused')),
      'the refusal log line',
    );
    expect(refused.msg).toBe(
      `-hccnTool refused: ${t.tool}: is writable by group or others (mode 777); run chmod go-w on it; ` +
        `folder ${path.dirname(t.tool)} is writable by group or others without the sticky bit (mode 777): another ` +
        'user can replace what it holds; run chmod go-w (or chmod +t) on it; ' +
        'link-status checks and RoCE hang sampling are off for this run',
    );
    // several link-query intervals pass (8 chips, 1 s each): nothing runs the tool
    await sleep(3000);
    expect(t.runs()).toBe(0);
    expect(s.health('Ascend910-0')).toBe('Healthy');
  });

  test('the same tool at 0755 in a 0755 folder is run (the zero above is a real zero)', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    const t = countingTool(s, 0o755);
    const agent = await s.start([`-hccnTool=${t.tool}`, '-linkQueryInterval=1']);
    await s.until(() => t.runs() > 0, 'a link query through the fake tool', 15_000);
    expect(agent.logs().some((l) => typeof l.msg === 'string' && l.msg.startsWith('-hccnTool refused'))).toBe(false);
  });
});
