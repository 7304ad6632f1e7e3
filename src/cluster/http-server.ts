/**
 * `/metrics`, `/healthz` and `/readyz` of the fault center.
 */
import http from 'node:http';
import type { Registry } from 'prom-client';

/** Parses `host:port` / `:port`. */
export function parseListenAddress(address: string): { host: string | undefined; port: number } {
  const i = address.lastIndexOf(':');
  const host = i > 0 ? address.slice(0, i).replace(/^\[|\]$/g, '') : undefined;
  const port = Number(address.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid address '${address}'`);
  return { host, port };
}

/** Starts the server; `ready()` decides `/readyz`. Resolves with the bound port. */
export async function startHttpServer(
  address: string,
  registry: Registry,
  ready: () => boolean,
): Promise<{ server: http.Server; port: number }> {
  const { host, port } = parseListenAddress(address);
  const server = http.createServer((req, res) => {
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
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address();
  return { server, port: typeof a === 'object' && a !== null ? a.port : port };
}
