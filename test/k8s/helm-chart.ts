/**
 * The Helm chart of deploy/helm (issue [R] item 6) next to the kustomize overlays it mirrors: where helm, kubectl,
 * the chart and the per-overlay values files are, running them (argument arrays, timeouts, bounded output), and the
 * normal form in which a helm render and a kustomize render are compared object by object.
 *
 * "Equal in substance" (docs/helm.md): the same objects, by apiVersion, kind, namespace and name, with the same
 * fields. Not compared: YAML comments, map key order and the order of the documents (gone once parsed and keyed by
 * id), and what Helm adds or the chart adds for Helm only (the `app.kubernetes.io/managed-by: Helm` label,
 * `meta.helm.sh/*` annotations, `helm.sh/resource-policy`). Lists keep their order, strategic-merge lists too
 * (volumes, env, ...): the API server stores them as given, so a different order is a different pod template, and
 * taking a kustomize install over with Helm would roll every pod.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { PROJECT_ROOT } from '../../src/core/paths.js';

type Obj = Record<string, any>;

/** The chart. */
export const CHART_DIR = path.join(PROJECT_ROOT, 'deploy', 'helm', 'ascend-npu-agent');
/** deploy/helm/values/<overlay>.yaml: the values that render deploy/overlays/<overlay>. */
export const OVERLAY_VALUES_DIR = path.join(PROJECT_ROOT, 'deploy', 'helm', 'values');
/** The kustomize overlays. */
export const OVERLAYS_DIR = path.join(PROJECT_ROOT, 'deploy', 'overlays');
/** Built by test/k8s/build-helm.sh from test/k8s/helm/go.mod; `HELM` names another binary. */
export const HELM = process.env.HELM ?? path.join(PROJECT_ROOT, 'test', 'k8s', 'bin', 'helm');
/** Built by the cluster harness (test/k8s/go.mod); `KUBECTL` names another binary (kustomize >= v5). */
export const KUBECTL = process.env.KUBECTL ?? path.join(PROJECT_ROOT, 'test', 'k8s', 'bin', 'kubectl');
/** The script that builds {@link HELM} when it is missing or not the pinned version. */
export const BUILD_HELM = path.join(PROJECT_ROOT, 'test', 'k8s', 'build-helm.sh');
/** The Kubernetes version the chart is rendered for: the real control plane's (test/k8s/go.mod). */
export const KUBE_VERSION = 'v1.37.2';

const MAX_OUTPUT = 32 * 1024 * 1024;

/** What a finished command printed; `code` is 0 on success. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program (no shell) and resolves with its exit code and output, whatever the code. */
export function run(
  file: string,
  args: readonly string[],
  timeoutMs = 120_000,
  env?: NodeJS.ProcessEnv,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { encoding: 'utf8', timeout: timeoutMs, maxBuffer: MAX_OUTPUT, cwd: PROJECT_ROOT, env: env ?? process.env },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          reject(new Error(`${path.basename(file)} ${args.join(' ')}: ${err.message}`, { cause: err }));
          return;
        }
        resolve({ code: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
      },
    );
  });
}

/** Runs a program and returns its stdout; a non-zero exit is an error naming the command and its stderr. */
export async function runOk(
  file: string,
  args: readonly string[],
  timeoutMs?: number,
  env?: NodeJS.ProcessEnv,
): Promise<string> {
  const r = await run(file, args, timeoutMs, env);
  if (r.code !== 0) {
    // helm logs every link of files/ it follows: not the reason of a failure
    const stderr = r.stderr
      .split('\n')
      .filter((l) => !l.includes('found symbolic link in path'))
      .join('\n');
    throw new Error(`${path.basename(file)} ${args.join(' ')} exited ${r.code}: ${stderr.slice(0, 4000)}`);
  }
  return r.stdout;
}

/**
 * The environment of a helm that talks to a cluster: its cache, configuration and data folders under `home`, so that
 * a run leaves nothing in the user's home.
 */
export function helmEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
  };
}

/** The overlays of deploy/overlays, sorted. */
export function overlayNames(): string[] {
  return fs
    .readdirSync(OVERLAYS_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** The values files of deploy/helm/values, by overlay name, sorted. */
export function overlayValuesNames(): string[] {
  return fs
    .readdirSync(OVERLAY_VALUES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

/** `helm template` arguments of the chart with these values files and `--set` pairs. */
export function templateArgs(valuesFiles: readonly string[] = [], sets: readonly string[] = []): string[] {
  return [
    'template',
    'ascend-npu-agent',
    CHART_DIR,
    '--namespace',
    'kube-system',
    '--kube-version',
    KUBE_VERSION,
    ...valuesFiles.flatMap((f) => ['--values', f]),
    ...sets.flatMap((s) => ['--set', s]),
  ];
}

/** The documents of a multi-document YAML text, without empty ones. */
export function docsOfText(text: string): Obj[] {
  return yaml.loadAll(text).filter((d): d is Obj => typeof d === 'object' && d !== null);
}

/** `helm template` of the chart: its objects. */
export async function helmTemplate(valuesFiles: readonly string[] = [], sets: readonly string[] = []): Promise<Obj[]> {
  return docsOfText(await runOk(HELM, templateArgs(valuesFiles, sets)));
}

/** `kubectl kustomize deploy/overlays/<overlay>`: its objects. */
export async function kustomize(overlay: string): Promise<Obj[]> {
  return docsOfText(await runOk(KUBECTL, ['kustomize', path.join(OVERLAYS_DIR, overlay)]));
}

/** `apiVersion kind namespace/name` of an object. */
export function idOf(d: Obj): string {
  const ns = d.metadata?.namespace ? `${String(d.metadata.namespace)}/` : '';
  return `${String(d.apiVersion)} ${String(d.kind)} ${ns}${String(d.metadata?.name)}`;
}

/** Labels and annotations that Helm writes, or that the chart adds for Helm's sake only. */
const HELM_LABELS = ['app.kubernetes.io/managed-by', 'helm.sh/chart'];
const isHelmAnnotation = (k: string): boolean => k.startsWith('meta.helm.sh/') || k === 'helm.sh/resource-policy';

function withoutHelmMetadata(d: Obj): Obj {
  const out = structuredClone(d);
  const meta: Obj | undefined = out.metadata;
  if (!meta) return out;
  for (const k of HELM_LABELS) delete meta.labels?.[k];
  for (const k of Object.keys(meta.annotations ?? {})) if (isHelmAnnotation(k)) delete meta.annotations[k];
  if (meta.labels && Object.keys(meta.labels).length === 0) delete meta.labels;
  if (meta.annotations && Object.keys(meta.annotations).length === 0) delete meta.annotations;
  return out;
}

/** One object in the normal form of the comparison (see the module's comment). */
export function normalise(d: Obj): Obj {
  return withoutHelmMetadata(d);
}

/** Fields the API server fills in that differ between two creations of one object, and kubectl's own annotation. */
const SERVER_METADATA = ['uid', 'resourceVersion', 'creationTimestamp', 'generation', 'managedFields'];
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * A live object (`kubectl get -o json`) in the normal form, without what differs between two creations of the same
 * manifest: the server's metadata (uid, resourceVersion, timestamps, managedFields), `status`, kubectl's
 * last-applied annotation, and a Service's allocated cluster IPs. Defaults the server filled in stay: they are equal
 * for equal manifests.
 */
export function normaliseLive(d: Obj): Obj {
  const out = structuredClone(d);
  delete out.status;
  for (const k of SERVER_METADATA) delete out.metadata?.[k];
  delete out.metadata?.annotations?.[LAST_APPLIED];
  if (out.kind === 'Service') {
    delete out.spec?.clusterIP;
    delete out.spec?.clusterIPs;
  }
  return normalise(out);
}

/**
 * Objects by {@link idOf}, normalised. Two objects with one id are an error: a render must not hold an object twice.
 */
export function byId(docs: readonly Obj[], norm: (d: Obj) => Obj = normalise): Map<string, Obj> {
  const out = new Map<string, Obj>();
  for (const d of docs) {
    const id = idOf(d);
    if (out.has(id)) throw new Error(`${id} is rendered twice`);
    out.set(id, norm(d));
  }
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}
