/**
 * What the agent campaigns of `npm run hostile` share (outage, conflict): the built agent (`dist/cli/agent.js`, or
 * `HOSTILE_AGENT_JS` to measure another build, e.g. the code before a fix) as a child process on the mock library,
 * in a temp folder with the kubelet simulator and the API stand-in (or a server that never answers) in the
 * campaign's process; its JSON log lines as they arrive; polling.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type * as k8s from '@kubernetes/client-node';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import {
  DEVICE_INFO_NAMESPACE,
  deviceInfoConfigMapName,
  KEY_DEVICE_INFO,
  KEY_MANUALLY_SEPARATE,
} from '../../src/kube/device-info.js';
import { kubeconfigYaml, KubeApiStandIn } from '../../src/sim/kube-api.js';
import { KubeletSimulator } from '../../src/sim/kubelet.js';
import { makeDeviceNodes, sandboxFlags } from '../../src/sim/simulate.js';

/** The agent under test. */
export const AGENT_JS = process.env.HOSTILE_AGENT_JS ?? path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js');
export const SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json');
export const NODE = 'outage-node';
export const RESOURCE = 'huawei.com/Ascend910';
export const UNHEALTHY = `${RESOURCE}-Unhealthy`;
/** SeparateNPU, in no FaultFrequency rule; RestartNPU with FaultFrequency 2 → ManuallySeparateNPU. */
export const SEPARATE_CODE = '80E3A201';
export const FREQUENCY_CODE = '80B78000';
export type ApiMode = 'up' | '503' | 'silent';

/** Temp folders, the stand-in (or a server that accepts and never answers), the kubelet simulator. */
export class Env {
  readonly control: string;
  readonly #silent: net.Server | undefined;
  readonly #sockets = new Set<net.Socket>();
  private constructor(
    readonly dir: string,
    readonly api: KubeApiStandIn,
    readonly kubelet: KubeletSimulator | undefined,
    readonly kubeconfig: string,
    silent: net.Server | undefined,
  ) {
    this.control = path.join(dir, 'mock.sock');
    this.#silent = silent;
    silent?.on('connection', (s) => this.#sockets.add(s));
  }

  static async create(o: { kubelet: boolean; api: ApiMode }): Promise<Env> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outage-bench-'));
    makeDeviceNodes(path.join(dir, 'dev'));
    for (const sub of ['sys', 'host', 'state']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
    fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), path.join(dir, 'faultCode.json'));
    fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), path.join(dir, 'faultCustomization.json'));
    const api = await KubeApiStandIn.start();
    api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: NODE } });
    if (o.api === '503') api.setAvailable(false);
    const kubeconfig = path.join(dir, 'kubeconfig');
    let silent: net.Server | undefined;
    if (o.api === 'silent') {
      silent = net.createServer(() => undefined); // accepts, reads nothing, answers nothing
      await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', r));
      const port = (silent.address() as net.AddressInfo).port;
      fs.writeFileSync(kubeconfig, kubeconfigYaml(`http://127.0.0.1:${port}`, 'silent'), { mode: 0o600 });
    } else {
      await api.writeKubeconfig(kubeconfig);
    }
    const kubelet = o.kubelet
      ? await KubeletSimulator.start({ dir: path.join(dir, 'kubelet'), podResourcesSocket: path.join(dir, 'pr.sock') })
      : undefined;
    return new Env(dir, api, kubelet, kubeconfig, silent);
  }

  spawn(extraFlags: string[] = [], env: Record<string, string> = {}): AgentChild {
    const args = [AGENT_JS, ...sandboxFlags(this.dir, { kubeconfig: this.kubeconfig }), ...extraFlags];
    const child = spawn(process.execPath, args, {
      env: {
        PATH: process.env.PATH,
        NODE_NAME: NODE,
        ASCEND_MOCK_SCENARIO: SCENARIO,
        ASCEND_MOCK_CONTROL: this.control,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new AgentChild(child);
  }

  deviceList(): Record<string, string> | undefined {
    const cm = this.api.store.get(
      this.api.resourceType('', 'configmaps'),
      DEVICE_INFO_NAMESPACE,
      deviceInfoConfigMapName(NODE),
    ) as k8s.V1ConfigMap | undefined;
    const cfg = cm?.data?.[KEY_DEVICE_INFO];
    if (!cfg) return undefined;
    return (JSON.parse(cfg) as { DeviceInfo: { DeviceList: Record<string, string> } }).DeviceInfo.DeviceList;
  }

  manual(): string {
    const cm = this.api.store.get(
      this.api.resourceType('', 'configmaps'),
      DEVICE_INFO_NAMESPACE,
      deviceInfoConfigMapName(NODE),
    ) as k8s.V1ConfigMap | undefined;
    return cm?.data?.[KEY_MANUALLY_SEPARATE] ?? '';
  }

  health(id: string): string | undefined {
    return this.kubelet?.devices(RESOURCE)?.find((d) => d.ID === id)?.health;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((r) => (this.#silent ? this.#silent.close(() => r()) : r()));
    await this.kubelet?.close();
    this.api.setAvailable(true);
    await this.api.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A running agent: its JSON log lines as they arrive, its exit. */
export class AgentChild {
  readonly lines: Record<string, unknown>[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  #partial = '';
  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (b: Buffer) => {
      this.#partial += b.toString();
      let nl: number;
      while ((nl = this.#partial.indexOf('\n')) >= 0) {
        const l = this.#partial.slice(0, nl);
        this.#partial = this.#partial.slice(nl + 1);
        if (l.startsWith('{')) {
          try {
            this.lines.push(JSON.parse(l) as Record<string, unknown>);
          } catch {
            // not a log line
          }
        }
      }
    });
    child.stderr?.resume();
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })),
    );
  }

  logged(msg: string | RegExp, pick: (l: Record<string, unknown>) => boolean = () => true): boolean {
    return this.lines.some(
      (l) => typeof l.msg === 'string' && (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg)) && pick(l),
    );
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}

export async function until(check: () => boolean, what: string, ms = 30_000, stepMs = 20): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
