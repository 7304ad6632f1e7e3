/**
 * Build time only (scripts/bundle-agent.ts; docs/operations.md "Start-up"): a training run of the composition root's
 * own `runAgent` before its code cache is taken, so that the cache also holds the functions a start and the first
 * faults compile. V8 compiles a function at its first call; without this, the agent compiled its fault path (the
 * engine's fault passes, the store's publication, the kubelet frame, the chip-change log, the Event and the
 * device-info write with its CheckCode) while handling its first faults, which then took 4–17 ms instead of ≈ 1 ms
 * (issue [P] item 5, bench/README.md "fault path").
 *
 * The run is the demo's sandbox (src/sim/simulate.ts): the mock DCMI library with scenarios/910b-8chip.json, the
 * kubelet simulator and the API stand-in, every host path in a temporary folder. The stand-ins are this folder's own
 * modules (not the chunk's), so only the agent's functions are trained. The agent talks to the stand-in through its
 * own client (`-kubeconfig`), as in a cluster. Played: a SeparateNPU fault on one chip, then a second one within the
 * device-info write's minimum interval, both recovered, each step waited for on the kubelet stream and the
 * ConfigMap; then the agent stops. Whatever goes wrong throws: the build fails rather than ship a cache without it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AgentHandle, runAgent as RunAgent } from '../agent/run-agent.js';
import { NOOP_LOGGER } from '../core/logger.js';
import { PROJECT_ROOT } from '../core/paths.js';
import { KubeApiStandIn } from '../sim/kube-api.js';
import { KubeletSimulator } from '../sim/kubelet.js';
import { MockControlClient } from '../sim/mock-control.js';
import { makeDeviceNodes, sandboxFlags, SIM_NODE_NAME } from '../sim/simulate.js';
import { parseAgentArgs } from './agent-flags.js';

/** What the training needs of the chunk's exports. */
interface ChunkExports {
  readonly runAgent: typeof RunAgent;
}

/** A SeparateNPU code of the shipped faultCode.json (the benches' fault). */
const FAULT_CODE = '80E3A201';
/** Longest wait for one step (kubelet stream, ConfigMap). */
const STEP_TIMEOUT_MS = 15_000;

/** Resolves when `ok()` holds, checked on every kubelet stream update; rejects after {@link STEP_TIMEOUT_MS}. */
function kubeletShows(kubelet: KubeletSimulator, ok: () => boolean, what: string): Promise<void> {
  if (ok()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!ok()) return;
      clearTimeout(timer);
      kubelet.off('change', check);
      resolve();
    };
    const timer = setTimeout(() => {
      kubelet.off('change', check);
      reject(new Error(`code-cache training: kubelet did not see ${what} within ${STEP_TIMEOUT_MS} ms`));
    }, STEP_TIMEOUT_MS);
    kubelet.on('change', check);
  });
}

/** Runs the chunk's `runAgent` through a start, two faults and their recoveries, and a stop. */
export async function trainAgent(exports: Record<string, unknown>): Promise<void> {
  const { runAgent } = exports as unknown as ChunkExports;
  if (typeof runAgent !== 'function') throw new Error('code-cache training: the chunk does not export runAgent');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'code-cache-training-'));
  const saved = { scenario: process.env.ASCEND_MOCK_SCENARIO, control: process.env.ASCEND_MOCK_CONTROL };
  let api: KubeApiStandIn | undefined;
  let kubelet: KubeletSimulator | undefined;
  let agent: AgentHandle | undefined;
  let control: MockControlClient | undefined;
  try {
    api = await KubeApiStandIn.start();
    api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: SIM_NODE_NAME } });
    const kubeconfig = path.join(dir, 'kubeconfig');
    await api.writeKubeconfig(kubeconfig);
    makeDeviceNodes(path.join(dir, 'dev'));
    for (const sub of ['sys', 'host', 'state']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
    for (const f of ['faultCode.json', 'faultCustomization.json']) {
      fs.copyFileSync(path.join(PROJECT_ROOT, f), path.join(dir, f));
    }
    kubelet = await KubeletSimulator.start({
      dir: path.join(dir, 'kubelet'),
      podResourcesSocket: path.join(dir, 'pr.sock'),
    });
    const controlSocket = path.join(dir, 'mock.sock');
    process.env.ASCEND_MOCK_SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json');
    process.env.ASCEND_MOCK_CONTROL = controlSocket;
    const parsed = parseAgentArgs(
      [...sandboxFlags(dir, { kubeconfig, metricsAddress: '127.0.0.1:0', listWatchPeriod: 5 }), '-logLevel=2'],
      { NODE_NAME: SIM_NODE_NAME },
    );
    if (!parsed.ok) throw new Error(`code-cache training: flags refused: ${parsed.errors.join('; ')}`);
    agent = await runAgent(parsed.config!, { logger: NOOP_LOGGER, env: process.env });
    const a = agent;
    const k = kubelet;
    const health = (id: string): string | undefined => k.devices(a.resourceName)?.find((d) => d.ID === id)?.health;
    control = await MockControlClient.connect(controlSocket);
    await kubeletShows(k, () => health('Ascend910-0') === 'Healthy', 'the first device list');
    await a.configMapIdle();
    for (const logicId of [0, 1]) {
      const id = `Ascend910-${logicId}`;
      await control.expectOk({ op: 'fault', logicId, eventId: FAULT_CODE, assertion: 'occur' });
      await kubeletShows(k, () => health(id) === 'Unhealthy', `${id} Unhealthy`);
    }
    await a.configMapIdle();
    for (const logicId of [0, 1]) {
      const id = `Ascend910-${logicId}`;
      await control.expectOk({ op: 'fault', logicId, eventId: FAULT_CODE, assertion: 'recover' });
      await kubeletShows(k, () => health(id) === 'Healthy', `${id} Healthy again`);
    }
    await a.configMapIdle();
  } finally {
    control?.close();
    await agent?.stop();
    await kubelet?.close();
    await api?.stop();
    if (saved.scenario === undefined) delete process.env.ASCEND_MOCK_SCENARIO;
    else process.env.ASCEND_MOCK_SCENARIO = saved.scenario;
    if (saved.control === undefined) delete process.env.ASCEND_MOCK_CONTROL;
    else process.env.ASCEND_MOCK_CONTROL = saved.control;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
