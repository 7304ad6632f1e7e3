/**
 * podman for the image test (issue [I] item 2): runs podman with the settings this machine kind needs
 * (test/image/containers.conf, ulimits within the host's hard limits), makes the local base image when no
 * `ASCEND_IMAGE_TEST_BASE` is given (Debian bookworm minbase from debootstrap plus this process's own Node install:
 * `node`, npm and the Node headers; one image per day and Node version, kept in podman's storage as the cache), and
 * builds the repository's Dockerfile on it. Child processes take argument arrays, never a shell.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';

/** The podman settings file (runc, cgroupfs, file events). */
export const CONTAINERS_CONF = path.join(PROJECT_ROOT, 'test', 'image', 'containers.conf');

/** Repository of the local base images. */
export const BASE_REPOSITORY = 'localhost/ascend-npu-agent-ci-base';

/** Output kept of a child (its tail), so a runaway build log cannot fill the test's memory. */
const MAX_OUTPUT = 1024 * 1024;

/** A finished child process. */
export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A command that failed: its line, status and the tail of its output. */
export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(
    readonly command: readonly string[],
    readonly result: RunResult,
    what: string,
  ) {
    const tail = `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-40).join('\n');
    super(`${what}: ${command.join(' ')} exited ${result.code ?? result.signal}\n${tail}`);
  }
}

function keepTail(text: string): string {
  return text.length > MAX_OUTPUT ? text.slice(text.length - MAX_OUTPUT) : text;
}

/** Runs `cmd args` to completion (SIGKILL after `timeoutMs`), collecting its output. */
export function run(
  cmd: string,
  args: readonly string[],
  options: { readonly timeoutMs: number; readonly env?: NodeJS.ProcessEnv },
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout = keepTail(stdout + b.toString())));
    child.stderr.on('data', (b: Buffer) => (stderr = keepTail(stderr + b.toString())));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${options.timeoutMs} ms)`;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, stdout, stderr: `${stderr}${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The environment podman runs with: ours plus `CONTAINERS_CONF`. */
export function podmanEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CONTAINERS_CONF };
}

/** `podman args` with {@link podmanEnv}. */
export function podman(args: readonly string[], timeoutMs = 60_000): Promise<RunResult> {
  return run('podman', args, { timeoutMs, env: podmanEnv() });
}

/** Like {@link podman}; rejects with {@link CommandError} unless it exits 0. */
export async function podmanOk(args: readonly string[], what: string, timeoutMs = 60_000): Promise<RunResult> {
  const r = await podman(args, timeoutMs);
  if (r.code !== 0) throw new CommandError(['podman', ...args], r, what);
  return r;
}

/** A hard limit of this process from /proc/self/limits (e.g. "Max open files"), undefined when unlimited/unknown. */
export function hardLimit(name: string): number | undefined {
  const line = fs
    .readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(name));
  const hard = line?.slice(name.length).trim().split(/\s+/)[1];
  return hard !== undefined && /^\d+$/.test(hard) ? Number(hard) : undefined;
}

/** `--ulimit` arguments no higher than the host's hard limits (runc refuses to raise them). */
export function ulimitArgs(): string[] {
  const nofile = Math.min(hardLimit('Max open files') ?? 1_048_576, 1_048_576);
  const nproc = Math.min(hardLimit('Max processes') ?? 32_768, 32_768);
  return ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`];
}

/** Why podman cannot be used here at all (not installed, `podman info` fails), or undefined. */
export async function podmanProblem(): Promise<string | undefined> {
  const v = await podman(['--version'], 20_000);
  if (v.code !== 0) return `podman is not installed or does not start (${v.stderr.trim() || `exit ${v.code}`})`;
  const info = await podman(['info', '--format', '{{.Host.OCIRuntime.Name}}'], 60_000);
  if (info.code !== 0) return `podman info fails: ${info.stderr.trim().split('\n').slice(-3).join(' ')}`;
  return undefined;
}

/** The Debian mirror apt is configured with (deb822 `URIs:` or a `deb` line), else deb.debian.org. */
export function aptMirror(): string {
  const files = ['/etc/apt/sources.list'];
  const dir = '/etc/apt/sources.list.d';
  if (fs.existsSync(dir)) for (const f of fs.readdirSync(dir).sort()) files.push(path.join(dir, f));
  for (const f of files) {
    if (!fs.existsSync(f)) continue;
    const text = fs.readFileSync(f, 'utf8');
    const m = /^URIs:\s*(\S+)/m.exec(text) ?? /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m.exec(text);
    if (m && !m[1]!.includes('security')) return m[1]!;
  }
  return 'http://deb.debian.org/debian';
}

/**
 * The base image both stages start from: `ASCEND_IMAGE_TEST_BASE` when set (e.g. node:20-bookworm-slim where its
 * registry is reachable); else today's local base, made when missing: debootstrap minbase bookworm (root only),
 * this process's `node` binary (it needs only libc, libm, libstdc++ and libgcc_s, all in minbase), npm and the Node
 * headers copied in, `podman import`; older local bases are removed.
 */
export async function ensureBaseImage(log: (line: string) => void): Promise<string> {
  const explicit = process.env.ASCEND_IMAGE_TEST_BASE;
  if (explicit) return explicit;
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '');
  const tag = `${BASE_REPOSITORY}:bookworm-node${process.versions.node}-${day}`;
  if ((await podman(['image', 'exists', tag])).code === 0) return tag;

  if (process.getuid?.() !== 0) {
    throw new Error(
      `making ${tag} needs root (debootstrap); or set ASCEND_IMAGE_TEST_BASE to a Node 20 bookworm image`,
    );
  }
  const prefix = path.dirname(path.dirname(process.execPath));
  const npmDir = path.join(prefix, 'lib', 'node_modules', 'npm');
  const headers = path.join(prefix, 'include', 'node');
  for (const p of [npmDir, path.join(headers, 'node.h')]) {
    if (!fs.existsSync(p)) throw new Error(`this Node install has no ${p}: the base image needs npm and the headers`);
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ascend-ci-base-'));
  try {
    const rootfs = path.join(work, 'rootfs');
    const mirror = aptMirror();
    log(`making ${tag}: debootstrap --variant=minbase bookworm from ${mirror}`);
    const deb = ['--variant=minbase', 'bookworm', rootfs, mirror];
    const d = await run('debootstrap', deb, { timeoutMs: 240_000 });
    if (d.code !== 0) throw new CommandError(['debootstrap', ...deb], d, 'debootstrap');
    fs.copyFileSync(process.execPath, path.join(rootfs, 'usr', 'bin', 'node'));
    fs.chmodSync(path.join(rootfs, 'usr', 'bin', 'node'), 0o755);
    fs.cpSync(npmDir, path.join(rootfs, 'usr', 'lib', 'node_modules', 'npm'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(rootfs, 'usr', 'bin', 'npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(rootfs, 'usr', 'bin', 'npx'));
    fs.cpSync(headers, path.join(rootfs, 'usr', 'include', 'node'), { recursive: true });
    const tar = ['-C', rootfs, '-cf', path.join(work, 'rootfs.tar'), '.'];
    const t = await run('tar', tar, { timeoutMs: 120_000 });
    if (t.code !== 0) throw new CommandError(['tar', ...tar], t, 'packing the base rootfs');
    await podmanOk(['import', path.join(work, 'rootfs.tar'), tag], 'podman import', 120_000);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  const older = await podman([
    'images',
    '--format',
    '{{.Repository}}:{{.Tag}}',
    '--filter',
    `reference=${BASE_REPOSITORY}`,
  ]);
  for (const old of older.stdout.split('\n').filter((l) => l !== '' && l !== tag)) await podman(['rmi', '-f', old]);
  const probe = await podmanOk(['run', '--rm', ...ulimitArgs(), tag, 'node', '--version'], 'node in the base image');
  log(`${tag}: node ${probe.stdout.trim()}`);
  return tag;
}

/** The CA bundle the build's npm steps need (the host's `NODE_EXTRA_CA_CERTS`, else Debian's bundle), if any. */
export function buildCaBundle(): string | undefined {
  const fromEnv = process.env.NODE_EXTRA_CA_CERTS;
  if (fromEnv && fs.existsSync(fromEnv)) return fromEnv;
  const debian = '/etc/ssl/certs/ca-certificates.crt';
  return fs.existsSync(debian) ? debian : undefined;
}

/** `podman build` of the repository's Dockerfile on `base` as `tag` (no intermediate images kept). */
export async function buildImage(tag: string, base: string, timeoutMs: number): Promise<void> {
  const ca = buildCaBundle();
  await podmanOk(
    [
      'build',
      '--layers=false',
      ...ulimitArgs(),
      '--build-arg',
      `BASE_IMAGE=${base}`,
      ...(ca ? ['--build-arg', `NODE_EXTRA_CA_CERTS=${ca}`, '-v', `${ca}:${ca}:ro`] : []),
      '-t',
      tag,
      PROJECT_ROOT,
    ],
    'podman build',
    timeoutMs,
  );
}
