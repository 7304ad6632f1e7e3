/**
 * The sandbox the end-to-end benches run the built agent in: temporary host folders, the Kubernetes API stand-in
 * (with the Node object kubelet would have registered), the kubelet simulator, and `dist/cli/agent.js` as a child
 * process on the mock DCMI library, registered and ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { KubeApiStandIn } from '../src/sim/kube-api.js';
import { KubeletSimulator } from '../src/sim/kubelet.js';
import { MockControlClient } from '../src/sim/mock-control.js';
import { makeDeviceNodes, sandboxFlags } from '../src/sim/simulate.js';
import { stopChild } from './stats.js';

export const NODE = 'bench-node';
export const RESOURCE = 'huawei.com/Ascend910';

export interface AgentSandbox {
  readonly dir: string;
  readonly api: KubeApiStandIn;
  readonly kubelet: KubeletSimulator;
  readonly child: ChildProcess;
  readonly control: MockControlClient;
  readonly controlPath: string;
  /** Port of the agent's metrics server. */
  readonly metricsPort: number;
  close(): Promise<void>;
}

export interface AgentSandboxOptions {
  /** Prefix of the temporary folder. */
  readonly prefix: string;
  /** Mock scenario file. */
  readonly scenario: string;
  /** Agent flags after the sandbox's own (the last value of a flag wins). */
  readonly flags?: readonly string[];
  /** `node` options before the script. */
  readonly nodeArgs?: readonly string[];
  /** The agent script (default `dist/cli/agent.js`). */
  readonly agentJs?: string;
  /** The agent's stdout (default ignored). */
  readonly stdout?: 'ignore' | number;
  /** Objects to create in the stand-in before the agent starts. */
  readonly setup?: (api: KubeApiStandIn) => void;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/** Starts the sandbox and resolves once the agent has registered with the kubelet simulator. */
export async function startAgentSandbox(o: AgentSandboxOptions): Promise<AgentSandbox> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), o.prefix));
  makeDeviceNodes(path.join(dir, 'dev'));
  for (const sub of ['sys', 'host', 'state']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
  fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), path.join(dir, 'faultCode.json'));
  fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), path.join(dir, 'faultCustomization.json'));
  const api = await KubeApiStandIn.start();
  // The Node object kubelet would have registered: the agent labels and annotates it at start (spec A.2 5.7).
  api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: NODE } });
  o.setup?.(api);
  const kubeconfig = path.join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  const kubelet = await KubeletSimulator.start({ dir: path.join(dir, 'kubelet') });
  const controlPath = path.join(dir, 'mock.sock');
  const metricsPort = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...(o.nodeArgs ?? []),
      o.agentJs ?? path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js'),
      ...sandboxFlags(dir, { kubeconfig, listWatchPeriod: 5 }),
      `-metricsAddress=127.0.0.1:${metricsPort}`,
      ...(o.flags ?? []),
    ],
    {
      env: {
        PATH: process.env.PATH,
        NODE_NAME: NODE,
        ASCEND_MOCK_SCENARIO: o.scenario,
        ASCEND_MOCK_CONTROL: controlPath,
      },
      stdio: ['ignore', o.stdout ?? 'ignore', 'inherit'],
    },
  );
  await kubelet.waitForRegistration(RESOURCE, 0, 30_000);
  const control = await MockControlClient.connect(controlPath);
  return {
    dir,
    api,
    kubelet,
    child,
    control,
    controlPath,
    metricsPort,
    async close() {
      control.close();
      await stopChild(child);
      await kubelet.close();
      await api.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
