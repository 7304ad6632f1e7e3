/**
 * Child-process harness of the integration tests and the end-to-end benches (bench/sandbox.ts): the built agent
 * (`dist/cli/agent.js`) on the mock library, with the kubelet simulator and the Kubernetes API stand-in in this
 * process; every host path in a temp folder.
 */
import { fork, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName, KEY_DEVICE_INFO } from '../../src/kube/device-info.js';
import { KubeApiStandIn, type KubeApiStandInOptions } from '../../src/sim/kube-api.js';
import { KubeletSimulator } from '../../src/sim/kubelet.js';
import { MockControlClient } from '../../src/sim/mock-control.js';
import { makeDeviceNodes, sandboxFlags } from '../../src/sim/simulate.js';

export const AGENT_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js');
export const NODE_NAME = 'it-node';
export const RESOURCE = 'huawei.com/Ascend910';
export const UNHEALTHY_KEY = `${RESOURCE}-Unhealthy`;
export const NETWORK_UNHEALTHY_KEY = `${RESOURCE}-NetworkUnhealthy`;
/** SeparateNPU (faultCode.json), not in any FaultFrequency rule. */
export const SEPARATE_CODE = '80E3A201';
/** RestartNPU with FaultFrequency Times 2 → ManuallySeparateNPU (packaged faultCustomization.json). */
export const FREQUENCY_CODE = '80B78000';

/** The `DeviceList` of the sandbox's device-info ConfigMap, or undefined before the first write. */
export function deviceList(s: AgentSandbox): Record<string, string> | undefined {
  const cfg = s.deviceInfo()?.data?.[KEY_DEVICE_INFO];
  if (!cfg) return undefined;
  return (JSON.parse(cfg) as { DeviceInfo: { DeviceList: Record<string, string> } }).DeviceInfo.DeviceList;
}

/** Whether the comma-separated device list `value` names `name`. */
export function listed(value: string | undefined, name: string): boolean {
  return (value ?? '').split(',').includes(name);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running agent child process. */
export class AgentProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;
  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (b: Buffer) => (this.stdout += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Log lines (JSON) of the agent. */
  logs(): Record<string, unknown>[] {
    return this.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /** Resolves with the exit, or rejects after `timeoutMs`. */
  waitExit(timeoutMs = 15_000): Promise<Exit> {
    return Promise.race([
      this.exited,
      new Promise<Exit>((_, reject) =>
        setTimeout(
          () => reject(new Error(`agent did not exit in ${timeoutMs} ms; stderr: ${this.stderr}`)),
          timeoutMs,
        ).unref(),
      ),
    ]);
  }

  /** Kills the process (SIGKILL) if it still runs. */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}

/** Runs the agent to completion (for the bad-input cases). */
export function runAgentOnce(
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 20_000,
): Promise<Exit & { stdout: string; stderr: string }> {
  const p = new AgentProcess(spawn(process.execPath, [AGENT_JS, ...args], { env }));
  return p.waitExit(timeoutMs).then(
    (e) => ({ ...e, stdout: p.stdout, stderr: p.stderr }),
    async (err: unknown) => {
      await p.kill();
      throw err;
    },
  );
}

/** Options of {@link AgentSandbox.create} (all optional; the defaults are what every test had before). */
export interface SandboxOptions {
  /** Options of the API stand-in (e.g. an RBAC `gate` and extra resource types). */
  readonly api?: KubeApiStandInOptions;
  /** The bearer token written into the agent's kubeconfig (default: the stand-in's). */
  readonly token?: string;
  /** Prefix of the temp folder (default `npu-it-`). */
  readonly prefix?: string;
  /** Whether the kubelet simulator serves pod-resources on the agent's `-podResourcesSocket` (default true). */
  readonly podResources?: boolean;
  /**
   * The API stand-in in a process of its own (test/helpers/api-process.ts; default false): what the agent writes
   * is then served beside, not inside, the event loop of the kubelet simulator (the bench's fault path). `api`,
   * and what reads through it, are then not available; `api` options cannot be given.
   */
  readonly apiProcess?: boolean;
}

/** How {@link AgentSandbox.start} runs the agent (all optional; the defaults are what every test had before). */
export interface AgentSpawnOptions {
  /** `node` options before the script (e.g. `--cpu-prof`). */
  readonly nodeArgs?: readonly string[];
  /** The agent script (default {@link AGENT_JS}). */
  readonly agentJs?: string;
  /** The child's stdio (default: all piped; {@link AgentProcess} keeps stdout and stderr). */
  readonly stdio?: StdioOptions;
  /** How long to wait for the registration with the kubelet simulator (default 20 s). */
  readonly registrationTimeoutMs?: number;
  /** The resource whose registration {@link AgentSandbox.start} waits for (default {@link RESOURCE}). */
  readonly resource?: string;
}

/** How long the API stand-in's process has to start, and to stop before it is killed. */
const API_PROCESS_TIMEOUT_MS = 30_000;

/** Forks test/helpers/api-process.ts and writes the kubeconfig it answers with (mode 0600). */
async function apiProcess(kubeconfig: string, token: string | undefined): Promise<ChildProcess> {
  const child = fork(path.join(PROJECT_ROOT, 'test', 'helpers', 'api-process.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, SANDBOX_NODE_NAME: NODE_NAME, ...(token !== undefined ? { SANDBOX_TOKEN: token } : {}) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let timer: NodeJS.Timeout | undefined;
  const text = await new Promise<string>((resolve, reject) => {
    child.once('message', (m: { kubeconfig: string }) => resolve(m.kubeconfig));
    child.once('exit', (code, signal) => reject(new Error(`API stand-in process exited (${code ?? signal})`)));
    // a child that never answers cannot wedge the caller
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`API stand-in process did not answer in ${API_PROCESS_TIMEOUT_MS} ms`));
    }, API_PROCESS_TIMEOUT_MS);
  }).finally(() => clearTimeout(timer));
  fs.writeFileSync(kubeconfig, text, { mode: 0o600 });
  return child;
}

/** The sandbox: temp folder, API stand-in, kubelet simulator; and one agent at a time. */
export class AgentSandbox {
  readonly dir: string;
  readonly control: string;
  readonly kubeconfig: string;
  agent: AgentProcess | undefined;
  #control: MockControlClient | undefined;

  readonly #api: KubeApiStandIn | ChildProcess;

  private constructor(
    dir: string,
    api: KubeApiStandIn | ChildProcess,
    readonly kubelet: KubeletSimulator,
    readonly scenario: string,
  ) {
    this.dir = dir;
    this.#api = api;
    this.control = path.join(dir, 'mock.sock');
    this.kubeconfig = path.join(dir, 'kubeconfig');
  }

  static async create(
    scenario = path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'),
    options: SandboxOptions = {},
  ): Promise<AgentSandbox> {
    if (options.apiProcess === true && options.api !== undefined) {
      throw new Error('SandboxOptions: api options need the stand-in in this process (not with apiProcess)');
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), options.prefix ?? 'npu-it-'));
    makeDeviceNodes(path.join(dir, 'dev'));
    for (const sub of ['sys', 'host', 'state']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
    fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), path.join(dir, 'faultCode.json'));
    fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), path.join(dir, 'faultCustomization.json'));
    const kubeconfig = path.join(dir, 'kubeconfig');
    let api: KubeApiStandIn | ChildProcess;
    if (options.apiProcess === true) {
      api = await apiProcess(kubeconfig, options.token);
    } else {
      api = await KubeApiStandIn.start(options.api);
      // The Node object kubelet would have registered: the agent labels and annotates it at start (spec A.2 5.7).
      api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: NODE_NAME } });
      await api.writeKubeconfig(kubeconfig, options.token);
    }
    const kubelet = await KubeletSimulator.start({
      dir: path.join(dir, 'kubelet'),
      ...(options.podResources === false ? {} : { podResourcesSocket: path.join(dir, 'pr.sock') }),
    });
    return new AgentSandbox(dir, api, kubelet, scenario);
  }

  /** The API stand-in (not available with `apiProcess`). */
  get api(): KubeApiStandIn {
    if (this.#api instanceof KubeApiStandIn) return this.#api;
    throw new Error('the API stand-in of this sandbox runs in its own process (SandboxOptions.apiProcess)');
  }

  /** Flags pointing every host path into the sandbox. */
  flags(extra: readonly string[] = []): string[] {
    return [...sandboxFlags(this.dir, { kubeconfig: this.kubeconfig }), ...extra];
  }

  env(extra: Record<string, string> = {}): Record<string, string | undefined> {
    return {
      PATH: process.env.PATH,
      NODE_NAME: NODE_NAME,
      ASCEND_MOCK_SCENARIO: this.scenario,
      ASCEND_MOCK_CONTROL: this.control,
      // spec L.5: never the host's containerd (an absent socket in the sandbox: the detector stays off)
      CONTAINERD_ADDRESS: path.join(this.dir, 'containerd.sock'),
      ...extra,
    };
  }

  /** Starts the agent and waits until kubelet has its device list. */
  async start(
    extraFlags: readonly string[] = [],
    extraEnv: Record<string, string> = {},
    how: AgentSpawnOptions = {},
  ): Promise<AgentProcess> {
    const after = this.kubelet.registrations.at(-1)?.seq ?? 0;
    this.#control?.close();
    this.#control = undefined;
    const args = [...(how.nodeArgs ?? []), how.agentJs ?? AGENT_JS, ...this.flags(extraFlags)];
    this.agent = new AgentProcess(
      spawn(process.execPath, args, { env: this.env(extraEnv), ...(how.stdio ? { stdio: how.stdio } : {}) }),
    );
    const agent = this.agent;
    await Promise.race([
      this.kubelet.waitForRegistration(how.resource ?? RESOURCE, after, how.registrationTimeoutMs ?? 20_000),
      agent.exited.then((e) => {
        throw new Error(`agent exited (${e.code}) before registering: ${agent.stderr}`);
      }),
    ]);
    return agent;
  }

  /** The client of the mock's control socket (connected lazily, after the agent's dcmi_init created it). */
  async mockClient(): Promise<MockControlClient> {
    this.#control ??= await MockControlClient.connect(this.control);
    return this.#control;
  }

  /** Sends one request to the mock's control socket; rejects unless it succeeded. */
  async mock(req: Record<string, unknown>): Promise<Record<string, unknown>> {
    return (await this.mockClient()).expectOk(req);
  }

  core(): k8s.CoreV1Api {
    return this.api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  }

  deviceInfo(): k8s.V1ConfigMap | undefined {
    return this.api.store.get(
      this.api.resourceType('', 'configmaps'),
      DEVICE_INFO_NAMESPACE,
      deviceInfoConfigMapName(NODE_NAME),
    ) as k8s.V1ConfigMap | undefined;
  }

  events(): k8s.CoreV1Event[] {
    return this.api.store.list(this.api.resourceType('', 'events'), undefined) as unknown as k8s.CoreV1Event[];
  }

  /** Polls `check` every 50 ms until truthy; rejects after `timeoutMs` naming `what`. */
  async until<T>(check: () => T | undefined | null | false, what: string, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = check();
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Like {@link until} with an asynchronous check. */
  async untilAsync<T>(
    check: () => Promise<T | undefined | null | false>,
    what: string,
    timeoutMs = 10_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Spec I.3 as kubelet drives it: creates the pending pod `default/<name>` on the node asking `ids.length` of
   * `resource`, has the kubelet simulator allocate `ids` to it, and waits until the agent has annotated it
   * (`huawei.com/AscendReal` present); returns the pod's annotations.
   */
  async allocatedPodAnnotations(
    resource: string,
    ids: string[],
    name = 'train-0',
    timeoutMs = 10_000,
  ): Promise<Record<string, string>> {
    await this.core().createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name, namespace: 'default' },
        spec: {
          nodeName: NODE_NAME,
          containers: [{ name: 'c0', image: 'x', resources: { limits: { [resource]: String(ids.length) } } }],
        },
      },
    });
    await this.kubelet.allocate(resource, [ids], { namespace: 'default', name });
    return this.untilAsync(
      async () => {
        const pod = await this.core().readNamespacedPod({ namespace: 'default', name });
        const a = pod.metadata?.annotations ?? {};
        return a['huawei.com/AscendReal'] !== undefined ? a : undefined;
      },
      `the annotations of pod default/${name}`,
      timeoutMs,
    );
  }

  /** The agent's /metrics text (the port is read from its "metrics and probes listening" log line). */
  async metrics(): Promise<string> {
    const line = this.agent?.logs().find((l) => l.msg === 'metrics and probes listening');
    const address = typeof line?.address === 'string' ? line.address : undefined;
    if (!address) throw new Error('the agent has not logged its metrics address');
    const res = await fetch(`http://127.0.0.1:${address.slice(address.lastIndexOf(':') + 1)}/metrics`);
    return res.text();
  }

  /** The Node object in the stand-in. */
  node(): k8s.V1Node | undefined {
    return this.api.store.get(this.api.resourceType('', 'nodes'), undefined, NODE_NAME) as k8s.V1Node | undefined;
  }

  health(id: string): string | undefined {
    return this.kubelet.devices(RESOURCE)?.find((d) => d.ID === id)?.health;
  }

  async close(): Promise<void> {
    this.#control?.close();
    await this.agent?.kill();
    await this.kubelet.close();
    const api = this.#api;
    if (api instanceof KubeApiStandIn) await api.stop();
    else if (api.exitCode === null && api.signalCode === null) {
      const exited = new Promise((r) => api.once('exit', r));
      api.send({ type: 'stop' });
      const kill = setTimeout(() => api.kill('SIGKILL'), API_PROCESS_TIMEOUT_MS); // a wedged child cannot wedge close
      await exited;
      clearTimeout(kill);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
