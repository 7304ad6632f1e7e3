/**
 * A5 UB / UBoE planes and DPU health end to end (device-plugin.md D.5, D.6, D.8; docs/super-node.md "DPU faults"):
 * the real agent (dist/) as a child process on the mock libdcmi.so with an Ascend950 scenario (UBoE main board 0x23),
 * the mock hccn_tool's port table, and a fake sysfs tree of DPUs under the sandbox's `-sysDir`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { KEY_DEVICE_INFO } from '../../src/kube/device-info.js';
import { AgentSandbox } from '../helpers/agent-process.js';

const RESOURCE = 'huawei.com/npu';

let sb: AgentSandbox | undefined;
const tmpDirs: string[] = [];
afterEach(async () => {
  await sb?.close();
  sb = undefined;
  for (const d of tmpDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A UB DPU interface under <sys>/devices, linked from <sys>/class/net. */
function dpu(sys: string, name: string, slot: string): void {
  const dir = path.join(sys, 'devices', 'ub', name, 'net', name);
  fs.mkdirSync(path.join(dir, 'device'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'device', 'vendor'), '0x19e5\n');
  fs.writeFileSync(path.join(dir, 'device', 'device'), '0xa222\n');
  fs.writeFileSync(path.join(dir, 'device', 'slot_id'), `${slot}\n`);
  fs.writeFileSync(path.join(dir, 'operstate'), 'up\n');
  fs.mkdirSync(path.join(sys, 'class', 'net'), { recursive: true });
  fs.symlinkSync(path.relative(path.join(sys, 'class', 'net'), dir), path.join(sys, 'class', 'net', name));
}

async function start(): Promise<AgentSandbox> {
  const scenario = {
    chipName: 'Ascend950PR',
    boardId: 0x60,
    mainboardId: 0x23,
    cards: [0, 1, 2, 3].map((i) => ({ cardId: i, chips: [{ deviceId: 0, logicId: i, phyId: i }] })),
  };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'a5-scn-'));
  tmpDirs.push(tmp);
  const file = path.join(tmp, 'scenario.json');
  fs.writeFileSync(file, JSON.stringify(scenario));
  const s = await AgentSandbox.create(file);
  sb = s;
  const sys = path.join(s.dir, 'sys');
  for (const [name, slot] of [
    ['dpu1', '1'],
    ['dpu9', '9'],
    ['dpu2', '2'],
    ['dpu10', '10'],
  ] as const) {
    dpu(sys, name, slot);
  }
  fs.writeFileSync(
    path.join(s.dir, 'dpu-config.json'),
    JSON.stringify({ configList: [{ busType: 'ub', selectors: { vendor: ['0x19e5'] } }] }),
  );
  await s.start(['-linkQueryInterval=1'], {}, { resource: RESOURCE });
  return s;
}

const deviceList = (s: AgentSandbox): Record<string, string> => {
  const text = s.deviceInfo()?.data?.[KEY_DEVICE_INFO];
  return text ? (JSON.parse(text) as { DeviceInfo: { DeviceList: Record<string, string> } }).DeviceInfo.DeviceList : {};
};
const kubeletHealth = (s: AgentSandbox, id: string): string | undefined =>
  s.kubelet.devices(RESOURCE)?.find((d) => d.ID === id)?.health;
/** The device-info names of chips 0..3, from the first write's schedulable list (`<type>-<phy>`, sorted). */
const names = (s: AgentSandbox): Promise<string[]> =>
  s.until(
    () => {
      const all = deviceList(s)[RESOURCE]?.split(',');
      return all?.length === 4 ? all : undefined;
    },
    'the first device-info write',
    20_000,
  );

describe('A5 planes and DPU health in the agent', () => {
  test('D.8 a UBoE bonding port DOWN makes the chip network-unhealthy in device-info; kubelet keeps it Healthy', async () => {
    const s = await start();
    const n = await names(s);
    await s.mock({ op: 'port', logicId: 1, udie: 1, port: 4, status: 'DOWN' });
    await s.until(() => deviceList(s)[`${RESOURCE}-NetworkUnhealthy`] === n[1], 'chip 1 network-unhealthy', 30_000);
    expect(deviceList(s)[`${RESOURCE}-Fault`]).toContain('110000002');
    expect(kubeletHealth(s, 'npu-1')).toBe('Healthy');
  }, 60_000);

  test('D.5/D.6 a UB port DOWN on one chip: 81B18603 then 020001002, and kubelet sees the chip Unhealthy', async () => {
    const s = await start();
    const n = await names(s);
    await s.mock({ op: 'port', logicId: 2, udie: 0, port: 0, status: 'DOWN' });
    await s.until(() => kubeletHealth(s, 'npu-2') === 'Unhealthy', 'npu-2 Unhealthy in kubelet', 30_000);
    await s.until(() => deviceList(s)[`${RESOURCE}-Unhealthy`] === n[2], 'chip 2 in -Unhealthy', 20_000);
    const faults = deviceList(s)[`${RESOURCE}-Fault`] ?? '';
    expect(faults).toContain('81B18603');
    expect(faults).toContain('020001002');
    expect(kubeletHealth(s, 'npu-0')).toBe('Healthy');
  }, 60_000);

  test('DPU: both DPUs of NPUs 0-3 down lists them in huawei.com/npu-DPUUnhealthy; kubelet keeps them Healthy', async () => {
    const s = await start();
    const n = await names(s);
    await s.until(() => deviceList(s)[`${RESOURCE}-DPUUnhealthy`] === '', 'an empty -DPUUnhealthy', 20_000);
    for (const n of ['dpu1', 'dpu9'])
      fs.writeFileSync(path.join(s.dir, 'sys', 'class', 'net', n, 'operstate'), 'down\n');
    await s.until(() => deviceList(s)[`${RESOURCE}-DPUUnhealthy`] === n.join(','), 'NPUs 0-3 DPU-unhealthy', 20_000);
    expect(kubeletHealth(s, 'npu-0')).toBe('Healthy');
  }, 60_000);
});
