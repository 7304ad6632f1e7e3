/**
 * DPU faults (docs/super-node.md "DPU faults", issue 18 item 2): the dpu-config.json switch, discovery over a fake
 * sysfs root (ub slot pairing, pcie switch pairing), the NPU DPU-health rule and the 5 s operstate poll.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { loadDpuConfig, parseDpuConfig, type DpuConfig } from '../../src/dpu/config.js';
import { discoverPcie, discoverUb } from '../../src/dpu/discovery.js';
import { npuDpuHealth, npuOfDeviceName } from '../../src/dpu/health.js';
import { DpuMonitor, type DpuState } from '../../src/dpu/monitor.js';
import { FakeClock } from '../health/fake-clock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'dpu-'));
  dirs.push(d);
  return d;
}

const UB: DpuConfig = { busType: 'ub', vendor: ['0x19e5'], deviceIds: [], devices: [] };

/** A fake sysfs interface: /sys/devices/<devPath>/net/<name> with device/{vendor,device,slot_id}, linked from class/net. */
function iface(
  root: string,
  name: string,
  f: { devPath?: string; vendor?: string; device?: string; slot?: string; operstate?: string },
): void {
  const devDir = path.join(root, 'devices', f.devPath ?? `platform/ub${name}`);
  const ifDir = path.join(devDir, 'net', name);
  fs.mkdirSync(path.join(ifDir, 'device'), { recursive: true });
  if (f.vendor !== undefined) fs.writeFileSync(path.join(ifDir, 'device', 'vendor'), `${f.vendor}\n`);
  if (f.device !== undefined) fs.writeFileSync(path.join(ifDir, 'device', 'device'), `${f.device}\n`);
  if (f.slot !== undefined) fs.writeFileSync(path.join(ifDir, 'device', 'slot_id'), `${f.slot}\n`);
  fs.writeFileSync(path.join(ifDir, 'operstate'), `${f.operstate ?? 'up'}\n`);
  fs.mkdirSync(path.join(root, 'class', 'net'), { recursive: true });
  fs.symlinkSync(path.relative(path.join(root, 'class', 'net'), ifDir), path.join(root, 'class', 'net', name));
}

/** Four UB DPUs in slots 1, 9, 2, 10 (vendor 0x19e5) and one other NIC. */
function ubTree(): string {
  const root = tmp();
  iface(root, 'dpu1', { vendor: '0x19e5', device: '0xa222', slot: '1' });
  iface(root, 'dpu9', { vendor: '0x19e5', device: '0xa222', slot: '9' });
  iface(root, 'dpu2', { vendor: '0x19e5', device: '0xa222', slot: '2' });
  iface(root, 'dpu10', { vendor: '0x19e5', device: '0xa222', slot: '10' });
  iface(root, 'eth0', { vendor: '0x8086', device: '0x1572', slot: '1' });
  return root;
}

describe('DPU switch file (dpu-config.json)', () => {
  test('a ub entry with a vendor selector is usable', () => {
    expect(parseDpuConfig('{"configList":[{"busType":"ub","selectors":{"vendor":["0x19e5"]}}]}')).toEqual({
      ok: true,
      config: { busType: 'ub', vendor: ['0x19e5'], deviceIds: [], devices: [] },
    });
  });

  test('member names match case-insensitively and unknown members are ignored (Go decoding)', () => {
    const r = parseDpuConfig('{"ConfigList":[{"BUSTYPE":"pcie","x":1,"Selectors":{"DeviceIds":["0x1019"]}}]}');
    expect(r).toMatchObject({ ok: true, config: { busType: 'pcie', deviceIds: ['0x1019'] } });
  });

  test('only the first entry counts', () => {
    const r = parseDpuConfig(
      '{"configList":[{"busType":"ub","selectors":{"vendor":["a"]}},{"busType":"pcie","selectors":{"vendor":["b"]}}]}',
    );
    expect(r).toMatchObject({ ok: true, config: { busType: 'ub', vendor: ['a'] } });
  });

  test.each([
    ['not JSON', '{"configList":[', /not JSON/],
    ['an empty list', '{"configList":[]}', /missing parameter/],
    ['no selectors', '{"configList":[{"busType":"ub"}]}', /missing parameter/],
    ['an unknown bus type', '{"configList":[{"busType":"cxl","selectors":{"vendor":["a"]}}]}', /invalid busType/],
    ['no vendor and no deviceIds', '{"configList":[{"busType":"ub","selectors":{"devices":["a"]}}]}', /no vendor/],
    ['a vendor that is not a string', '{"configList":[{"busType":"ub","selectors":{"vendor":[1]}}]}', /vendor\[0\]/],
    ['a later entry of a wrong type', '{"configList":[{"busType":"ub","selectors":{"vendor":["a"]}},7]}', /\[1\]/],
  ])('%s leaves the feature off with the reason', (_w, text, why) => {
    expect(parseDpuConfig(text)).toMatchObject({ ok: false, missing: false, reason: expect.stringMatching(why) });
  });

  test('no file is "missing" (the feature is off without an error)', async () => {
    expect(await loadDpuConfig(path.join(tmp(), 'dpu-config.json'))).toMatchObject({ ok: false, missing: true });
  });

  test('a file over the size limit is refused before parsing', async () => {
    const f = path.join(tmp(), 'dpu-config.json');
    fs.writeFileSync(f, ' '.repeat(1024 * 1024 + 1));
    expect(await loadDpuConfig(f)).toMatchObject({ ok: false, missing: false, reason: expect.stringMatching(/bytes/) });
  });
});

describe('DPU discovery, ub', () => {
  test('NPUs 0-3 get the DPUs of slots 1 and 9, NPUs 4-7 those of slots 2 and 10; other vendors are left out', () => {
    const r = discoverUb(UB, ubTree());
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.pairing.npuToDpus.get(0)).toEqual(['dpu1', 'dpu9']);
    expect(r.pairing.npuToDpus.get(7)).toEqual(['dpu10', 'dpu2']);
    expect(r.pairing.dpus.map((d) => d.name)).toEqual(['dpu1', 'dpu10', 'dpu2', 'dpu9']);
  });

  test('an NPU without exactly two DPUs turns the feature off', () => {
    const root = ubTree();
    fs.rmSync(path.join(root, 'class', 'net', 'dpu10'));
    expect(discoverUb(UB, root)).toMatchObject({ ok: false, reason: expect.stringMatching(/NPU 4 has 1 DPUs/) });
  });

  test('an interface whose vendor file is empty is not a candidate', () => {
    const root = ubTree();
    fs.writeFileSync(path.join(root, 'devices', 'platform', 'ubdpu9', 'net', 'dpu9', 'device', 'vendor'), '');
    expect(discoverUb(UB, root).ok).toBe(false);
  });

  test('the devices selector narrows the candidates by interface name', () => {
    expect(discoverUb({ ...UB, devices: ['dpu1', 'dpu9', 'dpu2'] }, ubTree()).ok).toBe(false);
  });
});

describe('DPU discovery, pcie', () => {
  function pcieTree(): string {
    const root = tmp();
    // two cards and two NICs under root port pci0000:3a, one card alone under pci0000:80
    for (const [bdf, rp] of [
      ['0000:3b:00.0', 'pci0000:3a/0000:3a:00.0'],
      ['0000:3c:00.0', 'pci0000:3a/0000:3a:02.0'],
      ['0000:81:00.0', 'pci0000:80/0000:80:00.0'],
    ] as const) {
      const dev = path.join(root, 'devices', rp, bdf);
      fs.mkdirSync(dev, { recursive: true });
      fs.mkdirSync(path.join(root, 'bus', 'pci', 'devices'), { recursive: true });
      fs.symlinkSync(
        path.relative(path.join(root, 'bus', 'pci', 'devices'), dev),
        path.join(root, 'bus', 'pci', 'devices', bdf),
      );
    }
    iface(root, 'enp1', { devPath: 'pci0000:3a/0000:3a:01.0/0000:3d:00.0', vendor: '0x15b3', device: '0x1019' });
    iface(root, 'enp2', { devPath: 'pci0000:3a/0000:3a:03.0/0000:3e:00.0', vendor: '0x15b3', device: '0x1019' });
    return root;
  }
  const PCIE: DpuConfig = { busType: 'pcie', vendor: ['0x15b3'], deviceIds: [], devices: [] };

  test('the first card under a PCIe switch gets its first DPU, the next card the second; a card without DPU none', () => {
    const r = discoverPcie(PCIE, pcieTree(), [
      { cardId: 0, busId: '0000:3b:00.0' },
      { cardId: 1, busId: '0000:3c:00.0' },
      { cardId: 2, busId: '0000:81:00.0' },
    ]);
    expect(r.ok && [...r.pairing.npuToDpus]).toEqual([
      [0, ['enp1']],
      [1, ['enp2']],
    ]);
  });

  test('no card with a DPU turns the feature off', () => {
    expect(discoverPcie(PCIE, pcieTree(), [{ cardId: 2, busId: '0000:81:00.0' }])).toMatchObject({ ok: false });
  });
});

describe('DPU health of an NPU', () => {
  const st = (o: Record<string, string>): Map<string, string> => new Map(Object.entries(o));
  test('both DPUs up: Healthy', () => expect(npuDpuHealth(['a', 'b'], st({ a: 'up', b: 'up' }))).toBe('Healthy'));
  test('one of two not up: DpuSubHealthy', () =>
    expect(npuDpuHealth(['a', 'b'], st({ a: 'up', b: 'down' }))).toBe('DpuSubHealthy'));
  test('all not up: Unhealthy', () => expect(npuDpuHealth(['a', 'b'], st({ a: 'down' }))).toBe('Unhealthy'));
  test('the only DPU down: Unhealthy', () => expect(npuDpuHealth(['a'], st({ a: 'down' }))).toBe('Unhealthy'));
  test('no DPU entry: Healthy', () => expect(npuDpuHealth(undefined, st({}))).toBe('Healthy'));
  test('the NPU of a device name is the number after the last "-", modulo 8', () => {
    expect(npuOfDeviceName('npu-12')).toBe(4);
    expect(npuOfDeviceName('Ascend910-3')).toBe(3);
    expect(npuOfDeviceName('npu')).toBeUndefined();
  });
});

describe('DPU operstate poll (every 5 s)', () => {
  test('a DPU going down is seen at the next poll, and only changes reach the sink', async () => {
    const root = ubTree();
    const d = discoverUb(UB, root);
    if (!d.ok) throw new Error(d.reason);
    const clock = new FakeClock();
    const seen: DpuState[] = [];
    const m = new DpuMonitor({ pairing: d.pairing, sysRoot: root, clock, sink: (s) => seen.push(s) });
    m.start();
    expect(seen).toHaveLength(1);
    expect([...seen[0]!.health.values()].every((h) => h === 'Healthy')).toBe(true);
    await clock.advance(5000);
    expect(seen).toHaveLength(1);
    fs.writeFileSync(path.join(root, 'class', 'net', 'dpu9', 'operstate'), 'down\n');
    await clock.advance(4999);
    expect(seen).toHaveLength(1);
    await clock.advance(1);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.health.get(0)).toBe('DpuSubHealthy');
    expect(seen[1]!.health.get(4)).toBe('Healthy');
    expect(seen[1]!.dpus.find((x) => x.name === 'dpu9')?.operstate).toBe('down');
    m.stop();
  });

  test('an unreadable operstate counts as down', () => {
    const root = ubTree();
    const d = discoverUb(UB, root);
    if (!d.ok) throw new Error(d.reason);
    fs.rmSync(path.join(root, 'class', 'net', 'dpu1', 'operstate'));
    fs.rmSync(path.join(root, 'class', 'net', 'dpu9', 'operstate'));
    const seen: DpuState[] = [];
    new DpuMonitor({ pairing: d.pairing, sysRoot: root, clock: new FakeClock(), sink: (s) => seen.push(s) }).poll();
    expect(seen[0]!.health.get(0)).toBe('Unhealthy');
  });
});
