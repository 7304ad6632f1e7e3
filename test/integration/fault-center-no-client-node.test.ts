/**
 * Issue [O] (start → first complete publish < 3 s at 10k nodes): the fault center (dist/cli/fault-center.js, a
 * child process) started with a plain token kubeconfig serves through the kube layer's own client and never loads
 * `@kubernetes/client-node` (about 1 s of module loading on the 2-core machine). A module-resolution hook, preloaded
 * with `--import`, records every module URL the program resolves; the center runs until it is ready (leading, its
 * inputs listed and watched, cluster-info published) and is then stopped by SIGTERM (Lease handed over).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { CONFIGMAPS, KubeApiStandIn } from '../../src/sim/kube-api.js';
import { deviceInfoCm, faultObject } from '../cluster/helpers.js';

const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');

/** The hook (runs in the loader thread): appends each resolved URL to $RESOLVED_LOG. */
const HOOKS = `import fs from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(process.env.RESOLVED_LOG, r.url + '\\n');
  return r;
}
`;

function readyz(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/readyz', timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

let dir: string;
let api: KubeApiStandIn;
let resolved: string[];
let stdout = '';
let exitCode: number | null = null;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-no-client-node-'));
  fs.writeFileSync(path.join(dir, 'hooks.mjs'), HOOKS);
  fs.writeFileSync(
    path.join(dir, 'preload.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(path.join(dir, 'hooks.mjs')).href)});\n`,
  );
  const log = path.join(dir, 'resolved.log');
  api = await KubeApiStandIn.start();
  const cm = deviceInfoCm('node-0', [faultObject('Ascend910-0', '80E01801', 'RestartNPU')]);
  api.store.create(CONFIGMAPS, cm.metadata.namespace, cm);
  const kubeconfig = path.join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  const child = spawn(
    process.execPath,
    [
      '--import',
      pathToFileURL(path.join(dir, 'preload.mjs')).href,
      FAULT_CENTER_JS,
      `-kubeconfig=${kubeconfig}`,
      '-metricsAddress=127.0.0.1:0',
      '-grpcAddress=127.0.0.1:0',
      `-stateDir=${path.join(dir, 'state')}`,
      '-identity=it-no-client-node',
    ],
    { env: { PATH: process.env.PATH, RESOLVED_LOG: log } },
  );
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  const exited = new Promise<void>((r) => child.on('exit', (code) => ((exitCode = code), r())));
  const deadline = Date.now() + 30_000;
  let port = 0;
  for (;;) {
    const m = /"port":(\d+)[^\n]*"msg":"metrics listening"/.exec(stdout);
    if (m) port = Number(m[1]);
    if (port !== 0 && (await readyz(port)) === 200) break;
    if (Date.now() > deadline || exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`the fault center did not become ready; last lines: ${stdout.split('\n').slice(-4).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  await exited;
  resolved = fs.readFileSync(log, 'utf8').split('\n');
}, 60_000);

afterAll(async () => {
  await api?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('issue [O] start-up: the fault center without @kubernetes/client-node', () => {
  test('from start to ready and a SIGTERM stop, no module of @kubernetes/client-node is resolved', () => {
    // the hook saw the program itself (else the check below would pass vacuously)
    expect(resolved.some((u) => u.endsWith('/dist/cluster/fault-center.js'))).toBe(true);
    expect(exitCode).toBe(0);
    expect(resolved.filter((u) => u.includes('/@kubernetes/client-node/'))).toEqual([]);
  });
});
