/**
 * The ValidatingAdmissionPolicies of deploy/ (issue [K] item 9; docs/rbac.md). This file checks statically what can
 * be checked without evaluating CEL (test/deploy/admission-policy-cel.test.ts evaluates every expression, issue [R]): every field of the manifests exists in the Kubernetes API (client-node's models of
 * admissionregistration.k8s.io/v1 and rbac.authorization.k8s.io/v1), every `object.` / `oldObject.` path a CEL
 * expression reads exists in the kinds it applies to, every `request.` path exists in an AdmissionRequest,
 * variables are declared before use, and the names the policies allow agree with the RBAC manifests and the code.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { DEVICE_INFO_NAME_PREFIX } from '../../src/kube/device-info.js';
import { faultConfigMapName, resetConfigMapName } from '../../src/reset/reset-configmap.js';
import { MANUAL_INFO_CONFIGMAP } from '../../src/cluster/manual-cache.js';
import { STATISTICS_NAME } from '../../src/cluster/public-fault/statistics.js';
import { CLUSTER_INFO_PREFIX } from '../../src/cluster/cluster-info.js';
import { loadRbacFiles } from '../../src/sim/kube-api-rbac.js';
import { POLICY_SOURCES, RBAC_SOURCES } from '../deploy/deploy-files.js';

type Obj = Record<string, unknown>;
const docsOf = (rel: string): Obj[] =>
  yaml
    .loadAll(fs.readFileSync(path.join(PROJECT_ROOT, rel), 'utf8'))
    .filter((d): d is Obj => typeof d === 'object' && d !== null);

const POLICY_FILES = POLICY_SOURCES;
const RBAC_FILES = RBAC_SOURCES;

/** client-node model class of a kind (apiVersion/kind → `V1<Kind>`, RBAC subjects are `RbacV1Subject`). */
type Model = { getAttributeTypeMap(): { baseName: string; type: string }[] };
const models = k8s as unknown as Record<string, Model | undefined>;

/** Field paths of `value` that the model `type` does not have (recursive; maps and free-form fields end the walk). */
function unknownFields(value: unknown, type: string, at: string): string[] {
  const arr = /^Array<(.+)>$/.exec(type);
  if (arr) return Array.isArray(value) ? value.flatMap((v, i) => unknownFields(v, arr[1]!, `${at}[${i}]`)) : [];
  const model = models[type === 'V1Subject' ? 'RbacV1Subject' : type];
  if (model === undefined || typeof value !== 'object' || value === null) return [];
  const fields = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  return Object.entries(value as Obj).flatMap(([k, v]) =>
    fields.has(k) ? unknownFields(v, fields.get(k)!, `${at}.${k}`) : [`${at}.${k}`],
  );
}

/** The client-node field type at `path` below `type`, or undefined when a segment does not exist. */
function fieldType(type: string, segs: readonly string[]): string | undefined {
  let t = type;
  for (const s of segs) {
    if (/^\{ \[key: string\]/.test(t)) return t; // a map: what follows is a key (CEL reads keys with [] or has())
    const model = models[t];
    if (model === undefined) return undefined;
    const f = model.getAttributeTypeMap().find((a) => a.baseName === s);
    if (f === undefined) return undefined;
    t = f.type;
  }
  return t;
}

/** AdmissionRequest (admission.k8s.io/v1) as CEL sees `request` in a ValidatingAdmissionPolicy. */
const ADMISSION_REQUEST: Record<string, readonly string[] | 'userInfo' | null> = {
  uid: null,
  kind: ['group', 'version', 'kind'],
  resource: ['group', 'version', 'resource'],
  subResource: null,
  requestKind: ['group', 'version', 'kind'],
  requestResource: ['group', 'version', 'resource'],
  requestSubResource: null,
  name: null,
  namespace: null,
  operation: null,
  userInfo: 'userInfo',
  dryRun: null,
  options: null,
};

const KIND_MODEL: Record<string, string> = {
  configmaps: 'V1ConfigMap',
  nodes: 'V1Node',
  pods: 'V1Pod',
  leases: 'V1Lease',
};

interface Expr {
  readonly where: string;
  readonly text: string;
  /** The resources a validation is guarded to (`request.resource.resource != 'x' || …`); all matched ones else. */
  readonly kinds: readonly string[];
}

function policies(): {
  file: string;
  policy: k8s.V1ValidatingAdmissionPolicy;
  bindings: k8s.V1ValidatingAdmissionPolicyBinding[];
}[] {
  return POLICY_FILES.map((file) => {
    const docs = docsOf(file);
    return {
      file,
      policy: docs.find((d) => d.kind === 'ValidatingAdmissionPolicy') as k8s.V1ValidatingAdmissionPolicy,
      bindings: docs.filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding'),
    };
  });
}

function expressions(p: k8s.V1ValidatingAdmissionPolicy): Expr[] {
  const spec = p.spec!;
  const matched = (spec.matchConstraints?.resourceRules ?? []).flatMap((r) => r.resources ?? []);
  const guard = (text: string): readonly string[] => {
    const m = /^\s*request\.resource\.resource\s*!=\s*'([a-z]+)'\s*\|\|/.exec(text);
    return m ? [m[1]!] : matched;
  };
  return [
    ...(spec.matchConditions ?? []).map((c) => ({
      where: `matchCondition ${c.name}`,
      text: c.expression,
      kinds: matched,
    })),
    ...(spec.variables ?? []).map((v) => ({ where: `variable ${v.name}`, text: v.expression, kinds: matched })),
    ...(spec.validations ?? []).flatMap((v, i) => [
      { where: `validation ${i}`, text: v.expression, kinds: guard(v.expression) },
      ...(v.messageExpression
        ? [{ where: `validation ${i} messageExpression`, text: v.messageExpression, kinds: guard(v.expression) }]
        : []),
    ]),
  ];
}

/** Drops string literals (their content is not code). */
const code = (text: string): string => text.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");

describe('issue [K] 9 admission policies of deploy/ (static checks; not enforced by the stand-in)', () => {
  test.each(POLICY_FILES.map((f) => [f]))('%s: every field exists in admissionregistration.k8s.io/v1', (file) => {
    const docs = docsOf(file);
    expect(docs.map((d) => `${String(d.apiVersion)} ${String(d.kind)}`).sort()).toEqual([
      'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy',
      'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding',
    ]);
    expect(docs.flatMap((d) => unknownFields(d, `V1${String(d.kind)}`, String(d.kind)))).toEqual([]);
  });

  test.each(RBAC_FILES.map((f) => [f]))(
    '%s: every field exists in rbac.authorization.k8s.io/v1 and core/v1',
    (file) => {
      expect(docsOf(file).flatMap((d) => unknownFields(d, `V1${String(d.kind)}`, String(d.kind)))).toEqual([]);
    },
  );

  test.each(POLICY_FILES.map((f) => [f]))('%s: the binding denies with the policy it names', (file) => {
    const { policy, bindings } = policies().find((p) => p.file === file)!;
    expect(bindings.map((b) => [b.spec?.policyName, b.spec?.validationActions])).toEqual([
      [policy.metadata?.name, ['Deny']],
    ]);
    expect(policy.spec?.failurePolicy).toBe('Fail');
  });

  test.each(POLICY_FILES.map((f) => [f]))(
    '%s: every object/oldObject path exists in the kinds it applies to',
    (file) => {
      const bad: string[] = [];
      for (const e of expressions(policies().find((p) => p.file === file)!.policy)) {
        const src = code(e.text);
        for (const m of src.matchAll(/\b(object|oldObject)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
          const segs = m[2]!.slice(1).split('.');
          // `object.metadata.name.startsWith(…)`: the last segment is a method, not a field
          if (/^\s*\(/.test(src.slice(m.index + m[0].length))) segs.pop();
          for (const kind of e.kinds) {
            if (fieldType(KIND_MODEL[kind]!, segs) === undefined) bad.push(`${e.where}: ${m[0]} not in ${kind}`);
          }
        }
      }
      expect(bad).toEqual([]);
    },
  );

  test.each(POLICY_FILES.map((f) => [f]))('%s: every request path exists in an AdmissionRequest', (file) => {
    const bad: string[] = [];
    const userInfo = new Set(k8s.V1UserInfo.getAttributeTypeMap().map((a) => a.baseName));
    for (const e of expressions(policies().find((p) => p.file === file)!.policy)) {
      for (const m of code(e.text).matchAll(/\brequest((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
        const [top, sub] = m[1]!.slice(1).split('.');
        const known = ADMISSION_REQUEST[top!];
        const ok =
          known !== undefined &&
          (sub === undefined || (known === 'userInfo' ? userInfo.has(sub) : known !== null && known.includes(sub)));
        if (!ok) bad.push(`${e.where}: ${m[0]}`);
      }
    }
    expect(bad).toEqual([]);
  });

  test.each(POLICY_FILES.map((f) => [f]))(
    '%s: variables are declared before use; only CEL functions of Kubernetes are called',
    (file) => {
      const p = policies().find((x) => x.file === file)!.policy;
      const declared: string[] = [];
      const bad: string[] = [];
      const check = (where: string, text: string): void => {
        for (const m of code(text).matchAll(/\bvariables\.([A-Za-z_][A-Za-z0-9_]*)/g)) {
          if (!declared.includes(m[1]!)) bad.push(`${where}: variables.${m[1]} not declared before`);
        }
        for (const m of code(text).matchAll(/\b([A-Za-z_][A-Za-z0-9_]*)\s*\(/g)) {
          // functions and the standard CEL macros (all, exists) that Kubernetes' CEL environment has
          if (!['has', 'size', 'startsWith', 'endsWith', 'matches', 'contains', 'all', 'exists'].includes(m[1]!))
            bad.push(`${where}: ${m[1]}()`);
        }
        let depth = 0;
        for (const ch of code(text)) depth += ch === '(' || ch === '[' ? 1 : ch === ')' || ch === ']' ? -1 : 0;
        if (depth !== 0) bad.push(`${where}: unbalanced brackets`);
      };
      for (const v of p.spec?.variables ?? []) {
        check(`variable ${v.name}`, v.expression);
        declared.push(v.name);
      }
      for (const e of expressions(p).filter((x) => !x.where.startsWith('variable'))) check(e.where, e.text);
      expect(bad).toEqual([]);
    },
  );

  test('the resource and operation literals compared against are ones the policy matches', () => {
    const bad: string[] = [];
    for (const { policy } of policies()) {
      const rules = policy.spec?.matchConstraints?.resourceRules ?? [];
      const resources = rules.flatMap((r) => r.resources ?? []);
      const operations = rules.flatMap((r) => r.operations ?? []);
      for (const e of expressions(policy)) {
        for (const m of e.text.matchAll(/request\.resource\.resource\s*[!=]=\s*'([^']*)'/g)) {
          if (!resources.includes(m[1]!)) bad.push(`${policy.metadata?.name} ${e.where}: resource ${m[1]}`);
        }
        for (const m of e.text.matchAll(/request\.operation\s*[!=]=\s*'([^']*)'/g)) {
          if (!operations.includes(m[1]!)) bad.push(`${policy.metadata?.name} ${e.where}: operation ${m[1]}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });

  test('the policies name the service accounts of the RBAC manifests', () => {
    const rbac = loadRbacFiles(RBAC_FILES.map((f) => path.join(PROJECT_ROOT, f)));
    const accounts = new Set(
      rbac.bindings.flatMap((b) =>
        b.subjects.map((s) => `system:serviceaccount:${s.namespace ?? b.namespace}:${s.name}`),
      ),
    );
    const named = policies().map(
      ({ policy }) =>
        /request\.userInfo\.username == '([^']+)'/.exec(policy.spec!.matchConditions![0]!.expression)?.[1],
    );
    expect(named).toEqual([
      'system:serviceaccount:kube-system:ascend-npu-agent',
      'system:serviceaccount:cluster-system:ascend-fault-center',
    ]);
    for (const n of named) expect(accounts.has(n!)).toBe(true);
  });

  test("the agent's policy uses the pod-bound token's node name and the ConfigMap names of the code", () => {
    const text = expressions(policies()[0]!.policy)
      .map((e) => e.text)
      .join('\n');
    expect(text).toContain("request.userInfo.extra['authentication.kubernetes.io/node-name']");
    expect(text).toContain(`'${DEVICE_INFO_NAME_PREFIX}' + variables.node`);
    expect(text).toContain(`startsWith('${resetConfigMapName('')}')`);
    expect(text).toContain(`startsWith('${faultConfigMapName('')}')`);
  });

  test("the fault center's policy allows the ConfigMaps and the Lease its Role names, and the chunk names of the code", () => {
    const rbac = loadRbacFiles([path.join(PROJECT_ROOT, 'deploy/fault-center/rbac.yaml')]);
    const role = rbac.roles.find((r) => r.kind === 'Role' && r.namespace === 'cluster-system')!;
    const named = (resource: string): string[] =>
      role.rules
        .filter((r) => r.resources?.includes(resource) && r.verbs.includes('update'))
        .flatMap((r) => r.resourceNames ?? []);
    const text = expressions(policies()[1]!.policy)
      .map((e) => e.text)
      .join('\n');
    const allowed = /object\.metadata\.name in \[([^\]]*)\]/
      .exec(text)![1]!
      .split(',')
      .map((s) => s.trim().replace(/'/g, ''));
    expect(allowed.sort()).toEqual(named('configmaps').sort());
    expect(allowed).toEqual(expect.arrayContaining([MANUAL_INFO_CONFIGMAP, STATISTICS_NAME]));
    expect(text).toContain(`object.metadata.name == '${named('leases')[0]}'`);
    expect(text).toContain(`matches('^${CLUSTER_INFO_PREFIX}[0-9]+$')`);
  });
});
