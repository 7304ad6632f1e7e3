/**
 * `/metrics`, `/healthz` and `/readyz` of the fault center, under the timeouts and the connection cap of
 * {@link HttpLimits} (issue 12 item 7): idle and half-sent connections are closed, at most 64 are open.
 */
import type http from 'node:http';
import type { Registry } from 'prom-client';
import {
  createLimitedServer,
  httpLimits,
  type ConnectionStats,
  type HttpLimits,
} from '../observability/http-limits.js';

/** Parses `host:port` / `:port`. */
export function parseListenAddress(address: string): { host: string | undefined; port: number } {
  const i = address.lastIndexOf(':');
  const host = i > 0 ? address.slice(0, i).replace(/^\[|\]$/g, '') : undefined;
  const port = Number(address.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid address '${address}'`);
  return { host, port };
}

/** The running server of {@link startHttpServer}. */
export interface FaultCenterHttpServer {
  readonly server: http.Server;
  readonly port: number;
  /** Open, peak, evicted and refused connections. */
  connections(): ConnectionStats;
}

/**
 * Starts the server; `ready()` decides `/readyz`. Resolves with the bound port. `limits` (tests) overrides the
 * default timeouts and cap.
 */
export async function startHttpServer(
  address: string,
  registry: Registry,
  ready: () => boolean,
  limits: Partial<HttpLimits> = {},
): Promise<FaultCenterHttpServer> {
  const { host, port } = parseListenAddress(address);
  const checked = httpLimits(limits);
  const limited = createLimitedServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'Content-Type': registry.contentType });
          res.end(text);
        })
        .catch((e: unknown) => {
          res.writeHead(500);
          res.end(String(e));
        });
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok\n');
      return;
    }
    if (path === '/readyz') {
      const ok = ready();
      res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' });
      res.end(ok ? 'ok\n' : 'not leading\n');
      return;
    }
    res.writeHead(404);
    res.end();
  }, checked);
  const server = limited.server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address();
  return { server, port: typeof a === 'object' && a !== null ? a.port : port, connections: () => limited.stats() };
}
