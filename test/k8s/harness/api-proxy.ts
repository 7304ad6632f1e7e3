/**
 * A TLS-terminating proxy between one program (the agent, the fault center) and the real kube-apiserver, on
 * 127.0.0.1 with the apiserver's own serving certificate (the programs' kubeconfig trusts the cluster CA, whose
 * certificate names 127.0.0.1). It records what the server answered to that program — every request's status, the
 * message of every refusal, the `ERROR` events of its watch streams (a `410 Expired` arrives as one, in a 200
 * stream) — and can hold the program's watches back: {@link ApiProxy.holdWatches} ends every open watch stream
 * cleanly (the client then watches again from its last resourceVersion) and keeps the new watch requests waiting
 * until {@link ApiProxy.releaseWatches}, so a test can change and compact the store meanwhile.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { Cluster } from './cluster.js';

/** One `ERROR` event of a watch stream (its `Status`). */
export interface WatchError {
  readonly code: number | undefined;
  readonly reason: string | undefined;
  readonly message: string | undefined;
}

/** One request of the program as the server answered it. */
export interface ProxiedRequest {
  readonly seq: number;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
  readonly method: string;
  /** Path without the query. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly watch: boolean;
  /** HTTP status (0 until the answer's head arrived, -1 when the upstream connection failed). */
  status: number;
  /** `message` of an error answer (status ≥ 400), bounded. */
  message?: string;
  /** `ERROR` events of a watch stream. */
  readonly watchErrors: WatchError[];
}

/** A watch stream being passed on; `ended` once the proxy ended it on its own. */
interface OpenWatch {
  readonly res: http.ServerResponse;
  readonly upstream: http.ClientRequest;
  ended: boolean;
}

/** Characters of an error answer kept. */
const KEPT_ERROR_CHARS = 4096;

/** See the file comment. */
export class ApiProxy {
  readonly #cluster: Cluster;
  readonly #log: ProxiedRequest[] = [];
  readonly #sockets = new Set<net.Socket>();
  /** Open watch answers: ending one ends the client's watch cleanly. */
  readonly #watches = new Set<OpenWatch>();
  #held: (() => void)[] | undefined;
  #server: https.Server | undefined;
  #seq = 0;
  port = 0;

  private constructor(cluster: Cluster) {
    this.#cluster = cluster;
  }

  /** Starts a proxy for `cluster`'s apiserver on a free port of 127.0.0.1. */
  static async start(cluster: Cluster): Promise<ApiProxy> {
    const p = new ApiProxy(cluster);
    const pki = cluster.pki!;
    const server = https.createServer(
      { cert: fs.readFileSync(pki.servingCert), key: fs.readFileSync(pki.servingKey) },
      (req, res) => p.#handle(req, res),
    );
    server.on('connection', (s: net.Socket) => {
      p.#sockets.add(s);
      s.once('close', () => p.#sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    p.#server = server;
    p.port = (server.address() as net.AddressInfo).port;
    return p;
  }

  /** `https://127.0.0.1:<port>`: the server of the program's kubeconfig. */
  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** The requests so far (oldest first), optionally those after `afterSeq`. */
  requests(afterSeq = 0): readonly ProxiedRequest[] {
    return this.#log.filter((r) => r.seq > afterSeq);
  }

  /** The sequence number of the last request (a mark for {@link requests}). */
  get mark(): number {
    return this.#seq;
  }

  /** Ends every open watch stream cleanly and holds new watch requests until {@link releaseWatches}. */
  holdWatches(): void {
    this.#held ??= [];
    for (const w of this.#watches) {
      w.ended = true;
      w.res.end();
      w.upstream.destroy();
    }
    this.#watches.clear();
  }

  /** How many watch requests wait. */
  get heldWatches(): number {
    return this.#held?.length ?? 0;
  }

  /** Sends the held watch requests on, and every later one at once. */
  releaseWatches(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const go of held) go();
  }

  /** Closes the listener and every connection. */
  async stop(): Promise<void> {
    this.releaseWatches();
    for (const w of this.#watches) w.upstream.destroy();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://proxy');
    const watch = /^(1|true)$/.test(url.searchParams.get('watch') ?? '') || url.pathname.includes('/watch/');
    const entry: ProxiedRequest = {
      seq: ++this.#seq,
      at: Date.now(),
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      watch,
      status: 0,
      watchErrors: [],
    };
    this.#log.push(entry);
    const forward = (): void => this.#forward(req, res, entry);
    if (watch && this.#held !== undefined) this.#held.push(forward);
    else forward();
  }

  #forward(req: http.IncomingMessage, res: http.ServerResponse, entry: ProxiedRequest): void {
    const upstreamUrl = new URL(req.url ?? '/', this.#cluster.server);
    const headers = { ...req.headers, host: upstreamUrl.host };
    const upstream = https.request(upstreamUrl, { method: req.method, headers, ca: this.#cluster.pki!.caPem });
    const watchRef: OpenWatch = { res, upstream, ended: false };
    upstream.on('response', (up) => {
      entry.status = up.statusCode ?? 0;
      res.writeHead(up.statusCode ?? 502, up.headers);
      // at once, as the apiserver does: a client's watch has started when its headers arrive, events or not
      res.flushHeaders();
      if (entry.watch && entry.status === 200) this.#watches.add(watchRef);
      let pending = '';
      up.on('data', (chunk: Buffer) => {
        if (watchRef.ended) return;
        res.write(chunk);
        if (entry.status >= 400) {
          if (pending.length < KEPT_ERROR_CHARS) pending += chunk.toString('utf8');
        } else if (entry.watch) {
          pending += chunk.toString('utf8');
          let nl: number;
          while ((nl = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            // only ERROR lines are parsed: the others may be large objects
            if (line.startsWith('{"type":"ERROR"')) entry.watchErrors.push(watchError(line));
          }
        }
      });
      up.on('end', () => {
        this.#watches.delete(watchRef);
        if (watchRef.ended) return;
        if (entry.status >= 400) entry.message = messageOf(pending);
        res.end();
      });
      up.on('error', () => {
        this.#watches.delete(watchRef);
        if (!watchRef.ended) res.destroy();
      });
    });
    upstream.on('error', () => {
      this.#watches.delete(watchRef);
      if (entry.status === 0) entry.status = -1;
      if (!watchRef.ended) res.destroy();
    });
    // the client went away: so does the upstream request (a watch must not outlive its client)
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  }
}

function watchError(line: string): WatchError {
  try {
    const o = (JSON.parse(line) as { object?: { code?: number; reason?: string; message?: string } }).object;
    return { code: o?.code, reason: o?.reason, message: o?.message };
  } catch {
    return { code: undefined, reason: undefined, message: line.slice(0, 300) };
  }
}

function messageOf(body: string): string {
  try {
    const m = (JSON.parse(body) as { message?: unknown }).message;
    return typeof m === 'string' ? m : body.slice(0, 300);
  } catch {
    return body.slice(0, 300);
  }
}
