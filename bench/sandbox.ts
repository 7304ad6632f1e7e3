/**
 * How the end-to-end benches run the built agent: in the integration tests' {@link AgentSandbox} (temporary host
 * folders, the Kubernetes API stand-in with the Node object kubelet would have registered, the kubelet simulator),
 * as `dist/cli/agent.js` on the mock DCMI library with its metrics on a known port and its output not kept,
 * registered and ready.
 */
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import type { KubeApiStandIn } from '../src/sim/kube-api.js';
import type { MockControlClient } from '../src/sim/mock-control.js';
import { AgentSandbox } from '../test/helpers/agent-process.js';
import { stopChild } from './stats.js';

/** A bench's agent: the sandbox it runs in and what the bench drives and measures it by. */
export interface BenchAgent {
  readonly sandbox: AgentSandbox;
  readonly child: ChildProcess;
  /** The mock's control socket, connected. */
  readonly control: MockControlClient;
  /** Port of the agent's metrics server. */
  readonly metricsPort: number;
  /** Stops the agent (SIGTERM, SIGKILL after 15 s) and removes the sandbox. */
  close(): Promise<void>;
}

export interface BenchAgentOptions {
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
export async function startBenchAgent(o: BenchAgentOptions): Promise<BenchAgent> {
  // No pod-resources server: the benches measure the agent as it ran before they shared the tests' sandbox.
  const sandbox = await AgentSandbox.create(o.scenario, { prefix: o.prefix, podResources: false });
  o.setup?.(sandbox.api);
  const metricsPort = await freePort();
  const agent = await sandbox.start(
    ['-listWatchPeriod=5', `-metricsAddress=127.0.0.1:${metricsPort}`, ...(o.flags ?? [])],
    {},
    {
      ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}),
      ...(o.agentJs ? { agentJs: o.agentJs } : {}),
      stdio: ['ignore', o.stdout ?? 'ignore', 'inherit'],
      registrationTimeoutMs: 30_000,
    },
  );
  const control = await sandbox.mockClient();
  return {
    sandbox,
    child: agent.child,
    control,
    metricsPort,
    async close() {
      await stopChild(agent.child);
      await sandbox.close();
    },
  };
}
