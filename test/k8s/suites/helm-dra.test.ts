/**
 * The DRA value of the Helm chart (issue [DRA] item 7; docs/helm.md `agent.pools.<key>.deviceApi`): `dra` and `both`
 * append the flag and the DRA folders to the pool's DaemonSet and render the DRA objects once for every pool;
 * `plugin` renders none; a Kubernetes without `resource.k8s.io/v1` (< 1.34) is refused; an unknown value is refused by
 * the schema. The overlay `dra` itself is compared object by object in helm.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { BUILD_HELM, HELM, helmTemplate, run, runOk, templateArgs } from '../helm-chart.js';

type Obj = Record<string, any>;
let tmp = '';
let seq = 0;
const file = (values: Obj): string => {
  const f = path.join(tmp, `values-${++seq}.json`);
  fs.writeFileSync(f, JSON.stringify(values));
  return f;
};
const draKinds = (docs: Obj[]): string[] =>
  docs
    .filter((d) => String(d.apiVersion).startsWith('resource.k8s.io/') || String(d.metadata?.name).includes('-dra'))
    .map((d) => `${String(d.kind)} ${String(d.metadata?.name)}`);

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'helm-dra-'));
  if (process.env.HELM === undefined) await runOk('bash', [BUILD_HELM], 30 * 60_000);
}, 31 * 60_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('issue [DRA] 7 agent.pools.<key>.deviceApi', () => {
  test('plugin (the default): no DRA object, no -deviceApi flag', async () => {
    const docs = await helmTemplate();
    expect(draKinds(docs)).toEqual([]);
    const ds = docs.find((d) => d.kind === 'DaemonSet')!;
    expect(ds.spec.template.spec.containers[0].args).toEqual(['-logFile=']);
  });

  test('both on two pools: the flag on each, the DRA folders mounted, the DRA objects once', async () => {
    const docs = await helmTemplate([
      file({ agent: { pools: { '910': { deviceApi: 'both' }, '310p': { enabled: true, deviceApi: 'both' } } } }),
    ]);
    const sets = docs.filter((d) => d.kind === 'DaemonSet');
    expect(sets).toHaveLength(2);
    for (const ds of sets) {
      const c = ds.spec.template.spec.containers[0];
      expect(c.args.at(-1)).toBe('-deviceApi=both');
      expect(c.volumeMounts.map((m: Obj) => m.mountPath).slice(-3)).toEqual([
        '/var/lib/kubelet/plugins',
        '/var/lib/kubelet/plugins_registry',
        '/var/run/cdi',
      ]);
    }
    const objects = draKinds(docs);
    expect(objects.filter((o) => o === 'ClusterRole ascend-npu-agent-dra')).toHaveLength(1);
    expect(objects.filter((o) => o.startsWith('DeviceClass '))).toHaveLength(21);
    expect(docs.filter((d) => d.kind === 'ValidatingAdmissionPolicy').map((d) => d.metadata.name)).toEqual([
      'ascend-npu-agent-own-slices',
    ]);
  });

  test('a Kubernetes without resource.k8s.io/v1 (1.33) is refused, naming the value', async () => {
    const r = await run(HELM, [
      ...templateArgs([file({ agent: { pools: { '910': { deviceApi: 'dra' } } } })]).filter(
        (a, i, all) => a !== '--kube-version' && all[i - 1] !== '--kube-version',
      ),
      '--kube-version',
      '1.33.0',
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/deviceApi: Kubernetes v?1\.33\.0 has no resource\.k8s\.io\/v1/);
  });

  test('an unknown value is refused by the schema', async () => {
    const r = await run(HELM, templateArgs([file({ agent: { pools: { '910': { deviceApi: 'DRA' } } } })]));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/deviceApi/);
  });
});
