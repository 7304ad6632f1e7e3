/**
 * What the real API server refuses while it decodes a body, before any admission or validation, and what the
 * stand-in did not check until issue [R] found it on a real cluster (docs/testing.md "Differences between the real
 * apiserver and the stand-in"): timestamps. A `MicroTime` needs exactly six fractional digits, a `metav1.Time` must
 * be RFC 3339 (src/core/kube-time.ts). The server stores both in its own form (UTC; `Time` in whole seconds), so
 * the stand-in rewrites an accepted value into that form too: a client reads back what a real server answers.
 *
 * The answers are the real server's: on create and update (the body is decoded as it is) 400 `BadRequest`
 * `<Kind> in version "<v>" cannot be handled as a <Kind>: <Go parse error>`; on a patch (the patched object is
 * decoded) 422 `Invalid` on the field `patch`.
 */
import { canonicalMicroTime, KubeTimeParseError, parseKubeTime, wholeSecondTime } from '../core/kube-time.js';
import { ApiError, badRequest, typeKey, type KubeObject, type ResourceType } from './kube-api-types.js';

/** The write that brought the object (decides the form of the refusal). */
export type DecodeOperation = 'create' | 'update' | 'patch';

interface TimeFields {
  /** `metav1.MicroTime` paths (`a.b`, `a[].b` for every element of a list). */
  readonly micro: readonly string[];
  /** `metav1.Time` paths. */
  readonly time: readonly string[];
}

/** Time fields every kind has (ObjectMeta) or may have (`status.conditions` of `metav1.Condition` and the core ones). */
const COMMON_TIME = [
  'metadata.creationTimestamp',
  'metadata.deletionTimestamp',
  'metadata.managedFields[].time',
  'status.conditions[].lastTransitionTime',
  'status.conditions[].lastProbeTime',
  'status.conditions[].lastHeartbeatTime',
];

const CONTAINER_STATES = ['containerStatuses', 'initContainerStatuses', 'ephemeralContainerStatuses'].flatMap((s) =>
  ['state', 'lastState'].flatMap((st) => [
    `status.${s}[].${st}.running.startedAt`,
    `status.${s}[].${st}.terminated.startedAt`,
    `status.${s}[].${st}.terminated.finishedAt`,
  ]),
);

/** The time fields of the kinds the stand-in serves, by {@link typeKey} (Kubernetes API reference). */
const FIELDS: ReadonlyMap<string, TimeFields> = new Map([
  [
    typeKey('', 'v1', 'events'),
    { micro: ['eventTime', 'series.lastObservedTime'], time: ['firstTimestamp', 'lastTimestamp'] },
  ],
  [
    typeKey('events.k8s.io', 'v1', 'events'),
    {
      micro: ['eventTime', 'series.lastObservedTime'],
      time: ['deprecatedFirstTimestamp', 'deprecatedLastTimestamp'],
    },
  ],
  [typeKey('coordination.k8s.io', 'v1', 'leases'), { micro: ['spec.acquireTime', 'spec.renewTime'], time: [] }],
  [typeKey('', 'v1', 'pods'), { micro: [], time: ['status.startTime', ...CONTAINER_STATES] }],
]);

/**
 * Checks and rewrites, in place, every timestamp of `obj` (a fresh copy the store owns) as the real server decodes
 * it; throws the server's {@link ApiError} for the first one it would refuse.
 */
export function decodeTimes(t: ResourceType, obj: KubeObject, op: DecodeOperation): void {
  const f = FIELDS.get(typeKey(t.group, t.version, t.plural));
  const fields: [string, 'micro' | 'time'][] = [
    ...(f?.micro ?? []).map((p): [string, 'micro'] => [p, 'micro']),
    ...[...COMMON_TIME, ...(f?.time ?? [])].map((p): [string, 'time'] => [p, 'time']),
  ];
  for (const [path, kind] of fields) {
    for (const slot of slots(obj, path.split('.'))) {
      const v = slot.get();
      if (v === null || v === undefined) continue; // null is the zero time: accepted
      try {
        if (typeof v !== 'string') {
          const field = `${t.kind}.${path.replace(/\[\]/g, '')}`; // Go names the field by its JSON path
          throw new KubeTimeParseError(
            `json: cannot unmarshal ${jsonType(v)} into Go struct field ${field} of type string`,
          );
        }
        slot.set(kind === 'micro' ? canonicalMicroTime(v) : wholeSecondTime(parseKubeTime(v)));
      } catch (e) {
        if (!(e instanceof KubeTimeParseError)) throw e;
        throw refusal(t, obj, op, e.message);
      }
    }
  }
}

function refusal(t: ResourceType, obj: KubeObject, op: DecodeOperation, why: string): ApiError {
  if (op !== 'patch') return badRequest(`${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${why}`);
  // the patched object did not decode: field.Invalid(field.NewPath("patch"), <patched JSON>, err) without a kind
  const value = JSON.stringify(JSON.stringify(obj));
  const message = `Invalid value: ${value}: ${why}`;
  return new ApiError(422, 'Invalid', ` "" is invalid: patch: ${message}`, {
    causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }],
  });
}

function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

interface Slot {
  get(): unknown;
  set(v: string): void;
}

/** The places `segs` names in `o` (`x[]` walks every element of the list `x`); missing parts name nothing. */
function* slots(o: unknown, segs: readonly string[]): Generator<Slot> {
  if (o === null || typeof o !== 'object' || Array.isArray(o) || segs.length === 0) return;
  const rec = o as Record<string, unknown>;
  const [head, ...rest] = segs as [string, ...string[]];
  if (head.endsWith('[]')) {
    const list = rec[head.slice(0, -2)];
    if (Array.isArray(list)) for (const item of list) yield* slots(item, rest);
    return;
  }
  if (rest.length === 0) {
    if (Object.prototype.hasOwnProperty.call(rec, head))
      yield { get: () => rec[head], set: (v) => void (rec[head] = v) };
    return;
  }
  yield* slots(rec[head], rest);
}
