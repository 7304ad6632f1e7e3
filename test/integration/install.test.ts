/**
 * Issue [I] on the host: an upgrade with the arguments of Huawei's own 910 DaemonSet starts the agent (item 6), and a
 * state folder that cannot be used stops it with one line and nothing half-started ("Bad input"). The same cases
 * inside the container image: test/image/image.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { AgentSandbox, RESOURCE, runAgentOnce } from '../helpers/agent-process.js';
import { HUAWEI_910_ARGS } from '../helpers/upstream-manifests.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

describe('[I] item 6 upgrade with upstream arguments', () => {
  test("the agent starts with Huawei's ascendplugin-910.yaml arguments and warns once about -useAscendDocker", async () => {
    sb = await AgentSandbox.create();
    // The one host path in the list (the log file) is moved into the sandbox; the rest is as shipped.
    const logFile = path.join(sb.dir, 'log', 'devicePlugin.log');
    fs.mkdirSync(path.dirname(logFile));
    const args = HUAWEI_910_ARGS.map((a) => (a.startsWith('-logFile=') ? `-logFile=${logFile}` : a));
    const agent = await sb.start(args);
    expect(sb.kubelet.devices(RESOURCE)).toHaveLength(8);
    const warnings = await sb.until(() => {
      const lines = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n') : [];
      const found = lines.filter((l) => l.includes('-useAscendDocker'));
      return lines.some((l) => l.includes('"agent started"')) && found;
    }, 'the start-up lines in the log file');
    expect(warnings).toEqual([
      expect.stringMatching(/"warning":"-useAscendDocker=true: deprecated upstream flag, ignored/),
    ]);
    expect(agent.child.exitCode).toBeNull();
  });
});

describe('[I] Bad input', () => {
  test('a -stateDir that is not a writable folder exits 2 with one line naming it, before anything starts', async () => {
    sb = await AgentSandbox.create();
    const state = path.join(sb.dir, 'state');
    fs.rmSync(state, { recursive: true });
    fs.writeFileSync(state, 'not a folder');
    const r = await runAgentOnce(sb.flags(), sb.env());
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`ascend-npu-agent: -stateDir ${state} is not a folder\n`);
    // nothing half-started: no DCMI (the mock's control socket), no plugin socket, no registration, no ConfigMap
    expect(fs.existsSync(sb.control)).toBe(false);
    expect(fs.readdirSync(path.join(sb.dir, 'kubelet'))).toEqual(['kubelet.sock']);
    expect(sb.kubelet.registrations).toHaveLength(0);
    expect(sb.deviceInfo()).toBeUndefined();
  });
});
