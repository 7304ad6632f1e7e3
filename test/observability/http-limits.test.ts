/**
 * Issue 12 item 7: the agent's HTTP server (`-metricsAddress`) closes idle and half-sent connections and holds at
 * most `maxConnections` (src/observability/http-limits.ts). Short limits keep the tests quick; every wait polls with
 * a generous deadline.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { Gauge, Registry } from 'prom-client';
import { DEFAULT_HTTP_LIMITS, httpLimits, type HttpLimits } from '../../src/observability/http-limits.js';
import { startObservabilityServer, type ObservabilityServer } from '../../src/observability/http-server.js';
import { destroyAll, getOnce, held, openSockets, until, type HostileSocket } from './hostile-clients.js';

const CAP = 8;
const FAST: Partial<HttpLimits> = {
  maxConnections: CAP,
  headersTimeout: 400,
  requestTimeout: 400,
  keepAliveTimeout: 200,
  idleTimeout: 800,
  checkInterval: 50,
};

const servers: ObservabilityServer[] = [];
const sockets: HostileSocket[] = [];

async function start(registry = new Registry(), limits: Partial<HttpLimits> = FAST): Promise<ObservabilityServer> {
  const s = await startObservabilityServer({ address: '127.0.0.1:0', registry, limits });
  servers.push(s);
  return s;
}

async function open(port: number, n: number, kind: 'idle' | 'slowloris', from?: string): Promise<HostileSocket[]> {
  const list = await openSockets(port, n, kind, from);
  sockets.push(...list);
  return list;
}

afterEach(async () => {
  destroyAll(sockets.splice(0));
  for (const s of servers.splice(0)) await s.close();
});

describe('agent HTTP server: timeouts (issue 12 item 7)', () => {
  test('issue 12 item 7 a client that connects and sends nothing is closed after the header timeout', async () => {
    const s = await start();
    const idle = await open(s.port, 3, 'idle');
    await until(() => held(idle) === 0, 'the idle sockets closed by the server');
    expect(s.connections().open).toBe(0);
  });

  test('issue 12 item 7 a slowloris client (half a header block, then nothing) is closed after the header timeout', async () => {
    const s = await start();
    const slow = await open(s.port, 3, 'slowloris');
    await until(() => held(slow) === 0, 'the slowloris sockets closed by the server');
    expect(s.connections().open).toBe(0);
  });

  test('issue 12 item 7 an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const s = await start();
    const [c] = await open(s.port, 1, 'idle');
    let answer = '';
    c!.socket.on('data', (d: Buffer) => (answer += d.toString()));
    c!.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => answer.includes('ok\n'), 'the /healthz answer');
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer.toLowerCase()).toContain('keep-alive');
    await until(() => c!.released, 'the keep-alive connection closed by the server');
  });

  test('the defaults are the documented ones and bad limits are refused naming the value', () => {
    expect(httpLimits()).toEqual({
      maxConnections: 64,
      headersTimeout: 10_000,
      requestTimeout: 10_000,
      keepAliveTimeout: 5_000,
      idleTimeout: 15_000,
      checkInterval: 5_000,
    });
    expect(httpLimits()).toEqual(DEFAULT_HTTP_LIMITS);
    expect(() => httpLimits({ maxConnections: 0 })).toThrow(
      'HTTP limit maxConnections must be a positive integer, got 0',
    );
    expect(() => httpLimits({ idleTimeout: 1.5 })).toThrow('idleTimeout must be a positive integer, got 1.5');
    expect(() => httpLimits({ headersTimeout: 2000, requestTimeout: 1000 })).toThrow(
      'requestTimeout (1000 ms) must not be below headersTimeout (2000 ms)',
    );
  });
});

describe('agent HTTP server: connection cap (issue 12 item 7)', () => {
  test('issue 12 item 7 cap + N idle sockets: the server never holds more than the cap, /healthz answers, all closed after the timeout', async () => {
    // long header timeout: the sockets stay until the cap has been checked
    const s = await start(new Registry(), { ...FAST, headersTimeout: 3_000, requestTimeout: 3_000 });
    const N = 3 * CAP;
    const all: HostileSocket[] = [];
    for (let i = 0; i < N + CAP; i += CAP) {
      all.push(...(await open(s.port, CAP, i % (2 * CAP) === 0 ? 'idle' : 'slowloris')));
      await until(() => held(all) <= CAP, 'the server back at its cap');
      expect(s.connections().open).toBeLessThanOrEqual(CAP);
    }
    expect(all).toHaveLength(N + CAP);
    expect(held(all)).toBe(CAP);
    expect(s.connections()).toMatchObject({ open: CAP, evicted: N, refused: 0 });
    expect(s.connections().peak).toBeLessThanOrEqual(CAP);
    // the probe takes the place of an idle socket
    expect(await getOnce(s.port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    await until(() => held(all) === 0, 'every socket closed after the header timeout');
    expect(await getOnce(s.port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    await until(() => s.connections().open === 0, 'no connection open');
  });

  test('issue 12 item 7 a flood from one address replaces its own connections, not the one of another address', async () => {
    const s = await start(new Registry(), { ...FAST, headersTimeout: 5_000, requestTimeout: 5_000 });
    const [kubelet] = await open(s.port, 1, 'idle', '127.0.0.2'); // connected, request not sent yet
    const flood: HostileSocket[] = [];
    for (let i = 0; i < 3; i++) {
      flood.push(...(await open(s.port, CAP, 'idle')));
      await until(() => held(flood) <= CAP - 1, 'the flood back at the cap minus the other client');
    }
    expect(kubelet!.released).toBe(false);
    let answer = '';
    kubelet!.socket.on('data', (d: Buffer) => (answer += d.toString()));
    kubelet!.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await until(() => answer.endsWith('ok\n'), 'the /healthz answer on the older connection');
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(s.connections()).toMatchObject({ evicted: 2 * CAP + 1, refused: 0 });
  });

  test('issue 12 item 7 when every open connection is being answered, a new one is refused', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const registry = new Registry();
    new Gauge({
      name: 'slow_gauge',
      help: 'answers when the test says so',
      registers: [registry],
      async collect() {
        await gate;
        this.set(1);
      },
    });
    const s = await start(registry, { ...FAST, idleTimeout: 10_000 });
    const busy = Array.from({ length: CAP }, () => getOnce(s.port, '/metrics'));
    await until(() => s.connections().open === CAP, 'the cap full of /metrics requests');
    // give the server the time to read every request: all connections are being answered
    await new Promise((r) => setTimeout(r, 200));
    const refused = await getOnce(s.port, '/healthz');
    expect(refused).toHaveProperty('error');
    expect(s.connections()).toMatchObject({ refused: 1, evicted: 0 });
    release();
    for (const r of await Promise.all(busy)) expect(r).toMatchObject({ status: 200 });
    expect(await getOnce(s.port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
  });
});
