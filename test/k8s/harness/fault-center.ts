/**
 * The built fault center (`dist/cli/fault-center.js`) as a host process against the real API server: its own folder
 * in the cluster's run dir (state cache, kubeconfig), metrics and gRPC on free ports of 127.0.0.1, JSON log lines
 * kept for the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import type { Cluster } from './cluster.js';
import { PollAbort, pollUntil } from './component.js';

export const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');

/** Options of {@link ClusterFaultCenter.start}. */
export interface ClusterFaultCenterOptions {
  /** Bearer token of its kubeconfig. */
  readonly token: string;
  /** API server of its kubeconfig (default: the cluster's; e.g. an {@link ApiProxy}'s URL). */
  readonly server?: string;
  /** `-identity` (default `fault-center-0`). */
  readonly identity?: string;
  /** Further flags (the last occurrence wins). */
  readonly flags?: readonly string[];
}

/** One fault center process. */
export class ClusterFaultCenter {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly identity: string;
  stdout = '';
  stderr = '';
  #child: ChildProcess | undefined;

  private constructor(
    readonly cluster: Cluster,
    o: ClusterFaultCenterOptions,
  ) {
    this.dir = path.join(cluster.runDir, 'fault-center');
    this.kubeconfig = path.join(this.dir, 'kubeconfig');
    this.identity = o.identity ?? 'fault-center-0';
  }

  /** Starts it (does not wait for the Lease: see {@link waitLeading}). */
  static start(cluster: Cluster, o: ClusterFaultCenterOptions): Promise<ClusterFaultCenter> {
    const f = new ClusterFaultCenter(cluster, o);
    fs.mkdirSync(path.join(f.dir, 'state'), { recursive: true, mode: 0o700 });
    cluster.writeKubeconfig(f.kubeconfig, o.token, o.server);
    const child = spawn(
      process.execPath,
      [
        FAULT_CENTER_JS,
        `-kubeconfig=${f.kubeconfig}`,
        '-metricsAddress=127.0.0.1:0',
        '-grpcAddress=127.0.0.1:0',
        `-identity=${f.identity}`,
        `-stateDir=${path.join(f.dir, 'state')}`,
        ...(o.flags ?? []),
      ],
      { env: { PATH: process.env.PATH, HOME: f.dir }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    cluster.own(child);
    f.#child = child;
    child.stdout.on('data', (b: Buffer) => (f.stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (f.stderr += b.toString()));
    return Promise.resolve(f);
  }

  /** Resolves once it has logged that it leads (it wrote its Lease). */
  async waitLeading(timeoutMs = 30_000): Promise<void> {
    await this.until((l) => l.msg === 'started leading', 'the fault center leading', timeoutMs);
  }

  /** JSON log lines so far. */
  logs(): Record<string, unknown>[] {
    return this.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /** Waits for a log line matching `match`; rejects when the process exits first. */
  until(
    match: (l: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    return pollUntil(
      () => {
        const c = this.#child;
        if (c && (c.exitCode !== null || c.signalCode !== null))
          throw new PollAbort(`the fault center exited (${c.exitCode ?? c.signalCode})`);
        return this.logs().find(match);
      },
      what,
      timeoutMs,
      () => `--- fault center stderr:\n${this.stderr.slice(-3000)}\n--- stdout:\n${this.stdout.slice(-4000)}`,
    );
  }

  /** `127.0.0.1:<port>` of its metrics server. */
  get metricsAddress(): string {
    const l = this.logs().find((x) => x.msg === 'metrics listening');
    if (!l) throw new Error('the fault center has not logged its metrics port');
    return `127.0.0.1:${String(l.port)}`;
  }

  /** The address its PubFault service is bound to (once it leads and serves). */
  async grpcAddress(timeoutMs = 30_000): Promise<string> {
    const l = await this.until((x) => x.msg === 'public fault interface serving', 'the PubFault service', timeoutMs);
    return String(l.grpcAddress);
  }

  /** Whether it still runs. */
  get running(): boolean {
    const c = this.#child;
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  }

  /** SIGTERM (it hands its Lease over), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const c = this.#child;
    if (!c || !this.running) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
