/**
 * Issue [DRA] items 1 and 3 over real gRPC: the plugin registered through the registry folder (GetInfo answers,
 * sockets 0600 in a 0750 folder), a refusal retried by making the socket again, re-registration after a kubelet
 * restart and after the socket is removed, NodePrepare/NodeUnprepare through dra.sock, and the health stream
 * (every chip, on change only, in the store's cycle, kept alive for kubelet's timeout). The DRA kubelet simulator
 * plays kubelet.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { SYSTEM_CLOCK, type Clock } from '../../src/core/clock.js';
import { CdiSpecDir } from '../../src/cdi/spec-dir.js';
import { ClaimCdi } from '../../src/dra/claim-cdi.js';
import { ClaimPreparer, MAX_CLAIMS_PER_REQUEST } from '../../src/dra/claim-preparer.js';
import { CachedClaimReader } from '../../src/dra/claims.js';
import { DraCheckpoint } from '../../src/dra/checkpoint.js';
import { HEALTH_TIMEOUT_SECONDS } from '../../src/dra/dra-server.js';
import { lookupDraDevice } from '../../src/dra/device-lookup.js';
import { DraKubeletPlugin } from '../../src/dra/kubelet-plugin.js';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { loadDraProtos } from '../../src/dra/proto.js';
import { DraKubeletSimulator } from '../../src/sim/dra-kubelet.js';
import { testStore, type TestStore } from '../state/helpers.js';
import { claimObject, FakeClaimApi, makeCharDevices, result } from './helpers.js';

const POOL = 'node-1';
const SEPARATE = 0x80e18402;

interface Rig extends TestStore {
  readonly dir: string;
  readonly api: FakeClaimApi;
  readonly plugin: DraKubeletPlugin;
  readonly sim: DraKubeletSimulator;
}

let rig: Rig | undefined;
afterEach(async () => {
  if (!rig) return;
  await rig.sim.close();
  await rig.plugin.stop();
  fs.rmSync(rig.dir, { recursive: true, force: true });
  rig = undefined;
});

async function setup(o: { pluginClock?: Clock; keepAliveMs?: number; pollMs?: number } = {}): Promise<Rig> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dra-grpc-'));
  const devDir = path.join(dir, 'dev');
  makeCharDevices(devDir, 4);
  fs.mkdirSync(path.join(dir, 'state'));
  const ts = testStore();
  const api = new FakeClaimApi();
  const clock = o.pluginClock ?? SYSTEM_CLOCK;
  const preparer = new ClaimPreparer({
    poolName: POOL,
    store: ts.store,
    claims: new CachedClaimReader({ api, clock }),
    lookup: lookupDraDevice,
    checkpoint: new DraCheckpoint(path.join(dir, 'state'), POOL),
    cdi: new ClaimCdi({ dir: new CdiSpecDir(path.join(dir, 'cdi')), devDir, shared: [], mounts: [] }),
    clock,
  });
  const plugin = new DraKubeletPlugin({
    pluginsDir: path.join(dir, 'plugins'),
    registryDir: path.join(dir, 'plugins_registry'),
    poolName: POOL,
    protos: loadDraProtos(),
    preparer,
    store: ts.store,
    clock,
    pollMs: o.pollMs ?? 100,
    refusalBackoff: { initialMs: 20, maxMs: 100 },
    ...(o.keepAliveMs !== undefined ? { keepAliveMs: o.keepAliveMs } : {}),
  });
  await plugin.start();
  const sim = DraKubeletSimulator.start({ registryDir: path.join(dir, 'plugins_registry'), pollMs: 100 });
  rig = { ...ts, dir, api, plugin, sim };
  return rig;
}

describe('issue [DRA] item 1: registration through the plugin registry', () => {
  test('GetInfo: type DRAPlugin, name npu.huawei.com, the dra.sock endpoint, v1.DRAPlugin and v1.DRAResourceHealth', async () => {
    const r = await setup();
    const reg = await r.sim.waitForRegistration(DRA_DRIVER);
    expect(reg.info).toEqual({
      type: 'DRAPlugin',
      name: 'npu.huawei.com',
      endpoint: path.join(r.dir, 'plugins', 'npu.huawei.com', 'dra.sock'),
      supportedVersions: ['v1.DRAPlugin', 'v1.DRAResourceHealth'],
    });
    expect(reg.socket).toBe(path.join(r.dir, 'plugins_registry', 'npu.huawei.com-reg.sock'));
    expect(r.plugin.status()).toEqual({ resourceName: 'npu.huawei.com (DRA)', registered: true, activeStreams: 1 });
  });

  test('sockets are 0600, the driver’s folder 0750', async () => {
    const r = await setup();
    const mode = (p: string): number => fs.statSync(p).mode & 0o777;
    expect([mode(r.plugin.registrationSocket), mode(r.plugin.draSocket), mode(r.plugin.pluginDir)]).toEqual([
      0o600, 0o600, 0o750,
    ]);
  });

  test('a refusal is logged and retried: the socket is made again and the next attempt is accepted', async () => {
    const r = await setup();
    await r.sim.close();
    const sim = DraKubeletSimulator.start({ registryDir: path.join(r.dir, 'plugins_registry'), pollMs: 100 });
    Object.assign(r, { sim });
    sim.refuseNext('RegisterPlugin error -- plugin validation failed with err: endpoint taken', 2);
    const accepted = await sim.waitForRegistration(DRA_DRIVER, 0, 15_000);
    expect(sim.registrations.map((x) => x.accepted)).toEqual([false, false, true]);
    expect([r.plugin.refusals, accepted.accepted]).toEqual([2, true]);
  });

  test('kubelet restarted: it walks the registry again and the plugin is registered anew', async () => {
    const r = await setup();
    const first = await r.sim.waitForRegistration(DRA_DRIVER);
    await r.sim.restart();
    const second = await r.sim.waitForRegistration(DRA_DRIVER, first.seq);
    expect(second.socket).toBe(first.socket);
  });

  test('the registration socket removed: made again at the next check, kubelet registers it again', async () => {
    const r = await setup();
    const first = await r.sim.waitForRegistration(DRA_DRIVER);
    fs.rmSync(r.plugin.registrationSocket);
    const again = await r.sim.waitForRegistration(DRA_DRIVER, first.seq);
    expect(again.accepted).toBe(true);
  });
});

describe('issue [DRA] item 1: DRAPlugin v1 through dra.sock', () => {
  test('NodePrepareResources answers per claim uid: devices with CDI ids, or an error; NodeUnprepare likewise', async () => {
    const r = await setup();
    await r.sim.waitForRegistration(DRA_DRIVER);
    const ok = randomUUID();
    r.api.set(claimObject(ok, 'ok', [result('ascend910-2', POOL)]));
    const missing = randomUUID();
    const res = await r.sim.prepare(DRA_DRIVER, [
      { namespace: 'default', name: 'ok', uid: ok },
      { namespace: 'default', name: 'missing', uid: missing },
    ]);
    expect(res.claims[ok]).toEqual({
      devices: [
        {
          requestNames: ['npu'],
          poolName: POOL,
          deviceName: 'ascend910-2',
          cdiDeviceIds: [`ascend.com/npu=${ok}-ascend910-2`],
        },
      ],
      error: '',
    });
    expect(res.claims[missing]).toEqual({ devices: [], error: 'ResourceClaim default/missing not found' });
    const un = await r.sim.unprepare(DRA_DRIVER, [{ namespace: 'default', name: 'ok', uid: ok }]);
    expect(un.claims[ok]).toEqual({ error: '' });
  });

  test(`more than ${MAX_CLAIMS_PER_REQUEST} claims in one request: INVALID_ARGUMENT`, async () => {
    const r = await setup();
    await r.sim.waitForRegistration(DRA_DRIVER);
    const claims = Array.from({ length: MAX_CLAIMS_PER_REQUEST + 1 }, (_, i) => ({
      namespace: 'd',
      name: `c${i}`,
      uid: `u${i}`,
    }));
    await expect(r.sim.prepare(DRA_DRIVER, claims)).rejects.toMatchObject({ code: 3 });
  });
});

describe('issue [DRA] item 3: DRAResourceHealth v1 NodeWatchResources (KEP-4680)', () => {
  test('every chip is reported when the stream opens, with kubelet’s timeout', async () => {
    const r = await setup();
    await r.sim.waitFor(() => r.sim.healthMessages.length > 0, 'the first health message');
    const first = r.sim.healthMessages[0]!;
    expect(first.devices.map((d) => [d.device?.deviceName, d.health, d.healthCheckTimeoutSeconds])).toEqual(
      [0, 1, 2, 3].map((i) => [`ascend910-${i}`, 'HEALTHY', String(HEALTH_TIMEOUT_SECONDS)]),
    );
    expect(first.devices[0]!.message).toBe('level NormalNPU; network Healthy');
  });

  test('a fault reaches kubelet in the cycle that applied it; a cycle without a change sends nothing', async () => {
    const r = await setup();
    await r.sim.waitFor(() => r.sim.healthMessages.length > 0, 'the first health message');
    const sendsBefore = r.plugin.server.healthSends;
    r.store.tick(); // no change
    expect(r.plugin.server.healthSends).toBe(sendsBefore);
    r.store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    // synchronously, in the store's listener pass: written to the stream before applyEvents returned
    expect(r.plugin.server.healthSends).toBe(sendsBefore + 1);
    const h = await r.sim.waitFor(() => {
      const x = r.sim.health(DRA_DRIVER, POOL, 'ascend910-1');
      return x?.health === 'UNHEALTHY' ? x : undefined;
    }, 'ascend910-1 UNHEALTHY');
    expect(h.message).toBe('level SeparateNPU; codes 80E18402; network Healthy');
    expect(r.sim.health(DRA_DRIVER, POOL, 'ascend910-0')?.health).toBe('HEALTHY');
  });

  test('unchanged, the report is sent again every keep-alive period (kubelet would call a silent device Unknown)', async () => {
    const r = await setup({ keepAliveMs: 150 });
    await r.sim.waitFor(() => r.sim.healthMessages.length >= 3, 'two keep-alive messages', 5000);
    expect(r.sim.healthMessages.slice(0, 3).map((m) => m.devices.map((d) => d.health).join())).toEqual(
      Array(3).fill('HEALTHY,HEALTHY,HEALTHY,HEALTHY'),
    );
  });

  test('a prepared claim’s devices are reported too (a partition carries its chip’s health)', async () => {
    const r = await setup();
    r.store.setDraClaims([
      { uid: 'u', namespace: 'd', name: 'c', devices: [{ device: 'ascend910-3-vir02-x', logicId: 3 }] },
    ]);
    await r.sim.waitFor(() => r.sim.health(DRA_DRIVER, POOL, 'ascend910-3-vir02-x'), 'the partition in the report');
    r.store.applyEvents([{ logicId: 3, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    await r.sim.waitFor(
      () => r.sim.health(DRA_DRIVER, POOL, 'ascend910-3-vir02-x')?.health === 'UNHEALTHY',
      'the partition UNHEALTHY with its chip',
    );
  });
});
