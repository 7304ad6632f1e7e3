/**
 * The object store behind the Kubernetes API stand-in: one generic store for every resource type, a global
 * resourceVersion counter, optimistic concurrency, and a bounded change history that watches replay from.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { PATCH_TYPES, jsonPatch, mergePatch, strategicMergePatch } from './kube-api-patch.js';
import {
  ApiError,
  alreadyExists,
  apiVersionOf,
  badRequest,
  conflict,
  invalid,
  matchesFields,
  matchesLabels,
  notFound,
  typeKey,
  type FieldRequirement,
  type KubeObject,
  type LabelSelector,
  type ResourceType,
} from './kube-api-types.js';
import { validateDra } from './kube-api-dra.js';
import { decodeTimes } from './kube-api-validate.js';

/** Watch event types. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One committed change. */
export interface Change {
  readonly rv: number;
  readonly type: ResourceType;
  readonly change: ChangeType;
  /** The object after the change (for DELETED: as it was deleted, with the deletion's resourceVersion). */
  readonly object: KubeObject;
  /** The object before the change (MODIFIED, DELETED). */
  readonly previous?: KubeObject;
}

/** Preconditions of a DELETE (`DeleteOptions.preconditions`). */
export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CONFIGMAP_KEY_RE = /^[-._a-zA-Z0-9]+$/;
/** ConfigMap size limit of the real server (`data` + `binaryData`). */
export const CONFIGMAP_MAX_BYTES = 1024 * 1024;

/** Options of the store. */
export interface KubeStoreOptions {
  /** Changes kept for watches that start from an older resourceVersion (default 1000). */
  readonly historyLimit?: number;
  /** Clock for `creationTimestamp` (default `Date.now`). */
  readonly now?: () => number;
  /**
   * Validating admission of a create or update (patches included), after the object's validation and before it is
   * stored, as kube-apiserver orders them: throws the `ApiError` to answer (kube-api-admission.ts).
   */
  readonly admit?: (w: StoreWrite) => void;
}

/** A write as validating admission sees it (the stand-in adds the user). */
export interface StoreWrite {
  readonly operation: 'CREATE' | 'UPDATE';
  readonly type: ResourceType;
  readonly namespace: string | undefined;
  readonly name: string;
  readonly subresource: string | undefined;
  readonly object: KubeObject;
  readonly oldObject: KubeObject | null;
}

/**
 * The stand-in's objects. Every public method takes and returns copies, except {@link KubeStore.listRefs}.
 *
 * A stored object is never mutated after it is stored, so references to it stay valid snapshots (paged lists and
 * `listRefs` rely on this): every incoming body is cloned by `#normalise` (create, update, patch, apply), `#commit`
 * stores that fresh object and hands out clones; the patch functions build new objects from the stored one without
 * changing it (merge and strategic copy each level they touch, JSON patch clones first) and their result is cloned
 * again; the status subresource starts from a clone of the stored object; delete removes the stored object and
 * stamps the deletion's resourceVersion on a clone. Changes in the history keep clones (`object`) or the replaced
 * stored object (`previous`), which is no longer in the store and equally untouched.
 */
export class KubeStore {
  #rv = 1000;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #history: Change[] = [];
  readonly #listeners = new Set<(c: Change) => void>();
  readonly #historyLimit: number;
  readonly #now: () => number;
  readonly #admit: ((w: StoreWrite) => void) | undefined;

  constructor(options: KubeStoreOptions = {}) {
    this.#historyLimit = options.historyLimit ?? 1000;
    this.#now = options.now ?? Date.now;
    this.#admit = options.admit;
  }

  /** The current (latest) resourceVersion. */
  get resourceVersion(): string {
    return String(this.#rv);
  }

  /** One object, or undefined. */
  get(t: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const o = this.#bucket(t).get(objKey(t, namespace, name));
    return o === undefined ? undefined : structuredClone(o);
  }

  /** Objects of a type (all namespaces when `namespace` is undefined), in key order, filtered by selectors. */
  list(
    t: ResourceType,
    namespace: string | undefined,
    labels: LabelSelector = [],
    fields: readonly FieldRequirement[] = [],
  ): KubeObject[] {
    return this.listRefs(t, namespace, labels, fields).map((o) => structuredClone(o));
  }

  /**
   * As {@link list}, but the stored objects themselves in a new array: for serving lists without copying. Callers
   * must not change them (the store never does, see the class comment).
   */
  listRefs(
    t: ResourceType,
    namespace: string | undefined,
    labels: LabelSelector = [],
    fields: readonly FieldRequirement[] = [],
  ): readonly KubeObject[] {
    const bucket = this.#bucket(t);
    const out: KubeObject[] = [];
    for (const k of [...bucket.keys()].sort()) {
      const o = bucket.get(k)!;
      if (namespace !== undefined && t.namespaced && o.metadata?.namespace !== namespace) continue;
      if (matches(o, labels, fields)) out.push(o);
    }
    return out;
  }

  /** POST: a new object; 409 AlreadyExists, 422 on an invalid name, 400 on a namespace mismatch. */
  create(t: ResourceType, namespace: string | undefined, body: KubeObject): KubeObject {
    const obj = this.#normalise(t, namespace, body);
    decodeTimes(t, obj, 'create');
    const meta = obj.metadata!;
    if (meta.name === undefined || meta.name === '') {
      if (typeof meta.generateName === 'string' && meta.generateName !== '') {
        meta.name = meta.generateName + randomBytes(4).toString('hex').slice(0, 5);
      } else {
        throw invalid(t, '', 'metadata.name', 'Required value: name or generateName is required');
      }
    }
    validate(t, obj);
    const key = objKey(t, namespace, meta.name);
    this.#admit?.({
      operation: 'CREATE',
      type: t,
      namespace,
      name: meta.name,
      subresource: undefined,
      object: obj,
      oldObject: null,
    });
    if (this.#bucket(t).has(key)) throw alreadyExists(t, meta.name);
    delete meta.resourceVersion;
    meta.uid = randomUUID();
    meta.creationTimestamp = new Date(this.#now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    return this.#commit(t, key, 'ADDED', obj, undefined);
  }

  /**
   * PUT: replaces the object. A `metadata.resourceVersion` that is not the current one is a 409 Conflict; without
   * one the update is unconditional (as the real server allows for these types). `subresource` `status` changes
   * only `status`; the main resource keeps the stored `status` when the type has a status subresource.
   */
  update(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    body: KubeObject,
    subresource?: string,
  ): KubeObject {
    const key = objKey(t, namespace, name);
    const old = this.#bucket(t).get(key);
    const obj = this.#normalise(t, namespace, body);
    decodeTimes(t, obj, 'update');
    const meta = obj.metadata!;
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
    }
    meta.name = name;
    if (old === undefined) throw notFound(t, name);
    if (
      meta.resourceVersion !== undefined &&
      meta.resourceVersion !== '' &&
      meta.resourceVersion !== old.metadata!.resourceVersion
    ) {
      throw conflict(
        t,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    return this.#replace(t, key, old, obj, subresource);
  }

  /** PATCH in one of the four content types of {@link PATCH_TYPES}. Apply creates a missing object. */
  patch(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    contentType: string,
    patch: unknown,
    subresource?: string,
  ): KubeObject {
    const key = objKey(t, namespace, name);
    const old = this.#bucket(t).get(key);
    if (old === undefined) {
      if (contentType === PATCH_TYPES.apply) {
        const body = structuredClone(patch) as KubeObject;
        body.metadata = { ...(body.metadata ?? {}), name };
        return this.create(t, namespace, body);
      }
      throw notFound(t, name);
    }
    let next: unknown;
    switch (contentType) {
      case PATCH_TYPES.merge:
        next = mergePatch(old, patch);
        break;
      case PATCH_TYPES.strategic:
      case PATCH_TYPES.apply:
        next = strategicMergePatch(old, patch);
        break;
      case PATCH_TYPES.json:
        next = jsonPatch(old, patch);
        break;
      default:
        throw new ApiError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: ${Object.values(PATCH_TYPES).join(', ')}`,
        );
    }
    if (next === null || typeof next !== 'object' || Array.isArray(next))
      throw badRequest('the patch did not produce an object');
    const obj = this.#normalise(t, namespace, next as KubeObject);
    decodeTimes(t, obj, 'patch');
    const meta = obj.metadata!;
    if (meta.name !== name)
      throw badRequest(`the name of the object (${String(meta.name)}) does not match the name on the URL (${name})`);
    // A resourceVersion inside the patch is a precondition (the real server's behaviour for merge/strategic patches).
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== old.metadata!.resourceVersion) {
      throw conflict(
        t,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    return this.#replace(t, key, old, obj, subresource);
  }

  /** DELETE; preconditions failing are a 409 Conflict. Returns the deleted object. */
  delete(t: ResourceType, namespace: string | undefined, name: string, pre: Preconditions = {}): KubeObject {
    const key = objKey(t, namespace, name);
    const old = this.#bucket(t).get(key);
    if (old === undefined) throw notFound(t, name);
    if (pre.uid !== undefined && pre.uid !== old.metadata!.uid) {
      throw conflict(
        t,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata!.uid}`,
      );
    }
    if (pre.resourceVersion !== undefined && pre.resourceVersion !== old.metadata!.resourceVersion) {
      throw conflict(
        t,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata!.resourceVersion}`,
      );
    }
    this.#bucket(t).delete(key);
    const gone = structuredClone(old);
    gone.metadata!.resourceVersion = String(++this.#rv);
    this.#record({ rv: this.#rv, type: t, change: 'DELETED', object: gone, previous: old });
    return structuredClone(gone);
  }

  /** Changes after `rv`, oldest first; `'expired'` when the history no longer reaches back that far. */
  changesSince(rv: number): Change[] | 'expired' {
    if (!this.reachesBack(rv)) return 'expired';
    return this.#history.filter((c) => c.rv > rv);
  }

  /**
   * True while the history holds every change after `rv` (`changesSince` is not `'expired'`): the stand-in's
   * equivalent of "not compacted yet", which also decides whether a paged list's snapshot at `rv` is still valid.
   */
  reachesBack(rv: number): boolean {
    const oldest = this.#history[0];
    if (oldest !== undefined) return rv >= oldest.rv - 1;
    return rv >= this.#rv || rv === 0;
  }

  /** Calls `fn` on every future change; returns the unsubscribe function. */
  subscribe(fn: (c: Change) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #bucket(t: ResourceType): Map<string, KubeObject> {
    const k = typeKey(t.group, t.version, t.plural);
    let b = this.#objects.get(k);
    if (b === undefined) this.#objects.set(k, (b = new Map<string, KubeObject>()));
    return b;
  }

  #normalise(t: ResourceType, namespace: string | undefined, body: KubeObject): KubeObject {
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw badRequest('the body must be a JSON object');
    const obj = structuredClone(body);
    const want = apiVersionOf(t);
    if (obj.apiVersion !== undefined && obj.apiVersion !== want) {
      throw badRequest(
        `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${want})`,
      );
    }
    if (obj.kind !== undefined && obj.kind !== t.kind) {
      throw badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${t.kind})`);
    }
    obj.apiVersion = want;
    obj.kind = t.kind;
    const meta = (obj.metadata ??= {});
    if (t.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      meta.namespace = namespace;
    } else {
      delete meta.namespace;
    }
    return obj;
  }

  #replace(t: ResourceType, key: string, old: KubeObject, obj: KubeObject, subresource?: string): KubeObject {
    let next = obj;
    if (subresource === 'status') {
      next = structuredClone(old);
      if (obj.status === undefined) delete next.status;
      else next.status = obj.status;
    } else if (subresource !== undefined) {
      throw notFound(t, `${old.metadata!.name}/${subresource}`);
    } else if (t.statusSubresource === true) {
      if (old.status === undefined) delete next.status;
      else next.status = structuredClone(old.status);
    }
    const meta = next.metadata!;
    meta.uid = old.metadata!.uid;
    meta.creationTimestamp = old.metadata!.creationTimestamp;
    delete meta.generateName;
    if (old.metadata!.generateName !== undefined) meta.generateName = old.metadata!.generateName;
    validate(t, next);
    meta.resourceVersion = old.metadata!.resourceVersion;
    // admission runs on a no-op update too (the real server decides "no change" only when it writes to etcd)
    this.#admit?.({
      operation: 'UPDATE',
      type: t,
      namespace: meta.namespace,
      name: meta.name!,
      subresource,
      object: next,
      oldObject: old,
    });
    // An update that changes nothing is not written (no new resourceVersion, no watch event), as in the real server.
    if (JSON.stringify(canonical(next)) === JSON.stringify(canonical(old))) return structuredClone(old);
    return this.#commit(t, key, 'MODIFIED', next, old);
  }

  #commit(
    t: ResourceType,
    key: string,
    change: ChangeType,
    obj: KubeObject,
    previous: KubeObject | undefined,
  ): KubeObject {
    obj.metadata!.resourceVersion = String(++this.#rv);
    this.#bucket(t).set(key, obj);
    this.#record({ rv: this.#rv, type: t, change, object: structuredClone(obj), previous });
    return structuredClone(obj);
  }

  #record(c: Change): void {
    this.#history.push(c);
    if (this.#history.length > this.#historyLimit) this.#history.splice(0, this.#history.length - this.#historyLimit);
    for (const fn of [...this.#listeners]) fn(c);
  }
}

/** True when the object passes both selectors. */
export function matches(o: KubeObject, labels: LabelSelector, fields: readonly FieldRequirement[]): boolean {
  return matchesLabels(labels, o.metadata?.labels) && matchesFields(fields, o);
}

function objKey(t: ResourceType, namespace: string | undefined, name: string): string {
  return t.namespaced ? `${namespace ?? ''}/${name}` : name;
}

/** Key order does not matter for "is this update a no-op". */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

function validate(t: ResourceType, obj: KubeObject): void {
  const name = obj.metadata!.name ?? '';
  if (name.length > 253 || !NAME_RE.test(name)) {
    throw invalid(
      t,
      name,
      'metadata.name',
      `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
    );
  }
  const labels = obj.metadata!.labels;
  if (labels !== undefined) {
    for (const [k, v] of Object.entries(labels)) {
      if (typeof v !== 'string') throw invalid(t, name, `metadata.labels[${k}]`, 'Invalid value: must be a string');
    }
  }
  if (t.group === '' && t.plural === 'configmaps') {
    let size = 0;
    for (const field of ['data', 'binaryData'] as const) {
      const d = obj[field];
      if (d === undefined || d === null) continue;
      if (typeof d !== 'object' || Array.isArray(d)) throw badRequest(`${field} must be an object of strings`);
      for (const [k, v] of Object.entries(d as Record<string, unknown>)) {
        if (!CONFIGMAP_KEY_RE.test(k)) {
          throw invalid(
            t,
            name,
            `${field}[${k}]`,
            `Invalid value: "${k}": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`,
          );
        }
        if (typeof v !== 'string') throw badRequest(`${field}[${k}] must be a string`);
        size += k.length + Buffer.byteLength(v, 'utf8');
      }
    }
    if (size > CONFIGMAP_MAX_BYTES)
      throw invalid(t, name, '[]', `Too long: must have at most ${CONFIGMAP_MAX_BYTES} bytes`);
  }
  validateDra(t, obj); // resource.k8s.io/v1: the real server's limits the agent relies on (kube-api-dra.ts)
}
