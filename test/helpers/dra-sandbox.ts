/**
 * The agent as a child process serving DRA (issue [DRA] item 6 of the node side): the integration sandbox
 * ({@link AgentSandbox}: temp folder, Kubernetes API stand-in, device-plugin kubelet simulator, mock DCMI) plus the
 * DRA kubelet simulator on `<dir>/plugins_registry`, character devices in `<dir>/dev` (the CDI specs copy their
 * numbers), the stand-in serving resource.k8s.io/v1 (ResourceSlices, ResourceClaims),
 * and the DRA flags pointing into the sandbox.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { DeviceRequestAllocationResult, ResourceClaim } from '../../src/dra/dra-types.js';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { DRA_RESOURCES, RESOURCE_SLICES } from '../../src/sim/kube-api.js';
import type { ResourceSlice } from '../../src/dra/dra-types.js';
import { DraKubeletSimulator } from '../../src/sim/dra-kubelet.js';
import { makeCharDevices } from '../dra/helpers.js';
import { AGENT_JS, AgentProcess, AgentSandbox, NODE_NAME } from './agent-process.js';

/** The sandbox with DRA around it. */
export class DraSandbox {
  private constructor(
    readonly sb: AgentSandbox,
    readonly dra: DraKubeletSimulator,
  ) {}

  static async create(): Promise<DraSandbox> {
    const sb = await AgentSandbox.create(undefined, { api: { extraResources: DRA_RESOURCES }, prefix: 'npu-dra-' });
    makeCharDevices(path.join(sb.dir, 'dev'), 16);
    const dra = DraKubeletSimulator.start({ registryDir: path.join(sb.dir, 'plugins_registry'), pollMs: 100 });
    return new DraSandbox(sb, dra);
  }

  get dir(): string {
    return this.sb.dir;
  }

  get cdiDir(): string {
    return path.join(this.sb.dir, 'cdi');
  }

  /** The DRA flags of the sandbox. */
  draFlags(deviceApi: 'dra' | 'both'): string[] {
    return [
      `-deviceApi=${deviceApi}`,
      `-kubeletPluginsDir=${path.join(this.dir, 'plugins')}`,
      `-kubeletRegistryDir=${path.join(this.dir, 'plugins_registry')}`,
      `-cdiDir=${this.cdiDir}`,
    ];
  }

  /**
   * Starts the agent and waits for its DRA registration (newer than the last one) — and in `both` mode for the
   * device plugin's registration too.
   */
  async start(
    deviceApi: 'dra' | 'both',
    env: Record<string, string> = {},
    extraFlags: string[] = [],
  ): Promise<AgentProcess> {
    if (deviceApi === 'both') return this.#startBoth(env, extraFlags);
    const after = this.dra.registrations.at(-1)?.seq ?? 0;
    const args = [AGENT_JS, ...this.sb.flags([...this.draFlags('dra'), ...extraFlags])];
    const agent = new AgentProcess(spawn(process.execPath, args, { env: this.sb.env(env) }));
    this.sb.agent = agent;
    await Promise.race([
      this.dra.waitForRegistration(DRA_DRIVER, after, 30_000),
      agent.exited.then((e) => {
        throw new Error(`agent exited (${e.code ?? e.signal}) before registering: ${agent.stderr}`);
      }),
    ]);
    return agent;
  }

  async #startBoth(env: Record<string, string>, extraFlags: string[]): Promise<AgentProcess> {
    const after = this.dra.registrations.at(-1)?.seq ?? 0;
    const agent = await this.sb.start([...this.draFlags('both'), ...extraFlags], env, {
      registrationTimeoutMs: 30_000,
    });
    await this.dra.waitForRegistration(DRA_DRIVER, after, 30_000);
    return agent;
  }

  /** Creates an allocated ResourceClaim `default/<name>` for `devices` of this node's pool; returns kubelet's ref. */
  claim(
    name: string,
    devices: string[],
    extra: Partial<DeviceRequestAllocationResult> = {},
  ): { namespace: string; name: string; uid: string } {
    const uid = randomUUID(); // the stand-in gives the stored object its own
    const results = devices.map((device) => ({
      request: 'npu',
      driver: DRA_DRIVER,
      pool: NODE_NAME,
      device,
      ...extra,
    }));
    const body: ResourceClaim = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name, namespace: 'default', uid },
      spec: { devices: { requests: [{ name: 'npu', exactly: { deviceClassName: DRA_DRIVER } }] } },
      status: { allocation: { devices: { results } } },
    };
    const stored = this.sb.api.store.create(
      this.sb.api.resourceType('resource.k8s.io', 'resourceclaims'),
      'default',
      body as unknown as Parameters<AgentSandbox['api']['store']['create']>[2],
    ) as {
      metadata: { uid: string };
    };
    return { namespace: 'default', name, uid: stored.metadata.uid };
  }

  /** The devices of the agent's ResourceSlices in the stand-in, by name. */
  /**
   * The devices of the node's pool once the pool is complete (as a consumer reads it: every slice of the highest
   * generation, as many as its `resourceSliceCount`), else undefined: the agent writes a pool of several slices
   * (partitions) one slice at a time.
   */
  completePoolDevices(): Map<string, NonNullable<ResourceSlice['spec']['devices']>[number]> | undefined {
    const slices = this.sb.api.store.list(RESOURCE_SLICES, undefined, [], []) as unknown as ResourceSlice[];
    const generation = Math.max(...slices.map((x) => x.spec.pool.generation));
    const current = slices.filter((x) => x.spec.pool.generation === generation);
    if (current.length === 0 || current.length !== current[0]!.spec.pool.resourceSliceCount) return undefined;
    return new Map(current.flatMap((x) => x.spec.devices ?? []).map((d) => [d.name, d]));
  }

  sliceDevices(): Map<string, NonNullable<ResourceSlice['spec']['devices']>[number]> {
    const slices = this.sb.api.store.list(RESOURCE_SLICES, undefined, [], []) as unknown as ResourceSlice[];
    return new Map(slices.flatMap((s) => s.spec.devices ?? []).map((d) => [d.name, d]));
  }

  /** Deletes the claim from the stand-in (what remains is only what the agent kept). */
  deleteClaim(name: string): void {
    this.sb.api.store.delete(this.sb.api.resourceType('resource.k8s.io', 'resourceclaims'), 'default', name);
  }

  /** The CDI spec file of claim `uid`, parsed, or undefined. */
  spec(uid: string):
    | {
        devices: {
          name: string;
          containerEdits: { deviceNodes: { path: string; hostPath: string; major: number; minor: number }[] };
        }[];
        containerEdits: { deviceNodes?: { path: string }[] };
      }
    | undefined {
    const file = path.join(this.cdiDir, `ascend.com-npu_${uid}.json`);
    return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined;
  }

  /** The claims of the agent's DRA checkpoint (uid → state). */
  checkpoint(): Record<string, string> {
    const file = path.join(this.dir, 'state', 'dra-checkpoint.json');
    if (!fs.existsSync(file)) return {};
    const c = JSON.parse(fs.readFileSync(file, 'utf8')) as { claims: Record<string, { state: string }> };
    return Object.fromEntries(Object.entries(c.claims).map(([k, v]) => [k, v.state]));
  }

  async close(): Promise<void> {
    await this.dra.close();
    await this.sb.close();
  }
}
