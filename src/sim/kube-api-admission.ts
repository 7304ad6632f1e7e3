/**
 * ValidatingAdmissionPolicies in the Kubernetes API stand-in (issue [R] items 1 and 7): the CEL of a policy
 * evaluated as kube-apiserver evaluates it, so that a policy that errors on a request it matches is found by the
 * fast tests, not by a real cluster (the shipped policy read `request.subResource`, which a request without a
 * subresource does not have: "no such key", and under `failurePolicy: Fail` every Node patch of the agent was
 * refused with 422).
 *
 * Two users: test/deploy/admission-policy-cel.test.ts evaluates every expression of the shipped policies against
 * representative requests ({@link PolicyEvaluator.evaluate}), and the stand-in's optional `admissionPolicies` mode
 * enforces the policies and bindings it stores ({@link PolicyEvaluator.admit}) with the real server's answers:
 * a validation that is false → the `reason` of the validation (403 for `Forbidden`; 422 `Invalid` without one),
 * message `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request:
 * <message>`; an expression that errors under `failurePolicy: Fail` → 422 `Invalid` with `expression '<e>' resulted
 * in error: <error>`; under `Ignore` the request goes on.
 *
 * What CEL sees, as k8s.io/apiserver/pkg/admission/plugin/cel builds it: `request` is the AdmissionRequest
 * converted to JSON-like values with Go's `omitempty` (no `subResource`, `name` or `namespace` key when empty; `uid`
 * and the group of `kind` / `resource` present even when empty); `object` (null on DELETE), `oldObject` (null on
 * CREATE); `variables` evaluated in order, an erroring variable an error of each expression that reads it;
 * integers are CEL `int`. The evaluator is @bufbuild/cel (a CEL-spec implementation with RE2 regular expressions,
 * as cel-go), with its strings extension; Kubernetes' own libraries (quantity, url, ip, authz, …) are not there: an
 * expression calling one errors here, which the test reports.
 *
 * Not mirrored: `paramKind` / `paramRef`, namespace and object selectors, `excludeResourceRules`, `matchPolicy:
 * Equivalent` across versions, audit annotations, the `Warn` and `Audit` actions (only `Deny` acts), type checking
 * against the OpenAPI schema, cost limits.
 */
import type * as CelModule from '@bufbuild/cel';
import type { UserInfo } from './kube-api-rbac.js';
import { ApiError, type KubeObject, type ResourceType } from './kube-api-types.js';

/** The admission operations of a write. */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE';

/** One write as admission sees it (`admission.Attributes`). */
export interface AdmissionAttributes {
  readonly operation: AdmissionOperation;
  readonly type: Pick<ResourceType, 'group' | 'version' | 'plural' | 'kind'>;
  /** `''` or undefined: the main resource. */
  readonly subresource?: string;
  readonly namespace?: string;
  /** The name on the URL (`''` on a create whose name the server generates). */
  readonly name?: string;
  readonly user: UserInfo;
  /** The object after the write (null on DELETE). */
  readonly object: KubeObject | null;
  /** The object before it (null on CREATE). */
  readonly oldObject: KubeObject | null;
  readonly dryRun?: boolean;
}

/** `request` as a ValidatingAdmissionPolicy's CEL sees it: the AdmissionRequest with Go's `omitempty`. */
export function admissionRequest(a: AdmissionAttributes): Record<string, unknown> {
  const kind = { group: a.type.group, version: a.type.version, kind: a.type.kind };
  const resource = { group: a.type.group, version: a.type.version, resource: a.type.plural };
  const sub = a.subresource ?? '';
  const userInfo: Record<string, unknown> = {};
  if (a.user.username !== '') userInfo.username = a.user.username;
  if (a.user.groups.length > 0) userInfo.groups = [...a.user.groups];
  if (a.user.extra !== undefined && Object.keys(a.user.extra).length > 0) userInfo.extra = a.user.extra;
  const options = { CREATE: 'CreateOptions', UPDATE: 'UpdateOptions', DELETE: 'DeleteOptions' }[a.operation];
  return {
    uid: '',
    kind,
    resource,
    ...(sub !== '' ? { subResource: sub } : {}),
    requestKind: kind,
    requestResource: resource,
    ...(sub !== '' ? { requestSubResource: sub } : {}),
    ...(a.name ? { name: a.name } : {}),
    ...(a.namespace ? { namespace: a.namespace } : {}),
    operation: a.operation,
    userInfo,
    dryRun: a.dryRun ?? false,
    options: { apiVersion: 'meta.k8s.io/v1', kind: options },
  };
}

/** The bindings of one evaluation: `request`, `object`, `oldObject`, `variables` (as JSON values). */
export interface PolicyBindings {
  readonly request: Record<string, unknown>;
  readonly object: unknown;
  readonly oldObject: unknown;
  readonly variables?: Readonly<Record<string, unknown>>;
}

/** What one expression came to: a value, or the error message kube-apiserver would quote. */
export type EvalOutcome = { readonly value: unknown } | { readonly error: string };

/** The fields of a ValidatingAdmissionPolicy that are evaluated here. */
export interface PolicyObject {
  readonly metadata?: { readonly name?: string };
  readonly spec?: {
    readonly failurePolicy?: string;
    readonly matchConstraints?: { readonly resourceRules?: readonly ResourceRule[] };
    readonly matchConditions?: readonly { readonly name: string; readonly expression: string }[];
    readonly variables?: readonly { readonly name: string; readonly expression: string }[];
    readonly validations?: readonly {
      readonly expression: string;
      readonly message?: string;
      readonly messageExpression?: string;
      readonly reason?: string;
    }[];
  };
}

/** A `resourceRules` entry (admissionregistration.k8s.io/v1 `NamedRuleWithOperations`). */
export interface ResourceRule {
  readonly apiGroups?: readonly string[];
  readonly apiVersions?: readonly string[];
  readonly operations?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** The fields of a ValidatingAdmissionPolicyBinding that are read here. */
export interface BindingObject {
  readonly metadata?: { readonly name?: string };
  readonly spec?: {
    readonly policyName?: string;
    readonly validationActions?: readonly string[];
    readonly matchResources?: { readonly resourceRules?: readonly ResourceRule[] };
  };
}

/** One expression's result inside {@link PolicyEvaluator.explain}. */
export interface ExpressionResult {
  /** `matchCondition <name>`, `variable <name>`, `validation <i>`, `validation <i> messageExpression`. */
  readonly where: string;
  readonly expression: string;
  readonly outcome: EvalOutcome;
}

/** `resource` in a rule (`pods`, `pods/status`, `*`, `*\/*`, `pods/*`) against the request's (sub)resource. */
function resourceMatches(rule: string, resource: string, sub: string): boolean {
  const i = rule.indexOf('/');
  const r = i < 0 ? rule : rule.slice(0, i);
  const s = i < 0 ? '' : rule.slice(i + 1);
  return (r === '*' || r === resource) && (s === '*' || s === sub);
}

/** Whether one rule matches the write (the webhook rule matcher of k8s.io/apiserver). */
export function ruleMatches(rule: ResourceRule, a: AdmissionAttributes): boolean {
  const any = (list: readonly string[] | undefined, v: string): boolean =>
    (list ?? []).some((x) => x === '*' || x === v);
  if (!any(rule.apiGroups, a.type.group) || !any(rule.apiVersions, a.type.version)) return false;
  if (!any(rule.operations, a.operation)) return false;
  if (!(rule.resources ?? []).some((r) => resourceMatches(r, a.type.plural, a.subresource ?? ''))) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(a.name ?? '');
}

/**
 * JSON → CEL input: integers become CEL `int` (bigint), as Kubernetes' unstructured values are int64. A value that
 * is a CEL map or list already (a variable's value: `cond ? oldObject : object`) is kept as it is: its entries are
 * not own properties, and copying them as an object's would make it an empty map.
 */
function celInput(cel: typeof CelModule, v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (cel.isCelMap(v) || cel.isCelList(v)) return v;
  if (Array.isArray(v)) return v.map((x) => celInput(cel, x));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = celInput(cel, x);
    return out;
  }
  return v;
}

/** A CEL value → plain JS (maps and lists of the evaluator are iterable objects). */
function plain(v: unknown): unknown {
  return typeof v === 'bigint' ? Number(v) : v;
}

/** CEL evaluation of admission policies (see the file comment). Create with {@link PolicyEvaluator.load}. */
export class PolicyEvaluator {
  readonly #cel: typeof CelModule;
  readonly #funcs: CelModule.CelFunc[];
  readonly #plans = new Map<string, ((ctx: Record<string, unknown>) => unknown) | string>();

  private constructor(cel: typeof CelModule, funcs: CelModule.CelFunc[]) {
    this.#cel = cel;
    this.#funcs = funcs;
  }

  /**
   * Loads the CEL implementation (a development dependency, imported only when policies are evaluated: a
   * production install without it still runs the stand-in without this mode).
   */
  static async load(): Promise<PolicyEvaluator> {
    const cel = await import('@bufbuild/cel');
    const ext = await import('@bufbuild/cel/ext');
    return new PolicyEvaluator(cel, [...ext.strings]);
  }

  /** Evaluates one expression; never throws. */
  evaluate(expression: string, bindings: PolicyBindings): EvalOutcome {
    let p = this.#plans.get(expression);
    if (p === undefined) {
      try {
        const env = this.#cel.celEnv({ funcs: this.#funcs });
        p = this.#cel.plan(env, this.#cel.parse(expression)) as (ctx: Record<string, unknown>) => unknown;
      } catch (e) {
        p = `compilation failed: ${e instanceof Error ? e.message : String(e)}`;
      }
      this.#plans.set(expression, p);
    }
    if (typeof p === 'string') return { error: p };
    try {
      const v = p({
        request: celInput(this.#cel, bindings.request),
        object: celInput(this.#cel, bindings.object ?? null),
        oldObject: celInput(this.#cel, bindings.oldObject ?? null),
        variables: celInput(this.#cel, bindings.variables ?? {}),
        params: null,
      });
      if (this.#cel.isCelError(v)) return { error: celMessage(v.message) };
      return { value: plain(v) };
    } catch (e) {
      return { error: celMessage(e instanceof Error ? e.message : String(e)) };
    }
  }

  /**
   * Every expression of `policy` on the write `a`, in kube-apiserver's order: match conditions, variables (in
   * order; a variable that errors makes each expression reading it error), validations and their message
   * expressions (a message expression only when its validation is false, as kube-apiserver). Evaluates every
   * validation whatever the earlier results (the test wants every error).
   */
  explain(policy: PolicyObject, a: AdmissionAttributes): ExpressionResult[] {
    const spec = policy.spec ?? {};
    const out: ExpressionResult[] = [];
    const base = { request: admissionRequest(a), object: a.object, oldObject: a.oldObject };
    for (const c of spec.matchConditions ?? []) {
      out.push({
        where: `matchCondition ${c.name}`,
        expression: c.expression,
        outcome: this.evaluate(c.expression, base),
      });
    }
    const variables: Record<string, unknown> = {};
    const failed = new Map<string, string>();
    const withVariables = (expression: string): EvalOutcome => {
      for (const [name, error] of failed) if (readsVariable(expression, name)) return { error };
      return this.evaluate(expression, { ...base, variables });
    };
    for (const v of spec.variables ?? []) {
      const outcome = withVariables(v.expression);
      if ('error' in outcome) failed.set(v.name, outcome.error);
      else variables[v.name] = outcome.value;
      out.push({ where: `variable ${v.name}`, expression: v.expression, outcome });
    }
    (spec.validations ?? []).forEach((v, i) => {
      const outcome = withVariables(v.expression);
      out.push({ where: `validation ${i}`, expression: v.expression, outcome });
      // as kube-apiserver: the message expression runs only for a validation that came out false
      if (v.messageExpression !== undefined && 'value' in outcome && outcome.value !== true) {
        out.push({
          where: `validation ${i} messageExpression`,
          expression: v.messageExpression,
          outcome: withVariables(v.messageExpression),
        });
      }
    });
    return out;
  }

  /**
   * The decision of the policies and bindings on one write: undefined to let it through, or the {@link ApiError}
   * kube-apiserver answers (the first denying policy × binding, in the order given).
   */
  admit(
    policies: readonly PolicyObject[],
    bindings: readonly BindingObject[],
    a: AdmissionAttributes,
  ): ApiError | undefined {
    for (const binding of bindings) {
      const policy = policies.find((p) => p.metadata?.name === binding.spec?.policyName);
      if (policy === undefined || !(binding.spec?.validationActions ?? []).includes('Deny')) continue;
      const denial = this.#decide(policy, binding, a);
      if (denial !== undefined) return denial;
    }
    return undefined;
  }

  #decide(policy: PolicyObject, binding: BindingObject, a: AdmissionAttributes): ApiError | undefined {
    const spec = policy.spec ?? {};
    if (!(spec.matchConstraints?.resourceRules ?? []).some((r) => ruleMatches(r, a))) return undefined;
    const extra = binding.spec?.matchResources?.resourceRules;
    if (extra !== undefined && extra.length > 0 && !extra.some((r) => ruleMatches(r, a))) return undefined;
    const fail = (spec.failurePolicy ?? 'Fail') === 'Fail';
    const results = this.explain(policy, a);
    const deny = (message: string, reason: string): ApiError => denial(policy, binding, a, message, reason);
    for (const r of results.filter((x) => x.where.startsWith('matchCondition'))) {
      if ('error' in r.outcome) {
        if (fail) return deny(`expression '${r.expression}' resulted in error: ${r.outcome.error}`, '');
        return undefined;
      }
      if (r.outcome.value !== true) return undefined;
    }
    for (const [i, v] of (spec.validations ?? []).entries()) {
      const r = results.find((x) => x.where === `validation ${i}`)!;
      if ('error' in r.outcome) {
        if (fail) return deny(`expression '${v.expression}' resulted in error: ${r.outcome.error}`, '');
        continue;
      }
      if (r.outcome.value === true) continue;
      const m = results.find((x) => x.where === `validation ${i} messageExpression`)?.outcome;
      const fromExpression = m !== undefined && 'value' in m && typeof m.value === 'string' ? m.value.trim() : '';
      const message =
        fromExpression !== '' && !fromExpression.includes('\n')
          ? fromExpression
          : (v.message ?? `failed expression: ${v.expression}`);
      return deny(message, v.reason ?? '');
    }
    return undefined;
  }
}

/** `variables.<name>` read by the expression (outside string literals). */
function readsVariable(expression: string, name: string): boolean {
  const code = expression.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");
  return new RegExp(`\\bvariables\\.${name}\\b`).test(code);
}

/** cel-go's wording of a missing map key ("no such key: x") for @bufbuild/cel's ("field not found: x"). */
function celMessage(m: string): string {
  return m.replace(/^field not found: /, 'no such key: ');
}

const REASON_CODES: Readonly<Record<string, number>> = {
  Forbidden: 403,
  Unauthorized: 401,
  RequestEntityTooLarge: 413,
  Invalid: 422,
};

/** kube-apiserver's answer for a denying policy (admission.NewForbidden, then the reason's code; no reason: Invalid). */
function denial(
  policy: PolicyObject,
  binding: BindingObject,
  a: AdmissionAttributes,
  message: string,
  reason: string,
): ApiError {
  const why =
    `ValidatingAdmissionPolicy '${policy.metadata?.name ?? ''}' with binding '${binding.metadata?.name ?? ''}' ` +
    `denied request: ${message}`;
  const name = a.name || (a.object?.metadata?.name ?? a.oldObject?.metadata?.name ?? '');
  const qualified = a.type.group === '' ? a.type.plural : `${a.type.plural}.${a.type.group}`;
  const r = reason === '' ? 'Invalid' : reason;
  const text = name === '' ? `${qualified} is forbidden: ${why}` : `${qualified} "${name}" is forbidden: ${why}`;
  return new ApiError(REASON_CODES[r] ?? 422, r, text, {
    ...(name !== '' ? { name } : {}),
    ...(a.type.group !== '' ? { group: a.type.group } : {}),
    kind: a.type.plural,
    causes: [{ message: why }],
  });
}
