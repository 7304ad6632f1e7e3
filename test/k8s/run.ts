/**
 * `npm run test:cluster [-- <jest args>]` (issue [R] item 3): builds the real Kubernetes components when needed
 * (build.ts), then runs the cluster suites (jest.cluster.config.js, in band) inside a private mount namespace of
 * their own (`unshare --mount --propagation private`: see harness/host-view.ts), and ends with one line
 * "test:cluster: N passed, N failed".
 *
 * Whatever happens to jest, nothing stays behind: jest runs in a process group of its own, which is killed when it
 * ends (every cluster process is in it), so the namespace and the mounts in it go with it; then the run root, the
 * folder of every run dir, is removed.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { ensureK8sBinaries } from './build.js';
import { RUN_ROOT_ENV } from './harness/cluster.js';
import { currentMountNamespace, HOST_MNT_NS_ENV } from './harness/host-view.js';

const JEST = path.join(PROJECT_ROOT, 'node_modules', 'jest', 'bin', 'jest.js');

function summaryOf(file: string): { passed: number; failed: number } | undefined {
  try {
    const r = JSON.parse(fs.readFileSync(file, 'utf8')) as { numPassedTests: number; numFailedTests: number };
    return { passed: r.numPassedTests, failed: r.numFailedTests };
  } catch {
    return undefined;
  }
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

async function main(): Promise<number> {
  const jestArgs = process.argv.slice(2);
  await ensureK8sBinaries();
  // helm (issue [R] item 6), a Go module of its own: built here once instead of in each helm suite's beforeAll.
  const helm = spawnSync('bash', [path.join(PROJECT_ROOT, 'test/k8s/build-helm.sh')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (helm.status !== 0) {
    console.error('test:cluster: building helm failed (test/k8s/build-helm.sh)');
    return 1;
  }
  if (process.getuid?.() !== 0) {
    console.error('test:cluster: needs root (a private mount namespace for kubelet, and kubelet itself)');
    return 1;
  }
  const runRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-k8s-run-'));
  // The caller's --outputFile if any, else one of ours for the closing line.
  const given = jestArgs.find((a) => a.startsWith('--outputFile='))?.slice('--outputFile='.length);
  const resultFile = given ?? path.join(runRoot, 'result.json');
  const args = [
    '--mount',
    '--propagation',
    'private',
    '--',
    process.execPath,
    JEST,
    '--config',
    path.join(PROJECT_ROOT, 'jest.cluster.config.js'),
    '--runInBand',
    ...(given ? [] : ['--json', `--outputFile=${resultFile}`]),
    ...jestArgs,
  ];
  const started = Date.now();
  const child = spawn('unshare', args, {
    cwd: PROJECT_ROOT,
    stdio: 'inherit',
    detached: true,
    env: {
      ...process.env,
      NODE_OPTIONS: '--experimental-vm-modules --disable-warning=ExperimentalWarning',
      [RUN_ROOT_ENV]: runRoot,
      [HOST_MNT_NS_ENV]: currentMountNamespace(),
    },
  });
  const forward = (signal: NodeJS.Signals): void => {
    killGroup(child.pid);
    console.error(`test:cluster: ${signal}, cluster processes killed`);
  };
  process.once('SIGINT', forward);
  process.once('SIGTERM', forward);
  const code = await new Promise<number>((resolve) => {
    child.on('error', (err) => {
      console.error(`test:cluster: cannot start unshare: ${err.message}`);
      resolve(1);
    });
    child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0)));
  });
  killGroup(child.pid);
  const summary = summaryOf(resultFile);
  try {
    fs.rmSync(runRoot, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    console.error(`test:cluster: could not remove ${runRoot}: ${(err as Error).message}`);
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  if (summary) {
    console.log(`test:cluster: ${summary.passed} passed, ${summary.failed} failed (${seconds} s)`);
  } else {
    console.log(`test:cluster: jest wrote no result (exit code ${code}, ${seconds} s)`);
  }
  return summary && summary.failed === 0 ? code : code || 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`test:cluster: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
