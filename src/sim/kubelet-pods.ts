/**
 * The kubelet's read-only `GET /pods` (spec I.6) for the simulator: HTTPS (TLS 1.3, a self-signed certificate made
 * with the openssl command line at start), a bearer token required (401 without the right one), the node's pods as
 * a `PodList`. Other paths are 404, other methods 405. The pods come from a callback (the tests: the API
 * stand-in's store), so the agent's `-getPodFromKubelet` sees what the API server holds.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

/** Options of {@link KubeletPodsServer.start}. */
export interface KubeletPodsOptions {
  /** The bearer token accepted. */
  readonly token: string;
  /** The pods listed (`items` of the PodList). */
  readonly pods: () => readonly unknown[];
  /** Listen address (default 127.0.0.1, port 0 = any free port). */
  readonly host?: string;
  readonly port?: number;
}

function openssl(args: readonly string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', [...args], { cwd, timeout: 30_000 }, (err) =>
      err ? reject(new Error(err.message)) : resolve(),
    );
  });
}

/** The simulated kubelet `/pods` endpoint. */
export class KubeletPodsServer {
  /** Requests seen, by answer status (tests). */
  readonly requests: { status: number; authorized: boolean }[] = [];
  /** When set, every request is answered with this status (an unhealthy kubelet). */
  failWith: number | undefined;

  private constructor(
    private readonly server: https.Server,
    private readonly dir: string,
  ) {}

  /** Makes a certificate, listens; resolves when ready. */
  static async start(o: KubeletPodsOptions): Promise<KubeletPodsServer> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubelet-pods-'));
    try {
      await openssl(
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=kubelet',
          '-keyout',
          'key.pem',
          '-out',
          'cert.pem',
        ],
        dir,
      );
    } catch (err) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(`kubelet /pods: cannot make a certificate with openssl: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const ref: { self?: KubeletPodsServer } = {};
    const server = https.createServer(
      {
        key: fs.readFileSync(path.join(dir, 'key.pem')),
        cert: fs.readFileSync(path.join(dir, 'cert.pem')),
        minVersion: 'TLSv1.3',
      },
      (req, res) => {
        const authorized = req.headers.authorization === `Bearer ${o.token}`;
        const answer = (status: number, body: string): void => {
          ref.self?.requests.push({ status, authorized });
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(body);
        };
        const url = new URL(req.url ?? '/', 'https://kubelet');
        if (url.pathname !== '/pods') return answer(404, '{"message":"not found"}');
        if (req.method !== 'GET') return answer(405, '{"message":"method not allowed"}');
        if (ref.self?.failWith !== undefined) return answer(ref.self.failWith, '{"message":"injected failure"}');
        if (!authorized) return answer(401, '{"message":"Unauthorized"}');
        answer(200, JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: o.pods() }));
      },
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => resolve());
    });
    ref.self = new KubeletPodsServer(server, dir);
    return ref.self;
  }

  /** The listening port (the agent's `KUBELET_PORT`). */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
