/**
 * One program of the test cluster as a child process: an argument array (never a shell), stdout and stderr
 * appended to a log file of the run dir, stopped with SIGTERM and, after a grace, SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

/** How a component ended. */
export interface ComponentExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** What to run. */
export interface ComponentSpec {
  readonly name: string;
  readonly bin: string;
  readonly args: readonly string[];
  /** Working directory (kubelet and the fake CRI need an empty one; see real-cluster.md). */
  readonly cwd: string;
  readonly logFile: string;
  readonly env?: Record<string, string | undefined>;
}

/** A started component. */
export class Component {
  readonly child: ChildProcess;
  readonly exited: Promise<ComponentExit>;
  #exit: ComponentExit | undefined;

  constructor(readonly spec: ComponentSpec) {
    const fd = fs.openSync(spec.logFile, 'a', 0o600);
    try {
      this.child = spawn(spec.bin, [...spec.args], {
        cwd: spec.cwd,
        env: spec.env ?? { PATH: process.env.PATH },
        stdio: ['ignore', fd, fd],
      });
    } finally {
      fs.closeSync(fd);
    }
    this.exited = new Promise((resolve) => {
      this.child.on('error', (err) => {
        fs.appendFileSync(spec.logFile, `\n[harness] ${spec.name} could not start: ${err.message}\n`);
        this.#exit = { code: -1, signal: null };
        resolve(this.#exit);
      });
      this.child.on('exit', (code, signal) => {
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
  }

  get name(): string {
    return this.spec.name;
  }

  /** The exit, once the process has ended. */
  get exit(): ComponentExit | undefined {
    return this.#exit;
  }

  /** The last `lines` lines of the component's log. */
  tail(lines = 30): string {
    try {
      return fs.readFileSync(this.spec.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has ended. */
  async stop(graceMs = 5000): Promise<ComponentExit> {
    if (this.#exit) return this.#exit;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Thrown by a check of {@link pollUntil} to give up at once (e.g. the process waited for has exited). */
export class PollAbort extends Error {
  override readonly name = 'PollAbort';
}

/**
 * Polls `check` every `intervalMs` until it returns a truthy value; rejects after `timeoutMs` with `what`, the
 * last error of `check` and `context()` (e.g. the tail of a log); at once when `check` throws {@link PollAbort}.
 */
export async function pollUntil<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  timeoutMs: number,
  context: () => string = () => '',
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline || last instanceof PollAbort) {
      const why = last instanceof Error ? ` (${last instanceof PollAbort ? '' : 'last error: '}${last.message})` : '';
      const more = context();
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}${more ? `\n${more}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
