/**
 * Connection limits of the HTTP servers of the agent (`/metrics`, `/healthz`, `/readyz`, `/status`) and of the fault
 * center (`/metrics`, `/healthz`, `/readyz`): timeouts on every connection and a cap on open connections (issue 12
 * item 7: 1,300 idle connections held forever exhausted the agent's 1,024 file descriptors, state saves and the
 * kubelet socket failed with them).
 *
 * - Timeouts: the whole header block within `headersTimeout` (a slowloris client trickling half a header is cut
 *   off, so is a client that connects and sends nothing), the whole request within `requestTimeout`, an idle
 *   keep-alive connection closed after `keepAliveTimeout`, any connection without traffic for `idleTimeout` closed
 *   (a client that stops reading a response). Node checks the first two every `checkInterval`.
 * - Cap: at most `maxConnections` connections are open. A connection over the cap takes the place of one that is not
 *   being answered (waiting for its request, or idle between requests): the oldest of those of the client address
 *   that holds the most connections. So a flood of idle sockets from one address only replaces its own, and cannot
 *   lock out the kubelet probe, which comes from the node's address and sends its request at once. When every open
 *   connection is being answered the newcomer is closed instead. Either way the process never holds more than the
 *   cap (plus the one being accepted), so the descriptors for state saves and the kubelet sockets stay free.
 */
import http from 'node:http';
import type { Socket } from 'node:net';

/** Limits of one HTTP server, in ms and connections. */
export interface HttpLimits {
  /** Open connections at most (64). */
  readonly maxConnections: number;
  /** The request's header block must be complete within this time of its start (10 s). */
  readonly headersTimeout: number;
  /** The whole request must be received within this time (10 s; ≥ `headersTimeout`). */
  readonly requestTimeout: number;
  /** An idle keep-alive connection is closed after this (5 s). */
  readonly keepAliveTimeout: number;
  /** A connection without any traffic is closed after this (15 s). */
  readonly idleTimeout: number;
  /**
   * How often `headersTimeout` and `requestTimeout` are checked (5 s). Node runs this check on a repeating timer
   * whether or not a connection is open, so it wakes the idle process once per period (issue [P] item 2); at 5 s a
   * stalled request is cut 10–15 s after its start, no later than the 15 s `idleTimeout` of a silent one.
   */
  readonly checkInterval: number;
}

/** The defaults; the agent and the fault center run with these (architecture §4 has no flag for them). */
export const DEFAULT_HTTP_LIMITS: HttpLimits = Object.freeze({
  maxConnections: 64,
  headersTimeout: 10_000,
  requestTimeout: 10_000,
  keepAliveTimeout: 5_000,
  idleTimeout: 15_000,
  checkInterval: 5_000,
});

/** A limit that is not a positive integer, or timeouts that contradict each other. */
export class HttpLimitError extends RangeError {
  override readonly name = 'HttpLimitError';
}

/** {@link DEFAULT_HTTP_LIMITS} with `overrides` applied; throws {@link HttpLimitError} naming a bad value. */
export function httpLimits(overrides: Partial<HttpLimits> = {}): HttpLimits {
  const l: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...overrides };
  for (const key of Object.keys(DEFAULT_HTTP_LIMITS) as (keyof HttpLimits)[]) {
    const v: unknown = l[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) {
      throw new HttpLimitError(`HTTP limit ${key} must be a positive integer, got ${String(v)}`);
    }
  }
  if (l.requestTimeout < l.headersTimeout) {
    throw new HttpLimitError(
      `HTTP limit requestTimeout (${l.requestTimeout} ms) must not be below headersTimeout (${l.headersTimeout} ms)`,
    );
  }
  return l;
}

/** Counters of the cap, for tests, benches and logs. */
export interface ConnectionStats {
  /** Connections open now (never above the cap once a new one has been placed). */
  readonly open: number;
  /** Highest `open` seen. */
  readonly peak: number;
  /** Idle connections closed to make room for a new one. */
  readonly evicted: number;
  /** New connections closed because every open one was being answered. */
  readonly refused: number;
}

/** An HTTP server under {@link HttpLimits}. */
export interface LimitedServer {
  readonly server: http.Server;
  stats(): ConnectionStats;
}

interface Conn {
  /** The client's address (the key of the per-address count). */
  readonly address: string;
  /** Requests being answered on the connection (HTTP/1.1 pipelining: more than one). */
  busy: number;
}

/** Creates an `http.Server` running `handler` under `limits` (not yet listening). */
export function createLimitedServer(handler: http.RequestListener, limits: HttpLimits): LimitedServer {
  const l = httpLimits(limits);
  const server = http.createServer(
    {
      headersTimeout: l.headersTimeout,
      requestTimeout: l.requestTimeout,
      keepAliveTimeout: l.keepAliveTimeout,
      connectionsCheckingInterval: l.checkInterval,
    },
    handler,
  );
  server.setTimeout(l.idleTimeout); // no 'timeout' listener: Node destroys the socket
  // Backstop only: the 'connection' listener below brings the count back to the cap at once; the one extra slot is
  // the connection being placed.
  server.maxConnections = l.maxConnections + 1;
  // Map order is the eviction order: a connection moves to the end whenever it becomes idle.
  const conns = new Map<Socket, Conn>();
  const perAddress = new Map<string, number>();
  const forget = (socket: Socket): void => {
    const conn = conns.get(socket);
    if (!conn) return;
    conns.delete(socket);
    const n = (perAddress.get(conn.address) ?? 1) - 1;
    if (n <= 0) perAddress.delete(conn.address);
    else perAddress.set(conn.address, n);
  };
  /** The oldest idle connection of the address holding the most connections; `newcomer` only when nothing else. */
  const victimFor = (newcomer: Socket): Socket => {
    let victim = newcomer;
    let most = 0;
    for (const [s, c] of conns) {
      if (c.busy > 0 || s === newcomer) continue;
      const n = perAddress.get(c.address) ?? 0;
      if (n > most) {
        victim = s;
        most = n;
      }
    }
    return victim;
  };
  let peak = 0;
  let evicted = 0;
  let refused = 0;
  server.on('drop', () => {
    refused += 1;
  });
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    conns.set(socket, { address, busy: 0 });
    perAddress.set(address, (perAddress.get(address) ?? 0) + 1);
    socket.once('close', () => forget(socket));
    if (conns.size > l.maxConnections) {
      const victim = victimFor(socket);
      if (victim === socket) refused += 1;
      else evicted += 1;
      forget(victim);
      victim.destroy();
    }
    peak = Math.max(peak, conns.size);
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    const conn = conns.get(socket);
    if (!conn) return;
    conn.busy += 1;
    res.once('close', () => {
      conn.busy -= 1;
      if (conn.busy === 0 && conns.delete(socket)) conns.set(socket, conn);
    });
  });
  return {
    server,
    stats: () => ({ open: conns.size, peak, evicted, refused }),
  };
}
