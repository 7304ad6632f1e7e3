/**
 * A real containerd for the tests of the duplicate-mount detector (spec L.5): started from the Debian package's
 * binary with its own root, state and socket in a temp folder (config file written here, CRI plugin off), and
 * containers run with `ctr` on a tiny rootfs made of `/bin/sleep` and its libraries (no image, no network).
 * `stop()` removes every task and container it made, stops containerd and removes the folder.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const CALL_MS = 30_000;

/** Runs `file args` (no shell); resolves with stdout, rejects with stderr in the message. */
export function run(file: string, args: readonly string[], timeoutMs = CALL_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, [...args], { timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(' ')}: ${err.message}; ${stderr.trim()}`));
      else resolve(stdout);
    });
  });
}

function which(tool: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin', '/usr/bin'])) {
    const p = path.join(dir, tool);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}

/** Why containerd cannot run containers here, or undefined when it can (root, containerd, ctr and runc present). */
export function whyNoContainerd(): string | undefined {
  const missing = ['containerd', 'ctr', 'runc'].filter((t) => !which(t));
  if (missing.length) return `${missing.join(', ')} not installed (apt-get install containerd)`;
  if (process.getuid?.() !== 0) return 'not root: containerd needs root to run containers';
  return undefined;
}

/** Options of {@link ctrRun}. */
export interface RunOptions {
  readonly env?: readonly string[];
  readonly devices?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
}

/** The running containerd. */
export class RealContainerd {
  #child: ChildProcess | undefined;
  #log = '';
  readonly socket: string;
  readonly rootfs: string;
  readonly #config: string;
  readonly #made: { ns: string; id: string }[] = [];

  private constructor(readonly dir: string) {
    this.socket = path.join(dir, 'c.sock');
    this.rootfs = path.join(dir, 'rootfs');
    this.#config = path.join(dir, 'config.toml');
  }

  /** Starts containerd in a new temp folder and builds the rootfs; rejects with containerd's log when it fails. */
  static async start(): Promise<RealContainerd> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctd-'));
    const c = new RealContainerd(dir);
    fs.writeFileSync(
      c.#config,
      [
        'version = 2',
        `root = "${path.join(dir, 'root')}"`,
        `state = "${path.join(dir, 'state')}"`,
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
        // the sockets are chowned to these (root's by default, which fails when the test is not root)
        '[grpc]',
        `  address = "${c.socket}"`,
        `  uid = ${process.getuid?.() ?? 0}`,
        `  gid = ${process.getgid?.() ?? 0}`,
        '[ttrpc]',
        `  address = "${c.socket}.ttrpc"`,
        `  uid = ${process.getuid?.() ?? 0}`,
        `  gid = ${process.getgid?.() ?? 0}`,
        '[debug]',
        '  address = ""',
        '[metrics]',
        '  address = ""',
        '',
      ].join('\n'),
    );
    await c.#buildRootfs();
    await c.restart();
    return c;
  }

  /** (Re)starts containerd on the same folder and waits until it answers. */
  async restart(): Promise<void> {
    const bin = which('containerd');
    // .ci/run installs it; a machine without it fails here with the reason, not a TypeError from spawn
    if (bin === undefined) throw new Error('containerd is not installed (apt-get install containerd; .ci/run does it)');
    const child = spawn(bin, ['--config', this.#config], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    const keep = (b: Buffer): void => void (this.#log = (this.#log + b.toString()).slice(-8000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`containerd exited (${child.exitCode}): ${this.#log}`);
      try {
        await run('ctr', ['--address', this.socket, 'version'], 5000);
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`containerd did not answer: ${(err as Error).message}; ${this.#log}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Stops containerd only (SIGTERM): the tasks' shims stay and a restart finds them again. */
  async kill(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  }

  /** `ctr --address <socket> -n <ns> args…` */
  ctr(ns: string, args: readonly string[]): Promise<string> {
    return run('ctr', ['--address', this.socket, '-n', ns, ...args]);
  }

  /** Runs `/bin/sleep` in a new container `id` of namespace `ns`, detached. */
  async runContainer(ns: string, id: string, o: RunOptions = {}): Promise<void> {
    const args = ['run', '-d', '--null-io', '--rootfs'];
    for (const e of o.env ?? []) args.push('--env', e);
    for (const d of o.devices ?? []) args.push('--device', d);
    for (const [k, v] of Object.entries(o.labels ?? {})) args.push('--label', `${k}=${v}`);
    this.#made.push({ ns, id });
    await this.ctr(ns, [...args, this.rootfs, id, '/bin/sleep', '3600']);
  }

  /** Kills the task of `id` and removes task and container. */
  async removeContainer(ns: string, id: string): Promise<void> {
    await this.ctr(ns, ['task', 'kill', '-s', 'SIGKILL', id]).catch(() => undefined);
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        await this.ctr(ns, ['task', 'rm', '-f', id]);
        break;
      } catch (err) {
        if (/not found/.test((err as Error).message)) break;
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await this.ctr(ns, ['container', 'rm', id]).catch(() => undefined);
  }

  /** Removes what was made, stops containerd, removes the folder. */
  async stop(): Promise<void> {
    if (this.#child) for (const m of this.#made.splice(0).reverse()) await this.removeContainer(m.ns, m.id);
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** containerd's last log lines (for a failure message). */
  log(): string {
    return this.#log;
  }

  /** `/bin/sleep` with the libraries `ldd` names, nothing else. */
  async #buildRootfs(): Promise<void> {
    const sleep = fs.realpathSync('/bin/sleep');
    const files = [sleep];
    for (const m of (await run('ldd', [sleep])).matchAll(/(\/\S+)/g)) files.push(m[1]!);
    for (const f of files) {
      const to = path.join(this.rootfs, f === sleep ? '/bin/sleep' : f);
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.copyFileSync(fs.realpathSync(f), to);
      fs.chmodSync(to, 0o755);
    }
    for (const d of ['dev', 'proc', 'sys', 'tmp']) fs.mkdirSync(path.join(this.rootfs, d), { recursive: true });
  }
}
