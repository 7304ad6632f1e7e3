/**
 * Issue [DRA] item 6: a real CDI consumer proves the specs. The DRA driver's claim preparer (and the device plugin's
 * `-cdiDevicePlugin` spec) write their CDI specs into a test folder, over device nodes made with mknod in a sandbox
 * folder (numbers no real device has, so the copy is visible); podman runs a container with
 * `--device ascend.com/npu=<name>` from that spec, and the container sees exactly the allocated chip's node and the
 * management nodes, with the host's numbers.
 *
 * Here beside the image test because it needs what that test needs (podman as root, runc, the same
 * test/image/containers.conf) and runs with it (`npm run test:image`, `.ci/run`); it is never skipped: without a
 * usable podman it fails naming why. podman 4.3 reads specs only from /etc/cdi and /var/run/cdi, so each run is made
 * in a private mount namespace that shows the test folder at /etc/cdi (test/image/cdi-namespace.js). The image is a
 * few host binaries (`ls` and its libraries, imported with `podman import`): no registry, no debootstrap.
 */
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CdiSpecDir } from '../../src/cdi/spec-dir.js';
import { ClaimCdi } from '../../src/dra/claim-cdi.js';
import { ClaimPreparer } from '../../src/dra/claim-preparer.js';
import { CachedClaimReader } from '../../src/dra/claims.js';
import { DraCheckpoint } from '../../src/dra/checkpoint.js';
import { lookupDraDevice } from '../../src/dra/device-lookup.js';
import { devicePluginCdiSpec, writeDevicePluginCdiSpec } from '../../src/kubelet/cdi-spec.js';
import { simSnapshot } from '../../src/sim/kubelet-devices.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { claimObject, FakeClaimApi, makeCharDevices, MAJOR, result } from '../dra/helpers.js';
import { testStore } from '../state/helpers.js';
import { podmanEnv, podmanOk, podmanProblem, run, ulimitArgs, type RunResult } from './podman.js';

const TAG = `localhost/ascend-npu-agent-cdi:${process.pid}-${Date.now()}`;
const POOL = 'cdi-node';
const MANAGEMENT = ['davinci_manager', 'devmm_svm', 'hisi_hdc'];
let dir: string;

/** `ls -l /dev` in a container of the image with `--device` for each CDI name, the spec folder at /etc/cdi. */
function lsDev(devices: readonly string[]): Promise<RunResult> {
  const args = [
    '--mount',
    '--propagation',
    'private',
    '--',
    process.execPath,
    path.join(PROJECT_ROOT, 'test', 'image', 'cdi-namespace.js'),
    path.join(dir, 'cdi'),
    path.join(dir, 'ns'),
    'podman',
    'run',
    '--rm',
    '--network=none',
    ...ulimitArgs(),
    ...devices.flatMap((d) => ['--device', d]),
    TAG,
    '/bin/ls',
    '-l',
    '/dev',
  ];
  return run('unshare', args, { timeoutMs: 120_000, env: podmanEnv() });
}

/** The character devices of an `ls -l` listing: name → "major:minor". */
function charDevices(listing: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of listing.split('\n')) {
    const m = /^c\S*\s+\d+\s+\S+\s+\S+\s+(\d+),\s*(\d+)\s+.*\s(\S+)$/.exec(line);
    if (m) out[m[3]!] = `${m[1]}:${m[2]}`;
  }
  return out;
}

/** The Ascend nodes of a listing (the runtime's own /dev/null etc. left out). */
function ascendNodes(listing: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(charDevices(listing)).filter(([n]) => n.startsWith('davinci') || MANAGEMENT.includes(n)),
  );
}

/** A rootfs of `ls` and the libraries `ldd` names, imported as the test image. */
async function makeImage(): Promise<void> {
  const rootfs = path.join(dir, 'rootfs');
  const ls = '/bin/ls';
  const ldd = spawnSync('ldd', [ls], { encoding: 'utf8' });
  if (ldd.status !== 0) throw new Error(`ldd ${ls} failed: ${ldd.stderr}`);
  const files = [ls, ...(ldd.stdout.match(/\/\S+/g) ?? [])];
  for (const f of files) {
    fs.mkdirSync(path.join(rootfs, path.dirname(f)), { recursive: true });
    fs.copyFileSync(fs.realpathSync(f), path.join(rootfs, f));
    fs.chmodSync(path.join(rootfs, f), 0o755);
  }
  const tar = path.join(dir, 'rootfs.tar');
  const t = await run('tar', ['-C', rootfs, '-cf', tar, '.'], { timeoutMs: 60_000 });
  if (t.code !== 0) throw new Error(`tar failed: ${t.stderr}`);
  await podmanOk(['import', tar, TAG], 'podman import of the CDI test image', 120_000);
}

beforeAll(async () => {
  const problem = await podmanProblem();
  if (problem) throw new Error(`the CDI test needs podman: ${problem}`);
  if (spawnSync('unshare', ['--version']).status !== 0) throw new Error('the CDI test needs unshare (util-linux)');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-cdi-'));
  makeCharDevices(path.join(dir, 'dev'), 8);
  await makeImage();
}, 5 * 60_000);

afterAll(async () => {
  await run('podman', ['rmi', '-f', TAG], { timeoutMs: 60_000, env: podmanEnv() });
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('issue [DRA] item 6: podman consumes the DRA claim spec', () => {
  test('--device ascend.com/npu=<claim uid>-ascend910-5: the container has /dev/davinci5 and the management nodes, nothing else', async () => {
    const ts = testStore({ chips: 8 });
    const api = new FakeClaimApi();
    const devDir = path.join(dir, 'dev');
    const preparer = new ClaimPreparer({
      poolName: POOL,
      store: ts.store,
      claims: new CachedClaimReader({ api, clock: ts.clock }),
      lookup: lookupDraDevice,
      checkpoint: new DraCheckpoint(fs.mkdtempSync(path.join(dir, 'state-')), POOL),
      cdi: new ClaimCdi({
        dir: new CdiSpecDir(path.join(dir, 'cdi')),
        devDir,
        shared: MANAGEMENT.map((n) => ({ hostPath: path.join(devDir, n), containerPath: `/dev/${n}` })),
        mounts: [],
      }),
      clock: ts.clock,
    });
    const uid = randomUUID();
    api.set(claimObject(uid, 'one-npu', [result('ascend910-5', POOL)]));
    const out = await preparer.prepare([{ namespace: 'default', name: 'one-npu', uid }]);
    const prepared = out.get(uid);
    if (!prepared || 'error' in prepared) throw new Error(`not prepared: ${JSON.stringify(prepared)}`);
    const r = await lsDev(prepared.devices[0]!.cdiDeviceIds);
    if (r.code !== 0) throw new Error(`podman run failed (${r.code}): ${r.stderr}`);
    expect(ascendNodes(r.stdout)).toEqual({
      davinci5: `${MAJOR.davinci}:5`,
      davinci_manager: `${MAJOR.manager}:0`,
      devmm_svm: `${MAJOR.svm}:0`,
      hisi_hdc: `${MAJOR.hdc}:0`,
    });
  }, 180_000);
});

describe('issue [DRA] item 6: podman consumes the device plugin’s spec (-cdiDevicePlugin)', () => {
  test('--device ascend.com/npu=davinci2 and =davinci6: exactly those two chips and the management nodes', async () => {
    const devDir = path.join(dir, 'dev');
    const spec = devicePluginCdiSpec(
      simSnapshot({ kind: 'Ascend910B', chips: 8 }),
      devDir,
      MANAGEMENT.map((n) => ({ hostPath: path.join(devDir, n), containerPath: `/dev/${n}` })),
      [],
    );
    writeDevicePluginCdiSpec(new CdiSpecDir(path.join(dir, 'cdi')), spec);
    const r = await lsDev(['ascend.com/npu=davinci2', 'ascend.com/npu=davinci6']);
    if (r.code !== 0) throw new Error(`podman run failed (${r.code}): ${r.stderr}`);
    expect(ascendNodes(r.stdout)).toEqual({
      davinci2: `${MAJOR.davinci}:2`,
      davinci6: `${MAJOR.davinci}:6`,
      davinci_manager: `${MAJOR.manager}:0`,
      devmm_svm: `${MAJOR.svm}:0`,
      hisi_hdc: `${MAJOR.hdc}:0`,
    });
  }, 180_000);

  test('a name no spec defines is refused by the runtime (the specs are what podman reads, not a coincidence)', async () => {
    const r = await lsDev(['ascend.com/npu=davinci99']);
    expect([r.code === 0, `${r.stdout}${r.stderr}`]).toEqual([false, expect.stringMatching(/davinci99/)]);
  }, 180_000);
});
