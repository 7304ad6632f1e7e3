/**
 * Resource types, API errors (`Status` bodies) and selectors of the Kubernetes API stand-in.
 */

/** A JSON object as stored and served. */
export type KubeObject = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  metadata?: KubeMeta;
};

/** The metadata members the stand-in reads or maintains. */
export interface KubeMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [k: string]: unknown;
}

/** A resource type served by the stand-in. */
export interface ResourceType {
  /** API group; `''` for the core group (`/api/v1`). */
  readonly group: string;
  readonly version: string;
  /** URL segment, e.g. `configmaps`. */
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly shortNames?: readonly string[];
  /** Serve `/status`; the main resource then keeps the stored `status` on update (as the real server does). */
  readonly statusSubresource?: boolean;
  /** `DELETE` answers with the deleted object instead of a `Status` (pods do). */
  readonly deleteReturnsObject?: boolean;
}

/** `apiVersion` of a type: `v1` or `<group>/<version>`. */
export function apiVersionOf(t: ResourceType): string {
  return t.group === '' ? t.version : `${t.group}/${t.version}`;
}

/** Key identifying a type inside the stand-in. */
export function typeKey(group: string, version: string, plural: string): string {
  return `${group}/${version}/${plural}`;
}

/** Core ConfigMaps. */
export const CONFIGMAPS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  singular: 'configmap',
  kind: 'ConfigMap',
  namespaced: true,
  shortNames: ['cm'],
};
/** Core Pods. */
export const PODS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'pods',
  singular: 'pod',
  kind: 'Pod',
  namespaced: true,
  shortNames: ['po'],
  statusSubresource: true,
  deleteReturnsObject: true,
};
/** Core Nodes (cluster-scoped). */
export const NODES: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'nodes',
  singular: 'node',
  kind: 'Node',
  namespaced: false,
  shortNames: ['no'],
  statusSubresource: true,
};
/** Core Namespaces (served so `kubectl get ns` works; objects in other types do not need one). */
export const NAMESPACES: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  singular: 'namespace',
  kind: 'Namespace',
  namespaced: false,
  shortNames: ['ns'],
  statusSubresource: true,
};
/** Core (v1) Events. */
export const CORE_EVENTS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'events',
  singular: 'event',
  kind: 'Event',
  namespaced: true,
  shortNames: ['ev'],
};
/** `events.k8s.io/v1` Events: a separate store here (the real server shows one set of objects in both). */
export const EVENTS_V1: ResourceType = {
  group: 'events.k8s.io',
  version: 'v1',
  plural: 'events',
  singular: 'event',
  kind: 'Event',
  namespaced: true,
  shortNames: ['ev'],
};
/** `coordination.k8s.io/v1` Leases (leader election). */
export const LEASES: ResourceType = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  singular: 'lease',
  kind: 'Lease',
  namespaced: true,
};
/** Volcano PodGroups (cluster-faults §1.4); not served unless passed in `resources`. */
export const VOLCANO_PODGROUPS: ResourceType = {
  group: 'scheduling.volcano.sh',
  version: 'v1beta1',
  plural: 'podgroups',
  singular: 'podgroup',
  kind: 'PodGroup',
  namespaced: true,
  shortNames: ['pg', 'podgroup-v1beta1'],
  statusSubresource: true,
};

/** `resource.k8s.io/v1` (DRA, issue [DRA]); not served unless passed in `resources` (see {@link DRA_RESOURCES}). */
export const DEVICE_CLASSES: ResourceType = {
  group: 'resource.k8s.io',
  version: 'v1',
  plural: 'deviceclasses',
  singular: 'deviceclass',
  kind: 'DeviceClass',
  namespaced: false,
};
export const RESOURCE_CLAIMS: ResourceType = {
  group: 'resource.k8s.io',
  version: 'v1',
  plural: 'resourceclaims',
  singular: 'resourceclaim',
  kind: 'ResourceClaim',
  namespaced: true,
  statusSubresource: true,
};
export const RESOURCE_CLAIM_TEMPLATES: ResourceType = {
  group: 'resource.k8s.io',
  version: 'v1',
  plural: 'resourceclaimtemplates',
  singular: 'resourceclaimtemplate',
  kind: 'ResourceClaimTemplate',
  namespaced: true,
};
export const RESOURCE_SLICES: ResourceType = {
  group: 'resource.k8s.io',
  version: 'v1',
  plural: 'resourceslices',
  singular: 'resourceslice',
  kind: 'ResourceSlice',
  namespaced: false,
};
export const DEVICE_TAINT_RULES: ResourceType = {
  group: 'resource.k8s.io',
  version: 'v1',
  plural: 'devicetaintrules',
  singular: 'devicetaintrule',
  kind: 'DeviceTaintRule',
  namespaced: false,
  statusSubresource: true,
};
/**
 * The DRA types, for `extraResources`. Their validation (the limits of the real server the agent relies on) is in
 * `kube-api-dra.ts`.
 */
export const DRA_RESOURCES: readonly ResourceType[] = [
  DEVICE_CLASSES,
  RESOURCE_CLAIMS,
  RESOURCE_CLAIM_TEMPLATES,
  RESOURCE_SLICES,
  DEVICE_TAINT_RULES,
];
/** `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicies: served in the `admissionPolicies` mode. */
export const VALIDATING_ADMISSION_POLICIES: ResourceType = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingadmissionpolicies',
  singular: 'validatingadmissionpolicy',
  kind: 'ValidatingAdmissionPolicy',
  namespaced: false,
  statusSubresource: true,
};
/** Their bindings (`admissionPolicies` mode). */
export const VALIDATING_ADMISSION_POLICY_BINDINGS: ResourceType = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingadmissionpolicybindings',
  singular: 'validatingadmissionpolicybinding',
  kind: 'ValidatingAdmissionPolicyBinding',
  namespaced: false,
};

/** The types served by default. */
export const DEFAULT_RESOURCES: readonly ResourceType[] = [
  CONFIGMAPS,
  PODS,
  NODES,
  NAMESPACES,
  CORE_EVENTS,
  EVENTS_V1,
  LEASES,
];

/** The `details` of a `Status`. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason?: string; message: string; field?: string }[];
  retryAfterSeconds?: number;
}

/** A failed API call: HTTP code, `Status.reason`, message and details, as the real server reports them. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The `Status` body. */
  toStatus(): Record<string, unknown> {
    const s: Record<string, unknown> = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
    };
    if (this.details !== undefined) s.details = this.details;
    s.code = this.code;
    return s;
  }
}

/** `configmaps "x" not found` (404). */
export function notFound(t: ResourceType, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualified(t)} "${name}" not found`, {
    name,
    ...groupOf(t),
    kind: t.plural,
  });
}

/** `configmaps "x" already exists` (409). */
export function alreadyExists(t: ResourceType, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualified(t)} "${name}" already exists`, {
    name,
    ...groupOf(t),
    kind: t.plural,
  });
}

/** The optimistic-concurrency conflict (409). */
export function conflict(t: ResourceType, name: string, why: string): ApiError {
  return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(t)} "${name}": ${why}`, {
    name,
    ...groupOf(t),
    kind: t.plural,
  });
}

/** A validation failure (422). */
export function invalid(t: ResourceType, name: string, field: string, message: string): ApiError {
  return new ApiError(422, 'Invalid', `${t.kind} "${name}" is invalid: ${field}: ${message}`, {
    name,
    ...groupOf(t),
    kind: t.kind,
    causes: [{ reason: 'FieldValueInvalid', message, field }],
  });
}

/** A malformed request (400). */
export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

function qualified(t: ResourceType): string {
  return t.group === '' ? t.plural : `${t.plural}.${t.group}`;
}

function groupOf(t: ResourceType): { group?: string } {
  return t.group === '' ? {} : { group: t.group };
}

/** One requirement of a label selector. */
type LabelRequirement =
  { key: string; op: 'in' | 'notin'; values: string[] } | { key: string; op: 'exists' | 'notexists' };

/** A parsed label selector (`a=b,c!=d,e in (f,g),!h,i`). */
export type LabelSelector = readonly LabelRequirement[];

/** Parses a label selector; throws {@link ApiError} 400 on a syntax error. */
export function parseLabelSelector(text: string | null | undefined): LabelSelector {
  const out: LabelRequirement[] = [];
  for (const part of splitTopLevel(text ?? '')) {
    let m: RegExpMatchArray | null;
    if ((m = /^\s*([^\s=!(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$/.exec(part))) {
      out.push({ key: m[1]!, op: m[2] as 'in' | 'notin', values: m[3]!.split(',').map((v) => v.trim()) });
    } else if ((m = /^\s*([^\s=!(),]+)\s*(==|=|!=)\s*([^\s=!(),]*)\s*$/.exec(part))) {
      out.push({ key: m[1]!, op: m[2] === '!=' ? 'notin' : 'in', values: [m[3]!] });
    } else if ((m = /^\s*!\s*([^\s=!(),]+)\s*$/.exec(part))) {
      out.push({ key: m[1]!, op: 'notexists' });
    } else if ((m = /^\s*([^\s=!(),]+)\s*$/.exec(part))) {
      out.push({ key: m[1]!, op: 'exists' });
    } else {
      throw badRequest(`unable to parse requirement: ${JSON.stringify(part)}`);
    }
  }
  return out;
}

/** True when the labels satisfy every requirement. */
export function matchesLabels(sel: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  return sel.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    switch (r.op) {
      case 'exists':
        return has;
      case 'notexists':
        return !has;
      case 'in':
        return has && r.values.includes(l[r.key]!);
      case 'notin':
        return !has || !r.values.includes(l[r.key]!);
    }
  });
}

/** One field-selector term (`metadata.name=x`, `spec.nodeName!=y`). */
export interface FieldRequirement {
  readonly path: string;
  readonly op: '=' | '!=';
  readonly value: string;
}

/** Parses a field selector; any dotted path is accepted (the real server allows a fixed list per type). */
export function parseFieldSelector(text: string | null | undefined): readonly FieldRequirement[] {
  const out: FieldRequirement[] = [];
  for (const part of splitTopLevel(text ?? '')) {
    const m = /^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
    out.push({ path: m[1]!, op: m[2] === '!=' ? '!=' : '=', value: m[3]! });
  }
  return out;
}

/** True when the object satisfies every field requirement (a missing field reads as `""`). */
export function matchesFields(sel: readonly FieldRequirement[], obj: KubeObject): boolean {
  return sel.every((r) => {
    let v: unknown = obj;
    for (const seg of r.path.split('.'))
      v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[seg] : undefined;
    const text = v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
    return r.op === '=' ? text === r.value : text !== r.value;
  });
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts.filter((p) => p.trim() !== '');
}
