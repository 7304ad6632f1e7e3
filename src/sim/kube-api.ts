/**
 * A Kubernetes API server stand-in over real HTTP on 127.0.0.1, for tests and `simulate`. `@kubernetes/client-node`
 * and `kubectl` talk to it unchanged (see docs/testing.md for what kubectl can do against it).
 *
 * Serves ConfigMaps, Pods, Nodes, Namespaces, core and `events.k8s.io` Events, `coordination.k8s.io` Leases, and any
 * further {@link ResourceType} (e.g. Volcano PodGroups): get, list and watch with label/field selectors and
 * resourceVersion, paged lists (`limit` / `continue`, see `kube-api-pages.ts`), create, update with optimistic
 * concurrency, delete, merge / strategic / JSON / apply patches, `Status` error bodies, legacy discovery. A switch
 * makes it answer 503 for a while, another 409 Conflict to every write of an existing object (reads and watches
 * served, `kube-api-conflicts.ts`); a request log and per-object write counters let tests assert what clients did.
 */
import * as k8s from '@kubernetes/client-node';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConflictStorm, type ConflictScope } from './kube-api-conflicts.js';
import { WriteOrdering, type WatchOrder } from './kube-api-order.js';
import { ListSnapshots, parseLimit, type ListPage } from './kube-api-pages.js';
import { PATCH_TYPES } from './kube-api-patch.js';
import { KubeStore, matches, type Change, type Preconditions, type StoreWrite } from './kube-api-store.js';
import { PolicyEvaluator } from './kube-api-admission.js';
import { ADMIN_USER, type UserInfo } from './kube-api-rbac.js';
import {
  ApiError,
  DEFAULT_RESOURCES,
  VALIDATING_ADMISSION_POLICIES,
  VALIDATING_ADMISSION_POLICY_BINDINGS,
  apiVersionOf,
  badRequest,
  notFound,
  parseFieldSelector,
  parseLabelSelector,
  typeKey,
  type KubeObject,
  type ResourceType,
} from './kube-api-types.js';

export * from './kube-api-types.js';
export { PATCH_TYPES } from './kube-api-patch.js';
export type { Change, ChangeType } from './kube-api-store.js';
export { CONFLICT_REASON, type ConflictScope } from './kube-api-conflicts.js';
export { DEFAULT_WATCH_ORDER_DELAY_MS, type WatchOrder } from './kube-api-order.js';
export {
  CONTINUE_EXPIRED_MESSAGE,
  CONTINUE_INCONSISTENT_MESSAGE,
  DEFAULT_LIST_SNAPSHOT_LIMIT,
  DEFAULT_LIST_SNAPSHOT_TTL_MS,
} from './kube-api-pages.js';

/** Request body limit of the real API server (3 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Options of {@link KubeApiStandIn.start}. */
export interface KubeApiStandInOptions {
  /** Types served; default {@link DEFAULT_RESOURCES}. */
  readonly resources?: readonly ResourceType[];
  /** Types served in addition to `resources` (e.g. `VOLCANO_PODGROUPS`). */
  readonly extraResources?: readonly ResourceType[];
  /** Larger request bodies are refused with 413 (default 3 MiB). */
  readonly maxBodyBytes?: number;
  /** Changes kept for watches from an older resourceVersion (default 1000); older ones get 410 Gone. */
  readonly historyLimit?: number;
  /** Requests kept in the log (default 10 000, oldest dropped first). */
  readonly logLimit?: number;
  /** When set, requests must carry `Authorization: Bearer <token>` (else 401). */
  readonly token?: string;
  /**
   * Authentication and authorization of every request, instead of `token` (e.g. the `RbacGate` of
   * `kube-api-rbac.ts`): throws the `ApiError` to answer (401, 403) before the request is read or routed.
   */
  readonly gate?: { admit(method: string, url: URL, authorization: string | undefined): UserInfo | void };
  /**
   * Enforce the ValidatingAdmissionPolicies and bindings stored in the stand-in (default false), with the real
   * server's answers (kube-api-admission.ts; docs/testing.md). Serves `admissionregistration.k8s.io/v1`
   * `validatingadmissionpolicies` and `validatingadmissionpolicybindings`; needs the development dependency
   * `@bufbuild/cel`. The user is the gate's (without a gate: an administrator).
   */
  readonly admissionPolicies?: boolean;
  /** Clock for `creationTimestamp` (default `Date.now`). */
  readonly now?: () => number;
  /**
   * Namespace objects created at start (default {@link DEFAULT_NAMESPACES}). Objects of other types do not need
   * their namespace to exist; kubectl only looks a namespace up to explain a NotFound.
   */
  readonly namespaces?: readonly string[];
  /**
   * Order of a write's response and the watch events of its change (default `as-is`); a real API server may
   * deliver either first. Changed at run time by {@link KubeApiStandIn.setWatchOrder}.
   */
  readonly watchOrder?: WatchOrder;
  /** Gap between the two of {@link watchOrder} (default {@link DEFAULT_WATCH_ORDER_DELAY_MS}). */
  readonly watchOrderDelayMs?: number;
  /**
   * Lifetime of a paged list's snapshot, measured with `now` (default 5 minutes, etcd's default compaction
   * interval); a continue token after it gets 410 `Expired`.
   */
  readonly listSnapshotTtlMs?: number;
  /** Paged lists in progress kept at most (default 256); the oldest expires first. */
  readonly listSnapshotLimit?: number;
}

/** Namespaces that exist from the start. */
export const DEFAULT_NAMESPACES: readonly string[] = [
  'default',
  'kube-system',
  'kube-public',
  'cluster-system',
  'mindx-dl',
];

/** What a request did, for tests. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | 'other';

/** One logged request. */
export interface RequestRecord {
  readonly seq: number;
  readonly method: string;
  /** Path and query as received. */
  readonly url: string;
  verb: Verb;
  readonly resource?: string;
  readonly group?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly subresource?: string;
  readonly contentType?: string;
  /** HTTP status of the answer (200 for a watch that started). */
  status: number;
}

/** Filter of {@link KubeApiStandIn.requests} and {@link KubeApiStandIn.writeCount}. */
export interface RequestFilter {
  readonly verb?: Verb | readonly Verb[];
  readonly resource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Only requests answered with a 2xx status. */
  readonly succeeded?: boolean;
}

interface Route {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
  watchPath: boolean;
}

const JSON_BODY_TYPES: ReadonlySet<string> = new Set(['application/json', '', ...Object.values(PATCH_TYPES)]);
const WRITE_VERBS: readonly Verb[] = ['create', 'update', 'patch', 'delete', 'deletecollection'];

/** The stand-in. Create with {@link KubeApiStandIn.start}; stop with {@link KubeApiStandIn.stop}. */
export class KubeApiStandIn {
  /** Direct access to the objects (no HTTP, no request log): seeding and inspection in tests. */
  readonly store: KubeStore;
  readonly #server: http.Server;
  readonly #types = new Map<string, ResourceType>();
  readonly #options: KubeApiStandInOptions;
  readonly #log: RequestRecord[] = [];
  readonly #writes = new Map<string, number>();
  readonly #watches = new Set<http.ServerResponse>();
  readonly #ordering: WriteOrdering;
  readonly #pages: ListSnapshots;
  readonly #conflicts = new ConflictStorm();
  #seq = 0;
  /** The CEL evaluator of the `admissionPolicies` mode (loaded by `start`). */
  #policies: PolicyEvaluator | undefined;
  /** The user of the request being dispatched (writes reach the store synchronously inside `#dispatch`). */
  #user: UserInfo | undefined;
  #unavailableUntil = 0;
  #unavailable = false;
  #port = 0;

  private constructor(options: KubeApiStandInOptions) {
    this.#options = options;
    this.#ordering = new WriteOrdering(options.watchOrder, options.watchOrderDelayMs);
    this.store = new KubeStore({ historyLimit: options.historyLimit, now: options.now, admit: (w) => this.#admit(w) });
    this.#pages = new ListSnapshots({
      ttlMs: options.listSnapshotTtlMs,
      limit: options.listSnapshotLimit,
      now: options.now,
      reaches: (rv) => this.store.reachesBack(rv),
    });
    const policyTypes =
      options.admissionPolicies === true ? [VALIDATING_ADMISSION_POLICIES, VALIDATING_ADMISSION_POLICY_BINDINGS] : [];
    for (const t of [...(options.resources ?? DEFAULT_RESOURCES), ...(options.extraResources ?? []), ...policyTypes]) {
      this.#types.set(typeKey(t.group, t.version, t.plural), t);
    }
    const nsType = this.#types.get(typeKey('', 'v1', 'namespaces'));
    if (nsType !== undefined) {
      for (const name of options.namespaces ?? DEFAULT_NAMESPACES)
        this.store.create(nsType, undefined, { metadata: { name } });
    }
    this.#server = http.createServer((req, res) => void this.#handle(req, res));
  }

  /** Starts a stand-in listening on 127.0.0.1 on a free port. */
  static async start(options: KubeApiStandInOptions = {}): Promise<KubeApiStandIn> {
    const s = new KubeApiStandIn(options);
    if (options.admissionPolicies === true) s.#policies = await PolicyEvaluator.load();
    await new Promise<void>((resolve, reject) => {
      s.#server.once('error', reject);
      s.#server.listen(0, '127.0.0.1', () => resolve());
    });
    s.#port = (s.#server.address() as AddressInfo).port;
    return s;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  get port(): number {
    return this.#port;
  }

  /** Closes watches and connections and stops listening. */
  async stop(): Promise<void> {
    this.#ordering.close();
    for (const w of this.#watches) w.end();
    this.#watches.clear();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  /** The served type of `(group, plural)`, for seeding through {@link store}. */
  resourceType(group: string, plural: string): ResourceType {
    for (const t of this.#types.values()) if (t.group === group && t.plural === plural) return t;
    throw new Error(`type ${plural}.${group} is not served`);
  }

  /** Answers every request with 503 until {@link setAvailable}`(true)`; open watches are closed. */
  setAvailable(available: boolean): void {
    this.#unavailable = !available;
    this.#unavailableUntil = 0;
    if (!available) this.#closeWatches();
  }

  /** Answers every request with 503 for `ms` milliseconds (wall clock); open watches are closed. */
  unavailableFor(ms: number): void {
    this.#unavailableUntil = Date.now() + ms;
    this.#closeWatches();
  }

  /** True while requests get 503. */
  get unavailable(): boolean {
    return this.#unavailable || Date.now() < this.#unavailableUntil;
  }

  /**
   * Answers every PUT and PATCH of an existing object in `scope` (default: all) with 409 Conflict for `ms`
   * milliseconds (monotonic; `Infinity`: until ended; ≤ 0 ends it now), as a server does while other writers keep
   * changing the objects; a POST of a name that exists is its 409 `AlreadyExists` anyway. GET, list, watch, creates
   * of new objects and deletes are served as usual (issue [T] item 2).
   */
  setConflicts(ms: number, scope?: ConflictScope): void {
    this.#conflicts.set(ms, scope);
  }

  /** True while a conflict storm is on ({@link setConflicts}). */
  get conflicting(): boolean {
    return this.#conflicts.active;
  }

  /** Writes answered 409 by conflict storms so far. */
  get conflictsAnswered(): number {
    return this.#conflicts.answered;
  }

  /**
   * From now on, delivers the watch events of a write before its response (`watch-first`), after it
   * (`response-first`), or as they happen (`as-is`), `delayMs` apart.
   */
  setWatchOrder(order: WatchOrder, delayMs?: number): void {
    this.#ordering.set(order, delayMs);
  }

  /**
   * Expires the snapshot of every paged list in progress, as an etcd compaction would: their next `continue` gets
   * 410 `Expired`. Returns how many there were.
   */
  compactLists(): number {
    return this.#pages.compact();
  }

  /** Paged lists in progress (snapshots still live). */
  get pagedLists(): number {
    return this.#pages.size;
  }

  /** Logged requests matching the filter, oldest first. */
  requests(filter: RequestFilter = {}): RequestRecord[] {
    return this.#log.filter((r) => matchesFilter(r, filter));
  }

  /**
   * Successful writes (create, update, patch, delete) of one object or of a type — counted for the stand-in's whole
   * life, independently of the bounded log.
   */
  writeCount(filter: { resource: string; namespace?: string; name?: string }): number {
    let n = 0;
    for (const [k, v] of this.#writes) {
      const [resource, namespace, name] = k.split('\u0000');
      if (resource !== filter.resource) continue;
      if (filter.namespace !== undefined && namespace !== filter.namespace) continue;
      if (filter.name !== undefined && name !== filter.name) continue;
      n += v;
    }
    return n;
  }

  /** Empties the request log and the write counters. */
  clearLog(): void {
    this.#log.length = 0;
    this.#writes.clear();
  }

  /** A client-node KubeConfig pointing at this stand-in (plain HTTP needs `skipTLSVerify`). */
  kubeConfig(token = this.#options.token ?? 'stand-in-token'): k8s.KubeConfig {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'stand-in', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'stand-in', token }],
      contexts: [{ name: 'stand-in', cluster: 'stand-in', user: 'stand-in', namespace: 'default' }],
      currentContext: 'stand-in',
    });
    return kc;
  }

  /** A kubeconfig file's text for child processes and kubectl. */
  kubeconfigYaml(token = this.#options.token ?? 'stand-in-token'): string {
    return kubeconfigYaml(this.url, token);
  }

  /** Writes {@link kubeconfigYaml} to `file` (mode 0600). */
  async writeKubeconfig(file: string, token?: string): Promise<void> {
    await writeFile(file, this.kubeconfigYaml(token), { mode: 0o600 });
  }

  #closeWatches(): void {
    for (const w of this.#watches) w.end();
    this.#watches.clear();
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const rec: RequestRecord = {
      seq: ++this.#seq,
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      verb: 'other',
      status: 0,
    };
    const ct = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
    if (ct !== '') Object.assign(rec, { contentType: ct });
    this.#log.push(rec);
    const limit = this.#options.logLimit ?? 10_000;
    if (this.#log.length > limit) this.#log.splice(0, this.#log.length - limit);
    res.on('finish', () => {
      if (rec.status === 0) rec.status = res.statusCode;
    });
    try {
      if (this.unavailable) {
        req.resume();
        throw new ApiError(
          503,
          'ServiceUnavailable',
          'the server is currently unable to handle the request (stand-in switched off)',
          {
            retryAfterSeconds: 1,
          },
        );
      }
      let user: UserInfo = ADMIN_USER;
      if (this.#options.gate !== undefined) {
        try {
          user = this.#options.gate.admit(rec.method, url, req.headers.authorization) ?? ADMIN_USER;
        } catch (e) {
          req.resume();
          throw e;
        }
      } else if (this.#options.token !== undefined && req.headers.authorization !== `Bearer ${this.#options.token}`) {
        req.resume();
        throw new ApiError(401, 'Unauthorized', 'Unauthorized');
      }
      const body = await readBody(req, this.#options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
      if (body.length > 0 && !JSON_BODY_TYPES.has(ct)) {
        // kubectl sends protobuf first; a 415 makes client-go fall back to JSON for the rest of its run.
        throw new ApiError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: ${[...JSON_BODY_TYPES].join(', ')}`,
        );
      }
      if (this.#serveMeta(url.pathname, res)) return;
      const route = this.#route(url.pathname);
      if (route === undefined && !this.#servesGroupVersion(url.pathname)) {
        // a group/version not served at all (Volcano's without Volcano) is no API path: Go's mux answers in text
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
        return;
      }
      if (route === undefined) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      Object.assign(rec, {
        resource: route.type.plural,
        group: route.type.group,
        ...(route.namespace !== undefined ? { namespace: route.namespace } : {}),
        ...(route.name !== undefined ? { name: route.name } : {}),
        ...(route.subresource !== undefined ? { subresource: route.subresource } : {}),
      });
      this.#user = user;
      try {
        this.#dispatch(req.method ?? 'GET', route, url.searchParams, ct, body, rec, res);
      } finally {
        this.#user = undefined;
      }
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError(500, 'InternalError', `stand-in error: ${String(e)}`);
      if (res.headersSent) {
        res.end();
        return;
      }
      sendJson(res, err.code, err.toStatus());
    }
  }

  #dispatch(
    method: string,
    route: Route,
    q: URLSearchParams,
    ct: string,
    body: Buffer,
    rec: RequestRecord,
    res: http.ServerResponse,
  ): void {
    const { type: t, namespace: ns, name, subresource } = route;
    const isWatch = route.watchPath || q.get('watch') === 'true' || q.get('watch') === '1';
    const setVerb = (v: Verb): void => {
      rec.verb = v;
    };
    if (method === 'GET' && isWatch) {
      setVerb('watch');
      this.#watch(route, q, res, rec);
      return;
    }
    if (method === 'GET' && name !== undefined) {
      setVerb('get');
      const o = this.store.get(t, ns, name);
      if (o === undefined || (subresource !== undefined && subresource !== 'status')) throw notFound(t, name);
      sendJson(res, 200, o);
      return;
    }
    if (method === 'GET') {
      setVerb('list');
      this.#list(route, q, res);
      return;
    }
    if (method === 'POST' && name === undefined) {
      setVerb('create');
      const o = this.store.create(t, ns, parseJson(body) as KubeObject);
      this.#countWrite(t, o);
      this.#ordering.answer(() => sendJson(res, 201, o));
      return;
    }
    const exists = (): boolean => name !== undefined && this.store.get(t, ns, name) !== undefined;
    if (method === 'PUT' && name !== undefined) {
      setVerb('update');
      const storm = this.#conflicts.check(t, ns, name, exists);
      if (storm !== undefined) throw storm;
      const o = this.store.update(t, ns, name, parseJson(body) as KubeObject, subresource);
      this.#countWrite(t, o);
      this.#ordering.answer(() => sendJson(res, 200, o));
      return;
    }
    if (method === 'PATCH' && name !== undefined) {
      setVerb('patch');
      if (ct === PATCH_TYPES.apply && (q.get('fieldManager') ?? '') === '') {
        throw new ApiError(
          400,
          'BadRequest',
          'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        );
      }
      const existed = exists();
      const storm = this.#conflicts.check(t, ns, name, () => existed);
      if (storm !== undefined) throw storm;
      const o = this.store.patch(t, ns, name, ct, parseJson(body), subresource);
      this.#countWrite(t, o);
      this.#ordering.answer(() => sendJson(res, existed ? 200 : 201, o));
      return;
    }
    if (method === 'DELETE' && name !== undefined) {
      setVerb('delete');
      const opts = body.length > 0 ? (parseJson(body) as { preconditions?: Preconditions }) : {};
      const o = this.store.delete(t, ns, name, opts.preconditions ?? {});
      this.#countWrite(t, o);
      this.#ordering.answer(() => sendJson(res, 200, t.deleteReturnsObject === true ? o : successStatus(t, o)));
      return;
    }
    if (method === 'DELETE') {
      setVerb('deletecollection');
      const items = this.store.list(
        t,
        ns,
        parseLabelSelector(q.get('labelSelector')),
        parseFieldSelector(q.get('fieldSelector')),
      );
      const deleted = items.map((o) => this.store.delete(t, o.metadata?.namespace, o.metadata!.name!));
      for (const o of deleted) this.#countWrite(t, o);
      const list = {
        kind: `${t.kind}List`,
        apiVersion: apiVersionOf(t),
        metadata: { resourceVersion: this.store.resourceVersion },
        items: deleted,
      };
      this.#ordering.answer(() => sendJson(res, 200, list));
      return;
    }
    throw new ApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
  }

  /**
   * A list GET: whole, or one page of at most `limit` items (`continue` for the next ones). Items are the stored
   * objects serialised as they are, not copies (they are never mutated, see `KubeStore`).
   */
  #list(route: Route, q: URLSearchParams, res: http.ServerResponse): void {
    const t = route.type;
    const labelSelector = q.get('labelSelector') ?? '';
    const fieldSelector = q.get('fieldSelector') ?? '';
    const labels = parseLabelSelector(labelSelector);
    const fields = parseFieldSelector(fieldSelector);
    const limit = parseLimit(q.get('limit'));
    const scope = {
      path: `${typeKey(t.group, t.version, t.plural)}|${route.namespace ?? ''}`,
      namespaced: t.namespaced,
      labelSelector,
      fieldSelector,
      selected: labels.length > 0 || fields.length > 0,
    };
    const token = q.get('continue') ?? '';
    const fresh = (): { rv: number; items: readonly KubeObject[] } => ({
      rv: Number(this.store.resourceVersion),
      items: this.store.listRefs(t, route.namespace, labels, fields),
    });
    let page: ListPage;
    if (token !== '') {
      page = this.#pages.next(token, scope, limit, q.get('resourceVersion') ?? '', fresh);
    } else {
      const { rv, items } = fresh();
      page = this.#pages.first(scope, rv, items, limit);
    }
    sendJson(res, 200, {
      kind: `${t.kind}List`,
      apiVersion: apiVersionOf(t),
      metadata: {
        resourceVersion: page.resourceVersion,
        ...(page.continue !== undefined ? { continue: page.continue } : {}),
        ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
      },
      items: page.items,
    });
  }

  /** The `admissionPolicies` mode: the stored policies decide on a write made through HTTP (not on seeding). */
  #admit(w: StoreWrite): void {
    if (this.#policies === undefined || this.#user === undefined) return;
    const policies = this.store.listRefs(VALIDATING_ADMISSION_POLICIES, undefined);
    const bindings = this.store.listRefs(VALIDATING_ADMISSION_POLICY_BINDINGS, undefined);
    if (bindings.length === 0) return;
    const denial = this.#policies.admit(policies, bindings, { ...w, user: this.#user });
    if (denial !== undefined) throw denial;
  }

  #countWrite(t: ResourceType, o: KubeObject): void {
    const k = [t.plural, o.metadata?.namespace ?? '', o.metadata?.name ?? ''].join('\u0000');
    this.#writes.set(k, (this.#writes.get(k) ?? 0) + 1);
  }

  /**
   * A watch: newline-delimited `{"type","object"}` events. Without a resourceVersion (or "0") it starts with ADDED
   * for every matching object; with one, it replays the changes after it (410 Gone in an ERROR event when the
   * history is too short). Objects entering or leaving the selection arrive as ADDED or DELETED.
   */
  #watch(route: Route, q: URLSearchParams, res: http.ServerResponse, rec: RequestRecord): void {
    const t = route.type;
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = [
      ...parseFieldSelector(q.get('fieldSelector')),
      ...(route.name !== undefined ? parseFieldSelector(`metadata.name=${route.name}`) : []),
    ];
    const rvText = q.get('resourceVersion') ?? '';
    let backlog: Change[] | 'expired' = [];
    if (rvText !== '' && rvText !== '0') {
      const rv = Number(rvText);
      if (!/^\d+$/.test(rvText)) throw badRequest(`invalid resource version: ${rvText}`);
      backlog = this.store.changesSince(rv);
    }
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Transfer-Encoding': 'chunked',
      'Cache-Control': 'no-cache',
    });
    res.flushHeaders();
    rec.status = 200;
    const send = (type: string, object: unknown): void => {
      if (!res.writableEnded && !res.destroyed) res.write(JSON.stringify({ type, object }) + '\n');
    };
    if (backlog === 'expired') {
      send(
        'ERROR',
        new ApiError(410, 'Expired', `too old resource version: ${rvText} (${this.store.resourceVersion})`).toStatus(),
      );
      res.end();
      return;
    }
    const inScope = (c: Change): boolean =>
      c.type === t &&
      (!t.namespaced || route.namespace === undefined || c.object.metadata?.namespace === route.namespace);
    const deliver = (c: Change): void => {
      if (!inScope(c)) return;
      const now = matches(c.object, labels, fields);
      const before = c.previous !== undefined && c.change !== 'ADDED' && matches(c.previous, labels, fields);
      if (c.change === 'DELETED') {
        if (before) send('DELETED', c.object);
      } else if (c.change === 'ADDED') {
        if (now) send('ADDED', c.object);
      } else if (now && before) send('MODIFIED', c.object);
      else if (now) send('ADDED', c.object);
      else if (before) send('DELETED', c.object);
    };
    if (rvText === '' || rvText === '0') {
      for (const o of this.store.listRefs(t, route.namespace, labels, fields)) send('ADDED', o);
    } else {
      for (const c of backlog) deliver(c);
    }
    const unsubscribe = this.store.subscribe((c) => this.#ordering.event(() => deliver(c)));
    this.#watches.add(res);
    const timeout = Number(q.get('timeoutSeconds') ?? '0');
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    timer?.unref();
    const cleanup = (): void => {
      unsubscribe();
      if (timer !== undefined) clearTimeout(timer);
      this.#watches.delete(res);
    };
    res.on('close', cleanup);
    res.on('finish', cleanup);
  }

  /** Whether `/apis/<group>/<version>/…` (or `/api/<version>/…`) names a group/version some served type has. */
  #servesGroupVersion(pathname: string): boolean {
    const segs = pathname.split('/').filter((s) => s !== '');
    const [group, version] = segs[0] === 'apis' ? [segs[1], segs[2]] : segs[0] === 'api' ? ['', segs[1]] : [];
    if (version === undefined) return true;
    return [...this.#types.values()].some((t) => t.group === group && t.version === version);
  }

  #route(pathname: string): Route | undefined {
    const segs = pathname
      .split('/')
      .filter((s) => s !== '')
      .map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (segs[0] === 'api' && segs.length >= 3) {
      group = '';
      version = segs[1]!;
      rest = segs.slice(2);
    } else if (segs[0] === 'apis' && segs.length >= 4) {
      group = segs[1]!;
      version = segs[2]!;
      rest = segs.slice(3);
    } else return undefined;
    let watchPath = false;
    if (rest[0] === 'watch') {
      watchPath = true;
      rest = rest.slice(1);
    }
    const typeOf = (plural: string | undefined): ResourceType | undefined =>
      plural === undefined ? undefined : this.#types.get(typeKey(group, version, plural));
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      const t = typeOf(rest[2]);
      if (t?.namespaced === true && rest.length <= 5) {
        return { type: t, namespace: rest[1], name: rest[3], subresource: rest[4], watchPath };
      }
    }
    const t = typeOf(rest[0]);
    if (t === undefined || rest.length > 3) return undefined;
    return { type: t, name: rest[1], subresource: rest[2], watchPath };
  }

  /** Version, health and discovery documents; true when the path was one of them. */
  #serveMeta(pathname: string, res: http.ServerResponse): boolean {
    const p = pathname.replace(/\/+$/, '') || '/';
    if (p === '/healthz' || p === '/livez' || p === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      return true;
    }
    if (p === '/version') {
      sendJson(res, 200, {
        major: '1',
        minor: '32',
        gitVersion: 'v1.32.0-ascend-stand-in',
        platform: `${process.platform}/${process.arch}`,
      });
      return true;
    }
    const types = [...this.#types.values()];
    if (p === '/api') {
      sendJson(res, 200, {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${this.#port}` }],
      });
      return true;
    }
    if (p === '/apis') {
      const groups = new Map<string, string[]>();
      for (const t of types) {
        if (t.group === '') continue;
        const vs = groups.get(t.group) ?? [];
        if (!vs.includes(t.version)) vs.push(t.version);
        groups.set(t.group, vs);
      }
      sendJson(res, 200, {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: [...groups].map(([name, vs]) => ({
          name,
          versions: vs.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
          preferredVersion: { groupVersion: `${name}/${vs[0]!}`, version: vs[0]! },
        })),
      });
      return true;
    }
    if (p === '/openapi/v3') {
      const paths: Record<string, { serverRelativeURL: string }> = {};
      for (const gv of new Set(types.map((t) => gvPath(t)))) paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}` };
      sendJson(res, 200, { paths });
      return true;
    }
    if (p.startsWith('/openapi/v3/')) {
      const mine = types.filter((t) => gvPath(t) === p.slice('/openapi/v3/'.length));
      if (mine.length === 0) return false;
      sendJson(res, 200, openApiV3(mine));
      return true;
    }
    const m = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))$/.exec(p);
    if (m) {
      const group = m[2] ?? '';
      const version = m[1] ?? m[3]!;
      const mine = types.filter((t) => t.group === group && t.version === version);
      if (mine.length === 0) return false;
      const resources: Record<string, unknown>[] = [];
      for (const t of mine) {
        resources.push({
          name: t.plural,
          singularName: t.singular,
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
          ...(t.shortNames !== undefined ? { shortNames: [...t.shortNames] } : {}),
        });
        if (t.statusSubresource === true) {
          resources.push({
            name: `${t.plural}/status`,
            singularName: '',
            namespaced: t.namespaced,
            kind: t.kind,
            verbs: ['get', 'patch', 'update'],
          });
        }
      }
      sendJson(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: group === '' ? version : `${group}/${version}`,
        resources,
      });
      return true;
    }
    return false;
  }
}

/** `api/v1` or `apis/<group>/<version>`: the OpenAPI v3 path of a type's group version. */
function gvPath(t: ResourceType): string {
  return t.group === '' ? `api/${t.version}` : `apis/${t.group}/${t.version}`;
}

/**
 * A minimal OpenAPI v3 document: one PATCH operation per type that declares the `fieldValidation` query parameter
 * and the type's group-version-kind. kubectl reads exactly this to decide that validation is done by the server
 * (it then sends `fieldValidation=Strict`, which the stand-in accepts and ignores). No schemas are served, so kubectl
 * builds strategic patches from its compiled-in types and sends merge patches for other types.
 */
function openApiV3(types: readonly ResourceType[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const t of types) {
    const base = `/${gvPath(t)}${t.namespaced ? '/namespaces/{namespace}' : ''}/${t.plural}/{name}`;
    paths[base] = {
      patch: {
        operationId: `patch${t.kind}`,
        parameters: [{ name: 'fieldValidation', in: 'query', schema: { type: 'string', uniqueItems: true } }],
        responses: { '200': { description: 'OK' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: t.group, version: t.version, kind: t.kind },
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes stand-in', version: 'v1.32.0' }, paths };
}

/** A kubeconfig (YAML) for `server` with a bearer token and TLS verification off (required for plain HTTP). */
export function kubeconfigYaml(server: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: stand-in',
    '  cluster:',
    `    server: ${server}`,
    '    insecure-skip-tls-verify: true',
    'users:',
    '- name: stand-in',
    '  user:',
    `    token: ${JSON.stringify(token)}`,
    'contexts:',
    '- name: stand-in',
    '  context:',
    '    cluster: stand-in',
    '    user: stand-in',
    '    namespace: default',
    'current-context: stand-in',
    '',
  ].join('\n');
}

function matchesFilter(r: RequestRecord, f: RequestFilter): boolean {
  if (f.verb !== undefined && !(typeof f.verb === 'string' ? [f.verb] : f.verb).includes(r.verb)) return false;
  if (f.resource !== undefined && r.resource !== f.resource) return false;
  if (f.namespace !== undefined && r.namespace !== f.namespace) return false;
  if (f.name !== undefined && r.name !== f.name) return false;
  if (f.succeeded === true && !(r.status >= 200 && r.status < 300)) return false;
  return true;
}

/** Verbs that change objects. */
export function isWriteVerb(v: Verb): boolean {
  return WRITE_VERBS.includes(v);
}

function successStatus(t: ResourceType, o: KubeObject): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: {
      name: o.metadata?.name,
      ...(t.group === '' ? {} : { group: t.group }),
      kind: t.plural,
      uid: o.metadata?.uid,
    },
  };
}

function sendJson(res: http.ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function parseJson(body: Buffer): unknown {
  if (body.length === 0) throw badRequest('the request body is empty');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (e) {
    // Apply bodies may be YAML; only their JSON form is understood here.
    throw badRequest(`the body is not JSON (the stand-in reads JSON only): ${(e as Error).message}`);
  }
}

async function readBody(req: http.IncomingMessage, max: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > max) {
    req.resume();
    throw tooLarge(max);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw tooLarge(max);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function tooLarge(max: number): ApiError {
  return new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${max}`);
}
