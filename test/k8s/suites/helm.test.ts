/**
 * Issue [R] item 6, the Helm chart of deploy/helm/ascend-npu-agent: `helm lint --strict` is clean; `helm template`
 * with deploy/helm/values/<overlay>.yaml is, object by object, what `kubectl kustomize deploy/overlays/<overlay>`
 * renders (test/k8s/helm-chart.ts says what "in substance" leaves out), for every overlay there is; the defaults are
 * the 910 overlay and the fault center; every value the chart offers does what docs/helm.md says, and bad values are
 * refused with a message naming the value.
 *
 * Needs test/k8s/bin/helm (built here by test/k8s/build-helm.sh when missing: Go, the module proxy or a warm module
 * cache) and test/k8s/bin/kubectl (the cluster harness's build; `KUBECTL` names another kubectl with kustomize >= v5).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import {
  BUILD_HELM,
  CHART_DIR,
  HELM,
  KUBECTL,
  OVERLAY_VALUES_DIR,
  byId,
  helmTemplate,
  idOf,
  kustomize,
  overlayNames,
  overlayValuesNames,
  run,
  runOk,
  templateArgs,
} from '../helm-chart.js';

type Obj = Record<string, any>;

const overlays = overlayNames();
const valuesOf = (overlay: string): string => path.join(OVERLAY_VALUES_DIR, `${overlay}.yaml`);
const VERSION = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

/** Renders with values given as a YAML/JSON text (a temporary file), for the tests of single values. */
let tmp = '';
let valuesSeq = 0;
function valuesFile(values: Obj): string {
  const f = path.join(tmp, `values-${++valuesSeq}.json`);
  fs.writeFileSync(f, JSON.stringify(values));
  return f;
}
const render = (values: Obj = {}): Promise<Obj[]> => helmTemplate([valuesFile(values)]);
/** `helm template` that must fail: its stderr. */
async function refused(values: Obj, extraArgs: readonly string[] = []): Promise<string> {
  const r = await run(HELM, [...templateArgs([valuesFile(values)]), ...extraArgs]);
  expect(r.code).not.toBe(0);
  return r.stderr;
}
const ofKind = (docs: readonly Obj[], kind: string): Obj[] => docs.filter((d) => d.kind === kind);
const named = (docs: readonly Obj[], kind: string, name: string): Obj => {
  const found = docs.filter((d) => d.kind === kind && d.metadata?.name === name);
  expect(found.map(idOf)).toHaveLength(1);
  return found[0]!;
};

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'helm-chart-'));
  // a no-op when test/k8s/bin/helm is the pinned version; a link with warm Go caches, minutes when cold
  if (process.env.HELM === undefined) await runOk('bash', [BUILD_HELM], 30 * 60_000);
  if (!fs.existsSync(KUBECTL)) {
    throw new Error(
      `${KUBECTL} is missing: it is built with the real control plane (npm run build:k8s); KUBECTL=<path> names ` +
        'another kubectl with kustomize >= v5',
    );
  }
}, 31 * 60_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('issue [R] 6 helm lint', () => {
  test('helm lint --strict: the chart with its defaults has no warning and no error', async () => {
    const r = await run(HELM, ['lint', CHART_DIR, '--strict', '--kube-version', '1.37.2']);
    expect({ code: r.code, out: r.stdout + r.stderr }).toEqual({
      code: 0,
      out: expect.stringContaining('1 chart(s) linted, 0 chart(s) failed'),
    });
    expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  test.each(overlayValuesNames().map((o) => [o]))(
    'helm lint --strict with deploy/helm/values/%s.yaml has no warning and no error',
    async (o) => {
      const r = await run(HELM, ['lint', CHART_DIR, '--strict', '--kube-version', '1.37.2', '--values', valuesOf(o)]);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    },
  );
});

describe('issue [R] 6 helm template equals the kustomize overlays in substance', () => {
  test.each(overlays.map((o) => [o]))(
    '%s: helm template -f deploy/helm/values/<overlay>.yaml renders the objects of kubectl kustomize',
    async (o) => {
      const [chart, overlay] = await Promise.all([helmTemplate([valuesOf(o)]), kustomize(o)]);
      const fromChart = byId(chart);
      const fromOverlay = byId(overlay);
      // the ids first: a missing or extra object is named before any field difference
      expect([...fromChart.keys()]).toEqual([...fromOverlay.keys()]);
      for (const [id, want] of fromOverlay) expect({ id, object: fromChart.get(id) }).toEqual({ id, object: want });
    },
  );

  test('the defaults render the 910 overlay and the fault-center overlay together', async () => {
    const [chart, a, b] = await Promise.all([helmTemplate(), kustomize('910'), kustomize('fault-center')]);
    expect(byId(chart)).toEqual(byId([...a, ...b]));
  });

  test('the image is ascend-npu-agent:<appVersion> (test/deploy/helm-chart.test.ts: the package.json version)', async () => {
    const docs = await render();
    const images = [...ofKind(docs, 'DaemonSet'), ...ofKind(docs, 'Deployment')].map(
      (d) => d.spec.template.spec.containers[0].image,
    );
    expect(images).toEqual([`ascend-npu-agent:${VERSION}`, `ascend-npu-agent:${VERSION}`]);
  });

  test('helm package keeps what files/ links to: the packaged chart renders as the folder does', async () => {
    const out = path.join(tmp, 'package');
    await runOk(HELM, ['package', CHART_DIR, '--destination', out]);
    const tgz = path.join(out, `ascend-npu-agent-${VERSION}.tgz`);
    const args = (chart: string): string[] =>
      templateArgs([valuesOf('admission-policies')], ['agent.enabled=true', 'monitoring.enabled=true']).map((a) =>
        a === CHART_DIR ? chart : a,
      );
    const [packaged, folder] = await Promise.all([runOk(HELM, args(tgz)), runOk(HELM, args(CHART_DIR))]);
    expect(packaged).toEqual(folder);
    expect(packaged).toContain('kind: ValidatingAdmissionPolicy');
  });
});

describe('issue [R] 6 chart values (docs/helm.md)', () => {
  test('image: repository, tag, digest and pullPolicy reach both workloads; imagePullSecrets both pod specs', async () => {
    const docs = await render({
      image: { repository: 'registry.example.com/ascend/ascend-npu-agent', tag: '9.9.9', pullPolicy: 'Always' },
      imagePullSecrets: [{ name: 'regcred' }],
    });
    const pods = [...ofKind(docs, 'DaemonSet'), ...ofKind(docs, 'Deployment')].map((d) => d.spec.template.spec);
    expect(pods).toHaveLength(2);
    for (const pod of pods) {
      expect(pod.containers[0]).toMatchObject({
        image: 'registry.example.com/ascend/ascend-npu-agent:9.9.9',
        imagePullPolicy: 'Always',
      });
      expect(pod.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    }
    const digest = `sha256:${'ab'.repeat(32)}`;
    const pinned = await render({ image: { digest } });
    for (const d of [...ofKind(pinned, 'DaemonSet'), ...ofKind(pinned, 'Deployment')]) {
      expect(d.spec.template.spec.containers[0].image).toBe(`ascend-npu-agent@${digest}`);
    }
  });

  test('agent flags: agent.args, then the pool args, then -volcanoType=true of a Volcano pool, in that order', async () => {
    const docs = await render({
      agent: { args: ['-logFile=', '-logLevel=1'], pools: { '910': { volcano: true, args: ['-hotReset=2'] } } },
    });
    expect(named(docs, 'DaemonSet', 'ascend-npu-agent-910').spec.template.spec.containers[0].args).toEqual([
      '-logFile=',
      '-logLevel=1',
      '-hotReset=2',
      '-volcanoType=true',
    ]);
  });

  test('agent resources, nodeSelector, tolerations and extraEnv: added as given, after the fixed ones', async () => {
    const docs = await render({
      agent: {
        // Helm merges maps into the defaults: null removes a default (here the CPU limit)
        resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: null, memory: '512Mi' } },
        nodeSelector: { 'ascend-npu-agent': 'enabled' },
        tolerations: [{ key: 'maintenance', operator: 'Exists' }],
        extraEnv: [{ name: 'KUBELET_PORT', value: '10250' }],
      },
    });
    const pod = named(docs, 'DaemonSet', 'ascend-npu-agent-910').spec.template.spec;
    expect(pod.containers[0].resources).toEqual({
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { memory: '512Mi' },
    });
    // the migration's node label (docs/migration.md) beside the pool's own
    expect(pod.nodeSelector).toEqual({ accelerator: 'huawei-Ascend910', 'ascend-npu-agent': 'enabled' });
    // a list replaces the default list (Helm does not merge lists): the pool's toleration stays
    expect(pod.tolerations).toEqual([
      { key: 'maintenance', operator: 'Exists' },
      { key: 'huawei.com/Ascend910', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    expect(pod.containers[0].env.map((e: Obj) => e.name)).toEqual([
      'NODE_NAME',
      'HOSTNAME',
      'HOST_IP',
      'LD_LIBRARY_PATH',
      'KUBELET_PORT',
    ]);
  });

  test('three pools in one release: one DaemonSet each, the shared RBAC once, chip reset and nodes/status once', async () => {
    const docs = await render({ agent: { pools: { '310p': { enabled: true }, a5: { enabled: true } } } });
    expect(ofKind(docs, 'DaemonSet').map((d) => d.metadata.name)).toEqual([
      'ascend-npu-agent-310p',
      'ascend-npu-agent-910',
      'ascend-npu-agent-npu',
    ]);
    const ids = docs.map(idOf);
    expect(new Set(ids).size).toBe(ids.length);
    expect(
      ofKind(docs, 'ClusterRole')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['ascend-fault-center', 'ascend-npu-agent', 'ascend-npu-agent-node-status', 'ascend-npu-agent-reset']);
    // the reset folders on the 910-family pools only (hot-reset §2.8)
    const mounts = (name: string): string[] =>
      named(docs, 'DaemonSet', name).spec.template.spec.containers[0].volumeMounts.map((m: Obj) => m.name);
    expect(mounts('ascend-npu-agent-910')).toContain('reset-files');
    expect(mounts('ascend-npu-agent-npu')).toContain('reset-files');
    expect(mounts('ascend-npu-agent-310p')).not.toContain('reset-files');
  });

  test('a pool of your own: a second 910 pool with its own name and label', async () => {
    const docs = await render({
      agent: {
        pools: {
          'big-910': {
            enabled: true,
            chip: 'Ascend910',
            name: 'ascend-npu-agent-big',
            nodeSelector: { accelerator: 'huawei-Ascend910', pool: 'big' },
          },
        },
      },
    });
    const ds = named(docs, 'DaemonSet', 'ascend-npu-agent-big');
    expect(ds.spec.selector.matchLabels).toEqual({
      app: 'ascend-npu-agent',
      'app.kubernetes.io/instance': 'ascend-npu-agent-big',
    });
    expect(ds.spec.template.spec.nodeSelector).toEqual({ accelerator: 'huawei-Ascend910', pool: 'big' });
  });

  test('310P only: no chip-reset RBAC (the agent copies reset ConfigMaps in Ascend910 run mode only)', async () => {
    const docs = await helmTemplate([valuesOf('310p')]);
    expect(docs.map((d) => d.metadata.name)).not.toContain('ascend-npu-agent-reset');
  });

  test('faultCenter: replicas, args, env, resources, scheduling; createNamespaces=false leaves the namespaces out', async () => {
    const docs = await render({
      faultCenter: {
        createNamespaces: false,
        replicas: 2,
        args: ['-logLevel=debug'],
        env: [{ name: 'NODE_OPTIONS', value: '--max-old-space-size=2048' }],
        resources: { limits: { memory: '3Gi' } },
        nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
      },
    });
    expect(ofKind(docs, 'Namespace')).toEqual([]);
    const deploy = named(docs, 'Deployment', 'ascend-fault-center');
    expect(deploy.spec.replicas).toBe(2);
    const pod = deploy.spec.template.spec;
    expect(pod.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
    expect(pod.containers[0]).toMatchObject({
      args: ['-logLevel=debug'],
      env: [{ name: 'NODE_OPTIONS', value: '--max-old-space-size=2048' }],
      resources: { limits: { memory: '3Gi' } },
    });
  });

  test('the created namespaces are kept by helm uninstall (mindx-dl may hold other MindCluster components)', async () => {
    const namespaces = ofKind(await render(), 'Namespace');
    expect(namespaces.map((d) => [d.metadata.name, d.metadata.annotations])).toEqual([
      ['cluster-system', { 'helm.sh/resource-policy': 'keep' }],
      ['mindx-dl', { 'helm.sh/resource-policy': 'keep' }],
    ]);
  });

  test('faultCenter.separationPolicy replaces ClusterD values in clusterd-config-cm (cluster-faults §1.2)', async () => {
    const conf =
      'enabled: true\nseparate:\n  fault_window_hours: 12\n  fault_threshold: 2\nrelease:\n  fault_free_hours: 24\n';
    const cm = named(await render({ faultCenter: { separationPolicy: conf } }), 'ConfigMap', 'clusterd-config-cm');
    expect(cm).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' },
      data: { 'manually_separate_policy.conf': conf },
    });
  });
});

describe('issue [R] 6 bad values are refused, naming the value', () => {
  test('an unknown key (a typo) is refused by values.schema.json', async () => {
    expect(await refused({ agent: { pools: { '910': { voclano: true } } } })).toMatch(/voclano/);
    expect(await refused({ faultCenter: { replica: 2 } })).toMatch(/replica/);
  });

  test('a chip kind the chart does not know is refused', async () => {
    expect(await refused({ agent: { pools: { '910': { chip: '910' } } } })).toMatch(/chip/);
    // without the schema the template refuses it too, naming the pool
    expect(await refused({ agent: { pools: { '910': { chip: 'Ascend310' } } } }, ['--skip-schema-validation'])).toMatch(
      /agent\.pools\.910\.chip: Ascend310 is not a chip kind/,
    );
  });

  test('two pools with one DaemonSet name are refused', async () => {
    const stderr = await refused({ agent: { pools: { '310p': { enabled: true, name: 'ascend-npu-agent-910' } } } });
    expect(stderr).toMatch(/DaemonSet ascend-npu-agent-910 is also the name of pool/);
  });

  test('a pool name that is not a DNS label is refused', async () => {
    expect(await refused({ agent: { pools: { '910': { name: 'Ascend_910' } } } })).toMatch(/name/);
  });

  test('extraEnv may not replace NODE_NAME, HOSTNAME, HOST_IP or LD_LIBRARY_PATH', async () => {
    expect(await refused({ agent: { extraEnv: [{ name: 'NODE_NAME', value: 'x' }] } })).toMatch(/extraEnv/);
  });

  test('a digest that is not sha256:<64 hex> and a pullPolicy Kubernetes does not know are refused', async () => {
    expect(await refused({ image: { digest: 'latest' } })).toMatch(/digest/);
    expect(await refused({ image: { pullPolicy: 'Sometimes' } })).toMatch(/pullPolicy/);
  });

  test('a separationPolicy that is not a YAML mapping is refused', async () => {
    expect(await refused({ faultCenter: { separationPolicy: 'just words' } })).toMatch(
      /faultCenter\.separationPolicy: not a YAML mapping/,
    );
  });

  test('admissionPolicies on Kubernetes 1.29 is refused (no ValidatingAdmissionPolicy v1, no node name in tokens)', async () => {
    const r = await run(HELM, [
      ...templateArgs([valuesOf('admission-policies')]).filter(
        (a, i, all) => a !== '--kube-version' && all[i - 1] !== '--kube-version',
      ),
      '--kube-version',
      'v1.29.4',
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/admissionPolicies\.enabled: Kubernetes v1\.29\.4 .* >= 1\.30/);
  });
});
