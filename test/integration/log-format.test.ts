/**
 * Issue [H] item 5: both programs log in one format through src/observability/logger.ts — every line
 * `{"level":"<name>","time":"<ISO 8601 UTC>","pid":N,"name":"<program>",...,"msg":"..."}`, the first line
 * `effective configuration` with the same keys in the same order — and take `-metricsAddress` by one rule, a bad
 * address exiting 2 with the reason on stderr. The built programs (`npm run build`) run as child processes: the
 * agent in the sandbox of test/helpers/agent-process.ts, the fault center against the same API stand-in.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { AgentProcess, AgentSandbox, runAgentOnce } from '../helpers/agent-process.js';

const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
/** The keys pino writes before the line's own fields, in this order. */
const HEAD = ['level', 'time', 'pid', 'name'];

let sb: AgentSandbox;
let agent: AgentProcess;
let center: AgentProcess;

function logged(p: AgentProcess, msg: string): boolean {
  return p.logs().some((l) => l.msg === msg);
}

/** The fault center's arguments for the sandbox's API stand-in. */
function centerArgs(extra: string[] = []): string[] {
  return [
    FAULT_CENTER_JS,
    `-kubeconfig=${sb.kubeconfig}`,
    '-metricsAddress=127.0.0.1:0',
    '-grpcAddress=127.0.0.1:0',
    `-stateDir=${path.join(sb.dir, 'fault-center')}`,
    '-identity=it-log-format',
    ...extra,
  ];
}

beforeAll(async () => {
  sb = await AgentSandbox.create(undefined, { prefix: 'npu-it-log-' });
  agent = await sb.start();
  center = new AgentProcess(spawn(process.execPath, centerArgs(), { env: { PATH: process.env.PATH } }));
  await sb.until(() => logged(agent, 'metrics and probes listening'), 'the agent serving /metrics', 20_000);
  await sb.until(() => logged(center, 'metrics listening'), `the fault center serving (${center.stderr})`, 20_000);
}, 60_000);

afterAll(async () => {
  await center?.kill();
  await sb?.close();
});

describe('issue [H] item 5 one log format for both programs', () => {
  test('every line of both: a level name, ISO 8601 UTC time, pid and the program name first', () => {
    for (const [p, name] of [
      [agent, 'ascend-npu-agent'],
      [center, 'ascend-fault-center'],
    ] as const) {
      const lines = p.logs();
      expect(lines.length).toBeGreaterThan(1);
      for (const l of lines) {
        expect([Object.keys(l).slice(0, 4), LEVELS.includes(String(l.level)), ISO_UTC.test(String(l.time))]).toEqual([
          HEAD,
          true,
          true,
        ]);
        expect([l.pid, l.name, typeof l.msg]).toEqual([p.child.pid, name, 'string']);
      }
    }
  });

  test('the first line of both has the same shape: effective configuration, same keys in the same order', () => {
    const [a, c] = [agent.logs()[0]!, center.logs()[0]!];
    expect(Object.keys(c)).toEqual(Object.keys(a));
    expect(Object.keys(a)).toEqual([...HEAD, 'version', 'config', 'msg']);
    expect([a.level, a.msg, c.level, c.msg]).toEqual([
      'info',
      'effective configuration',
      'info',
      'effective configuration',
    ]);
    expect(c.version).toBe(a.version);
    expect(c.config).toMatchObject({ metricsAddress: '127.0.0.1:0', identity: 'it-log-format', logLevel: 'info' });
  });
});

describe('issue [H] item 5 one listen-address rule: a bad -metricsAddress exits 2 in both programs', () => {
  const reason = 'must be [host]:port with a port in [0, 65535], or "" to disable: an IPv6 address must be in brackets';

  test('the agent', async () => {
    const r = await runAgentOnce(sb.flags(['-metricsAddress=::1:9464']), sb.env());
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(`-metricsAddress=::1:9464 ${reason}`)]);
  });

  test('the fault center, before it starts anything (no log line)', async () => {
    const p = new AgentProcess(
      spawn(process.execPath, centerArgs(['-metricsAddress=::1:9465']), { env: { PATH: process.env.PATH } }),
    );
    const exit = await p.waitExit(15_000).finally(() => p.kill());
    expect([exit.code, p.stderr, p.logs()]).toEqual([
      2,
      `ascend-fault-center: -metricsAddress=::1:9465 ${reason}, e.g. [::1]:9465\n`,
      [],
    ]);
  });
});
