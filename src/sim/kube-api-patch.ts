/**
 * The three patch formats of the Kubernetes API for the stand-in: JSON merge patch (RFC 7386), JSON patch
 * (RFC 6902) and a subset of strategic merge patch (merge keys for the common list fields, `$patch`,
 * `$retainKeys`, `$deleteFromPrimitiveList/…`; `$setElementOrder/…` is accepted and ignored).
 */
import { badRequest, type ApiError } from './kube-api-types.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

/** Content types of PATCH requests. */
export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** RFC 7386: `null` deletes a member, objects merge recursively, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v) as Json;
  }
  return out;
}

/**
 * Merge keys of list fields by field name (the real server knows them per type from its schema; the names here are
 * unique enough across the core types this stand-in serves).
 */
const MERGE_KEYS: Readonly<Record<string, string>> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
  conditions: 'type',
  imagePullSecrets: 'name',
  ownerReferences: 'uid',
  addresses: 'type',
  taints: 'key',
  hostAliases: 'ip',
  containerStatuses: 'name',
};
/** Primitive lists merged as sets. */
const SET_LISTS: ReadonlySet<string> = new Set(['finalizers']);

/** Strategic merge patch of `patch` onto `target` (see the module comment for what is covered). */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const directive = patch.$patch;
  if (directive === 'replace') {
    const copy = { ...patch };
    delete copy.$patch;
    return copy;
  }
  if (directive === 'delete') return undefined;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  const retain = patch.$retainKeys;
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) {
      delete out[k];
    } else if (Array.isArray(v)) {
      out[k] = mergeList(k, out[k], v);
    } else if (isObject(v)) {
      const merged = strategicMergePatch(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged as Json;
    } else {
      out[k] = v;
    }
  }
  if (Array.isArray(retain)) {
    for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  }
  return out;
}

function mergeList(field: string, current: Json | undefined, patch: Json[]): Json[] {
  if (patch.some((e) => isObject(e) && e.$patch === 'replace')) {
    return patch.filter((e) => !(isObject(e) && e.$patch === 'replace'));
  }
  const cur = Array.isArray(current) ? current : [];
  if (SET_LISTS.has(field)) return [...cur, ...patch.filter((x) => !cur.includes(x))];
  const key = MERGE_KEYS[field];
  if (key === undefined) return structuredClone(patch);
  const out: Json[] = [...cur];
  for (const item of patch) {
    if (!isObject(item)) {
      out.push(item);
      continue;
    }
    const idx = out.findIndex((e) => isObject(e) && e[key] === item[key]);
    if (item.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
    } else if (idx >= 0) {
      out[idx] = strategicMergePatch(out[idx], item) as Json;
    } else {
      const copy = { ...item };
      delete copy.$patch;
      out.push(copy);
    }
  }
  return out;
}

/** One RFC 6902 operation. */
interface JsonPatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

/** RFC 6902 JSON patch; a failed `test` or a missing path is a 422-free 400/500 as in the real server (here 400). */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw badRequest('json patch must be an array of operations');
  let doc = structuredClone(target);
  for (const raw of ops as JsonPatchOp[]) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw badRequest(`invalid json patch operation: ${JSON.stringify(raw)}`);
    }
    switch (raw.op) {
      case 'add':
        doc = put(doc, raw.path, structuredClone(raw.value), 'add');
        break;
      case 'replace':
        get(doc, raw.path, raw.op);
        doc = put(doc, raw.path, structuredClone(raw.value), 'replace');
        break;
      case 'remove':
        doc = remove(doc, raw.path);
        break;
      case 'move': {
        const v = get(doc, requireFrom(raw), raw.op);
        doc = put(remove(doc, raw.from!), raw.path, v, 'add');
        break;
      }
      case 'copy':
        doc = put(doc, raw.path, structuredClone(get(doc, requireFrom(raw), raw.op)), 'add');
        break;
      case 'test':
        if (JSON.stringify(get(doc, raw.path, raw.op)) !== JSON.stringify(raw.value)) {
          throw badRequest(`testing value ${raw.path} failed`);
        }
        break;
      default:
        throw badRequest(`Unexpected kind: ${raw.op}`);
    }
  }
  return doc;
}

function requireFrom(op: JsonPatchOp): string {
  if (typeof op.from !== 'string') throw badRequest(`${op.op} operation needs "from"`);
  return op.from;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw badRequest(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function missing(path: string, op: string): ApiError {
  return badRequest(
    `the server rejected our request due to an error in our request: ${op} operation does not apply: doc is missing path: "${path}"`,
  );
}

function get(doc: unknown, path: string, op: string, segs: readonly string[] = pointer(path)): unknown {
  let cur = doc;
  for (const seg of segs) {
    if (Array.isArray(cur)) {
      const i = Number(seg);
      if (!/^\d+$/.test(seg) || i >= cur.length) throw missing(path, op);
      cur = cur[i];
    } else if (isObject(cur) && Object.prototype.hasOwnProperty.call(cur, seg)) {
      cur = cur[seg];
    } else throw missing(path, op);
  }
  return cur;
}

function put(doc: unknown, path: string, value: unknown, op: 'add' | 'replace'): unknown {
  const segs = pointer(path);
  if (segs.length === 0) return value;
  const parent = get(doc, path, op, segs.slice(0, -1));
  const last = segs[segs.length - 1]!;
  if (Array.isArray(parent)) {
    const i = last === '-' ? parent.length : Number(last);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) throw missing(path, op);
    if (op === 'add') parent.splice(i, 0, value);
    else parent[i] = value;
  } else if (isObject(parent)) {
    parent[last] = value as Json;
  } else throw missing(path, op);
  return doc;
}

function remove(doc: unknown, path: string): unknown {
  const segs = pointer(path);
  if (segs.length === 0) throw badRequest('cannot remove the whole document');
  const parent = get(doc, path, 'remove', segs.slice(0, -1));
  const last = segs[segs.length - 1]!;
  if (Array.isArray(parent) && /^\d+$/.test(last) && Number(last) < parent.length) parent.splice(Number(last), 1);
  else if (isObject(parent) && Object.prototype.hasOwnProperty.call(parent, last)) delete parent[last];
  else throw missing(path, 'remove');
  return doc;
}
