/**
 * Builds the real Kubernetes components of the cluster suites into test/k8s/bin/ (issue [R] item 2) when they are
 * missing or stale: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl (k8s.io/kubernetes
 * v1.37.2), etcd and the fake CRI, all from the Go module of test/k8s (go.mod, go.sum, fake-cri/main.go).
 *
 * Stale means: the stamp test/k8s/bin/.stamp (a hash of go.mod, go.sum, the fake CRI's main, the ldflags, the package
 * list and `go version`) differs, or a binary is missing. Go keeps its module cache (~/go/pkg/mod) and build cache
 * (~/.cache/go-build), so a rebuild with warm caches only links. Figures: docs/testing.md, "A real cluster".
 *
 * `npx tsx test/k8s/build.ts` builds; test/k8s/run.ts calls {@link ensureK8sBinaries} first.
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/core/paths.js';

/** The Go module of the real components. */
export const GO_MODULE_DIR = path.join(PROJECT_ROOT, 'test', 'k8s');
/** Where the binaries go. */
export const K8S_OUT_DIR = path.join(PROJECT_ROOT, 'test', 'k8s', 'bin');
const STAMP = path.join(K8S_OUT_DIR, '.stamp');

const VERSION = { gitVersion: 'v1.37.2', gitMajor: '1', gitMinor: '37', gitTreeState: 'clean' };
/** Version stamping (without it kubelet reports v0.0.0) and stripped symbols (a third of the size). */
export const LDFLAGS = [
  '-s',
  '-w',
  ...Object.entries(VERSION).map(([k, v]) => `-X k8s.io/component-base/version.${k}=${v}`),
].join(' ');

/** Package → binary name in test/k8s/bin. */
export const PACKAGES: Readonly<Record<string, string>> = {
  'k8s.io/kubernetes/cmd/kube-apiserver': 'kube-apiserver',
  'k8s.io/kubernetes/cmd/kube-controller-manager': 'kube-controller-manager',
  'k8s.io/kubernetes/cmd/kube-scheduler': 'kube-scheduler',
  'k8s.io/kubernetes/cmd/kubelet': 'kubelet',
  'k8s.io/kubernetes/cmd/kubectl': 'kubectl',
  // a main package whose path ends in a major version: go build names it "server", linked as etcd below
  'go.etcd.io/etcd/server/v3': 'etcd',
  './fake-cri': 'fake-cri',
};

/** Thrown when Go is not installed. */
export class GoMissingError extends Error {
  constructor(cause: unknown) {
    super(
      'Go is needed to build the Kubernetes components of `npm run test:cluster` (test/k8s/go.mod: go 1.26 or ' +
        'newer; https://go.dev/dl), but `go version` could not run. `npm test` does not need it.',
      { cause },
    );
    this.name = 'GoMissingError';
  }
}

function goVersion(): string {
  try {
    return execFileSync('go', ['version'], { encoding: 'utf8', timeout: 30_000 }).trim();
  } catch (err) {
    throw new GoMissingError(err);
  }
}

/** The stamp of the current inputs. */
export function stampOf(version: string): string {
  const h = crypto.createHash('sha256');
  for (const f of ['go.mod', 'go.sum', path.join('fake-cri', 'main.go')]) {
    h.update(f)
      .update('\0')
      .update(fs.readFileSync(path.join(GO_MODULE_DIR, f)))
      .update('\0');
  }
  h.update(LDFLAGS).update('\0').update(JSON.stringify(PACKAGES)).update('\0').update(version);
  return h.digest('hex');
}

/** Binaries missing in test/k8s/bin. */
export function missingBinaries(): string[] {
  return Object.values(PACKAGES).filter((name) => !fs.existsSync(path.join(K8S_OUT_DIR, name)));
}

/** What {@link ensureK8sBinaries} did. */
export interface BuildResult {
  readonly built: boolean;
  readonly seconds: number;
}

function goBuild(log: (line: string) => void): Promise<void> {
  const args = ['build', '-ldflags', LDFLAGS, '-o', `${K8S_OUT_DIR}/`, ...Object.keys(PACKAGES)];
  log(`test/k8s/bin: go ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn('go', args, {
      cwd: GO_MODULE_DIR,
      env: { ...process.env, CGO_ENABLED: '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', (err) => reject(new GoMissingError(err)));
    child.on('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`go build failed (code ${code}, signal ${signal}); see its output above`)),
    );
  });
}

/** Builds the binaries unless the stamp matches and all are there. */
export async function ensureK8sBinaries(log: (line: string) => void = console.log): Promise<BuildResult> {
  const started = Date.now();
  const version = goVersion();
  const stamp = stampOf(version);
  const current = fs.existsSync(STAMP) ? fs.readFileSync(STAMP, 'utf8').trim() : '';
  const missing = missingBinaries();
  if (current === stamp && missing.length === 0) {
    log(`test/k8s/bin: up to date (${version})`);
    return { built: false, seconds: 0 };
  }
  log(
    `test/k8s/bin: ${missing.length > 0 ? `missing ${missing.join(', ')}` : 'stale stamp'}; building with ${version}` +
      ' (a cold build takes about 15-25 minutes on 2 cores; with warm Go caches it only links)',
  );
  fs.mkdirSync(K8S_OUT_DIR, { recursive: true });
  fs.rmSync(STAMP, { force: true });
  await goBuild(log);
  // go build names etcd's main `server`; the harness calls it etcd (a hard link: `server` stays for whoever uses it)
  const server = path.join(K8S_OUT_DIR, 'server');
  const etcd = path.join(K8S_OUT_DIR, 'etcd');
  if (fs.existsSync(server)) {
    fs.rmSync(etcd, { force: true });
    fs.linkSync(server, etcd);
  }
  const still = missingBinaries();
  if (still.length > 0) throw new Error(`go build succeeded but ${still.join(', ')} are missing in test/k8s/bin`);
  fs.writeFileSync(STAMP, `${stamp}\n`);
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  log(`test/k8s/bin: built in ${seconds} s`);
  return { built: true, seconds };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  ensureK8sBinaries().catch((err: unknown) => {
    console.error(`test/k8s/bin: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
