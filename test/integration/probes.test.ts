/**
 * Issue [J] item 1 (architecture §4): the real agent serves `/healthz`, `/readyz` and `/metrics` from the first
 * second, before DCMI, the API server and kubelet: a slow kubelet (up to `-kubeletWaitTimeout`, 300 s) never fails a
 * liveness probe, and `/readyz` names what the start still waits for. Before the fix the server was started after the
 * kubelet registration (every request was refused until then).
 *
 * No time is measured here: each wait is a poll with a generous deadline (the machine is loaded).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { KubeletSimulator } from '../../src/sim/kubelet.js';
import { AGENT_JS, AgentProcess, AgentSandbox, RESOURCE } from '../helpers/agent-process.js';

/** Jest bound of one test (start-up polls, a late kubelet). */
const PROBE_TEST_MS = 60_000;

let sb: AgentSandbox | undefined;
const late: KubeletSimulator[] = [];

afterEach(async () => {
  for (const k of late.splice(0)) await k.close();
  await sb?.close();
  sb = undefined;
});

/** Polls `check` every 50 ms until truthy (deadline `ms`). */
async function until<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  ms = 20_000,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts the agent with the sandbox's flags and `flags` after them (the last value of a flag wins). */
function spawnAgent(s: AgentSandbox, flags: string[] = [], env: Record<string, string> = {}): AgentProcess {
  const agent = new AgentProcess(spawn(process.execPath, [AGENT_JS, ...s.flags(flags)], { env: s.env(env) }));
  s.agent = agent;
  return agent;
}

function logged(agent: AgentProcess, msg: string): Record<string, unknown> | undefined {
  return agent.logs().find((l) => l.msg === msg);
}

/** The probes' base URL, from the agent's "metrics and probes listening" line. */
async function probesUrl(agent: AgentProcess): Promise<string> {
  const line = await until(() => logged(agent, 'metrics and probes listening'), 'the probes server');
  const address = String(line.address);
  return `http://127.0.0.1:${address.slice(address.lastIndexOf(':') + 1)}`;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.text() };
}

describe('issue [J] item 1 probes from the first second', () => {
  test(
    'kubelet not there yet: /healthz 200, /readyz 503 "not registered with kubelet", /metrics served; ready once kubelet comes',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      const kubeletDir = path.join(s.dir, 'late-kubelet');
      const agent = spawnAgent(s, [`-kubeletDir=${kubeletDir}`]);
      const base = await probesUrl(agent);
      expect(await get(`${base}/healthz`)).toEqual({ status: 200, body: 'ok\n' });
      await until(() => logged(agent, `waiting for kubelet directory ${kubeletDir}`), 'the kubelet folder wait');
      // DCMI is open and the API server answered (the node set-up is done): kubelet is the one reason left
      expect(await get(`${base}/readyz`)).toEqual({
        status: 503,
        body: `kubelet: not registered with kubelet: ${RESOURCE}\n`,
      });
      expect(await get(`${base}/healthz`)).toEqual({ status: 200, body: 'ok\n' });
      const early = await get(`${base}/metrics`);
      expect(early.status).toBe(200);
      expect(early.body).toMatch(/^ascend_npu_agent_kubelet_registered 0$/m);
      expect(early.body).toMatch(/^ascend_npu_agent_build_info\{[^}]*chip_kind="Ascend910B"[^}]*\} 1$/m);
      expect(early.body).toMatch(/^ascend_npu_agent_chip_health\{chip="Ascend910-3",logic_id="3",phy_id="3"\} 1$/m);

      const kubelet = await KubeletSimulator.start({ dir: kubeletDir });
      late.push(kubelet);
      await kubelet.waitForRegistration(RESOURCE, 0, 20_000);
      await until(async () => (await get(`${base}/readyz`)).status === 200, '/readyz 200');
      expect((await get(`${base}/metrics`)).body).toMatch(/^ascend_npu_agent_kubelet_registered 1$/m);
    },
    PROBE_TEST_MS,
  );

  test(
    'DCMI not open yet (dcmi_init keeps failing): /healthz 200, /readyz names DCMI, /status 503',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      // no scenario file: the mock's dcmi_init fails with -8005 on every attempt (scenarios/README.md)
      const agent = spawnAgent(s, ['-deviceResetTimeout=600'], {
        ASCEND_MOCK_SCENARIO: path.join(s.dir, 'no-scenario.json'),
      });
      const base = await probesUrl(agent);
      await until(() => logged(agent, 'DCMI not ready; retrying'), 'a failed dcmi_init');
      expect(await get(`${base}/healthz`)).toEqual({ status: 200, body: 'ok\n' });
      const ready = await get(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.split('\n')).toEqual([
        'dcmi: DCMI not open',
        'kubelet: not registered with kubelet',
        'api: API server never reached',
        '',
      ]);
      expect(await get(`${base}/status`)).toEqual({
        status: 503,
        body: 'status unavailable: the agent is starting (DCMI initialisation)\n',
      });
      expect((await get(`${base}/metrics`)).body).toMatch(/^process_cpu_seconds_total /m);
    },
    PROBE_TEST_MS,
  );
});
