/**
 * The agent's own Kubernetes client: the ten CoreV1 calls and the watch the node agent makes, over `node:http(s)`,
 * and the fault center's further calls (Leases, ConfigMap delete and patches; issue [O], its start-up).
 *
 * Why not client-node: its index loads every generated model and API and its auth extras (openid-client, ws, tar,
 * ...), ≈ 60 MiB of RSS of the agent's ≈ 105 MiB at idle, and its `KubeConfig` pulls the whole index too (≈ 0.4–0.9 s
 * of module loading on the 2-core machine). The tests keep client-node; the kube layer takes either (its options are `Pick<k8s.CoreV1Api, …>` and
 * a {@link WatchFn}), so {@link KubeClient} is a drop-in for the calls it has.
 *
 * Differences from a client-node `CoreV1Api`, on purpose: answers are the API server's JSON as is (timestamps stay
 * RFC 3339 strings, unknown fields are kept); every call but a watch is bounded by {@link KubeClientOptions.timeoutMs}
 * (client-node has no bound). Errors carry the HTTP status as `code` like client-node's `ApiException`; a watch
 * that cannot start calls `done` with an error whose `statusCode` is the status, as client-node's `Watch`.
 *
 * {@link loadKubeAccess} reads a kubeconfig (YAML or JSON) or the in-cluster service account as client-node does
 * (relative paths from the file's folder, `token-file`, `tls-server-name`, basic auth). A kubeconfig whose user or
 * cluster needs what is not here (`exec`, `auth-provider`, `as` impersonation, `proxy-url`) is reported as
 * `clientNode`: the caller then loads client-node for it, so no kubeconfig stops working.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import yaml from 'js-yaml';
import type * as k8s from '@kubernetes/client-node';
import type { WatchFn } from './list-watch.js';

const SERVICEACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** A file token is read again after this long (client-node and client-go: 60 s), for rotated service-account tokens. */
const TOKEN_FILE_TTL_MS = 60_000;

/** Where and how to reach the API server. */
export interface KubeAccess {
  /** Base URL without a trailing slash, e.g. `https://10.96.0.1:443` (may carry a path prefix). */
  readonly server: string;
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly insecureSkipTlsVerify?: boolean;
  readonly tlsServerName?: string;
  /** A bearer token; `tokenFile` is read instead (and re-read every 60 s) when set. */
  readonly token?: string;
  readonly tokenFile?: string;
  readonly username?: string;
  readonly password?: string;
  /** The context's namespace (informative: the agent names its namespaces). */
  readonly namespace?: string;
}

/** What {@link loadKubeAccess} found. */
export type KubeAccessSource =
  | { readonly kind: 'access'; readonly access: KubeAccess; readonly from: string }
  /** A kubeconfig this client cannot serve (`reason`): load it with client-node's `KubeConfig.loadFromFile`. */
  | { readonly kind: 'clientNode'; readonly file: string; readonly reason: string };

/** A kubeconfig that cannot be used (unreadable, malformed, missing entries or files). */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * `flag` (the `-kubeconfig` file), else in-cluster (`KUBERNETES_SERVICE_HOST`/`_PORT`), else the first file of
 * `$KUBECONFIG`; undefined when none applies. Throws {@link KubeConfigError}.
 */
export function loadKubeAccess(flag: string, env: Env, root = SERVICEACCOUNT_ROOT): KubeAccessSource | undefined {
  if (flag !== '') return fromKubeconfigFile(flag);
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (host && port) return { kind: 'access', access: inCluster(host, port, root), from: 'in-cluster' };
  const file = env.KUBECONFIG;
  if (file) return fromKubeconfigFile(file.split(path.delimiter)[0]!);
  return undefined;
}

/** client-node's `loadFromCluster`: http for ports 80/8080/8001, IPv6 hosts in brackets, the service-account files. */
function inCluster(host: string, port: string, root: string): KubeAccess {
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const h = net.isIPv6(host) ? `[${host}]` : host;
  let namespace: string | undefined;
  try {
    namespace = fs.readFileSync(path.join(root, 'namespace'), 'utf8');
  } catch {
    namespace = undefined;
  }
  return {
    server: `${scheme}://${h}:${port}`,
    ca: readFileOrFail(path.join(root, 'ca.crt'), 'in-cluster CA'),
    tokenFile: path.join(root, 'token'),
    ...(namespace !== undefined ? { namespace } : {}),
  };
}

function readFileOrFail(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new KubeConfigError(`${what} ${file}: ${(err as Error).message}`);
  }
}

type Entry = Record<string, unknown>;

function named(list: unknown, key: string, name: string, file: string): Entry {
  if (!Array.isArray(list)) throw new KubeConfigError(`${file}: no ${key}s`);
  const e = (list as unknown[]).find((x): x is Entry => isEntry(x) && x.name === name);
  const inner = e?.[key];
  if (!isEntry(inner)) throw new KubeConfigError(`${file}: ${key} "${name}" not found`);
  return inner;
}

function isEntry(x: unknown): x is Entry {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function str(e: Entry, key: string): string | undefined {
  const v = e[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Reads a kubeconfig file (its current context). */
export function fromKubeconfigFile(file: string): KubeAccessSource {
  let doc: unknown;
  try {
    doc = yaml.load(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new KubeConfigError(`${file}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isEntry(doc)) throw new KubeConfigError(`${file}: not a kubeconfig`);
  const current = doc['current-context'];
  if (typeof current !== 'string' || current === '') throw new KubeConfigError(`${file}: no current-context`);
  const context = named(doc.contexts, 'context', current, file);
  const clusterName = str(context, 'cluster');
  if (clusterName === undefined) throw new KubeConfigError(`${file}: context "${current}" names no cluster`);
  const cluster = named(doc.clusters, 'cluster', clusterName, file);
  const userName = str(context, 'user');
  const user = userName !== undefined ? named(doc.users, 'user', userName, file) : {};
  for (const k of ['exec', 'auth-provider', 'as']) {
    if (user[k] !== undefined && user[k] !== null && user[k] !== '') {
      return { kind: 'clientNode', file, reason: `user "${userName}" uses ${k}` };
    }
  }
  if (str(cluster, 'proxy-url') !== undefined) {
    return { kind: 'clientNode', file, reason: `cluster "${clusterName}" uses proxy-url` };
  }
  const server = str(cluster, 'server');
  if (server === undefined) throw new KubeConfigError(`${file}: cluster "${clusterName}" has no server`);
  const dir = path.dirname(file);
  const abs = (p: string): string => path.resolve(dir, p);
  const material = (e: Entry, dataKey: string, fileKey: string, what: string): Buffer | undefined => {
    const data = str(e, dataKey);
    if (data !== undefined) return Buffer.from(data, 'base64');
    const f = str(e, fileKey);
    return f !== undefined ? readFileOrFail(abs(f), `${file}: ${what}`) : undefined;
  };
  const ca = material(cluster, 'certificate-authority-data', 'certificate-authority', 'certificate-authority');
  const cert = material(user, 'client-certificate-data', 'client-certificate', 'client-certificate');
  const key = material(user, 'client-key-data', 'client-key', 'client-key');
  const token = str(user, 'token');
  const tokenFile = str(user, 'token-file') ?? str(user, 'tokenFile');
  const username = str(user, 'username');
  const password = str(user, 'password');
  const tlsServerName = str(cluster, 'tls-server-name');
  const namespace = str(context, 'namespace');
  const access: KubeAccess = {
    server: server.replace(/\/+$/, ''),
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(cluster['insecure-skip-tls-verify'] === true ? { insecureSkipTlsVerify: true } : {}),
    ...(tlsServerName !== undefined ? { tlsServerName } : {}),
    ...(token !== undefined ? { token } : tokenFile !== undefined ? { tokenFile: abs(tokenFile) } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
  };
  if (access.tokenFile !== undefined) readFileOrFail(access.tokenFile, `${file}: token-file`);
  return { kind: 'access', access, from: file };
}

/**
 * One JSON request to the API server, for the calls without a method of their own (the DRA driver's
 * `resource.k8s.io/v1` calls, src/dra/dra-api.ts): `path` from the API root; rejects with an error whose `code` is
 * the HTTP status when the answer is not 2xx. {@link KubeClient} serves it, and `clientNodeJsonRequester` for a
 * kubeconfig only client-node can read.
 */
export interface JsonRequester {
  requestJson<T>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    options?: {
      readonly query?: Readonly<Record<string, string>>;
      readonly body?: unknown;
      readonly contentType?: string;
    },
  ): Promise<T>;
}

/** An answer of the API server outside 2xx; `code` is the HTTP status (as client-node's `ApiException`). */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  constructor(
    readonly code: number,
    readonly body: unknown,
    method: string,
    urlPath: string,
  ) {
    const reason =
      isEntry(body) && typeof body.message === 'string'
        ? body.message
        : typeof body === 'string'
          ? body.slice(0, 300)
          : JSON.stringify(body ?? '').slice(0, 300);
    super(`HTTP-Code: ${code} Message: ${method} ${urlPath}: ${reason}`);
  }
}

/** The CoreV1 calls of the node agent (what {@link KubeClient} implements). */
export type AgentCoreApi = Pick<
  k8s.CoreV1Api,
  | 'readNamespacedConfigMap'
  | 'createNamespacedConfigMap'
  | 'replaceNamespacedConfigMap'
  | 'listNamespacedConfigMap'
  | 'listConfigMapForAllNamespaces'
  | 'createNamespacedEvent'
  | 'readNode'
  | 'listNode'
  | 'patchNode'
  | 'patchNodeStatus'
  | 'patchNamespacedPod'
  | 'listPodForAllNamespaces'
>;

type Param<K extends keyof AgentCoreApi> = Parameters<AgentCoreApi[K]>[0];
type Param2<K extends keyof k8s.CoreV1Api> = Parameters<k8s.CoreV1Api[K]>[0];
type Answer2<K extends keyof k8s.CoreV1Api> = Awaited<ReturnType<k8s.CoreV1Api[K]>>;
/** The Lease calls of the fault center's leader election (issue [O]). */
export type LeaseApi = Pick<
  k8s.CoordinationV1Api,
  'readNamespacedLease' | 'createNamespacedLease' | 'replaceNamespacedLease'
>;
type LeaseParam<K extends keyof LeaseApi> = Parameters<LeaseApi[K]>[0];
type LeaseAnswer<K extends keyof LeaseApi> = Awaited<ReturnType<LeaseApi[K]>>;
type Answer<K extends keyof AgentCoreApi> = Awaited<ReturnType<AgentCoreApi[K]>>;
/** client-node's per-call options; only a middleware setting `Content-Type` (a patch strategy) is honoured. */
type CallOptions = Parameters<k8s.CoreV1Api['patchNode']>[1];

/** Options of a {@link KubeClient}. */
export interface KubeClientOptions {
  /** Bound of every call but a watch (default 30 s). */
  readonly timeoutMs?: number;
  /** Largest answer body accepted (default 64 MiB); a larger one fails the call. */
  readonly maxBodyBytes?: number;
  /** Largest watch line accepted (default 16 MiB); a longer one ends the watch with an error. */
  readonly maxLineBytes?: number;
  readonly userAgent?: string;
  /** Monotonic clock of the token-file refresh (tests; default `performance.now`, issue [T] item 1). */
  readonly monotonic?: () => number;
}

const NON_QUERY = new Set(['name', 'namespace', 'body']);

/** The node agent's Kubernetes client (see the module comment). */
export class KubeClient implements AgentCoreApi {
  readonly #access: KubeAccess;
  readonly #base: URL;
  readonly #agent: http.Agent;
  readonly #secure: boolean;
  readonly #timeoutMs: number;
  readonly #maxBody: number;
  readonly #maxLine: number;
  readonly #userAgent: string;
  readonly #mono: () => number;
  #token: { value: string; readAt: number } | undefined;

  constructor(access: KubeAccess, options: KubeClientOptions = {}) {
    this.#access = access;
    this.#base = new URL(access.server);
    this.#secure = this.#base.protocol === 'https:';
    if (!this.#secure && this.#base.protocol !== 'http:') {
      throw new KubeConfigError(`server ${access.server}: not an http(s) URL`);
    }
    this.#agent = this.#secure
      ? new https.Agent({
          keepAlive: true,
          ...(access.ca ? { ca: access.ca } : {}),
          ...(access.cert ? { cert: access.cert } : {}),
          ...(access.key ? { key: access.key } : {}),
          rejectUnauthorized: access.insecureSkipTlsVerify !== true,
          ...(access.tlsServerName !== undefined ? { servername: access.tlsServerName } : {}),
        })
      : new http.Agent({ keepAlive: true });
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024;
    this.#maxLine = options.maxLineBytes ?? 16 * 1024 * 1024;
    this.#userAgent = options.userAgent ?? 'ascend-npu-agent';
    this.#mono = options.monotonic ?? (() => performance.now());
  }

  /** client-node's `Watch.watch` over this client (bound, so it can be handed around). */
  readonly watch: WatchFn = (p, query, callback, done) => this.#watch(p, query, callback, done);

  /**
   * Whether the API server serves requests now: `GET /readyz` answered 200 within `timeoutMs` (default 2 s). Never
   * rejects. The agent's outage probe (`ApiRecovery`, issue [K] item 8): the health endpoints are readable by every
   * authenticated client (the `system:public-info-viewer` role) and answered without an etcd read per request.
   */
  probe(timeoutMs = 2000): Promise<boolean> {
    let url: URL;
    try {
      url = this.#url('/readyz', {});
    } catch {
      return Promise.resolve(false);
    }
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const req = this.#request('GET', url, this.#headers());
      const done = (ok: boolean, destroy: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (destroy) req.destroy(); // a finished answer leaves its socket to the keep-alive pool
        resolve(ok);
      };
      // an absolute bound (an idle timeout would let a server that dribbles bytes hold the probe forever)
      const timer = setTimeout(() => done(false, true), timeoutMs);
      timer.unref();
      req.on('error', () => done(false, true));
      req.on('response', (res) => {
        const ok = res.statusCode === 200;
        res.resume(); // the body ("ok") is not needed
        res.on('end', () => done(ok, false));
        res.on('error', () => done(false, true));
      });
      req.end();
    });
  }

  /** Closes the idle keep-alive connections (open watches are aborted by their owners). */
  close(): void {
    this.#agent.destroy();
  }

  readNamespacedConfigMap(p: Param<'readNamespacedConfigMap'>): Promise<Answer<'readNamespacedConfigMap'>> {
    return this.#call('GET', () => `${ns(p.namespace)}/configmaps/${seg(p.name)}`, p);
  }

  createNamespacedConfigMap(p: Param<'createNamespacedConfigMap'>): Promise<Answer<'createNamespacedConfigMap'>> {
    return this.#call('POST', () => `${ns(p.namespace)}/configmaps`, p, p.body);
  }

  replaceNamespacedConfigMap(p: Param<'replaceNamespacedConfigMap'>): Promise<Answer<'replaceNamespacedConfigMap'>> {
    return this.#call('PUT', () => `${ns(p.namespace)}/configmaps/${seg(p.name)}`, p, p.body);
  }

  listNamespacedConfigMap(p: Param<'listNamespacedConfigMap'>): Promise<Answer<'listNamespacedConfigMap'>> {
    return this.#call('GET', () => `${ns(p.namespace)}/configmaps`, p);
  }

  listConfigMapForAllNamespaces(
    p: Param<'listConfigMapForAllNamespaces'> = {},
  ): Promise<Answer<'listConfigMapForAllNamespaces'>> {
    return this.#call('GET', () => '/api/v1/configmaps', p);
  }

  createNamespacedEvent(p: Param<'createNamespacedEvent'>): Promise<Answer<'createNamespacedEvent'>> {
    return this.#call('POST', () => `${ns(p.namespace)}/events`, p, p.body);
  }

  readNode(p: Param<'readNode'>): Promise<Answer<'readNode'>> {
    return this.#call('GET', () => `/api/v1/nodes/${seg(p.name)}`, p);
  }

  listNode(p: Param<'listNode'> = {}): Promise<Answer<'listNode'>> {
    return this.#call('GET', () => '/api/v1/nodes', p);
  }

  patchNode(p: Param<'patchNode'>, options?: CallOptions): Promise<Answer<'patchNode'>> {
    return this.#call('PATCH', () => `/api/v1/nodes/${seg(p.name)}`, p, p.body, patchContentType(options));
  }

  patchNodeStatus(p: Param<'patchNodeStatus'>, options?: CallOptions): Promise<Answer<'patchNodeStatus'>> {
    const path = (): string => `/api/v1/nodes/${seg(p.name)}/status`;
    return this.#call('PATCH', path, p, p.body, patchContentType(options));
  }

  patchNamespacedPod(p: Param<'patchNamespacedPod'>, options?: CallOptions): Promise<Answer<'patchNamespacedPod'>> {
    return this.#call('PATCH', () => `${ns(p.namespace)}/pods/${seg(p.name)}`, p, p.body, patchContentType(options));
  }

  listPodForAllNamespaces(p: Param<'listPodForAllNamespaces'> = {}): Promise<Answer<'listPodForAllNamespaces'>> {
    return this.#call('GET', () => '/api/v1/pods', p);
  }

  // The fault center's further calls (issue [O], its start-up without client-node): same bounds and errors.

  deleteNamespacedConfigMap(p: Param2<'deleteNamespacedConfigMap'>): Promise<Answer2<'deleteNamespacedConfigMap'>> {
    return this.#call('DELETE', () => `${ns(p.namespace)}/configmaps/${seg(p.name)}`, p, p.body);
  }

  patchNamespacedConfigMap(
    p: Param2<'patchNamespacedConfigMap'>,
    options?: CallOptions,
  ): Promise<Answer2<'patchNamespacedConfigMap'>> {
    const path = (): string => `${ns(p.namespace)}/configmaps/${seg(p.name)}`;
    return this.#call('PATCH', path, p, p.body, patchContentType(options));
  }

  /** A JSON merge patch of a ConfigMap (`application/merge-patch+json`), without a client-node options object. */
  mergePatchNamespacedConfigMap(p: Param2<'patchNamespacedConfigMap'>): Promise<Answer2<'patchNamespacedConfigMap'>> {
    const path = (): string => `${ns(p.namespace)}/configmaps/${seg(p.name)}`;
    return this.#call('PATCH', path, p, p.body, 'application/merge-patch+json');
  }

  readNamespacedLease(p: LeaseParam<'readNamespacedLease'>): Promise<LeaseAnswer<'readNamespacedLease'>> {
    return this.#call('GET', () => `${leases(p.namespace)}/${seg(p.name)}`, p);
  }

  createNamespacedLease(p: LeaseParam<'createNamespacedLease'>): Promise<LeaseAnswer<'createNamespacedLease'>> {
    return this.#call('POST', () => leases(p.namespace), p, p.body);
  }

  replaceNamespacedLease(p: LeaseParam<'replaceNamespacedLease'>): Promise<LeaseAnswer<'replaceNamespacedLease'>> {
    return this.#call('PUT', () => `${leases(p.namespace)}/${seg(p.name)}`, p, p.body);
  }

  /**
   * Any other call of the agent (the DRA driver's `resource.k8s.io/v1` calls, src/dra/dra-api.ts): `path` from the
   * API root, `query` as given; same bounds, errors and stale-socket retry as the calls above.
   */
  requestJson<T>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    options: {
      readonly query?: Readonly<Record<string, string>>;
      readonly body?: unknown;
      readonly contentType?: string;
    } = {},
  ): Promise<T> {
    return this.#call<T>(method, () => path, options.query ?? {}, options.body, options.contentType);
  }

  /** The base URL of the API server (as configured, without a trailing slash). */
  get server(): string {
    return this.#access.server;
  }

  /**
   * client-node's `KubeConfig.applyToHTTPSOptions` for this access: TLS material and the `Authorization` header,
   * for callers that send their own requests (the fault center's raw ConfigMap writer).
   */
  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const a = this.#access;
    if (a.ca) opts.ca = a.ca;
    if (a.cert) opts.cert = a.cert;
    if (a.key) opts.key = a.key;
    if (a.insecureSkipTlsVerify === true) opts.rejectUnauthorized = false;
    if (a.tlsServerName !== undefined) opts.servername = a.tlsServerName;
    const h = this.#headers();
    if (h.authorization !== undefined) {
      opts.headers = { ...(opts.headers as http.OutgoingHttpHeaders | undefined), authorization: h.authorization };
    }
    return Promise.resolve();
  }

  #url(p: string, query: Record<string, unknown>): URL {
    const u = new URL(this.#base.href.replace(/\/+$/, '') + p);
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || NON_QUERY.has(k)) continue;
      u.searchParams.set(k === '_continue' ? 'continue' : k, queryValue(v));
    }
    return u;
  }

  #headers(contentType?: string): http.OutgoingHttpHeaders {
    const h: http.OutgoingHttpHeaders = { accept: 'application/json', 'user-agent': this.#userAgent };
    if (contentType !== undefined) h['content-type'] = contentType;
    const token = this.#bearer();
    if (token !== undefined) h.authorization = `Bearer ${token}`;
    else if (this.#access.username !== undefined) {
      const pair = `${this.#access.username}:${this.#access.password ?? ''}`;
      h.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
    return h;
  }

  #bearer(): string | undefined {
    const file = this.#access.tokenFile;
    if (file === undefined) return this.#access.token;
    const now = this.#mono();
    if (this.#token === undefined || now - this.#token.readAt > TOKEN_FILE_TTL_MS) {
      try {
        this.#token = { value: fs.readFileSync(file, 'utf8').trim(), readAt: now };
      } catch {
        // keep the last token (a rotation in progress); none yet → the call goes out unauthenticated and fails 401
        if (this.#token) this.#token = { ...this.#token, readAt: now };
      }
    }
    return this.#token?.value;
  }

  #request(method: string, url: URL, headers: http.OutgoingHttpHeaders): http.ClientRequest {
    const mod = this.#secure ? https : http;
    return mod.request(url, { method, headers, agent: this.#agent });
  }

  #call<T>(
    method: string,
    pathOf: () => string,
    param: object,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<T> {
    let url: URL;
    try {
      url = this.#url(pathOf(), param as Record<string, unknown>);
    } catch (err) {
      // a missing name or namespace: a rejection, as client-node's RequiredError
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    const payload = body !== undefined ? Buffer.from(JSON.stringify(body)) : undefined;
    return this.#send<T>(method, url, payload, contentType).catch((err: unknown) => {
      // A kept-alive connection the server closed meanwhile: sent again once on a fresh one (Node's documented
      // pattern). A repeated create then answers 409, which its callers handle as "already there".
      if ((err as { staleSocket?: boolean }).staleSocket === true)
        return this.#send<T>(method, url, payload, contentType);
      throw err;
    });
  }

  #send<T>(method: string, url: URL, payload: Buffer | undefined, contentType: string): Promise<T> {
    const headers = this.#headers(payload ? contentType : undefined);
    if (payload) headers['content-length'] = payload.length;
    const req = this.#request(method, url, headers);
    return exchangeJson<T>(req, { method, url, payload, timeoutMs: this.#timeoutMs, maxBodyBytes: this.#maxBody });
  }

  /** client-node's `Watch.watch`: resolves once the answer's head arrived (or failed); `done` is called once. */
  #watch(
    p: string,
    query: Parameters<WatchFn>[1],
    callback: Parameters<WatchFn>[2],
    done: Parameters<WatchFn>[3],
  ): Promise<AbortController> {
    const controller = new AbortController();
    const url = this.#url(p, {});
    url.searchParams.set('watch', 'true');
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    let doneCalled = false;
    return new Promise<AbortController>((resolve) => {
      const req = this.#request('GET', url, this.#headers());
      const finish = (err: unknown): void => {
        if (doneCalled) return;
        doneCalled = true;
        if (!controller.signal.aborted) controller.abort();
        req.destroy();
        resolve(controller);
        done(err);
      };
      controller.signal.addEventListener('abort', () => {
        const e = new Error('The watch was aborted');
        e.name = 'AbortError';
        finish(e);
      });
      req.on('socket', (s) => s.setKeepAlive(true, 30_000));
      req.on('error', finish);
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          const e = new Error(res.statusMessage || http.STATUS_CODES[res.statusCode ?? 500] || 'Internal Server Error');
          (e as Error & { statusCode?: number }).statusCode = res.statusCode;
          res.resume();
          finish(e);
          return;
        }
        resolve(controller);
        const decoder = new StringDecoder('utf8');
        let partial = '';
        const line = (l: string): void => {
          if (l.trim() === '') return;
          let data: { type?: unknown; object?: unknown };
          try {
            data = JSON.parse(l) as { type?: unknown; object?: unknown };
          } catch {
            return; // as client-node: a line that is not JSON is skipped
          }
          callback(String(data.type), data.object);
        };
        res.on('data', (chunk: Buffer) => {
          if (doneCalled) return;
          partial += decoder.write(chunk);
          let nl: number;
          while (!doneCalled && (nl = partial.indexOf('\n')) >= 0) {
            const l = partial.slice(0, nl);
            partial = partial.slice(nl + 1);
            line(l);
          }
          if (partial.length > this.#maxLine) finish(new Error(`watch ${p}: a line over ${this.#maxLine} bytes`));
        });
        res.on('end', () => {
          if (!doneCalled) line(partial + decoder.end());
          finish(null);
        });
        res.on('error', finish);
        res.on('close', () => finish(null));
      });
      req.end();
    });
  }
}

function queryValue(v: unknown): string {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return v.toString();
  return JSON.stringify(v);
}

function ns(namespace: string): string {
  if (!namespace) throw new Error('namespace is required');
  return `/api/v1/namespaces/${seg(namespace)}`;
}

function leases(namespace: string): string {
  if (!namespace) throw new Error('namespace is required');
  return `/apis/coordination.k8s.io/v1/namespaces/${seg(namespace)}/leases`;
}

function seg(name: string): string {
  if (!name) throw new Error('name is required');
  return encodeURIComponent(name);
}

/**
 * The `Content-Type` a client-node options object sets (`setHeaderOptions('Content-Type', PatchStrategy.X)`),
 * found by running its middleware's `pre` on a stand-in request; client-node's default is a JSON patch.
 */
export function patchContentType(options: CallOptions): string {
  let type = 'application/json-patch+json';
  for (const m of (options?.middleware ?? []) as Array<{ pre?: (ctx: unknown) => unknown }>) {
    try {
      m.pre?.({
        setHeaderParam: (k: string, v: string) => {
          if (k.toLowerCase() === 'content-type') type = v;
        },
      });
    } catch {
      // a middleware that needs more than setHeaderParam: not a content type
    }
  }
  return type;
}

/** What {@link exchangeJson} sends and its bounds. */
export interface JsonExchange {
  readonly method: string;
  readonly url: URL;
  readonly payload: Buffer | undefined;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
}

/**
 * Sends `payload` on `req` and reads the JSON answer: bounded by `timeoutMs` (no answer) and `maxBodyBytes`; an
 * answer outside 2xx rejects with {@link KubeApiError}, a 2xx that is not JSON with an error. A kept-alive socket the
 * server had closed before answering rejects with `staleSocket: true` (the caller may send once more).
 */
export function exchangeJson<T>(req: http.ClientRequest, x: JsonExchange): Promise<T> {
  const { method, url } = x;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let answered = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      req.destroy();
      if (!answered && req.reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET') {
        Object.assign(err, { staleSocket: true });
      }
      reject(err);
    };
    req.setTimeout(x.timeoutMs, () => fail(new Error(`${method} ${url.pathname}: no answer within ${x.timeoutMs} ms`)));
    req.on('error', fail);
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > x.maxBodyBytes) fail(new Error(`${method} ${url.pathname}: answer over ${x.maxBodyBytes} bytes`));
        else chunks.push(c);
      });
      res.on('error', fail);
      res.on('end', () => {
        if (settled) return;
        settled = true;
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text === '' ? undefined : JSON.parse(text);
        } catch {
          // not JSON (a proxy's error page): kept as text
        }
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          if (typeof parsed === 'string') reject(new Error(`${method} ${url.pathname}: answer is not JSON`));
          else resolve(parsed as T);
        } else {
          reject(new KubeApiError(status, parsed, method, url.pathname));
        }
      });
    });
    req.end(x.payload);
  });
}
