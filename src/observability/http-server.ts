/**
 * The one observability server of both programs: `/metrics`, `/healthz` and `/readyz` on `-metricsAddress`
 * (architecture §4; `""` disables it) of the agent and of the fault center, `/status` of the agent.
 *
 * - `/healthz`: the process is alive and its event loop answers — always 200 while the server runs.
 * - `/readyz`: 200 when every named readiness check passes, else 503 with the failing checks, one `name: reason`
 *   per line. The agent's (`readiness.ts`): `dcmi`, `kubelet`, `api`; the agent starts this server before anything
 *   else, so the probes answer from the first second (issue [J] item 1). Chip health is never a check: a bad chip
 *   must never fail a probe (it is reported to kubelet as Unhealthy instead). The fault center's: `lease` (this
 *   replica leads, so the Service sends gRPC only to the active replica).
 * - `/status`: the agent's state as JSON (`npuctl status`, issue [F] item 4), when the `status` option is given,
 *   else 404; 503 while the source throws {@link StatusUnavailableError} (the agent is still starting); a document
 *   over {@link MAX_STATUS_BYTES} is refused with 500 rather than sent.
 *
 * Every connection is under the timeouts and the connection cap of {@link HttpLimits} (issue 12 item 7). Nothing
 * here needs authentication: every endpoint is read-only, and docs/agent.md says what they reveal and how to keep
 * them off the network.
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { createLimitedServer, httpLimits, type ConnectionStats, type HttpLimits } from './http-limits.js';
import { listenAddress } from './listen-address.js';

/** Largest `/status` document served (bytes of JSON); `npuctl status` reads no more than this either. */
export const MAX_STATUS_BYTES = 1024 * 1024;

/** Thrown by a `/status` source that has nothing to show yet (answered 503 with the message). */
export class StatusUnavailableError extends Error {
  override readonly name = 'StatusUnavailableError';
}

/** One readiness check: `ok`, or why not. */
export type ReadinessCheck = () => { ok: true } | { ok: false; reason: string };

export interface ObservabilityServerOptions {
  /** `:port`, `host:port`, `[ip]:port` (the rule of `listen-address.ts`); port 0 picks a free one. */
  readonly address: string;
  readonly registry: Registry;
  /** Named readiness checks. */
  readonly readiness?: Readonly<Record<string, ReadinessCheck>>;
  /** The `/status` document (JSON-serialisable); `/status` answers 404 when absent. */
  readonly status?: () => unknown;
  /** Timeouts and connection cap; the defaults of `http-limits.ts` where not given. */
  readonly limits?: Partial<HttpLimits>;
}

/** The running server. */
export interface ObservabilityServer {
  readonly port: number;
  readonly host: string;
  /** The Node server, to read its settings (tests); closing goes through {@link ObservabilityServer.close}. */
  readonly server: http.Server;
  /** Open, peak, evicted and refused connections. */
  connections(): ConnectionStats;
  close(): Promise<void>;
}

/**
 * Starts the server; rejects with a `ListenAddressError` when the address is malformed (the programs check their
 * flag before, exit 2), with the bind error when it cannot be bound.
 */
export async function startObservabilityServer(options: ObservabilityServerOptions): Promise<ObservabilityServer> {
  const addr = listenAddress(options.address);
  const limited = createLimitedServer((req, res) => {
    void handle(options, req, res);
  }, httpLimits(options.limits));
  const server = limited.server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: addr.host === '' ? undefined : addr.host, port: addr.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const info = server.address() as AddressInfo;
  return {
    port: info.port,
    host: info.address,
    server,
    connections: () => limited.stats(),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: http.ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function handle(
  options: ObservabilityServerOptions,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const url = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, 'method not allowed\n');
    return;
  }
  try {
    if (url === '/metrics') {
      send(res, 200, await options.registry.metrics(), options.registry.contentType);
    } else if (url === '/healthz') {
      send(res, 200, 'ok\n');
    } else if (url === '/status' && options.status) {
      sendStatus(res, options.status);
    } else if (url === '/readyz') {
      const failing: string[] = [];
      for (const [name, check] of Object.entries(options.readiness ?? {})) {
        let r: ReturnType<ReadinessCheck>;
        try {
          r = check();
        } catch (err) {
          r = { ok: false, reason: `check threw: ${(err as Error).message}` };
        }
        if (!r.ok) failing.push(`${name}: ${r.reason}`);
      }
      if (failing.length === 0) send(res, 200, 'ok\n');
      else send(res, 503, `${failing.join('\n')}\n`);
    } else {
      send(res, 404, 'not found\n');
    }
  } catch (err) {
    send(res, 500, `${(err as Error).message}\n`);
  }
}

function sendStatus(res: http.ServerResponse, status: () => unknown): void {
  let body: string | undefined;
  try {
    body = JSON.stringify(status());
  } catch (err) {
    send(res, err instanceof StatusUnavailableError ? 503 : 500, `status unavailable: ${(err as Error).message}\n`);
    return;
  }
  if (body === undefined) {
    send(res, 500, 'status unavailable: the document is not JSON\n');
    return;
  }
  const bytes = Buffer.byteLength(body);
  if (bytes > MAX_STATUS_BYTES) {
    send(res, 500, `status unavailable: the document is ${bytes} bytes, over the limit of ${MAX_STATUS_BYTES}\n`);
    return;
  }
  res.setHeader('cache-control', 'no-store');
  send(res, 200, `${body}\n`, 'application/json; charset=utf-8');
}
