/**
 * Issue [I] item 2: the container image, built from the repository's Dockerfile with podman and run for real. Inside
 * it: `npuctl --version`, `ascend-npu-agent --help`, and the agent itself with the arguments of Huawei's 910
 * DaemonSet, on the mock library mounted from the build tree, with the kubelet folders bind-mounted; the kubelet
 * simulator and the API stand-in run in this process (the container shares the host network), so registration and
 * the ListAndWatch stream are checked from the host. Also item 1 (what the runtime image holds) and "Bad input" in
 * the image. Not part of `npm test` (it needs podman): `npm run test:image`, run by `.ci/run`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName } from '../../src/kube/device-info.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { KubeletSimulator } from '../../src/sim/kubelet.js';
import { MockControlClient } from '../../src/sim/mock-control.js';
import { makeDeviceNodes } from '../../src/sim/simulate.js';
import { HUAWEI_910_ARGS } from '../helpers/upstream-manifests.js';
import {
  buildImage,
  ensureBaseImage,
  podman,
  podmanEnv,
  podmanOk,
  podmanProblem,
  run,
  ulimitArgs,
  type RunResult,
} from './podman.js';

const TAG = `localhost/ascend-npu-agent-ci:${process.pid}-${Date.now()}`;
const NODE_NAME = 'image-node';
const RESOURCE = 'huawei.com/Ascend910';
/** SeparateNPU in the shipped faultCode.json. */
const SEPARATE_CODE = '80E3A201';
/** Where the host folders appear in the container. */
const IN = {
  kubelet: '/var/lib/kubelet/device-plugins',
  podResources: '/var/lib/kubelet/pod-resources',
  log: '/var/log/mindx-dl/devicePlugin',
  state: '/var/lib/ascend-npu-agent',
  mock: '/opt/mock',
  scenarios: '/opt/mock-scenarios',
  sim: '/opt/sim',
};

let dir: string;
let api: KubeApiStandIn;
let kubelet: KubeletSimulator;
const containers: string[] = [];

/** Polls `check` every 100 ms until truthy; rejects naming `what` after `timeoutMs`. */
async function until<T>(check: () => T | undefined | false | null, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `podman run --rm TAG cmd…` (no host folders). */
function inImage(cmd: readonly string[], timeoutMs = 60_000): Promise<RunResult> {
  return podman(['run', '--rm', ...ulimitArgs(), TAG, ...cmd], timeoutMs);
}

/** `-v` arguments of the agent container; `override` replaces or drops (`null`) a mount by its container path. */
function mounts(override: Record<string, string | null> = {}): string[] {
  const m: Record<string, string> = {
    [IN.kubelet]: `${path.join(dir, 'kubelet')}:${IN.kubelet}`,
    [IN.podResources]: `${path.join(dir, 'pod-resources')}:${IN.podResources}`,
    [IN.log]: `${path.join(dir, 'log')}:${IN.log}`,
    [IN.state]: `${path.join(dir, 'state')}:${IN.state}`,
    [IN.mock]: `${path.join(PROJECT_ROOT, 'build', 'Release')}:${IN.mock}:ro`,
    [IN.scenarios]: `${path.join(PROJECT_ROOT, 'scenarios')}:${IN.scenarios}:ro`,
    [IN.sim]: `${path.join(dir, 'sim')}:${IN.sim}`,
  };
  for (const [k, v] of Object.entries(override)) {
    if (v === null) delete m[k];
    else m[k] = v;
  }
  return Object.values(m).flatMap((v) => ['-v', v]);
}

/** Huawei's ascendplugin-910.yaml arguments, then the sandbox's: the mock library and simulated host folders. */
function agentArgs(extra: readonly string[] = []): string[] {
  return [
    ...HUAWEI_910_ARGS,
    `-dcmiLibrary=${IN.mock}/libdcmi.so`,
    `-hccnTool=${IN.mock}/hccn_tool`,
    `-devDir=${IN.sim}/dev`,
    `-sysDir=${IN.sim}/sys`,
    `-hostRoot=${IN.sim}/host`,
    `-kubeconfig=${IN.sim}/kubeconfig`,
    '-metricsAddress=127.0.0.1:0',
    '-listWatchPeriod=3',
    '-deviceResetTimeout=10',
    ...extra,
  ];
}

/** `podman run` arguments of one agent container named `name`. */
function agentContainer(name: string, vols: string[], args: string[]): string[] {
  containers.push(name);
  return [
    'run',
    '--rm',
    '--name',
    name,
    '--network=host',
    ...ulimitArgs(),
    ...vols,
    '-e',
    `NODE_NAME=${NODE_NAME}`,
    '-e',
    'HOST_IP=127.0.0.1',
    '-e',
    `ASCEND_MOCK_SCENARIO=${IN.scenarios}/910b-8chip.json`,
    '-e',
    `ASCEND_MOCK_CONTROL=${IN.sim}/mock.sock`,
    TAG,
    'ascend-npu-agent',
    ...args,
  ];
}

function logLines(): string[] {
  const file = path.join(dir, 'log', 'devicePlugin.log');
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : [];
}

beforeAll(async () => {
  const problem = await podmanProblem();
  if (problem) throw new Error(`the image test needs podman: ${problem}`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-image-'));
  for (const d of ['kubelet', 'pod-resources', 'log', 'state', 'sim/sys', 'sim/host']) {
    fs.mkdirSync(path.join(dir, d), { recursive: true });
  }
  makeDeviceNodes(path.join(dir, 'sim', 'dev'));
  api = await KubeApiStandIn.start();
  api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: NODE_NAME } });
  await api.writeKubeconfig(path.join(dir, 'sim', 'kubeconfig'));
  kubelet = await KubeletSimulator.start({
    dir: path.join(dir, 'kubelet'),
    podResourcesSocket: path.join(dir, 'pod-resources', 'kubelet.sock'),
  });
  const base = await ensureBaseImage((line) => process.stderr.write(`image test: ${line}\n`));
  await buildImage(TAG, base, 6 * 60_000);
}, 10 * 60_000);

afterAll(async () => {
  for (const c of containers) await podman(['rm', '-f', '-t', '0', c]);
  await podman(['rmi', '-f', TAG]);
  await kubelet?.close();
  await api?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('[I] item 2 the three programs in the image', () => {
  test('npuctl --version', async () => {
    const r = await inImage(['npuctl', '--version']);
    const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect([r.code, r.stdout]).toEqual([0, `npuctl ${pkg.version}\n`]);
  }, 60_000);

  test('ascend-npu-agent --help', async () => {
    const r = await inImage(['ascend-npu-agent', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: ascend-npu-agent /);
  }, 60_000);

  test('ascend-fault-center --version', async () => {
    const r = await inImage(['ascend-fault-center', '--version']);
    expect([r.code, r.stdout]).toEqual([0, expect.stringMatching(/^ascend-fault-center \d/)]);
  }, 60_000);
});

describe('[I] item 1 the runtime image', () => {
  test('holds no mock libdcmi.so, mock hccn_tool or libdcmi_partial.so test fixture', async () => {
    const r = await inImage([
      'find',
      '/',
      '-xdev',
      '(',
      '-name',
      'libdcmi*',
      '-o',
      '-name',
      'hccn_tool',
      ')',
      '-print',
    ]);
    expect([r.code, r.stdout]).toEqual([0, '']);
  }, 60_000);

  test("has the shipped fault files at upstream's /usr/local paths (spec L.3; SwitchFaultCode.json, L.9)", async () => {
    for (const name of ['faultCode.json', 'faultCustomization.json', 'SwitchFaultCode.json']) {
      const r = await inImage(['cat', `/usr/local/${name}`]);
      expect([name, r.stdout]).toEqual([name, fs.readFileSync(path.join(PROJECT_ROOT, name), 'utf8')]);
    }
  }, 60_000);

  test('is readable by a non-root user (npuctl config check as uid 65532)', async () => {
    const r = await podman(['run', '--rm', '--user', '65532:65532', ...ulimitArgs(), TAG, 'npuctl', 'config', 'check']);
    expect(r.code).toBe(0);
  }, 60_000);
});

describe('[I] item 2 the agent in the image, against the mock library from the build tree', () => {
  test("with Huawei's 910 DaemonSet arguments it registers with the host's kubelet and streams a fault", async () => {
    const name = `ascend-ci-agent-${process.pid}`;
    const child = run('podman', agentContainer(name, mounts(), agentArgs()), { timeoutMs: 240_000, env: podmanEnv() });
    let exited: RunResult | undefined;
    void child.then((r) => (exited = r));
    const reg = await Promise.race([
      kubelet.waitForRegistration(RESOURCE, 0, 120_000),
      child.then((r) => {
        throw new Error(`the agent container exited (${r.code}) before registering:\n${r.stdout}\n${r.stderr}`);
      }),
    ]);
    expect(reg.endpoint).toBe('Ascend910.sock');
    const devices = await until(() => kubelet.devices(RESOURCE), 'the first ListAndWatch list');
    expect(devices.map((d) => d.health)).toEqual(new Array(8).fill('Healthy'));

    // the stream: a fault injected through the mock's control socket (created in the bind-mounted folder)
    const control = await MockControlClient.connect(path.join(dir, 'sim', 'mock.sock'));
    try {
      await control.expectOk({ op: 'fault', logicId: 3, eventId: SEPARATE_CODE, assertion: 'occur' });
    } finally {
      control.close();
    }
    await until(
      () => kubelet.devices(RESOURCE)?.find((d) => d.ID === 'Ascend910-3')?.health === 'Unhealthy',
      'Ascend910-3 Unhealthy on the ListAndWatch stream',
    );
    await until(
      () =>
        api.store.get(api.resourceType('', 'configmaps'), DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName(NODE_NAME)),
      'the device-info ConfigMap',
    );
    // -useAscendDocker: one deprecation warning in the log file of Huawei's -logFile path (mounted)
    expect(logLines().filter((l) => l.includes('-useAscendDocker'))).toEqual([
      expect.stringMatching(/deprecated upstream flag, ignored/),
    ]);

    // SIGTERM (podman stop) → exit 0, the plugin socket removed
    await podmanOk(['stop', '-t', '20', name], 'podman stop', 60_000);
    const end = await child;
    expect([end.code, exited?.code]).toEqual([0, 0]);
    expect(fs.existsSync(path.join(dir, 'kubelet', 'Ascend910.sock'))).toBe(false);
  }, 240_000);
});

describe('[I] Bad input, in the image: one line naming what and where, the exit status, nothing half-started', () => {
  test('a wrong -dcmiLibrary exits 3 naming the path', async () => {
    const r = await podman(
      agentContainer(`ascend-ci-bad1-${process.pid}`, mounts(), agentArgs(['-dcmiLibrary=/usr/lib/libdcmi.so'])),
      120_000,
    );
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      'ascend-npu-agent: DCMI library unusable: -dcmiLibrary /usr/lib/libdcmi.so: cannot be read: ENOENT\n',
    );
  }, 120_000);

  test('a read-only state folder exits 2 naming it', async () => {
    const ro = { [IN.state]: `${path.join(dir, 'state')}:${IN.state}:ro` };
    fs.rmSync(path.join(dir, 'sim', 'mock.sock'), { force: true });
    const r = await podman(agentContainer(`ascend-ci-bad2-${process.pid}`, mounts(ro), agentArgs()), 120_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `ascend-npu-agent: -stateDir ${IN.state} is not writable (EROFS: read-only file system): mount a writable folder there\n`,
    );
    expect(fs.existsSync(path.join(dir, 'sim', 'mock.sock'))).toBe(false);
  }, 120_000);

  test('a missing kubelet folder mount exits 4 naming the folder', async () => {
    const r = await podman(
      agentContainer(
        `ascend-ci-bad3-${process.pid}`,
        mounts({ [IN.kubelet]: null }),
        agentArgs(['-kubeletWaitTimeout=2']),
      ),
      120_000,
    );
    expect(r.code).toBe(4);
    expect(r.stderr).toBe(`ascend-npu-agent: gave up after 2000 ms waiting for kubelet directory ${IN.kubelet}\n`);
  }, 120_000);
});
