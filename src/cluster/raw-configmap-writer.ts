/**
 * A ConfigMap writer for large, often written objects (issue [O] item 1): the `cluster-info-device-<m>` chunks
 * (about 800 KiB each, dozens at 10,000 nodes, all rewritten by §0.3's full rewrite after 5 s without a write)
 * and the state objects. The request body is serialised once per content and sent as bytes; the answer's body (the object as
 * stored, as large again) is read and dropped instead of being parsed and mapped into client-node models, which
 * took most of the center's CPU at 10,000 nodes. Authentication is client-node's (`applyToHTTPSOptions` on every
 * request, so rotated tokens are used); connections are kept alive. Errors carry the HTTP status as `code`, as
 * client-node's do ({@link statusOf}), with the API server's message.
 *
 * Conflicts (issue [T] item 2): the bodies carry no resourceVersion (the center owns these objects; an update is
 * unconditional), so there is no copy to refresh and no read on a 409: the write queue re-sends the same body at
 * once (its bounded immediate retries), then waits at most 1 s (250 ms doubling), woken by the successful write of
 * any other chunk or state object through the center's shared `ApiRecovery` — never the 30 s of outages.
 */
import http from 'node:http';
import https from 'node:https';
import type { RawTransport } from './kube.js';
import type { ConfigMapBody } from '../kube/configmap-writer.js';
import type { ObjectWriter } from '../kube/write-queue.js';
import { statusOf } from '../core/errors.js';
import { escapeJsonContent } from './cluster-info.js';
import { configMapProtobuf, PROTOBUF_CONTENT_TYPE, type ProtobufConfigMapMeta } from './configmap-protobuf.js';
import {
  decodeProtobufList,
  LIST_ACCEPT,
  METADATA_LIST_ACCEPT,
  PROTOBUF_LIST_CONTENT_TYPE,
  protobufStatusMessage,
  ProtobufListError,
  type ProtobufListKind,
} from './list-protobuf.js';

/**
 * A ConfigMap whose JSON body is ready to send, as the byte pieces that make it up in order (a chunk's body is its
 * members' escaped bytes between the metadata's: sent as they are, without copying them into one buffer).
 */
export interface PreparedConfigMap {
  readonly name: string;
  readonly namespace: string;
  /** the JSON body */
  readonly body: readonly Buffer[];
  /** the protobuf body (configmap-protobuf.ts), sent instead when the server takes protobuf */
  readonly protobuf?: readonly Buffer[];
}

/** Byte length of a prepared body. */
export function bodyLength(body: readonly Buffer[]): number {
  let n = 0;
  for (const b of body) n += b.length;
  return n;
}

/** Whether two lists of byte pieces hold the same bytes, however they are split. */
export function sameBytes(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  if (bodyLength(a) !== bodyLength(b)) return false;
  let i = 0;
  let j = 0;
  let ai = 0;
  let bj = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    const n = Math.min(x.length - ai, y.length - bj);
    if (n > 0 && (x !== y || ai !== bj) && x.compare(y, bj, bj + n, ai, ai + n) !== 0) return false;
    ai += n;
    bj += n;
    if (ai === x.length) [i, ai] = [i + 1, 0];
    if (bj === y.length) [j, bj] = [j + 1, 0];
  }
  return true;
}

/** Serialises a ConfigMap once. */
export function prepareConfigMap(cm: ConfigMapBody): PreparedConfigMap {
  return {
    name: cm.metadata.name,
    namespace: cm.metadata.namespace,
    body: [Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', ...cm }))],
  };
}

/**
 * A ConfigMap of one data key whose value is given already escaped as JSON string content (see
 * `ClusterInfoChunks.escapedParts`): the body is the metadata's JSON around the value's pieces, without building,
 * escaping or copying the value again (issue [O] item 1: at 10,000 nodes, 34 chunks of 800 KiB; copying each value
 * into one buffer, twice per write, allocated ≈ 50 MB/s while every chunk changed every second).
 */
export function prepareEscapedConfigMap(
  metadata: ConfigMapBody['metadata'],
  key: string,
  escapedValue: readonly Buffer[],
): PreparedConfigMap {
  const json = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { [key]: '' } });
  // json ends with the empty value's closing quote and the two closing braces: `"}}`
  const open = json.length - 3;
  return {
    name: metadata.name,
    namespace: metadata.namespace,
    body: [Buffer.from(json.slice(0, open)), ...escapedValue, Buffer.from(json.slice(open))],
  };
}

/**
 * A ConfigMap of one data key whose value is given as UTF-8 bytes in pieces (`ClusterInfoChunks.rawParts`, issue
 * [P] item 6): its protobuf body around the pieces, and its JSON body built from them only if the server turns
 * out to read JSON only (the first write then falls back to it).
 */
export function prepareRawConfigMap(
  metadata: ProtobufConfigMapMeta,
  key: string,
  rawValue: readonly Buffer[],
): PreparedConfigMap {
  let json: readonly Buffer[] | undefined;
  return {
    name: metadata.name,
    namespace: metadata.namespace,
    protobuf: configMapProtobuf(metadata, key, rawValue),
    get body() {
      // each piece is whole characters (a member, or `{`, `,`, `}`), so escaping piece by piece escapes the whole
      json ??= prepareEscapedConfigMap(
        {
          name: metadata.name,
          namespace: metadata.namespace,
          ...(metadata.labels ? { labels: { ...metadata.labels } } : {}),
        },
        key,
        rawValue.map((b) => escapeJsonContent(b.toString('utf8'))),
      ).body;
      return json;
    },
  };
}

/** An API answer other than 2xx, or a request that failed. */
export class RawWriteError extends Error {
  override name = 'RawWriteError';
  constructor(
    message: string,
    /** HTTP status; undefined for a network error or a timeout */
    readonly code: number | undefined,
    /** the request failed at once on a kept-alive connection (the server had closed it while idle) */
    readonly staleConnection = false,
  ) {
    super(message);
  }
}

/** Errors of a request on a kept-alive connection that the server closed meanwhile. */
const STALE_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * What the writes accept: the written object's metadata only (`PartialObjectMetadata`, issue [P] item 6), so that a
 * real API server neither encodes nor sends back the 800 KiB it was just given; a server that does not transform
 * answers (the API stand-in) sends the object, which is drained. Errors are `Status` objects in JSON either way.
 */
const WRITE_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/** Largest answer {@link RawConfigMapWriter.getJson} reads (a list of 100,000 pods is about 300 MB). */
const MAX_READ_BYTES = 512 * 1024 * 1024;

/** Largest error body read for its message. */
const MAX_ERROR_BODY = 64 * 1024;

/** A 2xx answer: its body (empty unless read) and content type. */
interface Answer {
  body: Buffer;
  contentType: string;
}

const EMPTY = Buffer.alloc(0);

function parseJson(p: string, body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new RawWriteError(`GET ${p}: the answer is not JSON: ${(e as Error).message}`, undefined);
  }
}

/** Writes prepared ConfigMaps (update = PUT, create = POST). */
export class RawConfigMapWriter implements ObjectWriter<PreparedConfigMap> {
  readonly #kc: RawTransport;
  readonly #timeoutMs: number;
  #agent: http.Agent | undefined;
  /**
   * The reads' connections, apart from the writes' (issue [O]): a list's keep-alive connection left idle through a
   * long first cycle was closed by the server meanwhile, and the first chunk writes reused it (EPIPE, then backoff).
   * A GET that meets such a connection is sent again (`#request`).
   */
  #readAgent: http.Agent | undefined;
  #protobuf: boolean;

  /** `protobuf`: send the objects that have a protobuf form as protobuf (default true; JSON after a 415). */
  constructor(kubeConfig: RawTransport, timeoutMs = 30_000, options: { protobuf?: boolean } = {}) {
    this.#kc = kubeConfig;
    this.#timeoutMs = timeoutMs;
    this.#protobuf = options.protobuf ?? true;
  }

  update(cm: PreparedConfigMap): Promise<void> {
    return this.#write(
      'PUT',
      `/api/v1/namespaces/${encodeURIComponent(cm.namespace)}/configmaps/${encodeURIComponent(cm.name)}`,
      cm,
    );
  }

  create(cm: PreparedConfigMap): Promise<void> {
    return this.#write('POST', `/api/v1/namespaces/${encodeURIComponent(cm.namespace)}/configmaps`, cm);
  }

  /** Whether writes go out as protobuf (until the server answers one with 415). */
  get protobuf(): boolean {
    return this.#protobuf;
  }

  /** Closes idle connections. */
  close(): void {
    this.#agent?.destroy();
    this.#agent = undefined;
    this.#readAgent?.destroy();
    this.#readAgent = undefined;
  }

  /**
   * `GET p` and its answer as parsed JSON (for lists: `JSON.parse` alone, no client-node models, issue [O]
   * start-up); an answer over `maxBytes` is refused.
   */
  async getJson(p: string, maxBytes = MAX_READ_BYTES): Promise<unknown> {
    const answer = await this.#request('GET', p, { read: maxBytes });
    return parseJson(p, answer.body);
  }

  /**
   * `GET p` of a list of `kind` objects, asked for as protobuf ({@link decodeProtobufList}: issue [P] item 6, what
   * the center reads of it, decoded as `JSON.parse` would give it); a server that answers JSON instead (the API
   * stand-in) is read as {@link getJson} reads it. An answer over `maxBytes` is refused.
   */
  async getList(p: string, kind: ProtobufListKind, maxBytes = MAX_READ_BYTES): Promise<unknown> {
    const accept = kind === 'Metadata' ? METADATA_LIST_ACCEPT : LIST_ACCEPT;
    const answer = await this.#request('GET', p, { read: maxBytes, accept });
    if (!answer.contentType.startsWith(PROTOBUF_LIST_CONTENT_TYPE)) return parseJson(p, answer.body);
    try {
      return decodeProtobufList(answer.body, kind);
    } catch (e) {
      if (!(e instanceof ProtobufListError)) throw e;
      throw new RawWriteError(`GET ${p}: ${e.message}`, undefined);
    }
  }

  /** A write: protobuf when the object has that form and the server takes it, else JSON. */
  async #write(method: string, p: string, cm: PreparedConfigMap): Promise<void> {
    if (cm.protobuf !== undefined && this.#protobuf) {
      try {
        await this.#request(method, p, { body: cm.protobuf, contentType: PROTOBUF_CONTENT_TYPE });
        return;
      } catch (e) {
        // a server that reads JSON only (the API stand-in) answers 415: JSON from now on, as client-go does
        if (statusOf(e) !== 415) throw e;
        this.#protobuf = false;
      }
    }
    await this.#request(method, p, { body: cm.body, contentType: 'application/json' });
  }

  /**
   * One request; the answer of a 2xx is drained or, with `read`, returned as text (up to `read` bytes). A GET that
   * failed on a kept-alive connection the server had closed meanwhile is sent once more on a new one.
   */
  async #request(
    method: string,
    p: string,
    o: { body?: readonly Buffer[]; contentType?: string; read?: number; accept?: string },
  ): Promise<Answer> {
    try {
      return await this.#once(method, p, o);
    } catch (e) {
      if (method !== 'GET' || !(e instanceof RawWriteError) || !e.staleConnection) throw e;
      return this.#once(method, p, o);
    }
  }

  async #once(
    method: string,
    p: string,
    o: { body?: readonly Buffer[]; contentType?: string; read?: number; accept?: string },
  ): Promise<Answer> {
    const body = o.body ?? [];
    const read = o.read;
    const cluster = this.#kc.getCurrentCluster();
    if (cluster === null) throw new RawWriteError('no current cluster in the kubeconfig', undefined);
    const url = new URL(cluster.server);
    const opts: https.RequestOptions = {};
    await this.#kc.applyToHTTPSOptions(opts);
    const secure = url.protocol === 'https:';
    if (cluster.proxyUrl === undefined) {
      // keep-alive agents instead of the new one client-node creates for each request: over TLS (a real API
      // server) a new connection per list page cost a handshake each (issue [P] item 6)
      const make = (): http.Agent =>
        secure
          ? new https.Agent({
              keepAlive: true,
              ca: opts.ca,
              cert: opts.cert,
              key: opts.key,
              ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}),
              ...(opts.servername !== undefined ? { servername: opts.servername } : {}),
            })
          : new http.Agent({ keepAlive: true });
      if (read === undefined) opts.agent = this.#agent ??= make();
      else opts.agent = this.#readAgent ??= make();
    }
    const base = url.pathname.replace(/\/+$/, '');
    return new Promise<Answer>((resolve, reject) => {
      const req = (secure ? https : http).request(
        {
          ...opts,
          protocol: url.protocol,
          hostname: url.hostname.replace(/^\[|\]$/g, ''),
          port: url.port,
          method,
          path: base + p,
          headers: {
            ...(opts.headers as Record<string, string> | undefined),
            ...(method === 'GET'
              ? {}
              : { 'Content-Type': o.contentType ?? 'application/json', 'Content-Length': bodyLength(body) }),
            Accept: o.accept ?? (read === undefined ? WRITE_ACCEPT : 'application/json'),
          },
        },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            const contentType = String(res.headers['content-type'] ?? '');
            if (read === undefined) {
              res.resume();
              res.on('end', () => resolve({ body: EMPTY, contentType }));
            } else {
              const parts: Buffer[] = [];
              let n = 0;
              res.on('data', (d: Buffer) => {
                n += d.length;
                if (n > read) req.destroy(new RawWriteError(`${method} ${p}: answer over ${read} bytes`, undefined));
                else parts.push(d);
              });
              res.on('end', () => resolve({ body: Buffer.concat(parts, n), contentType }));
            }
            res.on('error', reject);
            return;
          }
          const parts: Buffer[] = [];
          let n = 0;
          res.on('data', (d: Buffer) => {
            if (n < MAX_ERROR_BODY) parts.push(d);
            n += d.length;
          });
          res.on('end', () => {
            const bytes = Buffer.concat(parts).subarray(0, MAX_ERROR_BODY);
            // a list asked for as protobuf gets its error Status as protobuf too
            const fromProtobuf = String(res.headers['content-type'] ?? '').startsWith(PROTOBUF_LIST_CONTENT_TYPE)
              ? protobufStatusMessage(bytes)
              : undefined;
            const text = bytes.toString('utf8');
            let message = fromProtobuf ?? text.slice(0, 512);
            if (fromProtobuf === undefined) {
              try {
                const m = (JSON.parse(text) as { message?: unknown }).message;
                if (typeof m === 'string') message = m;
              } catch {
                // not a Status object: the text as is
              }
            }
            reject(new RawWriteError(`HTTP ${status}: ${message}`, status));
          });
          res.on('error', reject);
        },
      );
      req.setTimeout(this.#timeoutMs, () =>
        req.destroy(new RawWriteError(`no answer within ${this.#timeoutMs} ms`, undefined)),
      );
      req.on('error', (e) => {
        if (e instanceof RawWriteError) return reject(e);
        // a kept-alive connection the server closed while it was idle fails at once, before any answer
        const stale = req.reusedSocket && STALE_CODES.has((e as NodeJS.ErrnoException).code ?? '');
        reject(new RawWriteError(e.message, undefined, stale));
      });
      for (const b of body) req.write(b);
      req.end();
    });
  }
}

/** The same writer taking plain bodies (serialised at each write): for objects written rarely. */
export function bodyWriter(raw: RawConfigMapWriter): ObjectWriter<ConfigMapBody> {
  return {
    update: (cm) => raw.update(prepareConfigMap(cm)),
    create: (cm) => raw.create(prepareConfigMap(cm)),
  };
}
