/**
 * Issue [R] item 6 on the real API server: `helm install` of deploy/helm/ascend-npu-agent with every part switched
 * on (the three agent pools, the fault center, the admission policies, monitoring) creates exactly the objects of the
 * kustomize overlays 910, 310p, a5, fault-center, admission-policies and monitoring; `helm uninstall` removes every
 * one of them, and the release, except the two namespaces the chart keeps on purpose (docs/helm.md); and the objects
 * helm created are, field by field as the server stores them, the objects `kubectl apply` of those overlays creates.
 *
 * One cluster for the file; the tests run in order on it (each needs the one before). The Prometheus Operator's
 * CRDs are stood in by CRDs of the same names with an open schema: the server accepts the monitoring objects as
 * they are, which is what this suite needs (their fields are checked by test/deploy/monitoring.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Cluster } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';
import {
  BUILD_HELM,
  CHART_DIR,
  HELM,
  byId,
  docsOfText,
  helmEnv,
  idOf,
  kustomize,
  normaliseLive,
  runOk,
} from '../helm-chart.js';

type Obj = Record<string, any>;

const RELEASE = 'ascend-npu-agent';
const RELEASE_NAMESPACE = 'kube-system';
/** The overlays one install with {@link VALUES} stands for. */
const OVERLAYS = ['910', '310p', 'a5', 'fault-center', 'admission-policies', 'monitoring'];
const VALUES = {
  agent: { pools: { '310p': { enabled: true }, a5: { enabled: true } } },
  admissionPolicies: { enabled: true },
  monitoring: { enabled: true },
};
const KEPT_NAMESPACES = ['v1 Namespace cluster-system', 'v1 Namespace mindx-dl'];
const MONITORING_KINDS = [
  ['PodMonitor', 'podmonitors'],
  ['ServiceMonitor', 'servicemonitors'],
  ['PrometheusRule', 'prometheusrules'],
] as const;

let cluster: Cluster;
let dir = '';
/** The kustomize render of {@link OVERLAYS}: one document per object (the overlays share the agent's RBAC). */
let expected: Obj[] = [];
let expectedFile = '';
/** The objects as helm created them, read back in the first test. */
let liveFromHelm = new Map<string, Obj>();

const helm = (args: readonly string[]): Promise<string> =>
  runOk(HELM, [...args, '--kubeconfig', cluster.adminKubeconfig], 300_000, helmEnv(path.join(dir, 'helm-home')));

/** The objects of `file` as the server has them now; missing ones are left out. */
async function liveOf(file: string): Promise<Obj[]> {
  const out = await cluster.kubectl(['get', '-f', file, '--ignore-not-found', '-o', 'json']);
  if (out.trim() === '') return [];
  const list = JSON.parse(out) as Obj;
  return list.kind === 'List' ? (list.items as Obj[]) : [list];
}

function writeDocs(name: string, docs: readonly Obj[]): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, docs.map((d) => JSON.stringify(d)).join('\n---\n'));
  return f;
}

/** The overlays' objects, once each: an object two overlays render must be the same in both. */
async function kustomizeAll(): Promise<Obj[]> {
  const seen = new Map<string, Obj>();
  for (const o of OVERLAYS) {
    for (const d of await kustomize(o)) {
      const id = idOf(d);
      if (seen.has(id)) expect({ id, d }).toEqual({ id, d: seen.get(id) });
      else seen.set(id, d);
    }
  }
  return [...seen.values()];
}

/** CRDs named as the Prometheus Operator's, open schema. */
function monitoringCrds(): Obj[] {
  return MONITORING_KINDS.map(([kind, plural]) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.monitoring.coreos.com` },
    spec: {
      group: 'monitoring.coreos.com',
      scope: 'Namespaced',
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  }));
}

beforeAll(async () => {
  // a no-op when test/k8s/bin/helm is the pinned version
  if (process.env.HELM === undefined) await runOk('bash', [BUILD_HELM], 30 * 60_000);
  // privileged containers (the agent's) are refused unless the API server allows them, as every real cluster does
  cluster = await Cluster.start({ apiserverFlags: ['--allow-privileged=true'] });
  dir = fs.mkdtempSync(path.join(cluster.runDir, 'helm-'));
  expected = await kustomizeAll();
  expectedFile = writeDocs('kustomize.yaml', expected);
  await cluster.kubectl(['apply', '-f', writeDocs('crds.yaml', monitoringCrds())]);
  await cluster.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=25s',
    ...MONITORING_KINDS.map(([, plural]) => `crd/${plural}.monitoring.coreos.com`),
  ]);
}, 31 * 60_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

describe('issue [R] 6 helm install into the real API server', () => {
  test('helm install creates exactly the objects of the kustomize overlays, and the server stores them all', async () => {
    await helm([
      'install',
      RELEASE,
      CHART_DIR,
      '--namespace',
      RELEASE_NAMESPACE,
      '--values',
      writeDocs('values.json', [VALUES]),
      '--timeout',
      '2m',
    ]);
    const manifest = docsOfText(await helm(['get', 'manifest', RELEASE, '--namespace', RELEASE_NAMESPACE]));
    expect(manifest.map(idOf).sort()).toEqual(expected.map(idOf).sort());
    const live = await liveOf(expectedFile);
    expect(live.map(idOf).sort()).toEqual(expected.map(idOf).sort());
    liveFromHelm = byId(live, normaliseLive);
  }, 300_000);

  test('helm uninstall removes every object and the release; only the namespaces the chart keeps stay', async () => {
    await helm(['uninstall', RELEASE, '--namespace', RELEASE_NAMESPACE, '--wait', '--cascade', 'foreground']);
    const left = await pollUntil(
      async () => {
        const ids = (await liveOf(expectedFile)).map(idOf).sort();
        return ids.length <= KEPT_NAMESPACES.length ? ids : undefined;
      },
      'the release objects deleted',
      120_000,
    );
    expect(left).toEqual(KEPT_NAMESPACES);
    // the Deployment's ReplicaSet and pod went with it (foreground deletion), and Helm's release record
    expect(await cluster.kubectl(['get', 'replicasets,pods', '-n', 'cluster-system', '-o', 'name'])).toBe('');
    expect(
      await cluster.kubectl([
        'get',
        'secrets',
        '-n',
        RELEASE_NAMESPACE,
        '-l',
        `owner=helm,name=${RELEASE}`,
        '-o',
        'name',
      ]),
    ).toBe('');
  }, 300_000);

  test('kubectl apply of the overlays creates, field by field, the objects helm created', async () => {
    expect(liveFromHelm.size).toBe(expected.length);
    await cluster.kubectl(['apply', '-f', expectedFile]);
    const fromKustomize = byId(await liveOf(expectedFile), normaliseLive);
    expect([...fromKustomize.keys()]).toEqual([...liveFromHelm.keys()]);
    for (const [id, want] of fromKustomize) expect({ id, object: liveFromHelm.get(id) }).toEqual({ id, object: want });
  }, 300_000);

  test('helm install --take-ownership --force-conflicts adopts what kubectl apply made, no pod rolled (docs/helm.md)', async () => {
    // a changed pod template would roll every pod: a new ControllerRevision (DaemonSet) or ReplicaSet (Deployment)
    const rollouts = async (): Promise<Obj> => ({
      templates: Object.fromEntries(
        (await liveOf(expectedFile))
          .filter((d) => d.kind === 'DaemonSet' || d.kind === 'Deployment')
          .map((d) => [idOf(d), d.spec.template]),
      ),
      revisions: await cluster.kubectl(['get', 'controllerrevisions', '-n', 'kube-system', '-o', 'name']),
      replicaSets: await cluster.kubectl(['get', 'replicasets', '-n', 'cluster-system', '-o', 'name']),
    });
    // the controllers make the first revision of each workload a moment after kubectl apply
    const before = await pollUntil(
      async () => {
        const r = await rollouts();
        const count = (names: string): number => names.split('\n').filter((l) => l.trim() !== '').length;
        return count(r.revisions) === 3 && count(r.replicaSets) === 1 ? r : undefined;
      },
      "a ControllerRevision per DaemonSet and the Deployment's ReplicaSet",
      60_000,
    );
    expect(Object.keys(before.templates)).toHaveLength(4);
    const install = [
      'install',
      RELEASE,
      CHART_DIR,
      '--namespace',
      RELEASE_NAMESPACE,
      '--values',
      path.join(dir, 'values.json'),
    ];
    // without it Helm refuses objects it does not own
    await expect(helm(install)).rejects.toThrow(/exists and cannot be imported into the current release/);
    // kubectl apply owns fields whose stored form has server defaults (fieldRef.apiVersion, a policy's
    // matchConstraints): without --force-conflicts Helm's server-side apply of the same manifest conflicts on them
    // (and leaves a failed release behind)
    await helm([...install, '--take-ownership', '--force-conflicts']);
    expect(await rollouts()).toEqual(before);
    const manifest = docsOfText(await helm(['get', 'manifest', RELEASE, '--namespace', RELEASE_NAMESPACE]));
    expect(manifest.map(idOf).sort()).toEqual(expected.map(idOf).sort());
    // and the release now owns them: uninstall removes them again
    await helm(['uninstall', RELEASE, '--namespace', RELEASE_NAMESPACE, '--wait', '--cascade', 'foreground']);
    const left = await pollUntil(
      async () => {
        const ids = (await liveOf(expectedFile)).map(idOf).sort();
        return ids.length <= KEPT_NAMESPACES.length ? ids : undefined;
      },
      'the adopted objects deleted',
      120_000,
    );
    expect(left).toEqual(KEPT_NAMESPACES);
  }, 300_000);
});
