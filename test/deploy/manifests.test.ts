/**
 * deploy/ as an operator installs it (issue [I] items 4 and 5; docs/operations.md): every kustomize overlay renders
 * to the YAML committed in deploy/rendered/ (`kubectl kustomize`, offline); every rendered object validates against
 * the Kubernetes schemas (kubernetes-models: the OpenAPI schema of Kubernetes 1.33 compiled to validators) and has
 * no field the Kubernetes API does not know (client-node's models); the DaemonSet and the fault center's Deployment
 * agree with the programs' own flag tables (src/cli/agent-flags.ts, src/cluster/flags.ts): the flags they pass are
 * accepted, the probes reach the real endpoints, every host folder mounted is one the agent uses and every one it
 * uses is mounted; the RBAC the integration test enforces is the rendered RBAC.
 *
 * Only the drift test needs `kubectl` (with kustomize >= v5; `KUBECTL` names another binary); every other test reads
 * the committed renders, so a machine without kubectl still checks them and fails only that test, with the reason.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { parseAgentArgs, parseListenAddress, type AgentConfig } from '../../src/cli/agent-flags.js';
import { parseFaultCenterFlags } from '../../src/cluster/flags.js';
import { faultCenterReadiness } from '../../src/cluster/fault-center.js';
import { CLUSTER_INFO_NAMESPACE } from '../../src/cluster/cluster-info.js';
import { POLICY_CONFIGMAP, POLICY_NAMESPACE, policyFromConfigMapData } from '../../src/cluster/policy.js';
import { startObservabilityServer } from '../../src/observability/http-server.js';
import { landedPaths } from '../../src/reset/file-sync.js';
import { parseRbacYaml, loadRbacFiles, type RbacPolicy } from '../../src/sim/kube-api-rbac.js';
import {
  DRA_POLICY_SOURCES,
  OVERLAYS_DIR,
  POLICY_SOURCES,
  RBAC_RENDERED,
  RBAC_RENDERED_A5,
  RBAC_RENDERED_DRA,
  RBAC_SOURCES,
  RENDERED_DIR,
} from './deploy-files.js';

type Obj = Record<string, any>;

const KUBECTL = process.env.KUBECTL ?? 'kubectl';
/** ClusterD's own Service (cluster-faults §2.11): the fault center must never take its name. */
const CLUSTERD_SERVICE = 'clusterd-grpc-svc';
const VERSION = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;
const IMAGE = `ascend-npu-agent:${VERSION}`;

const overlays = fs
  .readdirSync(path.join(PROJECT_ROOT, OVERLAYS_DIR), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const renderedFile = (name: string): string => path.join(PROJECT_ROOT, RENDERED_DIR, `${name}.yaml`);
const docsOfText = (text: string): Obj[] =>
  yaml.loadAll(text).filter((d): d is Obj => typeof d === 'object' && d !== null);
const rendered = new Map(
  overlays
    .filter((o) => fs.existsSync(renderedFile(o)))
    .map((o) => [o, docsOfText(fs.readFileSync(renderedFile(o), 'utf8'))]),
);
const objectsOf = (o: string): Obj[] => rendered.get(o) ?? [];
const idOf = (d: Obj): string =>
  `${String(d.kind)} ${d.metadata?.namespace ? `${String(d.metadata.namespace)}/` : ''}${String(d.metadata?.name)}`;
const allObjects = [...rendered].flatMap(([o, docs]) => docs.map((d) => [o, idOf(d), d] as const));
/**
 * The objects of the Kubernetes API itself: the Prometheus Operator's (deploy/components/monitoring) have no schema
 * in kubernetes-models or client-node; test/deploy/monitoring.test.ts checks their fields.
 */
const coreObjects = allObjects.filter(([, , d]) => !String(d.apiVersion).startsWith('monitoring.coreos.com/'));

/**
 * The node pools of upstream's manifests (mind-cluster component/ascend-device-plugin/build/ascendplugin-*.yaml):
 * node label `accelerator=huawei-<kind>`, toleration of the taint `huawei.com/<kind>`; Volcano mode by overlay.
 */
const AGENT_OVERLAYS: Readonly<Record<string, { kind: 'Ascend910' | 'Ascend310P' | 'npu'; volcano: boolean }>> = {
  '910': { kind: 'Ascend910', volcano: false },
  // Ascend910A5 (Ascend950): accelerator=huawei-npu, the label the agent writes there (I.1)
  a5: { kind: 'npu', volcano: false },
  volcano: { kind: 'Ascend910', volcano: true },
  '310p': { kind: 'Ascend310P', volcano: false },
  '310p-volcano': { kind: 'Ascend310P', volcano: true },
};
const agentOverlays = Object.keys(AGENT_OVERLAYS);

function only(o: string, kind: string): Obj {
  const found = objectsOf(o).filter((d) => d.kind === kind);
  expect(found.map(idOf)).toHaveLength(1);
  return found[0]!;
}

/** The DaemonSet's one container, with the flags and environment the agent would see on node `node-1`. */
function agentOf(o: string): {
  ds: Obj;
  pod: Obj;
  c: Obj;
  config: AgentConfig;
  env: Record<string, string>;
  warnings: readonly string[];
} {
  const ds = only(o, 'DaemonSet');
  const pod = ds.spec.template.spec;
  expect(pod.containers).toHaveLength(1);
  const c = pod.containers[0];
  const fieldValues: Record<string, string> = {
    'spec.nodeName': 'node-1',
    'metadata.name': 'ascend-npu-agent-abcde',
    'status.hostIP': '192.0.2.10',
  };
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    env[e.name] = e.value ?? fieldValues[e.valueFrom?.fieldRef?.fieldPath] ?? '';
  }
  const parsed = parseAgentArgs(c.args ?? [], env);
  if (!parsed.ok) throw new Error(`${o}: the agent refuses its arguments: ${parsed.errors.join('; ')}`);
  return { ds, pod, c, config: parsed.config!, env, warnings: parsed.warnings };
}

/** Resolves a probe's port (a number or the name of a container port). */
function probePort(c: Obj, port: number | string): number | undefined {
  if (typeof port === 'number') return port;
  return (c.ports ?? []).find((p: Obj) => p.name === port)?.containerPort;
}

function get(port: number, urlPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, timeout: 10_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('timeout', () => req.destroy(new Error(`GET ${urlPath}: timed out`)));
    req.once('error', reject);
  });
}

/** `a` is `b` or a folder above it. */
const covers = (a: string, b: string): boolean => a === b || b.startsWith(a.endsWith('/') ? a : `${a}/`);

/** The deepest folder holding every path. */
function commonFolder(paths: readonly string[]): string {
  const parts = paths.map((p) => p.split('/').filter((s) => s !== ''));
  const out: string[] = [];
  for (let i = 0; parts.every((p) => i < p.length && p[i] === parts[0]![i]); i++) out.push(parts[0]![i]!);
  return `/${out.join('/')}`;
}

describe('issue [I] 4 kustomize overlays and the rendered YAML committed beside them', () => {
  test('every overlay has its deploy/rendered/<overlay>.yaml and every rendered file its overlay', () => {
    const files = fs
      .readdirSync(path.join(PROJECT_ROOT, RENDERED_DIR))
      .map((f) => f.replace(/\.yaml$/, ''))
      .sort();
    expect(files).toEqual(overlays);
    expect(overlays).toEqual(expect.arrayContaining([...agentOverlays, 'fault-center', 'admission-policies']));
  });

  describe('drift', () => {
    let kustomize: { ok: true; version: string } | { ok: false; why: string };
    beforeAll(() => {
      try {
        const out = execFileSync(KUBECTL, ['version', '--client', '-o', 'json'], { encoding: 'utf8', timeout: 30_000 });
        const version = String((JSON.parse(out) as { kustomizeVersion?: string }).kustomizeVersion ?? '');
        const major = Number(/^v(\d+)\./.exec(version)?.[1] ?? 0);
        kustomize =
          major >= 5
            ? { ok: true, version }
            : { ok: false, why: `${KUBECTL} has kustomize "${version}", components need kustomize >= v5` };
      } catch (e) {
        kustomize = { ok: false, why: `${KUBECTL} cannot run: ${(e as Error).message.split('\n')[0]}` };
      }
    });

    test.each(overlays.map((o) => [o]))(
      '%s: the committed render is what `kubectl kustomize` renders now (else run deploy/render.sh)',
      async (o) => {
        if (!kustomize.ok) {
          throw new Error(
            `${kustomize.why}. deploy/rendered/ cannot be checked against deploy/overlays/ without kubectl >= 1.27 ` +
              '(kustomize v5; the machine image of this project has it as /usr/bin/kubectl), or KUBECTL=<path>',
          );
        }
        const out = await new Promise<string>((resolve, reject) => {
          execFile(
            KUBECTL,
            ['kustomize', path.join(PROJECT_ROOT, OVERLAYS_DIR, o)],
            { encoding: 'utf8', timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
            (err, stdout, stderr) =>
              err ? reject(new Error(`kubectl kustomize ${o}: ${stderr || err.message}`)) : resolve(stdout),
          );
        });
        expect(objectsOf(o)).toEqual(docsOfText(out));
      },
    );
  });
});

describe('issue [I] 5 every rendered object validates against the Kubernetes schemas (offline)', () => {
  // kubernetes-models has the schemas of Kubernetes 1.33, without resource.k8s.io/v1 (GA in 1.34): the DRA objects
  // are checked by test/deploy/dra-manifests.test.ts and applied to the real API server by test/k8s/dra.
  test.each(
    coreObjects
      .filter(([, , d]) => !String(d.apiVersion).startsWith('resource.k8s.io/'))
      .map(([o, id, d]) => [o, id, d]),
  )('%s: %s validates against the OpenAPI schema (kubernetes-models)', async (_o, _id, d) => {
    const doc = d as Obj;
    const mod = (await import(`kubernetes-models/${String(doc.apiVersion)}`)) as Record<string, unknown>;
    const Model = mod[String(doc.kind)] as (new (data: Obj) => { validate(): void }) | undefined;
    if (Model === undefined) throw new Error(`no Kubernetes model for ${String(doc.apiVersion)} ${String(doc.kind)}`);
    expect(() => new Model(doc).validate()).not.toThrow();
  });

  test('the schema check refuses a wrong type and a missing required field (so it does check)', async () => {
    const { DaemonSet } = await import('kubernetes-models/apps/v1');
    const ds = structuredClone(only('910', 'DaemonSet'));
    ds.spec.template.spec.containers[0].ports[0].containerPort = '9464';
    expect(() => new DaemonSet(ds).validate()).toThrow(/containerPort must be integer/);
    delete ds.spec.selector;
    expect(() => new DaemonSet(ds).validate()).toThrow(/data\/spec must have required property selector/);
  });

  /** client-node model class of a type name (`V1Subject` of RBAC is `RbacV1Subject` there). */
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

  test.each(coreObjects.map(([o, id, d]) => [o, id, d]))(
    '%s: %s has no field the Kubernetes API does not know (a typo is not silently dropped)',
    (_o, _id, d) => {
      const doc = d as Obj;
      expect(models[`V1${String(doc.kind)}`]).toBeDefined();
      expect(unknownFields(doc, `V1${String(doc.kind)}`, String(doc.kind))).toEqual([]);
    },
  );

  test('the unknown-field check finds a misspelt field (so it does check)', () => {
    const ds = structuredClone(only('910', 'DaemonSet'));
    ds.spec.template.spec.volumes[0].hostPth = ds.spec.template.spec.volumes[0].hostPath;
    expect(unknownFields(ds, 'V1DaemonSet', 'DaemonSet')).toEqual(['DaemonSet.spec.template.spec.volumes[0].hostPth']);
  });

  test(`no image without a tag or with :latest; every image is ${IMAGE} (package.json version)`, () => {
    const images = allObjects.flatMap(([, , d]) =>
      (d.spec?.template?.spec?.containers ?? []).map((c: Obj) => String(c.image)),
    );
    expect(images.length).toBeGreaterThan(0);
    expect(images.filter((i) => i !== IMAGE)).toEqual([]);
  });
});

describe.each(agentOverlays.map((o) => [o, AGENT_OVERLAYS[o]!] as const))(
  'issue [I] 4 the agent DaemonSet of overlay %s',
  (o, pool) => {
    test('the agent accepts its arguments and environment (spec A.1), without a warning; command on PATH', () => {
      const { c, warnings } = agentOf(o);
      expect(warnings).toEqual([]);
      expect(c.command).toEqual(['ascend-npu-agent']);
    });

    test('HOST_IP from status.hostIP, NODE_NAME from spec.nodeName, HOSTNAME from metadata.name (spec A.1)', () => {
      const { c, config } = agentOf(o);
      const from = Object.fromEntries((c.env ?? []).map((e: Obj) => [e.name, e.valueFrom?.fieldRef?.fieldPath]));
      expect(from).toMatchObject({ HOST_IP: 'status.hostIP', NODE_NAME: 'spec.nodeName', HOSTNAME: 'metadata.name' });
      expect(config).toMatchObject({ nodeName: 'node-1', hostIp: '192.0.2.10', podName: 'ascend-npu-agent-abcde' });
    });

    test(`node selector accelerator=huawei-${pool.kind}, upstream's tolerations, system-node-critical`, () => {
      const { ds, pod } = agentOf(o);
      expect(ds.metadata.name).toBe(
        `ascend-npu-agent-${{ Ascend910: '910', Ascend310P: '310p', npu: 'npu' }[pool.kind]}`,
      );
      expect(pod.nodeSelector).toEqual({ accelerator: `huawei-${pool.kind}` });
      expect(pod.tolerations).toEqual(
        expect.arrayContaining([
          { key: 'CriticalAddonsOnly', operator: 'Exists' },
          { key: `huawei.com/${pool.kind}`, operator: 'Exists', effect: 'NoSchedule' },
          { key: 'device-plugin', operator: 'Equal', value: 'v2', effect: 'NoSchedule' },
        ]),
      );
      expect(pod.priorityClassName).toBe('system-node-critical');
      // its own selector: one DaemonSet per pool, never adopting the other pool's pods
      expect(ds.spec.selector.matchLabels['app.kubernetes.io/instance']).toBe(ds.metadata.name);
      expect(ds.spec.template.metadata.labels).toMatchObject(ds.spec.selector.matchLabels);
    });

    test(`-volcanoType is ${String(pool.volcano)} (spec A.1, C.3)`, () => {
      expect(agentOf(o).config.flags.volcanoType).toBe(pool.volcano);
    });

    test('seccomp RuntimeDefault; hostPID for the /proc/<pid>/stat reads of hang detection (spec D.9)', () => {
      const { pod } = agentOf(o);
      expect(pod.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
      expect(pod.hostPID).toBe(true);
    });

    test('privileged, as root, read-only root file system (the host folders are the only writable ones)', () => {
      const { c } = agentOf(o);
      expect(c.securityContext).toEqual({ privileged: true, runAsUser: 0, readOnlyRootFilesystem: true });
    });

    test("the probes' ports are -metricsAddress's and the start-up probe outlasts the start-up waits", () => {
      const { c, config } = agentOf(o);
      const port = parseListenAddress(config.flags.metricsAddress)!.port;
      for (const p of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
        expect(probePort(c, p.httpGet.port)).toBe(port);
      }
      expect(c.livenessProbe.httpGet.path).toBe(c.startupProbe.httpGet.path);
      // the server starts after DCMI (-deviceResetTimeout) and kubelet registration (-kubeletWaitTimeout)
      const budget = c.startupProbe.periodSeconds * c.startupProbe.failureThreshold;
      expect(budget).toBeGreaterThanOrEqual(config.flags.deviceResetTimeout + config.flags.kubeletWaitTimeout);
    });

    test('requests and limits cover the measured figures (bench/README.md: idle RSS 67-80 MiB, peak 159 MiB)', () => {
      const { c } = agentOf(o);
      const mib = (q: string): number => Number(/^(\d+)Mi$/.exec(q)![1]);
      expect(mib(c.resources.requests.memory)).toBeGreaterThanOrEqual(80);
      expect(mib(c.resources.limits.memory)).toBeGreaterThanOrEqual(1.5 * 159);
      expect(c.resources.requests.cpu).toBeDefined();
    });

    test('the host folders mounted are exactly the ones the agent uses, each at its host path', () => {
      const { pod, c, config, env } = agentOf(o);
      const f = config.flags;
      const driverLibs = (env.LD_LIBRARY_PATH ?? '').split(':').filter((p) => p !== '');
      const used = [
        f.kubeletDir,
        path.dirname(f.podResourcesSocket),
        f.devDir,
        f.stateDir,
        // libdcmi.so (LD_LIBRARY_PATH or -dcmiLibrary) and -hccnTool: one read-only mount of the driver
        commonFolder([
          path.dirname(f.hccnTool),
          ...driverLibs,
          ...(f.dcmiLibrary ? [path.dirname(f.dcmiLibrary)] : []),
        ]),
        ...(f.logFile !== '' ? [path.dirname(f.logFile)] : []),
        // hot-reset §2.8 landing folders: only where the agent copies reset ConfigMaps (Ascend910 run mode)
        ...(pool.kind !== 'Ascend310P'
          ? [landedPaths(f.hostRoot, 'ns', 'job').resetDir, landedPaths(f.hostRoot, 'ns', 'job').traceDir].map((p) =>
              path.dirname(p),
            )
          : []),
      ];
      const volumes = new Map<string, Obj>(pod.volumes.map((v: Obj) => [v.name, v]));
      const hostMounts = (c.volumeMounts as Obj[]).filter((m) => volumes.get(m.name)?.hostPath !== undefined);
      expect(hostMounts.map((m) => m.mountPath).sort()).toEqual([...new Set(used)].sort());
      for (const m of hostMounts) {
        expect([m.name, volumes.get(m.name)!.hostPath.path]).toEqual([m.name, m.mountPath]);
        expect(m.subPath).toBeUndefined();
      }
      // the rest are scratch folders of the pod itself, never a host folder
      const other = (c.volumeMounts as Obj[]).filter((m) => !hostMounts.includes(m));
      expect(other.map((m) => [m.mountPath, Object.keys(volumes.get(m.name)!).sort()])).toEqual([
        ['/tmp', ['emptyDir', 'name']],
      ]);
      expect([...volumes.keys()].sort()).toEqual((c.volumeMounts as Obj[]).map((m) => m.name).sort());
      // the driver is never written to
      const driver = hostMounts.find((m) => covers(m.mountPath, f.hccnTool))!;
      expect(driver.readOnly).toBe(true);
      for (const lib of driverLibs) expect(covers(driver.mountPath, lib)).toBe(true);
    });

    test('chip-reset RBAC only where the agent copies reset ConfigMaps (Ascend910 run mode, hot-reset §2.8)', () => {
      const names = objectsOf(o)
        .filter((d) => d.kind === 'ClusterRole')
        .map((d) => d.metadata.name);
      expect(names.includes('ascend-npu-agent-reset')).toBe(pool.kind !== 'Ascend310P');
    });

    test('the nodes/status grant only on A5 nodes (A.2 step 8 removes huawei.com/Ascend910 there)', () => {
      const names = objectsOf(o)
        .filter((d) => d.kind === 'ClusterRole')
        .map((d) => d.metadata.name);
      expect(names.includes('ascend-npu-agent-node-status')).toBe(pool.kind === 'npu');
    });
  },
);

describe('issue [I] 4 the probes reach the real endpoints', () => {
  const agentServer = { ready: true, close: async (): Promise<void> => {}, port: 0 };
  const centerServer = { ready: true, close: async (): Promise<void> => {}, port: 0 };
  beforeAll(async () => {
    const s = await startObservabilityServer({
      address: '127.0.0.1:0',
      registry: new Registry(),
      readiness: { test: () => (agentServer.ready ? { ok: true } : { ok: false, reason: 'not yet' }) },
    });
    agentServer.port = s.port;
    agentServer.close = () => s.close();
    const c = await startObservabilityServer({
      address: '127.0.0.1:0',
      registry: new Registry(),
      readiness: faultCenterReadiness({
        get ready() {
          return centerServer.ready;
        },
        isLeader: true,
      }),
    });
    centerServer.port = c.port;
    centerServer.close = () => c.close();
  });
  afterAll(async () => {
    await agentServer.close();
    await centerServer.close();
  });

  test.each(agentOverlays.map((o) => [o]))(
    '%s: liveness and start-up paths answer 200 when not ready, the readiness path 503 then 200',
    async (o) => {
      const { c } = agentOf(o);
      agentServer.ready = false;
      expect(await get(agentServer.port, c.livenessProbe.httpGet.path)).toBe(200);
      expect(await get(agentServer.port, c.startupProbe.httpGet.path)).toBe(200);
      expect(await get(agentServer.port, c.readinessProbe.httpGet.path)).toBe(503);
      agentServer.ready = true;
      expect(await get(agentServer.port, c.readinessProbe.httpGet.path)).toBe(200);
      expect(await get(agentServer.port, '/no-such-endpoint')).toBe(404);
    },
  );

  test('fault center: liveness 200 on a standby, readiness 503 on a standby and 200 on the leader', async () => {
    const c = only('fault-center', 'Deployment').spec.template.spec.containers[0];
    centerServer.ready = false;
    expect(await get(centerServer.port, c.livenessProbe.httpGet.path)).toBe(200);
    expect(await get(centerServer.port, c.readinessProbe.httpGet.path)).toBe(503);
    centerServer.ready = true;
    expect(await get(centerServer.port, c.readinessProbe.httpGet.path)).toBe(200);
  });
});

describe('issue [I] 4 the fault center', () => {
  const deployment = (): Obj => only('fault-center', 'Deployment');
  const container = (): Obj => deployment().spec.template.spec.containers[0];
  const flags = () => parseFaultCenterFlags(container().args ?? [], {});

  test('it accepts its arguments; command on PATH; seccomp RuntimeDefault; not root', () => {
    expect(() => flags()).not.toThrow();
    expect(container().command).toEqual(['ascend-fault-center']);
    const sc = deployment().spec.template.spec.securityContext;
    expect(sc).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container().securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
    });
  });

  test("ports and probes are -grpcAddress's and -metricsAddress's", () => {
    const c = container();
    const f = flags();
    expect(probePort(c, 'grpc')).toBe(parseListenAddress(f.grpcAddress)!.port);
    expect(probePort(c, c.readinessProbe.httpGet.port)).toBe(parseListenAddress(f.metricsAddress)!.port);
    expect(probePort(c, c.livenessProbe.httpGet.port)).toBe(parseListenAddress(f.metricsAddress)!.port);
  });

  test(`its namespaces are shipped: -leaseNamespace and ${CLUSTER_INFO_NAMESPACE} (cluster-faults §0.3)`, () => {
    const namespaces = objectsOf('fault-center')
      .filter((d) => d.kind === 'Namespace')
      .map((d) => d.metadata.name);
    expect(namespaces.sort()).toEqual([flags().leaseNamespace, CLUSTER_INFO_NAMESPACE].sort());
    expect(deployment().metadata.namespace).toBe(flags().leaseNamespace);
  });

  test('the policy ConfigMap is shipped with the values of cluster-faults §1.2 and the fault center accepts it', () => {
    const cm = objectsOf('fault-center').find(
      (d) =>
        d.kind === 'ConfigMap' && d.metadata.name === POLICY_CONFIGMAP && d.metadata.namespace === POLICY_NAMESPACE,
    );
    expect(policyFromConfigMapData(cm?.data)).toEqual({
      enabled: true,
      faultWindowHours: 24,
      faultThreshold: 3,
      faultFreeHours: 48,
    });
  });

  test(`the gRPC Service reaches the fault center's port and is not ClusterD's ${CLUSTERD_SERVICE}`, () => {
    const services = allObjects.filter(([, , d]) => d.kind === 'Service').map(([, , d]) => d);
    expect(services.map((s) => s.metadata.name)).not.toContain(CLUSTERD_SERVICE);
    const svc = only('fault-center', 'Service');
    expect(svc.metadata).toMatchObject({
      name: 'ascend-fault-center-grpc',
      namespace: deployment().metadata.namespace,
    });
    expect(deployment().spec.template.metadata.labels).toMatchObject(svc.spec.selector);
    const grpc = svc.spec.ports.find((p: Obj) => p.name === 'grpc');
    expect(probePort(container(), grpc.targetPort)).toBe(parseListenAddress(flags().grpcAddress)!.port);
    expect(svc.spec.type ?? 'ClusterIP').toBe('ClusterIP');
  });

  test('a rollout never waits for a standby to become Ready (it never does while a leader lives)', () => {
    expect(deployment().spec.strategy).toEqual({ type: 'Recreate' });
  });
});

describe('issue [I] 5 the RBAC the integration test enforces is the rendered RBAC', () => {
  const key = (p: RbacPolicy): string[] =>
    [
      ...new Set([
        ...p.roles.map((r) => JSON.stringify([r.kind, r.namespace ?? '', r.name, r.rules])),
        ...p.bindings.map((b) => JSON.stringify([b.kind, b.namespace ?? '', b.name, b.roleRef, b.subjects])),
      ]),
    ].sort();
  // rbac.test.ts (910 + fault center), rbac-a5.test.ts (the A5 agent) and dra-rbac.test.ts (the DRA driver) together
  const enforced = (): RbacPolicy =>
    loadRbacFiles([...RBAC_RENDERED, ...RBAC_RENDERED_A5, ...RBAC_RENDERED_DRA].map((f) => path.join(PROJECT_ROOT, f)));

  test('test/integration/rbac.test.ts enforces RBAC_RENDERED: deploy/rendered/910.yaml and fault-center.yaml', () => {
    const text = fs.readFileSync(path.join(PROJECT_ROOT, 'test/integration/rbac.test.ts'), 'utf8');
    expect(/\bloadRbacFiles\(RBAC_RENDERED\b/.test(text)).toBe(true);
    expect(RBAC_RENDERED).toEqual([`${RENDERED_DIR}/910.yaml`, `${RENDERED_DIR}/fault-center.yaml`]);
  });

  test('test/integration/rbac-a5.test.ts enforces RBAC_RENDERED_A5: deploy/rendered/a5.yaml', () => {
    const text = fs.readFileSync(path.join(PROJECT_ROOT, 'test/integration/rbac-a5.test.ts'), 'utf8');
    expect(/\bloadRbacFiles\(RBAC_RENDERED_A5\b/.test(text)).toBe(true);
    expect(RBAC_RENDERED_A5).toEqual([`${RENDERED_DIR}/a5.yaml`]);
  });

  test('test/deploy/dra-rbac.test.ts enforces RBAC_RENDERED_DRA: deploy/rendered/dra.yaml', () => {
    const text = fs.readFileSync(path.join(PROJECT_ROOT, 'test/deploy/dra-rbac.test.ts'), 'utf8');
    expect(/\bloadRbacFiles\(RBAC_RENDERED_DRA\b/.test(text)).toBe(true);
    expect(RBAC_RENDERED_DRA).toEqual([`${RENDERED_DIR}/dra.yaml`]);
  });

  test.each(overlays.map((o) => [o]))('%s: every RBAC object it creates is one the integration test enforces', (o) => {
    const mine = key(parseRbacYaml([{ source: o, text: fs.readFileSync(renderedFile(o), 'utf8') }]));
    const all = new Set(key(enforced()));
    expect(mine.filter((k) => !all.has(k))).toEqual([]);
  });

  test('the RBAC sources the static checks read are exactly what the overlays render', () => {
    expect(key(loadRbacFiles(RBAC_SOURCES.map((f) => path.join(PROJECT_ROOT, f))))).toEqual(key(enforced()));
  });

  test('the admission policies the static checks read are what deploy/overlays/admission-policies renders', () => {
    const sources = POLICY_SOURCES.flatMap((f) => docsOfText(fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8')));
    expect(objectsOf('admission-policies').map(idOf).sort()).toEqual(sources.map(idOf).sort());
    for (const d of sources) expect(objectsOf('admission-policies').find((r) => idOf(r) === idOf(d))).toEqual(d);
    // opt-in: no other overlay carries a policy (Kubernetes >= 1.30 only), but the DRA overlay its own (>= 1.34)
    const draPolicies = DRA_POLICY_SOURCES.flatMap((f) =>
      docsOfText(fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8')),
    );
    for (const o of overlays.filter((x) => x !== 'admission-policies')) {
      expect(
        objectsOf(o)
          .filter((d) => String(d.apiVersion).startsWith('admissionregistration'))
          .map(idOf),
      ).toEqual(o === 'dra' ? draPolicies.map(idOf) : []);
    }
  });
});
