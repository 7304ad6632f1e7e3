/**
 * Issue [J] item 6: the fault center (dist/cli/fault-center.js, a child process) without a usable kubeconfig exits 2
 * with one line saying what it tried, instead of retrying the Lease every 2 s forever against client-node's
 * fallback `http://localhost:8080` ("HTTP protocol is not allowed when skipTLSVerify is not set or false").
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';

const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the fault center until it exits; kills it (and rejects) if it still runs after `timeoutMs`. */
function runFaultCenter(args: string[], env: Record<string, string | undefined>, timeoutMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FAULT_CENTER_JS, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`still running after ${timeoutMs} ms; last log lines: ${stdout.split('\n').slice(-3).join('\n')}`),
      );
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('issue [J] 6 the fault center without a usable kubeconfig', () => {
  let dir: string;
  let flags: string[];
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-kubeconfig-'));
    flags = ['-metricsAddress=', '-grpcAddress=127.0.0.1:0', `-stateDir=${path.join(dir, 'state')}`];
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('no source at all: exit 2 and one line naming -kubeconfig, the in-cluster service account and $KUBECONFIG', async () => {
    const r = await runFaultCenter(flags, { PATH: process.env.PATH, HOME: path.join(dir, 'home') });
    expect(r.code).toBe(2);
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^ascend-fault-center: no kubeconfig: tried /);
    expect(lines[0]).toContain('-kubeconfig: not given');
    expect(lines[0]).toContain('in-cluster service account: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT not set');
    expect(lines[0]).toContain('$KUBECONFIG: not set');
    expect(r.stdout).not.toContain('lease attempt failed');
  }, 30_000);

  test('$KUBECONFIG naming a plain-http server without insecure-skip-tls-verify: exit 2 naming the server', async () => {
    const file = path.join(dir, 'http-kubeconfig');
    fs.writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: c',
        'clusters: [{ name: k, cluster: { server: "http://127.0.0.1:1" } }]',
        'users: [{ name: u, user: { token: t } }]',
        'contexts: [{ name: c, context: { cluster: k, user: u } }]',
        '',
      ].join('\n'),
    );
    const r = await runFaultCenter(flags, { PATH: process.env.PATH, HOME: path.join(dir, 'home'), KUBECONFIG: file });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `ascend-fault-center: $KUBECONFIG ${file}: server http://127.0.0.1:1 is plain http without ` +
        'insecure-skip-tls-verify: true (client-node refuses it)\n',
    );
  }, 30_000);

  test('-kubeconfig naming a missing file: exit 2 naming the flag and the file', async () => {
    const missing = path.join(dir, 'no-such-kubeconfig');
    const r = await runFaultCenter([...flags, `-kubeconfig=${missing}`], { PATH: process.env.PATH });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^ascend-fault-center: -kubeconfig ${missing}: .*ENOENT.*\\n$`));
  }, 30_000);
});
