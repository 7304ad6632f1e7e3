/**
 * Hostile HTTP clients for the connection-limit tests of both HTTP servers (issue 12 item 7): idle sockets that
 * never send, slowloris sockets that send half a header block and stop, and a one-shot GET on its own connection.
 * A socket counts as held by the server until the server closes it (end or close seen by the client).
 */
import http from 'node:http';
import net from 'node:net';

/** One client socket and whether the server has let it go. */
export interface HostileSocket {
  readonly socket: net.Socket;
  /** True once the server ended or closed the connection. */
  released: boolean;
}

/**
 * Opens `n` sockets; `kind` `idle` sends nothing, `slowloris` sends half a header block. Resolves once connected.
 * `from` is the client address (any 127.x.y.z is this host on Linux; default 127.0.0.1).
 */
export async function openSockets(
  port: number,
  n: number,
  kind: 'idle' | 'slowloris',
  from = '127.0.0.1',
): Promise<HostileSocket[]> {
  const out: HostileSocket[] = [];
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const socket = net.connect({ port, host: '127.0.0.1', localAddress: from });
          const h: HostileSocket = { socket, released: false };
          out.push(h);
          const release = (): void => {
            h.released = true;
            resolve();
          };
          socket.on('error', release);
          socket.on('end', release);
          socket.on('close', release);
          socket.on('data', () => undefined);
          socket.on('connect', () => {
            if (kind === 'slowloris') socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ');
            resolve();
          });
        }),
    ),
  );
  return out;
}

/** Sockets the server still holds. */
export const held = (sockets: readonly HostileSocket[]): number => sockets.filter((s) => !s.released).length;

/** Closes every client socket. */
export function destroyAll(sockets: readonly HostileSocket[]): void {
  for (const s of sockets) s.socket.destroy();
}

/** GET on a fresh connection (no keep-alive agent): status and body, or the error. */
export function getOnce(port: number, path: string): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
  });
}

/** Polls `check` every 20 ms until it is true; throws naming `what` after `timeoutMs`. */
export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
