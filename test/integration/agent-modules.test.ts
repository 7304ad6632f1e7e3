/**
 * The agent's module graph stays small (idle RSS budget, bench/README.md): `dist/cli/agent.js` must not load
 * client-node's index (every generated model and API, ≈ 60 MiB) nor the simulator. Checked with a resolve hook that
 * records every file the program loads; `dist/cli/agent.js` is a bundle (scripts/bundle-agent.ts), so each bundle
 * file it loads stands for the modules in it (`dist/agent-chunks/inputs.json`, written with the bundle). The
 * composition root's chunk is compiled from the V8 code cache the build made (src/cli/code-cache.ts).
 */
import { describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { shebangNodeArgs } from '../helpers/idle-figures.js';

const HOOKS = `
import fs from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(process.env.MODULE_LOG, r.url + '\\n');
  return r;
}`;
const REGISTER = `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOKS)}));`;

/** The modules in each bundle file, by the file's URL. */
function bundleInputs(): Map<string, string[]> {
  const file = path.join(PROJECT_ROOT, 'dist', 'agent-chunks', 'inputs.json');
  const inputs = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string[]>;
  const url = (p: string): string => pathToFileURL(path.join(PROJECT_ROOT, p)).href;
  return new Map(Object.entries(inputs).map(([out, ins]) => [url(out), ins.map(url)]));
}

const AGENT = path.join(PROJECT_ROOT, 'dist/cli/agent.js');

/** How the agent compiled its composition root, from its debug log (up to runAgent, which stops at DCMI: exit 3). */
function codeCacheOutcome(nodeArgs: readonly string[]): { status: number | null; state: unknown; reason: unknown } {
  const r = spawnSync(
    process.execPath,
    [...nodeArgs, AGENT, '-logFile=', '-logLevel=-1', '-dcmiLibrary=/nonexistent/libdcmi.so'],
    { env: { PATH: process.env.PATH, NODE_NAME: 'modules-node' }, encoding: 'utf8' },
  );
  const lines = r.stdout.split('\n').filter((l) => l.includes('"codeCache"'));
  const o = lines.map((l) => (JSON.parse(l) as { codeCache: { state: string; reason?: string } }).codeCache);
  return { status: r.status, state: o.map((x) => x.state), reason: o[0]?.reason };
}

/** Runs dist/cli/agent.js up to runAgent (it stops at DCMI: exit 3) and returns what it printed and every module it loaded. */
function agentModules(): { stdout: string; urls: string[] } {
  const log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-modules-')), 'modules.txt');
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      `data:text/javascript,${encodeURIComponent(REGISTER)}`,
      path.join(PROJECT_ROOT, 'dist/cli/agent.js'),
      // up to runAgent (loaded on demand after the signal handlers), which stops at DCMI: exit 3
      '-logFile=',
      '-dcmiLibrary=/nonexistent/libdcmi.so',
    ],
    { env: { PATH: process.env.PATH, MODULE_LOG: log, NODE_NAME: 'modules-node' }, encoding: 'utf8' },
  );
  const loaded = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
  fs.rmSync(path.dirname(log), { recursive: true, force: true });
  const inBundle = bundleInputs();
  return { stdout: r.stdout, urls: [...new Set(loaded.flatMap((u) => inBundle.get(u) ?? [u]))] };
}

describe('agent module graph', () => {
  test('dist/cli/agent.js loads neither client-node nor the simulator', () => {
    const { stdout, urls } = agentModules();
    expect(stdout).toContain('ascend-npu-agent');
    expect(urls.some((u) => u.endsWith('/dist/agent/run-agent.js'))).toBe(true);
    expect(urls.some((u) => u.endsWith('/dist/kube/kube-client.js'))).toBe(true);
    const clientNode = urls.filter((u) => u.includes('/@kubernetes/client-node/'));
    // only the merge-patch option's two files (and the stub they import)
    expect(clientNode.map((u) => u.replace(/.*\/@kubernetes\/client-node\//, '')).sort()).toEqual([
      'dist/gen/rxjsStub.js',
      'dist/middleware.js',
      'dist/patch.js',
    ]);
    expect(urls.filter((u) => u.includes('/dist/sim/'))).toEqual([]);
  });

  test('A.3 without -logFile neither pino-roll nor date-fns is loaded (≈ 0.1–0.2 s of every start)', () => {
    const { stdout, urls } = agentModules();
    expect(stdout).toContain('ascend-npu-agent');
    expect([
      urls.some((u) => u.endsWith('/dist/observability/logger.js')),
      urls.filter((u) => u.includes('/pino-roll/') || u.includes('/date-fns/')),
    ]).toEqual([true, []]);
  });

  test("issue [P] item 3: with the #! line's V8 flags the composition root compiles from the build's code cache", () => {
    const args = shebangNodeArgs(AGENT);
    expect(args.length).toBeGreaterThan(0);
    expect(codeCacheOutcome(args)).toEqual({ status: 3, state: ['used'], reason: undefined });
  });

  test('issue [P] item 3: under other V8 flags V8 refuses the cache and the agent compiles the source instead', () => {
    // the cache was made under the #! line's flags; --v8-pool-size is part of V8's flag hash
    const r = codeCacheOutcome(['--v8-pool-size=3']);
    expect([r.status, r.state, String(r.reason)]).toEqual([
      3,
      ['rejected'],
      'V8 refused the cache (another Node or V8 version, or other V8 flags)',
    ]);
  });

  test('issue [P] item 3: under --enable-source-maps the chunk loads as the ES module Node maps, not from the cache', () => {
    const r = codeCacheOutcome(['--enable-source-maps', ...shebangNodeArgs(AGENT)]);
    expect([r.status, r.state]).toEqual([3, []]);
  });
});
