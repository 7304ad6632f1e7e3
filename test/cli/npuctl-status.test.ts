import { describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Registry } from 'prom-client';
import { UsageError } from '../../src/cli/npuctl/io.js';
import {
  AgentUnreachableError,
  parseStatus,
  renderStatus,
  statusCommand,
  statusUrl,
} from '../../src/cli/npuctl/status.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { MAX_STATUS_BYTES, startObservabilityServer } from '../../src/observability/http-server.js';
import type { AgentStatusDocument } from '../../src/observability/status.js';

const T0 = Date.UTC(2026, 0, 1);

/** An 8-chip node in an L5 episode of job1 on chips 0-3 (ring of 4 for brevity); chip 5 in an offline reset. */
function doc(): AgentStatusDocument {
  const chips = Array.from({ length: 8 }, (_, i) => ({
    logicId: i,
    phyId: i,
    name: `Ascend910-${i}`,
    health: i === 5 ? 'Unhealthy' : 'Healthy',
    networkHealth: 'Healthy',
    level: i === 5 ? 'RestartNPU' : 'NotHandleFault',
  }));
  return {
    version: 1,
    node: 'node-a',
    time: new Date(T0).toISOString(),
    chips,
    reset: {
      mode: 1,
      online: {
        tasks: [
          {
            task: 'job1',
            namespace: 'default',
            state: 'resetting',
            since: T0,
            policy: 'reset',
            initialPolicy: 'reset',
            rankChips: [0, 1, 2, 3],
          },
        ],
        chips: [0, 1, 2, 3].map((logicId) => ({
          logicId,
          state: logicId === 1 ? 'resetting' : 'inReset',
          task: 'job1',
        })),
        healthOverrides: { healthy: [1], networkHealthy: [0, 1, 2, 3] },
      },
      offline: chips.map((c) => ({
        logicId: c.logicId,
        state: c.logicId === 5 ? 'waitingBoot' : 'idle',
        tokens: c.logicId === 5 ? 2 : 3,
        ...(c.logicId === 6 && { lastError: 'boot status of chip 6 failed: timeout' }),
      })),
      resetting: { '0': 'job1', '1': 'job1', '2': 'job1', '3': 'job1', '4': 'offline', '5': 'offline' },
      tasks: ['job1'],
      problems: ['pod default/p2: annotation hccl/rankIndex is missing; pod ignored'],
    },
  };
}

async function withAgent<T>(status: (() => unknown) | undefined, fn: (url: string) => Promise<T>): Promise<T> {
  const server = await startObservabilityServer({
    address: '127.0.0.1:0',
    registry: new Registry(),
    ...(status ? { status } : {}),
  });
  try {
    return await fn(`http://127.0.0.1:${server.port}`);
  } finally {
    await server.close();
  }
}

/** A raw HTTP server answering every request with `handler`. */
async function withRaw<T>(handler: http.RequestListener, fn: (url: string) => Promise<T>): Promise<T> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

/** A port nobody listens on. */
async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('npuctl status: URL', () => {
  test('a base URL gets /status; a URL ending in /status is kept; a path prefix is kept', () => {
    expect(statusUrl('http://127.0.0.1:9464').toString()).toBe('http://127.0.0.1:9464/status');
    expect(statusUrl('http://10.0.0.1:9464/status').toString()).toBe('http://10.0.0.1:9464/status');
    expect(statusUrl('https://proxy/agents/n1/').toString()).toBe('https://proxy/agents/n1/status');
  });

  test.each([['not a url'], ['ftp://host/'], ['http://u:p@host/'], ['http://host/?x=1']])(
    'bad --agent %s is a usage error naming it',
    (agent) => {
      expect(() => statusUrl(agent)).toThrow(UsageError);
      expect(() => statusUrl(agent)).toThrow(JSON.stringify(agent));
    },
  );
});

describe('npuctl status: reading the agent', () => {
  test('the table has one row per chip and engine with state, task and tokens', async () => {
    const text = await withAgent(doc, (url) => statusCommand({ agent: url }));
    const lines = text.split('\n');
    expect(lines[0]).toBe(`node node-a at ${new Date(T0).toISOString()}`);
    expect(text).toContain('-hotReset=1, task-aware engine on');
    const header = lines.find((l) => l.startsWith('CHIP'))!;
    expect(header.split(/\s+/)).toEqual(['CHIP', 'LOGIC', 'ENGINE', 'STATE', 'TASK', 'TOKENS', 'HEALTH']);
    const row = (chip: string, engine: string): string[] | undefined =>
      lines.map((l) => l.split(/\s+/)).find((c) => c[0] === chip && c[2] === engine);
    expect(row('Ascend910-1', 'online')).toEqual(['Ascend910-1', '1', 'online', 'resetting', 'job1', '-', 'Healthy']);
    expect(row('Ascend910-5', 'offline')).toEqual([
      'Ascend910-5',
      '5',
      'offline',
      'waitingBoot',
      'offline',
      '2',
      'Unhealthy',
    ]);
    expect(row('Ascend910-7', 'offline')).toEqual(['Ascend910-7', '7', 'offline', 'idle', '-', '3', 'Healthy']);
    expect(row('Ascend910-7', 'online')).toBeUndefined();
  });

  test('the tasks follow with state, since, policy and chips; errors and problems are listed', async () => {
    const text = await withAgent(doc, (url) => statusCommand({ agent: url }));
    const taskLine = text.split('\n').find((l) => l.startsWith('job1'))!;
    expect(taskLine.split(/\s+/)).toEqual([
      'job1',
      'default',
      'resetting',
      new Date(T0).toISOString(),
      'reset',
      '0,1,2,3',
    ]);
    expect(text).toContain('Ascend910-6: boot status of chip 6 failed: timeout');
    expect(text).toContain('pod default/p2: annotation hccl/rankIndex is missing');
  });

  test('--json prints the document as sent, one line', async () => {
    const text = await withAgent(doc, (url) => statusCommand({ agent: url, json: true }));
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trim().includes('\n')).toBe(false);
    expect(JSON.parse(text)).toEqual(doc());
  });

  test('an agent without the reset layer: chips only', () => {
    const view = parseStatus({ ...doc(), reset: null }, 'u');
    const text = renderStatus(view);
    expect(text).toContain('reset layer: not running');
    expect(text).toContain('Ascend910-5  5      Unhealthy');
  });

  test('mode 2: no task section, the offline engine rows only', () => {
    const d = doc();
    const text = renderStatus(parseStatus({ ...d, reset: { ...d.reset!, mode: 2, online: null } }, 'u'));
    expect(text).toContain('-hotReset=2, task-aware engine off');
    expect(text).not.toContain(' online ');
    expect(text).not.toContain('NAMESPACE');
  });

  test('unreachable agent: AgentUnreachableError naming the URL', async () => {
    const port = await closedPort();
    const e = await rejection(statusCommand({ agent: `http://127.0.0.1:${port}` }));
    expect(e).toBeInstanceOf(AgentUnreachableError);
    expect(e.message).toContain(`http://127.0.0.1:${port}/status`);
    expect(e.message).toContain('connection refused');
  });

  test('an agent without /status (404) is named as such', async () => {
    const e = await withAgent(undefined, (url) => rejection(statusCommand({ agent: url })));
    expect(e).toBeInstanceOf(AgentUnreachableError);
    expect(e.message).toContain('HTTP 404');
  });

  test('a server that never answers: error after the timeout', async () => {
    const e = await withRaw(
      () => undefined,
      (url) => rejection(statusCommand({ agent: url, timeoutMs: 200 })),
    );
    expect(e).toBeInstanceOf(AgentUnreachableError);
    expect(e.message).toContain('no answer in time');
  });

  test('a body over the size limit is not read to the end', async () => {
    const e = await withRaw(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        for (let i = 0; i <= MAX_STATUS_BYTES / chunk.length; i++) res.write(chunk);
        res.end('{}');
      },
      (url) => rejection(statusCommand({ agent: url })),
    );
    expect(e).toBeInstanceOf(AgentUnreachableError);
    expect(e.message).toContain(`over the limit of ${MAX_STATUS_BYTES}`);
  });

  test.each([
    ['not JSON', 'oops', 'not JSON'],
    ['another version', JSON.stringify({ ...doc(), version: 2 }), '$.version is 2'],
    ['a wrong type', JSON.stringify({ ...doc(), chips: [{ logicId: 'x' }] }), '$.chips[0].logicId is not a number'],
  ])('a document that is %s is rejected naming the problem', async (_what, body, message) => {
    const e = await withRaw(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      },
      (url) => rejection(statusCommand({ agent: url })),
    );
    expect(e).toBeInstanceOf(AgentUnreachableError);
    expect(e.message).toContain(message);
  });
});

describe('npuctl status: process exit status', () => {
  const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', path.join(PROJECT_ROOT, 'src', 'cli', 'npuctl.ts'), ...args],
        { cwd: PROJECT_ROOT },
        (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });

  test('0 with the table when the agent answers', async () => {
    const r = await withAgent(doc, (url) => run(['status', '--agent', url]));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('CHIP');
  });

  test('1 when the agent cannot be reached, naming the URL on stderr', async () => {
    const port = await closedPort();
    const r = await run(['status', '--agent', `http://127.0.0.1:${port}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`cannot reach the agent at http://127.0.0.1:${port}/status`);
  });

  test.each([
    [['status', '--agent', 'ftp://x']],
    [['status', '--bogus']],
    [['status', '--timeout', 'soon']],
    [['status', 'extra']],
  ])('2 on bad arguments: %j', async (args) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toBe('');
  });
});
