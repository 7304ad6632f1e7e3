/**
 * The fault center's `/metrics`, `/healthz`, `/readyz` through the one observability server of both programs
 * (src/observability/http-server.ts, issue [H] item 5), its readiness the named check `lease`
 * ({@link faultCenterReadiness}): issue 12 item 7, it closes idle and half-sent connections and holds at most
 * `maxConnections`, like the agent's.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { Counter, Registry } from 'prom-client';
import { faultCenterReadiness } from '../../src/cluster/fault-center.js';
import type { HttpLimits } from '../../src/observability/http-limits.js';
import { startObservabilityServer, type ObservabilityServer } from '../../src/observability/http-server.js';
import { destroyAll, getOnce, held, openSockets, until, type HostileSocket } from '../observability/hostile-clients.js';

const CAP = 6;
const FAST: Partial<HttpLimits> = {
  maxConnections: CAP,
  headersTimeout: 1_500,
  requestTimeout: 1_500,
  keepAliveTimeout: 200,
  idleTimeout: 3_000,
  checkInterval: 50,
};

/** What `faultCenterReadiness` reads of a `FaultCenter`. */
interface Term {
  ready: boolean;
  isLeader: boolean;
}

const LEADER: Term = { ready: true, isLeader: true };

const servers: ObservabilityServer[] = [];
const sockets: HostileSocket[] = [];

/** The server as src/cli/fault-center.ts starts it. */
async function start(
  term: Term = LEADER,
  limits: Partial<HttpLimits> | 'defaults' = FAST,
  registry = new Registry(),
): Promise<ObservabilityServer> {
  const s = await startObservabilityServer({
    address: '127.0.0.1:0',
    registry,
    readiness: faultCenterReadiness(term),
    ...(limits === 'defaults' ? {} : { limits }),
  });
  servers.push(s);
  return s;
}

/** One GET on a fresh connection; a connection error fails the test. */
async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const r = await getOnce(port, path);
  if ('error' in r) throw new Error(`GET ${path}: ${r.error}`);
  return r;
}

afterEach(async () => {
  destroyAll(sockets.splice(0));
  for (const s of servers.splice(0)) await s.close();
});

describe('fault center HTTP server (issue 12 item 7)', () => {
  test('issue 12 item 7 idle and slowloris connections are closed after the header timeout', async () => {
    const s = await start();
    const list = [...(await openSockets(s.port, 2, 'idle')), ...(await openSockets(s.port, 2, 'slowloris'))];
    sockets.push(...list);
    await until(() => held(list) === 0, 'the idle and slowloris sockets closed by the server');
    expect(s.connections().open).toBe(0);
  });

  test('issue 12 item 7 cap + N idle sockets: never more than the cap held, /healthz and /readyz answer, all closed after the timeout', async () => {
    const s = await start();
    const list: HostileSocket[] = [];
    for (let i = 0; i < 4; i++) {
      const batch = await openSockets(s.port, CAP, i % 2 === 0 ? 'idle' : 'slowloris');
      sockets.push(...batch);
      list.push(...batch);
      await until(() => held(list) <= CAP, 'the server back at its cap');
    }
    expect(held(list)).toBe(CAP);
    expect(s.connections()).toMatchObject({ open: CAP, evicted: 3 * CAP, refused: 0 });
    expect(s.connections().peak).toBeLessThanOrEqual(CAP);
    expect(await getOnce(s.port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    expect(await getOnce(s.port, '/readyz')).toEqual({ status: 200, body: 'ok\n' });
    await until(() => held(list) === 0, 'every socket closed after the header timeout');
    await until(() => s.connections().open === 0, 'no connection open');
  });

  test('without limits the server runs under the defaults (cap 64)', async () => {
    const s = await start({ ready: false, isLeader: false }, 'defaults');
    expect(s.server.headersTimeout).toBe(10_000);
    expect(s.server.keepAliveTimeout).toBe(5_000);
    expect(s.server.maxConnections).toBe(65); // the cap plus the connection being placed
    expect(await getOnce(s.port, '/readyz')).toEqual({ status: 503, body: 'lease: not leading\n' });
  });
});

describe('fault center endpoints on the shared server (issue [H] item 5)', () => {
  test('/readyz: 503 on a standby and on a leader that has not read its inputs, 200 once it has', async () => {
    const term: Term = { ready: false, isLeader: false };
    const s = await start(term);
    const answers = [await get(s.port, '/readyz')];
    term.isLeader = true;
    answers.push(await get(s.port, '/readyz'));
    term.ready = true;
    answers.push(await get(s.port, '/readyz'));
    expect(answers).toEqual([
      { status: 503, body: 'lease: not leading\n' },
      { status: 503, body: 'lease: leading, inputs not read yet\n' },
      { status: 200, body: 'ok\n' },
    ]);
  });

  test('/healthz is 200 on a standby; /metrics serves the registry; /status and other paths 404', async () => {
    const registry = new Registry();
    new Counter({ name: 'ascend_fault_center_cycles_total', help: 'cycles', registers: [registry] }).inc(3);
    const s = await start({ ready: false, isLeader: false }, FAST, registry);
    const metrics = await get(s.port, '/metrics');
    expect([
      (await get(s.port, '/healthz')).status,
      metrics.status,
      metrics.body.includes('ascend_fault_center_cycles_total 3'),
      (await get(s.port, '/status')).status,
      (await get(s.port, '/nothing')).status,
    ]).toEqual([200, 200, true, 404, 404]);
  });

  test('a request other than GET or HEAD is refused with 405 (the endpoints are read-only)', async () => {
    const s = await start();
    const r = await fetch(`http://127.0.0.1:${s.port}/metrics`, { method: 'POST' });
    expect([r.status, await r.text()]).toEqual([405, 'method not allowed\n']);
  });
});
