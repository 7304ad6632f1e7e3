/**
 * deploy/components/dra and deploy/overlays/dra (issue [DRA] item 7; docs/dra.md "Manifests and policy"), offline:
 * the DeviceClasses shipped are the ones the code derives and read only attributes every device has; the DaemonSet is
 * the 910 one switched to -deviceApi=dra with the DRA folders mounted; the admission policy guards every read that
 * may be absent and limits the agent to its own node's slices of its own driver. kubernetes-models has no schema of
 * resource.k8s.io/v1 (1.33): the field names are checked against client-node's models of 1.34. The policy is proven
 * both ways on the real API server by test/k8s/dra.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { describe, expect, test } from '@jest/globals';
import { DRA_ATTR, DRA_DRIVER, WHOLE_CHIP } from '../../src/core/dra-devices.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { deviceClasses } from '../../src/dra/device-classes.js';
import { TaintTimes } from '../../src/dra/device-taints.js';
import { poolOf, slicesOf } from '../../src/dra/resource-slices.js';
import { templatesOf } from '../../src/kubelet/vnpu-core.js';
import { testStore } from '../state/helpers.js';
import { DRA_POLICY_SOURCES } from './deploy-files.js';

type Obj = Record<string, any>;
const docs = (rel: string): Obj[] =>
  yaml
    .loadAll(fs.readFileSync(path.join(PROJECT_ROOT, rel), 'utf8'))
    .filter((d): d is Obj => typeof d === 'object' && d !== null);
const rendered = docs('deploy/rendered/dra.yaml');
const rendered910 = docs('deploy/rendered/910.yaml');
const of = (list: Obj[], kind: string): Obj[] => list.filter((d) => d.kind === kind);

/** client-node model field paths (as in test/deploy/manifests.test.ts). */
const models = k8s as unknown as Record<string, { getAttributeTypeMap(): { baseName: string; type: string }[] }>;
function unknownFields(value: unknown, type: string, at: string): string[] {
  const arr = /^Array<(.+)>$/.exec(type);
  if (arr) return Array.isArray(value) ? value.flatMap((v, i) => unknownFields(v, arr[1]!, `${at}[${i}]`)) : [];
  const model = models[type];
  if (model === undefined || typeof value !== 'object' || value === null) return [];
  const fields = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  return Object.entries(value as Obj).flatMap(([k, v]) =>
    fields.has(k) ? unknownFields(v, fields.get(k)!, `${at}.${k}`) : [`${at}.${k}`],
  );
}

describe('issue [DRA] 4 the DeviceClasses', () => {
  test('deploy/components/dra/deviceclasses.yaml is exactly src/dra/device-classes.ts (and so is the render)', () => {
    expect(docs('deploy/components/dra/deviceclasses.yaml')).toEqual(deviceClasses());
    expect(of(rendered, 'DeviceClass')).toEqual(expect.arrayContaining(deviceClasses()));
    expect(of(rendered, 'DeviceClass')).toHaveLength(deviceClasses().length);
  });

  test("Huawei's class npu.huawei.com is there, for whole chips", () => {
    const c = deviceClasses().find((d) => d.metadata.name === DRA_DRIVER)!;
    expect(c.spec.selectors[0]!.cel.expression).toContain(`device.driver == '${DRA_DRIVER}'`);
    expect(c.spec.extendedResourceName).toBeUndefined();
  });

  test('extendedResourceName: huawei.com/Ascend910, Ascend310P, Ascend310, npu (spec B.3), each in one class only', () => {
    const names = deviceClasses().flatMap((c) => (c.spec.extendedResourceName ? [c.spec.extendedResourceName] : []));
    expect(names).toEqual(
      expect.arrayContaining([
        'huawei.com/Ascend910',
        'huawei.com/Ascend310P',
        'huawei.com/Ascend310',
        'huawei.com/npu',
      ]),
    );
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^huawei\.com\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
  });

  test('static vNPU resources select partitions of their template: huawei.com/Ascend910-5c.1cpu.16g', () => {
    const c = deviceClasses().find((d) => d.spec.extendedResourceName === 'huawei.com/Ascend910-5c.1cpu.16g')!;
    expect(c.spec.selectors[0]!.cel.expression).toContain(`.${DRA_ATTR.partition} == 'vir05_1c_16g'`);
  });

  test('selectors read only attributes every device has (a missing one fails the allocation in CEL)', () => {
    const { store } = testStore({ chips: 1 });
    const inv = { kind: 'Ascend910B' as const, node: { chipKind: 'Ascend910B' as const, boardId: 0x24 }, aiCores: 20 };
    const devices = poolOf(store.snapshot(), inv, new TaintTimes(), { partitions: true }).devices;
    for (const c of deviceClasses()) {
      const read = [...c.spec.selectors[0]!.cel.expression.matchAll(/\.attributes\['npu\.huawei\.com'\]\.(\w+)/g)].map(
        (m) => m[1]!,
      );
      for (const a of read) for (const d of devices) expect(Object.keys(d.attributes!)).toContain(a);
    }
  });

  test('the partition values the classes test are the templates the partitions carry', () => {
    const values = deviceClasses().flatMap((c) =>
      [...c.spec.selectors[0]!.cel.expression.matchAll(/\.partition == '([^']+)'/g)].map((m) => m[1]!),
    );
    const known = new Set<string>([
      WHOLE_CHIP,
      ...(['Ascend910B', 'Ascend910A3', 'Ascend310P'] as const).flatMap(templatesOf),
    ]);
    for (const v of values) expect(known.has(v)).toBe(true);
  });

  test('names are DNS subdomains; fields are API fields', () => {
    for (const c of deviceClasses()) {
      expect(c.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
      expect(c.metadata.name.length).toBeLessThanOrEqual(253);
      expect(unknownFields(c, 'V1DeviceClass', 'DeviceClass')).toEqual([]);
    }
  });
});

describe('issue [DRA] 2 what the writer sends are API fields', () => {
  test('a slice with taints, binding conditions, partitions and counters has no field the API does not know', () => {
    const { store } = testStore({ chips: 2 });
    store.start();
    store.applyEvents([{ logicId: 0, code: 0x80e18402, assertion: 'occur', severity: 2 }]);
    store.setResetOverrides(new Set(), new Set(), new Set([1]));
    const inv = {
      kind: 'Ascend910B' as const,
      node: { chipKind: 'Ascend910B' as const, boardId: 0x24 },
      aiCores: 20,
      hbmBytes: 2 ** 36,
    };
    for (const spec of slicesOf(poolOf(store.snapshot(), inv, new TaintTimes(), { partitions: true }), 'n')) {
      const slice = { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSlice', metadata: { name: 'n-0' }, spec };
      expect(unknownFields(slice, 'V1ResourceSlice', 'ResourceSlice')).toEqual([]);
    }
  });
});

describe('issue [DRA] 7 the DaemonSet of deploy/overlays/dra', () => {
  const ds = of(rendered, 'DaemonSet');
  const c = ds[0]?.spec.template.spec.containers[0];

  test('the 910 DaemonSet with -deviceApi=dra added, nothing else of it changed but the DRA folders', () => {
    expect(ds).toHaveLength(1);
    const base = of(rendered910, 'DaemonSet')[0]!;
    expect(ds[0]!.metadata).toEqual(base.metadata);
    expect(c.args).toEqual([...base.spec.template.spec.containers[0].args, '-deviceApi=dra']);
    const strip = (d: Obj): Obj => {
      const x = structuredClone(d);
      delete x.spec.template.spec.containers[0].args;
      delete x.spec.template.spec.containers[0].volumeMounts;
      delete x.spec.template.spec.volumes;
      return x;
    };
    expect(strip(ds[0]!)).toEqual(strip(base));
  });

  test('the plugin registry, the plugins folder and the CDI folder are mounted at their host paths (architecture §4 defaults)', () => {
    const volumes = new Map<string, Obj>(ds[0]!.spec.template.spec.volumes.map((v: Obj) => [v.name, v]));
    const mounts = new Map<string, string>(c.volumeMounts.map((m: Obj) => [m.mountPath, m.name]));
    for (const p of ['/var/lib/kubelet/plugins', '/var/lib/kubelet/plugins_registry', '/var/run/cdi']) {
      const name = mounts.get(p);
      expect(name).toBeDefined();
      expect(volumes.get(name!)!.hostPath.path).toBe(p);
    }
    // kubelet makes the registry; the agent's own folders are made when missing
    expect(volumes.get(mounts.get('/var/lib/kubelet/plugins_registry')!)!.hostPath.type).toBe('Directory');
    expect(volumes.get(mounts.get('/var/run/cdi')!)!.hostPath.type).toBe('DirectoryOrCreate');
  });
});

describe('issue [DRA] 7 the admission policy: own slices only', () => {
  const policy = DRA_POLICY_SOURCES.flatMap(docs).find((d) => d.kind === 'ValidatingAdmissionPolicy')!;
  const binding = DRA_POLICY_SOURCES.flatMap(docs).find((d) => d.kind === 'ValidatingAdmissionPolicyBinding')!;
  const expressions = (): string[] => [
    ...policy.spec.matchConditions.map((m: Obj) => m.expression),
    ...policy.spec.variables.map((v: Obj) => v.expression),
    ...policy.spec.validations.flatMap((v: Obj) => [v.expression, v.messageExpression].filter(Boolean)),
  ];

  test('it matches every write of resourceslices, fails closed, and its binding denies', () => {
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      expect.objectContaining({
        apiGroups: ['resource.k8s.io'],
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        resources: ['resourceslices'],
      }),
    ]);
    expect(binding.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
    for (const v of policy.spec.validations) expect(v.reason).toBe('Forbidden');
  });

  test('it applies to the agent only', () => {
    expect(policy.spec.matchConditions).toEqual([
      {
        name: 'ascend-npu-agent',
        expression: "request.userInfo.username == 'system:serviceaccount:kube-system:ascend-npu-agent'",
      },
    ]);
  });

  test('no unguarded read of what may be absent: request.subResource never, extra and spec fields behind has()', () => {
    const all = expressions().join('\n');
    expect(all).not.toContain('request.subResource');
    expect(all).toMatch(/has\(request\.userInfo\.extra\)/);
    for (const o of ['object', 'oldObject']) {
      expect(all).toContain(`${o} != null && has(${o}.spec)`);
      for (const f of ['nodeName', 'driver']) expect(all).toContain(`has(${o}.spec.${f}) ? ${o}.spec.${f}`);
    }
    // object is null on DELETE: the slice is oldObject there
    expect(all).toMatch(/request\.operation == 'DELETE' \?\s*\(oldObject/);
  });

  test('the node of the slice must be the node of the token, and the driver ours', () => {
    const v = policy.spec.validations.map((x: Obj) => x.expression as string);
    expect(v).toContain("variables.node != ''");
    expect(v).toContain(`variables.sliceNode == variables.node && variables.sliceDriver == '${DRA_DRIVER}'`);
  });

  test('every field the expressions read of object / oldObject exists in a ResourceSlice (client-node model)', () => {
    const reads = [
      ...expressions()
        .join('\n')
        .matchAll(/\b(?:object|oldObject)\.(\w+(?:\.\w+)*)/g),
    ];
    expect(reads.length).toBeGreaterThan(0);
    for (const m of reads) {
      const segs = m[1]!.split('.');
      let t = 'V1ResourceSlice';
      for (const s of segs) {
        const f = models[t]!.getAttributeTypeMap().find((a) => a.baseName === s);
        expect([t, s, f !== undefined]).toEqual([t, s, true]);
        t = f!.type;
      }
    }
  });
});
