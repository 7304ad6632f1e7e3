/**
 * Issue 12 item 7: the fault center's `/metrics`, `/healthz`, `/readyz` server (src/cluster/http-server.ts) closes
 * idle and half-sent connections and holds at most `maxConnections`, like the agent's.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { Registry } from 'prom-client';
import { startHttpServer, type FaultCenterHttpServer } from '../../src/cluster/http-server.js';
import type { HttpLimits } from '../../src/observability/http-limits.js';
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

const servers: FaultCenterHttpServer[] = [];
const sockets: HostileSocket[] = [];

async function start(limits: Partial<HttpLimits> = FAST): Promise<FaultCenterHttpServer> {
  const s = await startHttpServer('127.0.0.1:0', new Registry(), () => true, limits);
  servers.push(s);
  return s;
}

afterEach(async () => {
  destroyAll(sockets.splice(0));
  for (const s of servers.splice(0)) {
    s.server.closeAllConnections();
    await new Promise((r) => s.server.close(r));
  }
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
    const s = await startHttpServer('127.0.0.1:0', new Registry(), () => false);
    servers.push(s);
    expect(s.server.headersTimeout).toBe(10_000);
    expect(s.server.keepAliveTimeout).toBe(5_000);
    expect(s.server.maxConnections).toBe(65); // the cap plus the connection being placed
    expect(await getOnce(s.port, '/readyz')).toEqual({ status: 503, body: 'not leading\n' });
  });
});
