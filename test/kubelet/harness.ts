/**
 * Test harness: the kubelet simulator and a DevicePluginManager over a MutableDeviceSource, in a temporary
 * directory short enough for Unix socket paths.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InMemoryDeviceNodeProbe } from '../../src/kubelet/device-nodes.js';
import { MutableDeviceSource, type DeviceSnapshot } from '../../src/kubelet/device-source.js';
import { DevicePluginManager, type DevicePluginManagerOptions } from '../../src/kubelet/plugin-manager.js';
import { KubeletSimulator, type KubeletSimulatorOptions } from '../../src/sim/kubelet.js';
import { simSnapshot } from '../../src/sim/kubelet-devices.js';

export interface Harness {
  readonly root: string;
  readonly pluginDir: string;
  readonly podResourcesSocket: string;
  readonly sim: KubeletSimulator;
  readonly source: MutableDeviceSource;
  readonly manager: DevicePluginManager;
  close(): Promise<void>;
}

/** Device nodes of an 8-chip node (`/dev/davinci0..15`, manager, hdc, svm). */
export function defaultProbe(devDir = '/dev'): InMemoryDeviceNodeProbe {
  const names = ['davinci_manager', 'hisi_hdc', 'devmm_svm'];
  for (let i = 0; i < 16; i++) names.push(`davinci${i}`);
  return new InMemoryDeviceNodeProbe(names, devDir);
}

export function tempRoot(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
}

/** Starts the simulator, then a manager (started and registered unless `start: false`). */
export async function startHarness(
  opts: {
    snapshot?: DeviceSnapshot;
    manager?: Partial<DevicePluginManagerOptions>;
    sim?: Partial<KubeletSimulatorOptions>;
    start?: boolean;
  } = {},
): Promise<Harness> {
  const root = tempRoot();
  const pluginDir = opts.sim?.dir ?? path.join(root, 'dp');
  const podResourcesSocket = path.join(root, 'pr.sock');
  const sim = await KubeletSimulator.start({ podResourcesSocket, ...opts.sim, dir: pluginDir });
  const source = new MutableDeviceSource(opts.snapshot ?? simSnapshot({ kind: 'Ascend910B', chips: 8 }));
  const manager = new DevicePluginManager({
    kubeletDir: pluginDir,
    source,
    volcanoType: false,
    useAscendDocker: false,
    probe: defaultProbe(),
    streamEndGraceMs: 50,
    backoffMaxMs: 200,
    waitTimeoutMs: 20_000,
    ...opts.manager,
  });
  if (opts.start ?? true) await manager.start();
  return {
    root,
    pluginDir,
    podResourcesSocket,
    sim,
    source,
    manager,
    async close() {
      await manager.stop();
      await sim.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
