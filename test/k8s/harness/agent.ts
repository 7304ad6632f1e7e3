/**
 * The built agent (`dist/cli/agent.js`) as a host process next to a real kubelet: the mock DCMI library, its host
 * paths in a folder of the cluster's run dir, kubelet's real device-plugin folder (shadowed, see host-view.ts) and
 * kubelet's pod-resources socket, and a kubeconfig for the real API server.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import { MockControlClient } from '../../../src/sim/mock-control.js';
import { makeDeviceNodes, sandboxFlags } from '../../../src/sim/simulate.js';
import { AGENT_JS, AgentProcess } from '../../helpers/agent-process.js';
import { DEVICE_PLUGIN_DIR, type Cluster } from './cluster.js';
import { PollAbort, pollUntil } from './component.js';

/** Options of {@link ClusterAgent.create}. */
export interface ClusterAgentOptions {
  /** Scenario name under scenarios/ (default `910b-8chip`). */
  readonly scenario?: string;
  /** Bearer token of the agent's kubeconfig (default: the admin's). */
  readonly token?: string;
  /** API server of its kubeconfig (default: the cluster's; e.g. an `ApiProxy`'s URL). */
  readonly server?: string;
  /** Further environment (e.g. `HOSTNAME`, the pod name its Events name, as the DaemonSet sets it). */
  readonly env?: Readonly<Record<string, string>>;
}

/** One agent at a time on the cluster's node. */
export class ClusterAgent {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly control: string;
  readonly scenario: string;
  readonly env: Readonly<Record<string, string>>;
  process: AgentProcess | undefined;
  #client: MockControlClient | undefined;

  private constructor(
    readonly cluster: Cluster,
    o: ClusterAgentOptions,
  ) {
    this.dir = path.join(cluster.runDir, 'agent');
    this.kubeconfig = path.join(this.dir, 'kubeconfig');
    this.control = path.join(this.dir, 'mock.sock');
    this.scenario = path.join(PROJECT_ROOT, 'scenarios', `${o.scenario ?? '910b-8chip'}.json`);
    this.env = o.env ?? {};
  }

  /** Prepares the agent's folder (device nodes, fault tables, kubeconfig); does not start it. */
  static create(cluster: Cluster, o: ClusterAgentOptions = {}): ClusterAgent {
    const a = new ClusterAgent(cluster, o);
    fs.mkdirSync(a.dir, { recursive: true, mode: 0o700 });
    makeDeviceNodes(path.join(a.dir, 'dev'));
    for (const sub of ['sys', 'host', 'state']) fs.mkdirSync(path.join(a.dir, sub), { recursive: true });
    for (const f of ['faultCode.json', 'faultCustomization.json']) {
      fs.copyFileSync(path.join(PROJECT_ROOT, f), path.join(a.dir, f));
    }
    cluster.writeKubeconfig(a.kubeconfig, o.token, o.server);
    return a;
  }

  /** The agent's flags: the sandbox's paths, then kubelet's real folder and socket (the last occurrence wins). */
  flags(extra: readonly string[] = []): string[] {
    return [
      ...sandboxFlags(this.dir, { kubeconfig: this.kubeconfig }),
      `-kubeletDir=${DEVICE_PLUGIN_DIR}`,
      `-podResourcesSocket=${this.cluster.podResourcesSocket}`,
      ...extra,
    ];
  }

  /** How many times the running agent has logged "registered with kubelet" for `resource`. */
  registrations(resource = 'huawei.com/Ascend910'): number {
    return (this.process?.logs() ?? []).filter((l) => l.msg === 'registered with kubelet' && l.resource === resource)
      .length;
  }

  /** The agent's CDI folder under `-deviceApi=dra` (in its folder). */
  get cdiDir(): string {
    return path.join(this.dir, 'cdi');
  }

  /** Starts the agent; resolves once it has registered `resource` with kubelet. */
  async start(extra: readonly string[] = [], resource = 'huawei.com/Ascend910', timeoutMs = 30_000): Promise<void> {
    const p = this.#spawn(extra, {});
    await pollUntil(
      () => {
        if (p.child.exitCode !== null) throw new PollAbort(`the agent exited (${p.child.exitCode})`);
        return this.registrations(resource) > 0;
      },
      `the agent's registration of ${resource}`,
      timeoutMs,
      () => `--- agent stderr:\n${p.stderr.slice(-4000)}\n--- agent stdout:\n${p.stdout.slice(-4000)}`,
    );
  }

  /**
   * Starts the agent with `-deviceApi=dra` on kubelet's plugin folders and {@link cdiDir}; resolves once kubelet has
   * registered the DRA driver. `env` adds to the agent's environment, `scenario` replaces the mock's scenario file.
   */
  async startDra(o: { env?: Readonly<Record<string, string>>; scenario?: string } = {}): Promise<AgentProcess> {
    const root = this.cluster.kubeletRootDir;
    const flags = [
      '-deviceApi=dra',
      `-kubeletPluginsDir=${path.join(root, 'plugins')}`,
      `-kubeletRegistryDir=${path.join(root, 'plugins_registry')}`,
      `-cdiDir=${this.cdiDir}`,
    ];
    const p = this.#spawn(flags, { ...(o.scenario ? { ASCEND_MOCK_SCENARIO: o.scenario } : {}), ...o.env });
    await pollUntil(
      () => {
        if (p.child.exitCode !== null) throw new PollAbort(`the agent exited (${p.child.exitCode})`);
        return p.logs().some((l) => l.msg === 'registered with kubelet (DRA)');
      },
      'kubelet registering the DRA driver',
      30_000,
      () =>
        `--- agent:\n${p.stdout.slice(-3000)}\n${p.stderr.slice(-2000)}\n--- kubelet:\n${this.cluster.tail('kubelet', 20)}`,
    );
    return p;
  }

  /** Spawns the agent with {@link flags}`(extra)`, the sandbox's environment and `env` on top; one at a time. */
  #spawn(extra: readonly string[], env: Readonly<Record<string, string>>): AgentProcess {
    if (this.process && this.process.child.exitCode === null && this.process.child.signalCode === null) {
      throw new Error('the agent already runs');
    }
    this.#client?.close();
    this.#client = undefined;
    const child = spawn(process.execPath, [AGENT_JS, ...this.flags(extra)], {
      env: {
        PATH: process.env.PATH,
        NODE_NAME: this.cluster.nodeName,
        ASCEND_MOCK_SCENARIO: this.scenario,
        ASCEND_MOCK_CONTROL: this.control,
        // spec L.5: never the host's containerd
        CONTAINERD_ADDRESS: path.join(this.dir, 'containerd.sock'),
        ...this.env,
        ...env,
      },
    });
    this.cluster.own(child);
    this.process = new AgentProcess(child);
    return this.process;
  }

  /** Stops the agent with SIGTERM (SIGKILL after 15 s). */
  async stop(): Promise<void> {
    this.#client?.close();
    this.#client = undefined;
    const p = this.process;
    if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
    p.child.kill('SIGTERM');
    await p.waitExit(15_000).catch(async () => p.kill());
  }

  /** One request to the mock library's control socket; rejects unless it succeeded. */
  async mock(req: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.#client ??= await MockControlClient.connect(this.control);
    return this.#client.expectOk(req);
  }

  /** The agent's log lines (JSON) so far. */
  logs(): Record<string, unknown>[] {
    return this.process?.logs() ?? [];
  }
}
