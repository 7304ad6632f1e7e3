/**
 * Registration and re-registration with kubelet (spec A.4, A.5, A.6 and our triggers), driven by the kubelet
 * simulator over real Unix sockets.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { KubeletWaitTimeoutError, SocketPathTooLongError, UnsafeKubeletPathError } from '../../src/kubelet/errors.js';
import { MutableDeviceSource } from '../../src/kubelet/device-source.js';
import { DevicePluginManager, type RegisteredEvent } from '../../src/kubelet/plugin-manager.js';
import { KubeletSimulator } from '../../src/sim/kubelet.js';
import { simSnapshot } from '../../src/sim/kubelet-devices.js';
import { defaultProbe, startHarness, tempRoot, type Harness } from './harness.js';

const R = 'huawei.com/Ascend910';
let h: Harness | undefined;
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const c of cleanups.splice(0)) await c();
});

describe('A.5 registration', () => {
  test('A.5 registers huawei.com/Ascend910 on Ascend910.sock, version v1beta1, preferred allocation advertised', async () => {
    h = await startHarness();
    const reg = await h.sim.waitForRegistration(R);
    expect(reg).toMatchObject({
      resourceName: R,
      endpoint: 'Ascend910.sock',
      version: 'v1beta1',
      getPreferredAllocationAvailable: true,
      preStartRequired: false,
    });
    expect(await h.sim.getDevicePluginOptions(R)).toEqual({
      preStartRequired: false,
      getPreferredAllocationAvailable: true,
    });
  });

  test('A.4 the plugin socket is a 0600 socket in the kubelet directory', async () => {
    h = await startHarness();
    const st = fs.lstatSync(path.join(h.pluginDir, 'Ascend910.sock'));
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
  });

  test('A.4 a stale file at the socket path is replaced', async () => {
    const root = tempRoot();
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const dir = path.join(root, 'dp');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'Ascend910.sock'), 'stale');
    h = await startHarness({ sim: { dir, wipeOnStart: false } });
    expect(fs.lstatSync(path.join(h.pluginDir, 'Ascend910.sock')).isSocket()).toBe(true);
  });

  test('A.5 one server per device type, each registered under its own resource', async () => {
    const base = simSnapshot({ kind: 'Ascend910B', chips: 2 });
    const vnpu = base.deviceTypes.Ascend910!.map((d) => ({
      ...d,
      id: `Ascend910-4c-${100 + d.phyId}-${d.phyId}`,
      vdevId: 100 + d.phyId,
    }));
    h = await startHarness({
      snapshot: { node: base.node, deviceTypes: { ...base.deviceTypes, 'Ascend910-4c': vnpu } },
    });
    await h.sim.waitForRegistration(R);
    const v = await h.sim.waitForRegistration('huawei.com/Ascend910-4c');
    expect(v.endpoint).toBe('Ascend910-4c.sock');
    expect(h.sim.devices('huawei.com/Ascend910-4c')!.map((d) => d.ID)).toEqual([
      'Ascend910-4c-100-0',
      'Ascend910-4c-101-1',
    ]);
  });

  test('A.5 sinceLastRegistrationMs reports the time since the last successful Register', async () => {
    let now = 1_000_000;
    h = await startHarness({ manager: { monotonic: () => now } });
    await h.sim.waitForRegistration(R);
    expect(h.manager.lastRegistration).toBe(1_000_000);
    now += 2500;
    expect(h.manager.sinceLastRegistrationMs()).toBe(2500);
    expect(h.manager.status()).toEqual([
      { deviceType: 'Ascend910', resourceName: R, registered: true, activeStreams: 1 },
    ]);
  });
});

describe('A.5 re-registration triggers', () => {
  test('A.5 re-registers after kubelet.sock is re-created', async () => {
    // The stream-end trigger is pushed out of the way so that only kubelet.sock can cause the registration.
    h = await startHarness({ sim: { wipeOnStart: false }, manager: { streamEndGraceMs: 600_000 } });
    const first = await h.sim.waitForRegistration(R);
    await h.sim.restart();
    const again = await h.sim.waitForRegistration(R, first.seq);
    expect(again.seq).toBeGreaterThan(first.seq);
    expect(h.sim.devices(R)).toHaveLength(8);
  });

  test('A.5 kubelet restarts 10 times in a row: every time re-registered with the full list', async () => {
    h = await startHarness();
    let last = await h.sim.waitForRegistration(R);
    for (let i = 0; i < 10; i++) {
      await h.sim.restart();
      last = await h.sim.waitForRegistration(R, last.seq, 15_000);
      expect(h.sim.devices(R)!.map((d) => d.ID)).toEqual([...Array(8).keys()].map((n) => `Ascend910-${n}`));
    }
    expect(h.sim.streamOpen(R)).toBe(true);
  }, 180_000);

  test('A.5 re-registers after its own socket is removed', async () => {
    h = await startHarness();
    const first = await h.sim.waitForRegistration(R);
    fs.rmSync(path.join(h.pluginDir, 'Ascend910.sock'));
    await h.sim.waitForRegistration(R, first.seq);
    expect(fs.lstatSync(path.join(h.pluginDir, 'Ascend910.sock')).isSocket()).toBe(true);
  });

  test('A.5 re-registers after kubelet ends the ListAndWatch stream', async () => {
    h = await startHarness();
    const first = await h.sim.waitForRegistration(R);
    h.sim.endStream(R);
    const again = await h.sim.waitForRegistration(R, first.seq);
    expect(again.seq).toBeGreaterThan(first.seq);
  });

  test('A.5 triggerReregister (SIGHUP) restarts the server and re-registers', async () => {
    h = await startHarness();
    const first = await h.sim.waitForRegistration(R);
    const seen = new Promise<RegisteredEvent>((resolve) => h!.manager.once('registered', resolve));
    h.manager.triggerReregister('SIGHUP');
    expect((await seen).reasons).toContain('SIGHUP');
    await h.sim.waitForRegistration(R, first.seq);
  });

  test('A.5 triggers arriving together are coalesced into one registration', async () => {
    h = await startHarness();
    const first = await h.sim.waitForRegistration(R);
    const registered: RegisteredEvent[] = [];
    h.manager.on('registered', (e: RegisteredEvent) => registered.push(e));
    h.manager.triggerReregister('SIGHUP 1');
    h.manager.triggerReregister('SIGHUP 2');
    h.manager.triggerReregister('SIGHUP 3');
    await h.sim.waitForRegistration(R, first.seq);
    await new Promise((r) => setImmediate(r));
    expect(registered).toHaveLength(1);
    expect(registered[0]!.reasons).toEqual(expect.arrayContaining(['SIGHUP 1', 'SIGHUP 2', 'SIGHUP 3']));
  });
});

describe('A.4 waiting for kubelet', () => {
  test('A.4 a kubelet directory absent at start is waited for', async () => {
    const root = tempRoot();
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const dir = path.join(root, 'dp');
    const manager = new DevicePluginManager({
      kubeletDir: dir,
      source: new MutableDeviceSource(simSnapshot({ kind: 'Ascend910B', chips: 8 })),
      volcanoType: false,
      useAscendDocker: false,
      probe: defaultProbe(),
      dirPollMs: 20,
      waitTimeoutMs: 20_000,
    });
    cleanups.push(() => manager.stop());
    const waiting = new Promise((resolve) => manager.once('waiting', resolve));
    const started = manager.start();
    expect(await waiting).toEqual({ what: `kubelet directory ${dir}` });
    const sim = await KubeletSimulator.start({ dir });
    cleanups.unshift(() => sim.close());
    await started;
    expect((await sim.waitForRegistration(R)).endpoint).toBe('Ascend910.sock');
  });

  test('A.4 kubelet.sock absent at start is waited for, then registered', async () => {
    const root = tempRoot();
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const dir = path.join(root, 'dp');
    fs.mkdirSync(dir);
    const manager = new DevicePluginManager({
      kubeletDir: dir,
      source: new MutableDeviceSource(simSnapshot({ kind: 'Ascend910B', chips: 8 })),
      volcanoType: false,
      useAscendDocker: false,
      probe: defaultProbe(),
      waitTimeoutMs: 20_000,
    });
    cleanups.push(() => manager.stop());
    const waiting = new Promise((resolve) => manager.once('waiting', resolve));
    const started = manager.start();
    expect(await waiting).toEqual({ what: `kubelet registration socket ${path.join(dir, 'kubelet.sock')}` });
    const sim = await KubeletSimulator.start({ dir, wipeOnStart: false });
    cleanups.unshift(() => sim.close());
    await started;
    await sim.waitForRegistration(R);
  });

  test('A.4 a kubelet directory that never appears ends start() with KubeletWaitTimeoutError', async () => {
    const root = tempRoot();
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const manager = new DevicePluginManager({
      kubeletDir: path.join(root, 'missing'),
      source: new MutableDeviceSource(simSnapshot({ kind: 'Ascend910B', chips: 8 })),
      volcanoType: false,
      useAscendDocker: false,
      probe: defaultProbe(),
      dirPollMs: 10,
      waitTimeoutMs: 100,
    });
    cleanups.push(() => manager.stop());
    const err = await manager.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeletWaitTimeoutError);
    expect((err as Error).message).toContain(path.join(root, 'missing'));
  });

  test('A.4 a kubelet that never serves kubelet.sock ends start() with KubeletWaitTimeoutError', async () => {
    const root = tempRoot();
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
    const manager = new DevicePluginManager({
      kubeletDir: root,
      source: new MutableDeviceSource(simSnapshot({ kind: 'Ascend910B', chips: 8 })),
      volcanoType: false,
      useAscendDocker: false,
      probe: defaultProbe(),
      waitTimeoutMs: 200,
    });
    cleanups.push(() => manager.stop());
    const err = await manager.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeletWaitTimeoutError);
    expect((err as Error).message).toContain('kubelet.sock');
  });

  test('A.4 a socket path over the OS limit is an error at construction, not a truncation', () => {
    const dir = path.join(tempRoot(), 'x'.repeat(100));
    expect(
      () =>
        new DevicePluginManager({
          kubeletDir: dir,
          source: new MutableDeviceSource(simSnapshot({ kind: 'Ascend910B', chips: 8 })),
          volcanoType: false,
          useAscendDocker: false,
          probe: defaultProbe(),
        }),
    ).toThrow(SocketPathTooLongError);
  });
});

describe('A.4 ownership of the kubelet paths', () => {
  const manager = (kubeletDir: string): DevicePluginManager =>
    new DevicePluginManager({
      kubeletDir,
      source: new MutableDeviceSource(simSnapshot({ kind: 'Ascend910B', chips: 8 })),
      volcanoType: false,
      useAscendDocker: false,
      probe: defaultProbe(),
      waitTimeoutMs: 2000,
      dirPollMs: 20,
    });

  test('A.4 a kubelet directory that is a symbolic link is refused at start', async () => {
    const root = tempRoot();
    fs.mkdirSync(path.join(root, 'real'));
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'dp'));
    const m = manager(path.join(root, 'dp'));
    cleanups.push(
      () => m.stop(),
      () => fs.rmSync(root, { recursive: true, force: true }),
    );
    await expect(m.start()).rejects.toBeInstanceOf(UnsafeKubeletPathError);
  });

  test('A.4 a kubelet directory owned by another user is refused at start', async () => {
    const root = tempRoot();
    const dir = path.join(root, 'dp');
    fs.mkdirSync(dir);
    fs.chownSync(dir, 4321, 4321); // the suite runs as root (CI does)
    const m = manager(dir);
    cleanups.push(
      () => m.stop(),
      () => fs.rmSync(root, { recursive: true, force: true }),
    );
    await expect(m.start()).rejects.toThrow(/owned by uid 4321/);
  });

  test('A.4 a kubelet.sock that is a symbolic link is not registered with', async () => {
    const root = tempRoot();
    const sim = await KubeletSimulator.start({
      dir: path.join(root, 'real'),
      podResourcesSocket: path.join(root, 'pr.sock'),
    });
    const dir = path.join(root, 'dp');
    fs.mkdirSync(dir);
    fs.symlinkSync(path.join(root, 'real', 'kubelet.sock'), path.join(dir, 'kubelet.sock'));
    const m = manager(dir);
    const failures: unknown[] = [];
    m.on('registerFailed', (e: { error: unknown }) => failures.push(e.error));
    cleanups.push(
      () => m.stop(),
      () => sim.close(),
      () => fs.rmSync(root, { recursive: true, force: true }),
    );
    await expect(m.start()).rejects.toBeInstanceOf(KubeletWaitTimeoutError);
    expect(failures.some((e) => e instanceof UnsafeKubeletPathError)).toBe(true);
  });
});

describe('A.6 shutdown', () => {
  test('A.6 stop ends the ListAndWatch streams and removes the sockets', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    await h.manager.stop();
    await h.sim.waitFor(() => !h!.sim.streamOpen(R), 'the stream to end');
    expect(fs.existsSync(path.join(h.pluginDir, 'Ascend910.sock'))).toBe(false);
    const before = h.sim.registrations.length;
    await h.sim.restart();
    expect(h.sim.registrations.length).toBe(before);
  });
});
