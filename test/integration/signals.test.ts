/**
 * Issue [K] item 8, architecture §4 ("0 stopped by a signal"): SIGTERM at any moment ends the agent and the fault
 * center cleanly with status 0 — during every start-up wait of the agent (the kubelet folder, the first
 * registration, `dcmi_init` retries, the API server start-up reads and node set-up), during normal running and
 * during the shutdown itself (a second SIGTERM). Before the fix the start-up waits ignored the signal and ended with
 * their own timeout (exit 4 after `-kubeletWaitTimeout`, exit 3 after `-deviceResetTimeout`, exit 1 after the node
 * set-up tries).
 *
 * Times are not measured here (bench/hostile/outage.ts does): each test only requires the exit within its poll
 * deadline (15 s), far below the bound of the wait the agent was in (300 s, 600 s), or the right exit status.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import {
  AGENT_JS,
  AgentProcess,
  AgentSandbox,
  deviceList,
  listed,
  SEPARATE_CODE,
  UNHEALTHY_KEY,
} from '../helpers/agent-process.js';

const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');

/** Jest bound of one test: its own polls (start-up, outage, exit) take longer than the default 20 s. */
const SIGNAL_TEST_MS = 60_000;

let sb: AgentSandbox | undefined;
const extra: { stop(): Promise<void> }[] = [];

afterEach(async () => {
  for (const x of extra.splice(0).reverse()) await x.stop();
  await sb?.close();
  sb = undefined;
});

/** Polls `check` every 50 ms until truthy (deadline `ms`). */
async function until<T>(check: () => T | undefined | null | false, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts the agent with the sandbox's flags, `-kubeletDir` replaced when given, without waiting for registration. */
function spawnAgent(
  s: AgentSandbox,
  opts: { kubeletDir?: string; env?: Record<string, string>; flags?: string[] } = {},
): AgentProcess {
  const flags = s
    .flags(opts.flags)
    .map((f) => (opts.kubeletDir !== undefined && f.startsWith('-kubeletDir=') ? `-kubeletDir=${opts.kubeletDir}` : f));
  const agent = new AgentProcess(spawn(process.execPath, [AGENT_JS, ...flags], { env: s.env(opts.env) }));
  s.agent = agent;
  return agent;
}

function logged(agent: AgentProcess, msg: string | RegExp): Record<string, unknown> | undefined {
  return agent
    .logs()
    .find((l) => (typeof msg === 'string' ? l.msg === msg : typeof l.msg === 'string' && msg.test(l.msg)));
}

/** SIGTERM, then the exit within 15 s (a rejection names the agent's stderr). */
async function terminate(agent: AgentProcess): Promise<{ code: number | null; stopped: Record<string, unknown> }> {
  agent.child.kill('SIGTERM');
  const exit = await agent.waitExit(15_000);
  return { code: exit.code, stopped: logged(agent, 'stopped by a signal') ?? {} };
}

describe('issue [K] item 8: SIGTERM during the agent start-up waits (architecture §4 exit 0)', () => {
  test(
    'while waiting for the kubelet folder (default -kubeletWaitTimeout 300 s): exit 0, stopped by a signal',
    async () => {
      sb = await AgentSandbox.create();
      const missing = path.join(sb.dir, 'no-kubelet');
      const agent = spawnAgent(sb, { kubeletDir: missing });
      await until(() => logged(agent, `waiting for kubelet directory ${missing}`), 'the kubelet folder wait');
      const r = await terminate(agent);
      expect([r.code, r.stopped.phase]).toEqual([0, 'kubelet directory and registration']);
    },
    SIGNAL_TEST_MS,
  );

  test(
    'while waiting for the first registration (no kubelet.sock): exit 0, no plugin socket left behind',
    async () => {
      sb = await AgentSandbox.create();
      const empty = path.join(sb.dir, 'kubelet-without-socket');
      fs.mkdirSync(empty);
      const agent = spawnAgent(sb, { kubeletDir: empty });
      await until(() => logged(agent, /^waiting for kubelet registration socket/), 'the registration wait');
      const r = await terminate(agent);
      expect([r.code, r.stopped.phase, fs.readdirSync(empty)]).toEqual([0, 'kubelet directory and registration', []]);
    },
    SIGNAL_TEST_MS,
  );

  test(
    'while dcmi_init keeps failing (default -deviceResetTimeout 600 s): exit 0, stopped by a signal',
    async () => {
      sb = await AgentSandbox.create();
      // no scenario file: the mock's dcmi_init fails with -8005 on every attempt (scenarios/README.md)
      const agent = spawnAgent(sb, {
        env: { ASCEND_MOCK_SCENARIO: path.join(sb.dir, 'no-scenario.json') },
        flags: ['-deviceResetTimeout=600'], // the default (the sandbox's 10 s is overridden: the last value wins)
      });
      await until(() => logged(agent, 'DCMI not ready; retrying'), 'a failed dcmi_init');
      const r = await terminate(agent);
      expect([r.code, r.stopped.phase]).toEqual([0, 'DCMI initialisation']);
    },
    SIGNAL_TEST_MS,
  );

  test(
    'during the API server start-up reads while the API answers 503: exit 0, not the node set-up failure',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      s.api.setAvailable(false);
      const agent = spawnAgent(s);
      // the node set-up (spec A.2 step 5.7) tries 3 times 1 s apart, then exits 1: the signal comes at its first try
      await until(() => s.api.requests().some((q) => q.url.startsWith('/api/v1/nodes/')), 'the first node patch');
      const r = await terminate(agent);
      expect([r.code, typeof r.stopped.phase]).toEqual([0, 'string']);
    },
    SIGNAL_TEST_MS,
  );
});

describe('issue [K] item 8: SIGTERM while the agent runs', () => {
  test(
    'H.4 a fault seen right before SIGTERM is in the ConfigMap after the exit: the shutdown flush does not wait out the 1 s spacing',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      const agent = await s.start();
      await s.until(() => s.deviceInfo(), 'the first ConfigMap write');
      const unhealthy = (): string => deviceList(s)?.[UNHEALTHY_KEY] ?? '';
      await s.mock({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'occur' });
      await s.until(() => listed(unhealthy(), 'Ascend910-2'), 'the first fault written');
      // within 1 s of that write: the second fault waits in the publisher's spacing, not in the write queue
      await s.mock({ op: 'fault', logicId: 5, eventId: SEPARATE_CODE, assertion: 'occur' });
      await s.until(() => s.health('Ascend910-5') === 'Unhealthy', 'the second fault seen by kubelet');
      const { code } = await terminate(agent);
      expect([code, listed(unhealthy(), 'Ascend910-5')]).toEqual([0, true]);
    },
    SIGNAL_TEST_MS,
  );

  test(
    'a second SIGTERM while the shutdown waits for the ConfigMap flush (API down): exit 0',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      const agent = await s.start();
      await s.until(() => s.deviceInfo(), 'the first ConfigMap write');
      s.api.setAvailable(false);
      await s.mock({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'occur' });
      // a failed write waits for its retry: the shutdown's flush has something to wait for
      await until(() => logged(agent, 'device-info write failed; retrying'), 'a failed ConfigMap write');
      agent.child.kill('SIGTERM');
      await until(() => logged(agent, 'stopping'), 'the shutdown');
      agent.child.kill('SIGTERM');
      const exit = await agent.waitExit(15_000);
      const second = logged(agent, /^second signal/);
      expect([exit.code, second !== undefined, logged(agent, 'stopped by a signal') !== undefined]).toEqual([
        0,
        true,
        true,
      ]);
    },
    SIGNAL_TEST_MS,
  );
});

/**
 * A plain HTTP proxy in front of the API stand-in that can stop answering (`hang`): requests are then accepted and
 * never answered, like an API server behind a dead load balancer. (The stand-in's own switch answers 503 at once.)
 */
class HangingProxy {
  hang = false;
  readonly server: http.Server;
  readonly #held = new Set<http.ServerResponse>();

  private constructor(target: string) {
    const base = new URL(target);
    this.server = http.createServer((req, res) => {
      if (this.hang) {
        this.#held.add(res);
        req.resume();
        return;
      }
      const up = http.request(
        { host: base.hostname, port: base.port, path: req.url, method: req.method, headers: req.headers },
        (ur) => {
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          ur.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
  }

  static async start(target: string): Promise<HangingProxy> {
    const proxy = new HangingProxy(target);
    await new Promise<void>((r) => proxy.server.listen(0, '127.0.0.1', r));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const r of this.#held) r.destroy();
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.server.closeAllConnections();
    await closed;
  }
}

/** The fault center as a child process against `apiUrl`, leading once it logs "started leading". */
async function startFaultCenter(apiUrl: string, token: string): Promise<{ fc: AgentProcess; dir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-signals-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  const { kubeconfigYaml } = await import('../../src/sim/kube-api.js');
  fs.writeFileSync(kubeconfig, kubeconfigYaml(apiUrl, token), { mode: 0o600 });
  const fc = new AgentProcess(
    spawn(
      process.execPath,
      [
        FAULT_CENTER_JS,
        `-kubeconfig=${kubeconfig}`,
        '-grpcAddress=127.0.0.1:0',
        '-metricsAddress=',
        `-stateDir=${path.join(dir, 'state')}`,
        '-identity=fc-signals',
      ],
      { env: { PATH: process.env.PATH } },
    ),
  );
  extra.push({
    stop: async () => {
      await fc.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  });
  await until(() => logged(fc, 'started leading'), 'the fault center leading');
  return { fc, dir };
}

describe('issue [K] item 8: SIGTERM ends the fault center (architecture §4 exit 0)', () => {
  test(
    'while it leads and the API server stops answering (the Lease release hangs): exit 0',
    async () => {
      const api = await KubeApiStandIn.start();
      const proxy = await HangingProxy.start(api.url);
      extra.push({ stop: () => api.stop() }, proxy);
      const { fc } = await startFaultCenter(proxy.url, 'stand-in-token');
      proxy.hang = true;
      fc.child.kill('SIGTERM');
      const exit = await fc.waitExit(15_000);
      expect([exit.code, exit.signal]).toEqual([0, null]);
    },
    SIGNAL_TEST_MS,
  );

  test(
    'a second SIGTERM during that shutdown: exit 0 at once, not killed by the signal',
    async () => {
      const api = await KubeApiStandIn.start();
      const proxy = await HangingProxy.start(api.url);
      extra.push({ stop: () => api.stop() }, proxy);
      const { fc } = await startFaultCenter(proxy.url, 'stand-in-token');
      proxy.hang = true;
      fc.child.kill('SIGTERM');
      await until(() => logged(fc, 'stopping'), 'the shutdown');
      fc.child.kill('SIGTERM');
      const exit = await fc.waitExit(15_000);
      expect([exit.code, exit.signal]).toEqual([0, null]);
    },
    SIGNAL_TEST_MS,
  );
});
