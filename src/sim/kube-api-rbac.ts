/**
 * RBAC for the Kubernetes API stand-in: bearer-token authentication and the authorization decision of
 * kube-apiserver's RBAC authorizer, over Role / ClusterRole / RoleBinding / ClusterRoleBinding objects loaded from
 * YAML (the manifests in `deploy/`). A request outside the roles is answered 403 with the `Status` body and message
 * kube-apiserver sends, and every decision records which grants (binding × rule × verb × resource × name) allowed
 * it, so a test can assert that every granted permission was used.
 *
 * What is mirrored (Kubernetes `RequestInfoFactory`, `rbac.RuleAllows`, `responsewriters.Forbidden`):
 * - request attributes: verb from the method (`get`/`list`/`watch`, `create`, `update`, `patch`, `delete`,
 *   `deletecollection`), `watch=` query (anything but `0`/`false`) and the legacy `/watch/` path; the resource name of
 *   a list or watch is the `metadata.name` of its field selector (that is how `resourceNames` can allow a list or a
 *   watch); a malformed selector loses it; subresources (`pods/status`), namespaces (`/namespaces/<ns>/…`, the
 *   namespace of a Namespace object is its name), API groups, non-resource URLs (verb = lower-case method);
 * - rules: `*` verbs, groups and resources, subresource wildcards (star, slash, subresource), `resourceNames` (a
 *   request without a name — `create`, `deletecollection`, an unselected list — never matches a rule that names
 *   names), `nonResourceURLs` with a trailing `*`;
 * - bindings: ClusterRoleBindings apply everywhere, RoleBindings in their namespace (to a Role of that namespace or a
 *   ClusterRole); subjects `User`, `Group`, `ServiceAccount` (a RoleBinding's subject without namespace is in the
 *   binding's namespace); a missing role denies and adds `RBAC: … not found` to the message;
 * - the `system:masters` group is allowed everything (kube-apiserver's privileged-group authorizer);
 * - the bootstrap roles every cluster has (`system:discovery`, `system:public-info-viewer`, `system:basic-user`),
 *   unless `bootstrap: false`.
 * Not mirrored: aggregated ClusterRoles (refused when loaded), the Node authorizer, webhooks, impersonation,
 * escalation checks on writes of RBAC objects (the stand-in serves none).
 */
import fs from 'node:fs';
import yaml from 'js-yaml';
import { ApiError, parseFieldSelector, parseLabelSelector, type StatusDetails } from './kube-api-types.js';

/** An authenticated user, as kube-apiserver's `user.Info`. */
export interface UserInfo {
  readonly username: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** The user of a service-account token (`system:serviceaccount:<ns>:<name>` and its three groups). */
export function serviceAccountUser(
  namespace: string,
  name: string,
  extra?: Readonly<Record<string, readonly string[]>>,
): UserInfo {
  return {
    username: `system:serviceaccount:${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
    ...(extra !== undefined ? { extra } : {}),
  };
}

/** A cluster administrator (kubeadm's `kubernetes-admin` in `system:masters`): allowed everything. */
export const ADMIN_USER: UserInfo = {
  username: 'kubernetes-admin',
  groups: ['system:masters', 'system:authenticated'],
};
/** The user of a request without credentials (anonymous authentication on). */
export const ANONYMOUS_USER: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

/** What the authorizer decides on (kube-apiserver's `authorizer.Attributes`). */
export interface RequestAttributes {
  readonly user: UserInfo;
  readonly verb: string;
  readonly isResourceRequest: boolean;
  /** The request path (non-resource requests are authorized on it). */
  readonly path: string;
  readonly apiGroup: string;
  readonly apiVersion: string;
  readonly resource: string;
  readonly subresource: string;
  /** `''` for cluster-scoped requests and lists across all namespaces. */
  readonly namespace: string;
  /** `''` when the request names no object (create, deletecollection, a list without a name selector). */
  readonly name: string;
}

const SPECIAL_VERBS = new Set(['proxy', 'watch']);
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** The verb of a `watch` query value (Kubernetes' string → bool conversion: all but `0`/`false` is true). */
function watchParam(v: string | null): boolean {
  return v !== null && v !== '0' && v.toLowerCase() !== 'false';
}

/**
 * The attributes of a request, as kube-apiserver's `RequestInfoFactory.NewRequestInfo` derives them from the method
 * and the URL. Throws {@link ApiError} 404 for `/api/v1/watch` or `/proxy` without a resource (kube-apiserver
 * cannot classify them either).
 */
export function requestAttributes(method: string, url: URL, user: UserInfo): RequestAttributes {
  const decoded = safeDecode(url.pathname);
  const base = {
    user,
    path: decoded,
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  };
  const nonResource = (): RequestAttributes => ({ ...base, verb: method.toLowerCase(), isResourceRequest: false });
  let parts = splitPath(decoded);
  if (parts.length < 3 || (parts[0] !== 'api' && parts[0] !== 'apis')) return nonResource();
  const prefix = parts[0];
  parts = parts.slice(1);
  let apiGroup = '';
  if (prefix === 'apis') {
    if (parts.length < 3) return nonResource();
    apiGroup = parts[0]!;
    parts = parts.slice(1);
  }
  const apiVersion = parts[0]!;
  parts = parts.slice(1);
  let verb: string;
  if (SPECIAL_VERBS.has(parts[0]!)) {
    if (parts.length < 2) {
      throw new ApiError(404, 'NotFound', `unable to determine kind and namespace from url ${url.pathname}`);
    }
    verb = parts[0]!;
    parts = parts.slice(1);
  } else {
    verb =
      (
        { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' } as Record<
          string,
          string
        >
      )[method.toUpperCase()] ?? '';
  }
  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1]!;
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
  }
  const resource = parts[0] ?? '';
  let name = parts.length >= 2 ? parts[1]! : '';
  const subresource = parts.length >= 3 && verb !== 'proxy' ? parts[2]! : '';
  if (name === '' && verb === 'get') {
    const q = url.searchParams;
    verb = watchParam(q.get('watch')) ? 'watch' : 'list';
    try {
      // ListOptions decoding: a selector that does not parse loses the name (and the request is a plain list/watch)
      parseLabelSelector(q.get('labelSelector'));
      const exact = parseFieldSelector(q.get('fieldSelector')).find((r) => r.path === 'metadata.name' && r.op === '=');
      if (exact !== undefined && validPathSegmentName(exact.value)) name = exact.value;
    } catch {
      // as kube-apiserver: "Couldn't parse request"; verb as above, no name
    }
  }
  if (name === '' && verb === 'delete') verb = 'deletecollection';
  return {
    ...base,
    verb,
    isResourceRequest: true,
    apiGroup,
    apiVersion,
    resource,
    subresource,
    namespace,
    name,
  };
}

function safeDecode(p: string): string {
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
}

function splitPath(p: string): string[] {
  const t = p.replace(/^\/+|\/+$/g, '');
  return t === '' ? [] : t.split('/');
}

/** `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`. */
function validPathSegmentName(n: string): boolean {
  return n !== '.' && n !== '..' && !n.includes('/') && !n.includes('%');
}

/** One rule of a Role or ClusterRole (`rbac.authorization.k8s.io/v1` `PolicyRule`). */
export interface PolicyRule {
  readonly verbs: readonly string[];
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
}

/** A Role (namespaced) or ClusterRole. */
export interface RbacRole {
  readonly kind: 'Role' | 'ClusterRole';
  readonly name: string;
  /** Roles only. */
  readonly namespace?: string;
  readonly rules: readonly PolicyRule[];
  /** Where it was loaded from (a file, or `bootstrap`). */
  readonly source: string;
}

/** A subject of a binding. */
export interface RbacSubject {
  readonly kind: 'User' | 'Group' | 'ServiceAccount';
  readonly name: string;
  readonly namespace?: string;
}

/** A RoleBinding (namespaced) or ClusterRoleBinding. */
export interface RbacBinding {
  readonly kind: 'RoleBinding' | 'ClusterRoleBinding';
  readonly name: string;
  /** RoleBindings only. */
  readonly namespace?: string;
  readonly roleRef: { readonly kind: 'Role' | 'ClusterRole'; readonly name: string };
  readonly subjects: readonly RbacSubject[];
  readonly source: string;
}

/** The RBAC objects the authorizer decides with. */
export interface RbacPolicy {
  readonly roles: readonly RbacRole[];
  readonly bindings: readonly RbacBinding[];
}

/** An RBAC object that cannot be loaded (not YAML, wrong shape, unsupported feature); names file and object. */
export class RbacPolicyError extends Error {
  override readonly name = 'RbacPolicyError';
}

/** Largest manifest file read (checked before parsing). */
export const MAX_RBAC_FILE_BYTES = 1024 * 1024;
const RBAC_API_VERSION = 'rbac.authorization.k8s.io/v1';
const RBAC_KINDS = new Set(['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding']);

/** The RBAC objects of YAML texts (multi-document); other kinds (ServiceAccount, policies …) are skipped. */
export function parseRbacYaml(texts: readonly { source: string; text: string }[]): RbacPolicy {
  const roles: RbacRole[] = [];
  const bindings: RbacBinding[] = [];
  for (const { source, text } of texts) {
    if (Buffer.byteLength(text) > MAX_RBAC_FILE_BYTES) {
      throw new RbacPolicyError(`${source}: larger than ${MAX_RBAC_FILE_BYTES} bytes`);
    }
    let docs: unknown[];
    try {
      docs = yaml.loadAll(text);
    } catch (e) {
      throw new RbacPolicyError(`${source}: not YAML: ${(e as Error).message.split('\n')[0]}`);
    }
    for (const doc of docs) {
      if (!isObj(doc) || typeof doc.kind !== 'string' || !RBAC_KINDS.has(doc.kind)) continue;
      const meta = isObj(doc.metadata) ? doc.metadata : {};
      const what = `${source}: ${doc.kind} ${typeof meta.namespace === 'string' ? `${meta.namespace}/` : ''}${String(meta.name)}`;
      if (doc.apiVersion !== RBAC_API_VERSION)
        throw new RbacPolicyError(`${what}: apiVersion is not ${RBAC_API_VERSION}`);
      if (typeof meta.name !== 'string' || meta.name === '') throw new RbacPolicyError(`${what}: no metadata.name`);
      const namespaced = doc.kind === 'Role' || doc.kind === 'RoleBinding';
      if (namespaced && (typeof meta.namespace !== 'string' || meta.namespace === '')) {
        throw new RbacPolicyError(`${what}: a ${doc.kind} needs metadata.namespace`);
      }
      const namespace = namespaced ? (meta.namespace as string) : undefined;
      if (doc.kind === 'Role' || doc.kind === 'ClusterRole') {
        if (doc.aggregationRule !== undefined) {
          throw new RbacPolicyError(`${what}: aggregationRule is not supported by the stand-in`);
        }
        const rules = (Array.isArray(doc.rules) ? doc.rules : []).map((r, i) =>
          ruleOf(r, `${what} rule ${i}`, namespaced),
        );
        roles.push({ kind: doc.kind, name: meta.name, ...(namespace ? { namespace } : {}), rules, source });
      } else {
        const ref = isObj(doc.roleRef) ? doc.roleRef : {};
        if ((ref.kind !== 'Role' && ref.kind !== 'ClusterRole') || typeof ref.name !== 'string') {
          throw new RbacPolicyError(`${what}: roleRef must name a Role or ClusterRole`);
        }
        if (doc.kind === 'ClusterRoleBinding' && ref.kind === 'Role') {
          throw new RbacPolicyError(`${what}: a ClusterRoleBinding can only refer to a ClusterRole`);
        }
        const subjects = (Array.isArray(doc.subjects) ? doc.subjects : []).map((s, i) =>
          subjectOf(s, `${what} subject ${i}`),
        );
        bindings.push({
          kind: doc.kind === 'RoleBinding' ? 'RoleBinding' : 'ClusterRoleBinding',
          name: meta.name,
          ...(namespace ? { namespace } : {}),
          roleRef: { kind: ref.kind, name: ref.name },
          subjects,
          source,
        });
      }
    }
  }
  return { roles, bindings };
}

/** {@link parseRbacYaml} of files (each at most {@link MAX_RBAC_FILE_BYTES}, checked before reading it whole). */
export function loadRbacFiles(files: readonly string[]): RbacPolicy {
  return parseRbacYaml(
    files.map((f) => {
      let size: number;
      try {
        size = fs.statSync(f).size;
      } catch (e) {
        throw new RbacPolicyError(`${f}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
      if (size > MAX_RBAC_FILE_BYTES) throw new RbacPolicyError(`${f}: larger than ${MAX_RBAC_FILE_BYTES} bytes`);
      return { source: f, text: fs.readFileSync(f, 'utf8') };
    }),
  );
}

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function strings(x: unknown, what: string): string[] | undefined {
  if (x === undefined || x === null) return undefined;
  if (!Array.isArray(x) || !x.every((s) => typeof s === 'string'))
    throw new RbacPolicyError(`${what}: not a list of strings`);
  return x;
}

/** A rule, validated as kube-apiserver's `ValidatePolicyRule`. */
function ruleOf(r: unknown, what: string, namespaced: boolean): PolicyRule {
  if (!isObj(r)) throw new RbacPolicyError(`${what}: not an object`);
  const verbs = strings(r.verbs, `${what} verbs`) ?? [];
  const apiGroups = strings(r.apiGroups, `${what} apiGroups`);
  const resources = strings(r.resources, `${what} resources`);
  const resourceNames = strings(r.resourceNames, `${what} resourceNames`);
  const nonResourceURLs = strings(r.nonResourceURLs, `${what} nonResourceURLs`);
  if (verbs.length === 0) throw new RbacPolicyError(`${what}: verbs must contain at least one value`);
  if (nonResourceURLs?.length) {
    if (namespaced) throw new RbacPolicyError(`${what}: namespaced rules cannot apply to non-resource URLs`);
    if (apiGroups?.length || resources?.length) {
      throw new RbacPolicyError(`${what}: rules cannot apply to both regular resources and non-resource URLs`);
    }
  } else {
    if (!apiGroups?.length) throw new RbacPolicyError(`${what}: resource rules must supply at least one api group`);
    if (!resources?.length) throw new RbacPolicyError(`${what}: resource rules must supply at least one resource`);
  }
  return {
    verbs,
    ...(apiGroups ? { apiGroups } : {}),
    ...(resources ? { resources } : {}),
    ...(resourceNames?.length ? { resourceNames } : {}),
    ...(nonResourceURLs?.length ? { nonResourceURLs } : {}),
  };
}

function subjectOf(s: unknown, what: string): RbacSubject {
  if (!isObj(s) || typeof s.name !== 'string' || s.name === '') throw new RbacPolicyError(`${what}: no name`);
  if (s.kind !== 'User' && s.kind !== 'Group' && s.kind !== 'ServiceAccount') {
    throw new RbacPolicyError(`${what}: kind must be User, Group or ServiceAccount`);
  }
  return {
    kind: s.kind,
    name: s.name,
    ...(typeof s.namespace === 'string' && s.namespace !== '' ? { namespace: s.namespace } : {}),
  };
}

/** The bootstrap roles every cluster has, bound as kube-apiserver binds them. */
export const BOOTSTRAP_POLICY: RbacPolicy = {
  roles: [
    {
      kind: 'ClusterRole',
      name: 'system:discovery',
      source: 'bootstrap',
      rules: [
        {
          verbs: ['get'],
          nonResourceURLs: [
            '/api',
            '/api/*',
            '/apis',
            '/apis/*',
            '/healthz',
            '/livez',
            '/openapi',
            '/openapi/*',
            '/readyz',
            '/version',
            '/version/',
          ],
        },
      ],
    },
    {
      kind: 'ClusterRole',
      name: 'system:public-info-viewer',
      source: 'bootstrap',
      rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'] }],
    },
    {
      kind: 'ClusterRole',
      name: 'system:basic-user',
      source: 'bootstrap',
      rules: [
        {
          verbs: ['create'],
          apiGroups: ['authorization.k8s.io'],
          resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
        },
        { verbs: ['create'], apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'] },
      ],
    },
  ],
  bindings: [
    {
      kind: 'ClusterRoleBinding',
      name: 'system:discovery',
      source: 'bootstrap',
      roleRef: { kind: 'ClusterRole', name: 'system:discovery' },
      subjects: [{ kind: 'Group', name: 'system:authenticated' }],
    },
    {
      kind: 'ClusterRoleBinding',
      name: 'system:public-info-viewer',
      source: 'bootstrap',
      roleRef: { kind: 'ClusterRole', name: 'system:public-info-viewer' },
      subjects: [
        { kind: 'Group', name: 'system:authenticated' },
        { kind: 'Group', name: 'system:unauthenticated' },
      ],
    },
    {
      kind: 'ClusterRoleBinding',
      name: 'system:basic-user',
      source: 'bootstrap',
      roleRef: { kind: 'ClusterRole', name: 'system:basic-user' },
      subjects: [{ kind: 'Group', name: 'system:authenticated' }],
    },
  ],
};

/**
 * One granted permission: a binding's rule, one verb × group × resource × name of it (or one verb × non-resource
 * URL). `key` identifies it; {@link AuthorizationDecision.grants} uses the same keys.
 */
export interface Grant {
  readonly key: string;
  readonly binding: string;
  readonly role: string;
  readonly ruleIndex: number;
  readonly source: string;
  /** The namespace the grant applies in; `*` for a ClusterRoleBinding (every namespace and cluster scope). */
  readonly scope: string;
  readonly verb: string;
  readonly apiGroup?: string;
  readonly resource?: string;
  /** Absent: any name. */
  readonly resourceName?: string;
  readonly nonResourceURL?: string;
}

/** What the authorizer decided. */
export interface AuthorizationDecision {
  readonly allowed: boolean;
  /** Allowed: which binding/role allowed it; denied: `''` or the `RBAC: …` errors (missing roles). */
  readonly reason: string;
  /** Keys of every grant that allows the request (all matching rules, not only the first). */
  readonly grants: readonly string[];
  /**
   * The most specific of {@link grants}, to which the request is attributed: a RoleBinding's before a
   * ClusterRoleBinding's, a rule naming the object before one that does not, fewer `*` before more, then the order
   * of visit. (The decision does not depend on it; it makes "every grant is used" mean "needed by some request": a
   * rule that only ever overlaps a narrower one is not attributed anything.)
   */
  readonly grant?: string;
}

const PRIVILEGED_GROUP = 'system:masters';

/** kube-apiserver's RBAC authorizer (see the module comment), pure and synchronous. */
export class RbacAuthorizer {
  readonly #policy: RbacPolicy;
  readonly #roles = new Map<string, RbacRole>();

  /** `bootstrap` (default true) adds {@link BOOTSTRAP_POLICY}. */
  constructor(policy: RbacPolicy, options: { bootstrap?: boolean } = {}) {
    const all: RbacPolicy =
      options.bootstrap === false
        ? policy
        : {
            roles: [...BOOTSTRAP_POLICY.roles, ...policy.roles],
            bindings: [...BOOTSTRAP_POLICY.bindings, ...policy.bindings],
          };
    this.#policy = all;
    for (const r of all.roles) this.#roles.set(roleKey(r.kind, r.name, r.namespace), r);
  }

  /** The decision on one request. */
  authorize(a: RequestAttributes): AuthorizationDecision {
    if (a.user.groups.includes(PRIVILEGED_GROUP)) {
      return { allowed: true, reason: `member of ${PRIVILEGED_GROUP}`, grants: [] };
    }
    const errors: string[] = [];
    const grants: string[] = [];
    let reason = '';
    let best: { key: string; rank: readonly number[] } | undefined;
    for (const { binding, role, scope } of this.#applicable(a.user, a.namespace, errors)) {
      role.rules.forEach((rule, i) => {
        if (!ruleAllows(a, rule)) return;
        const part = requestedGrant(a, rule);
        const key = grantKey(binding, role, i, scope, part);
        grants.push(key);
        if (reason === '') reason = allowedReason(binding, role, a.user);
        const stars = [part.verb, part.apiGroup, part.resource, part.nonResourceURL].filter((x) => x?.includes('*'));
        const rank = [binding.kind === 'RoleBinding' ? 0 : 1, rule.resourceNames?.length ? 0 : 1, stars.length];
        if (best === undefined || before(rank, best.rank)) best = { key, rank };
      });
    }
    if (best !== undefined) return { allowed: true, reason, grants, grant: best.key };
    return { allowed: false, reason: errors.length === 0 ? '' : `RBAC: ${aggregate(errors)}`, grants: [] };
  }

  /** Every grant of the loaded (non-bootstrap) objects to `user`, expanded per verb × group × resource × name. */
  grantsOf(user: UserInfo): Grant[] {
    const out: Grant[] = [];
    for (const { binding, role, scope } of this.#applicable(user, undefined, [])) {
      if (binding.source === 'bootstrap') continue;
      role.rules.forEach((rule, i) => {
        for (const g of expandRule(rule)) out.push(grantOf(binding, role, i, scope, g));
      });
    }
    return out;
  }

  /**
   * The bindings (with their roles) that apply to `user` for a request in `namespace` (`''` = cluster scope; undefined
   * = every namespace, for {@link grantsOf}); missing roles are reported into `errors`.
   */
  #applicable(
    user: UserInfo,
    namespace: string | undefined,
    errors: string[],
  ): { binding: RbacBinding; role: RbacRole; scope: string }[] {
    const out: { binding: RbacBinding; role: RbacRole; scope: string }[] = [];
    for (const b of this.#policy.bindings) {
      if (b.kind === 'RoleBinding' && namespace !== undefined && b.namespace !== namespace) continue;
      if (!b.subjects.some((s) => appliesTo(user, s, b.kind === 'RoleBinding' ? b.namespace! : ''))) continue;
      const roleNs = b.roleRef.kind === 'Role' ? b.namespace : undefined;
      const role = this.#roles.get(roleKey(b.roleRef.kind, b.roleRef.name, roleNs));
      if (role === undefined) {
        errors.push(
          `${b.roleRef.kind === 'Role' ? 'role' : 'clusterrole'}.rbac.authorization.k8s.io "${b.roleRef.name}" not found`,
        );
        continue;
      }
      out.push({ binding: b, role, scope: b.kind === 'ClusterRoleBinding' ? '*' : b.namespace! });
    }
    // kube-apiserver visits ClusterRoleBindings first, then the RoleBindings of the namespace
    return [
      ...out.filter((x) => x.binding.kind === 'ClusterRoleBinding'),
      ...out.filter((x) => x.binding.kind === 'RoleBinding'),
    ];
  }
}

/** Lexicographic `<` (a tie keeps the earlier one). */
function before(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}

function roleKey(kind: string, name: string, namespace: string | undefined): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

/** `rbac.appliesTo`: a subject names the user, one of its groups, or its service account. */
function appliesTo(user: UserInfo, s: RbacSubject, bindingNamespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return s.name === user.username;
    case 'Group':
      return user.groups.includes(s.name);
    case 'ServiceAccount': {
      const ns = s.namespace ?? bindingNamespace;
      return ns !== '' && user.username === `system:serviceaccount:${ns}:${s.name}`;
    }
  }
}

function has(list: readonly string[] | undefined, v: string): boolean {
  return list !== undefined && (list.includes('*') || list.includes(v));
}

/** `rbac.RuleAllows`. */
export function ruleAllows(a: RequestAttributes, rule: PolicyRule): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (!a.isResourceRequest) return nonResourceUrlMatches(rule, a.path);
  if (rule.nonResourceURLs !== undefined) return false;
  const combined = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  return (
    has(rule.apiGroups, a.apiGroup) &&
    resourceMatches(rule, combined, a.subresource) &&
    resourceNameMatches(rule, a.name)
  );
}

function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  return (rule.resources ?? []).some(
    (r) => r === '*' || r === combined || (subresource !== '' && r === `*/${subresource}`),
  );
}

/** An empty list allows every name; otherwise the request must name one of them (a nameless request never does). */
function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  return rule.resourceNames === undefined || rule.resourceNames.length === 0 || rule.resourceNames.includes(name);
}

function nonResourceUrlMatches(rule: PolicyRule, path: string): boolean {
  return (rule.nonResourceURLs ?? []).some(
    (u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))),
  );
}

/** The part of a rule a request used: its verb, group, resource and name as the rule spells them. */
interface GrantPart {
  readonly verb: string;
  readonly apiGroup?: string;
  readonly resource?: string;
  readonly resourceName?: string;
  readonly nonResourceURL?: string;
}

function requestedGrant(a: RequestAttributes, rule: PolicyRule): GrantPart {
  const verb = rule.verbs.includes(a.verb) ? a.verb : '*';
  if (!a.isResourceRequest) {
    const urls = rule.nonResourceURLs ?? [];
    const url = urls.includes(a.path)
      ? a.path
      : urls.find((u) => nonResourceUrlMatches({ verbs: [], nonResourceURLs: [u] }, a.path));
    return { verb, nonResourceURL: url ?? '*' };
  }
  const combined = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  const resources = rule.resources ?? [];
  const resource = resources.includes(combined)
    ? combined
    : resources.includes(`*/${a.subresource}`) && a.subresource !== ''
      ? `*/${a.subresource}`
      : '*';
  return {
    verb,
    apiGroup: (rule.apiGroups ?? []).includes(a.apiGroup) ? a.apiGroup : '*',
    resource,
    ...(rule.resourceNames?.length ? { resourceName: a.name } : {}),
  };
}

function expandRule(rule: PolicyRule): GrantPart[] {
  const out: GrantPart[] = [];
  for (const verb of rule.verbs) {
    if (rule.nonResourceURLs !== undefined) {
      for (const u of rule.nonResourceURLs) out.push({ verb, nonResourceURL: u });
      continue;
    }
    for (const apiGroup of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        if (rule.resourceNames?.length)
          for (const resourceName of rule.resourceNames) out.push({ verb, apiGroup, resource, resourceName });
        else out.push({ verb, apiGroup, resource });
      }
    }
  }
  return out;
}

function grantKey(b: RbacBinding, r: RbacRole, i: number, scope: string, g: GrantPart): string {
  const where = scope === '*' ? 'cluster-wide' : `in ${scope}`;
  const what =
    g.nonResourceURL !== undefined
      ? `${g.verb} ${g.nonResourceURL}`
      : `${g.verb} ${g.resource}${g.apiGroup ? `.${g.apiGroup}` : ''}${g.resourceName !== undefined ? ` "${g.resourceName}"` : ''}`;
  return `${what} ${where} (${b.kind} ${b.namespace ? `${b.namespace}/` : ''}${b.name} → ${r.kind} ${r.name} rule ${i})`;
}

function grantOf(b: RbacBinding, r: RbacRole, i: number, scope: string, g: GrantPart): Grant {
  return {
    key: grantKey(b, r, i, scope, g),
    binding: `${b.kind} ${b.namespace ? `${b.namespace}/` : ''}${b.name}`,
    role: `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`,
    ruleIndex: i,
    source: b.source,
    scope,
    ...g,
  };
}

function allowedReason(b: RbacBinding, r: RbacRole, user: UserInfo): string {
  const bound = b.kind === 'RoleBinding' ? `RoleBinding "${b.name}/${b.namespace}"` : `ClusterRoleBinding "${b.name}"`;
  return `RBAC: allowed by ${bound} of ${r.kind} "${r.name}" to ${user.username}`;
}

/** `utilerrors.NewAggregate(...).Error()`: one message as is, several in brackets. */
function aggregate(errors: readonly string[]): string {
  return errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
}

/**
 * The 403 kube-apiserver answers (`responsewriters.Forbidden` + `apierrors.NewForbidden`), e.g. `configmaps "x" is
 * forbidden: User "u" cannot update resource "configmaps" in API group "" in the namespace "y"`.
 */
export function forbidden(a: RequestAttributes, reason: string): ApiError {
  let msg: string;
  if (!a.isResourceRequest) {
    msg = `User "${a.user.username}" cannot ${a.verb} path "${a.path}"`;
  } else {
    const resource = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
    msg =
      a.namespace !== ''
        ? `User "${a.user.username}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" in the namespace "${a.namespace}"`
        : `User "${a.user.username}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" at the cluster scope`;
  }
  if (reason !== '') msg = `${msg}: ${reason}`;
  const details: StatusDetails = {};
  if (a.name !== '') details.name = a.name;
  if (a.isResourceRequest && a.apiGroup !== '') details.group = a.apiGroup;
  if (a.isResourceRequest && a.resource !== '') details.kind = a.resource;
  let message: string;
  if (!a.isResourceRequest || a.resource === '') message = `forbidden: ${msg}`;
  else {
    const qualified = a.apiGroup === '' ? a.resource : `${a.resource}.${a.apiGroup}`;
    message = a.name === '' ? `${qualified} is forbidden: ${msg}` : `${qualified} "${a.name}" is forbidden: ${msg}`;
  }
  return new ApiError(403, 'Forbidden', message, details);
}

/** One request as the gate saw it. */
export interface GateRecord {
  readonly method: string;
  readonly url: string;
  readonly attributes: RequestAttributes;
  readonly decision: AuthorizationDecision;
}

/** Options of {@link RbacGate}. */
export interface RbacGateOptions {
  /** The RBAC objects (e.g. {@link loadRbacFiles} of `deploy/`). */
  readonly policy: RbacPolicy;
  /** Bearer token → user; a token not listed gets 401. */
  readonly users: Readonly<Record<string, UserInfo>>;
  /** Requests without credentials run as {@link ANONYMOUS_USER} (default true, as kube-apiserver); false → 401. */
  readonly anonymous?: boolean;
  /** Add {@link BOOTSTRAP_POLICY} (default true). */
  readonly bootstrap?: boolean;
  /** Decisions kept (default 10 000, oldest dropped first); denials are kept apart (up to 1 000). */
  readonly logLimit?: number;
}

/**
 * Authentication and authorization of the stand-in (`KubeApiStandInOptions.gate`): {@link admit} throws the 401 or
 * 403 `ApiError` to answer. Records decisions and the grants each request used.
 */
export class RbacGate {
  readonly authorizer: RbacAuthorizer;
  readonly #o: RbacGateOptions;
  readonly #log: GateRecord[] = [];
  readonly #denied: GateRecord[] = [];
  readonly #used = new Map<string, number>();

  constructor(options: RbacGateOptions) {
    this.#o = options;
    this.authorizer = new RbacAuthorizer(options.policy, { bootstrap: options.bootstrap ?? true });
  }

  /**
   * Decides on one request; throws {@link ApiError} 401 (unknown credentials) or 403 (not allowed). Returns the
   * user (validating admission reads it).
   */
  admit(method: string, url: URL, authorization: string | undefined): UserInfo {
    const user = this.#authenticate(authorization);
    const attributes = requestAttributes(method, url, user);
    const decision = this.authorizer.authorize(attributes);
    const rec: GateRecord = { method, url: url.pathname + url.search, attributes, decision };
    this.#log.push(rec);
    const limit = this.#o.logLimit ?? 10_000;
    if (this.#log.length > limit) this.#log.splice(0, this.#log.length - limit);
    if (decision.grant !== undefined) this.#used.set(decision.grant, (this.#used.get(decision.grant) ?? 0) + 1);
    if (!decision.allowed) {
      if (this.#denied.length < 1000) this.#denied.push(rec);
      throw forbidden(attributes, decision.reason);
    }
    return user;
  }

  #authenticate(header: string | undefined): UserInfo {
    if (header === undefined || header === '') {
      if (this.#o.anonymous === false) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
      return ANONYMOUS_USER;
    }
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    if (token === undefined || !Object.prototype.hasOwnProperty.call(this.#o.users, token)) {
      throw new ApiError(401, 'Unauthorized', 'Unauthorized');
    }
    return this.#o.users[token]!;
  }

  /** Recorded decisions (bounded), oldest first; `username` filters. */
  decisions(username?: string): GateRecord[] {
    return this.#log.filter((r) => username === undefined || r.attributes.user.username === username);
  }

  /** Denied requests (the first 1 000). */
  denied(): GateRecord[] {
    return [...this.#denied];
  }

  /** How many requests were attributed to each grant ({@link AuthorizationDecision.grant}), for the gate's life. */
  usage(): ReadonlyMap<string, number> {
    return this.#used;
  }

  /** The grants of the loaded objects to `user` that no request has been attributed to yet. */
  unusedGrants(user: UserInfo): Grant[] {
    return this.authorizer.grantsOf(user).filter((g) => !this.#used.has(g.key));
  }
}
