/**
 * Issue 17 item 5: public-name customisation (spec L.6, `deviceNameCustomization.json`) with the agent as a child
 * process on the mock library (910B scenario), the kubelet simulator and the API stand-in: the resource and the IDs
 * kubelet sees, Allocate with public IDs, the device-info ConfigMap (keys, lists, ManuallySeparateNPU, CheckCode),
 * an operator's release typed with the public name (G.2), a restart (G.3), the node and pod annotations; a bad file
 * leaves the inner names and the agent running.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { KEY_DEVICE_INFO, KEY_MANUALLY_SEPARATE, verifyDeviceInfoCfg } from '../../src/kube/device-info.js';
import { operatorRelease } from '../../src/sim/simulate.js';
import { AgentSandbox, deviceList, FREQUENCY_CODE, listed, NODE_NAME, RESOURCE } from '../helpers/agent-process.js';

const PUBLIC = 'example.com/accel910';
const RANK_KEY = 'example.com/rank-table-config';
const GOOD = [
  {
    ResourceType: 'Ascend910',
    DevicePublicType: PUBLIC,
    DevicePublicNamePre: 'accel-',
    PodConfigurationName: RANK_KEY,
  },
];

let sb: AgentSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

async function withFile(content: unknown): Promise<AgentSandbox> {
  sb = await AgentSandbox.create();
  const file = path.join(sb.dir, 'deviceNameCustomization.json');
  fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return sb;
}

function fileFlag(s: AgentSandbox): string {
  return `-nameCustomizationFile=${path.join(s.dir, 'deviceNameCustomization.json')}`;
}

async function separate(s: AgentSandbox, logicId: number, name: string): Promise<void> {
  for (const assertion of ['occur', 'recover', 'occur'] as const) {
    await s.mock({ op: 'fault', logicId, eventId: FREQUENCY_CODE, assertion });
    if (assertion === 'recover') {
      await s.kubelet.waitForDevices(PUBLIC, (d) => d.find((x) => x.ID === name)?.health === 'Healthy', 'recovered');
    }
  }
  await s.until(() => listed(s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE], name), `${name} in ManuallySeparateNPU`);
  await s.mock({ op: 'fault', logicId, eventId: FREQUENCY_CODE, assertion: 'recover' }); // separated all the same
}

describe('issue 17 item 5: spec L.6 public names, agent as a child process', () => {
  test('L.6 Register uses the public type, ListAndWatch the public IDs; Allocate takes a public ID', async () => {
    const s = await withFile(GOOD);
    await s.start([fileFlag(s)], { ASCEND_DOCKER_RUNTIME: 'True' }, { resource: PUBLIC });
    expect(s.kubelet.devices(RESOURCE)).toBeUndefined();
    const ids = s.kubelet.devices(PUBLIC)!.map((d) => d.ID);
    expect(ids.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `accel-${i}`).sort());
    const r = await s.kubelet.allocate(PUBLIC, [['accel-5']]);
    expect(r.containerResponses[0]!.envs.ASCEND_VISIBLE_DEVICES).toBe('5');
  });

  test('L.6/H.3 device-info keys and names are public and its CheckCode verifies', async () => {
    const s = await withFile(GOOD);
    await s.start([fileFlag(s)], {}, { resource: PUBLIC });
    const list = await s.until(() => deviceList(s)?.[PUBLIC], 'the first device-info write');
    expect(list.split(',')).toContain('accel-0');
    const keys = Object.keys(deviceList(s)!);
    expect(keys.filter((k) => k.startsWith(RESOURCE))).toEqual([]);
    expect(keys).toEqual(expect.arrayContaining([`${PUBLIC}-Unhealthy`, `${PUBLIC}-Fault`]));
    expect(verifyDeviceInfoCfg(s.deviceInfo()!.data![KEY_DEVICE_INFO]!)).toBe(true);
  });

  test('L.6/G.2 ManuallySeparateNPU holds the public name; deleting it releases the chip', async () => {
    const s = await withFile(GOOD);
    await s.start([fileFlag(s)], {}, { resource: PUBLIC });
    await separate(s, 2, 'accel-2');
    await separate(s, 6, 'accel-6');
    await s.until(() => s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE] === 'accel-2,accel-6', 'both separated');
    expect(await operatorRelease(s.core(), NODE_NAME, 'accel-2')).toBe(true);
    await s.kubelet.waitForDevices(
      PUBLIC,
      (d) => d.find((x) => x.ID === 'accel-2')?.health === 'Healthy',
      'accel-2 released',
      15_000,
    );
    expect(s.kubelet.devices(PUBLIC)!.find((d) => d.ID === 'accel-6')?.health).toBe('Unhealthy');
    await s.until(() => s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE] === 'accel-6', 'accel-6 still separated');
  }, 60_000);

  test('L.6/G.3 a public name deleted while the agent is down releases that chip at the restart; the other stays', async () => {
    const s = await withFile(GOOD);
    await s.start([fileFlag(s)], {}, { resource: PUBLIC });
    await separate(s, 2, 'accel-2');
    await separate(s, 6, 'accel-6');
    await s.until(() => s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE] === 'accel-2,accel-6', 'both separated');
    s.agent!.child.kill('SIGTERM');
    expect((await s.agent!.waitExit()).code).toBe(0);
    expect(await operatorRelease(s.core(), NODE_NAME, 'accel-2')).toBe(true);
    await s.start([fileFlag(s)], {}, { resource: PUBLIC });
    // the live value is read with the public names mapped back: taken, not refused for the state file
    const restoredLine = s.agent!.logs().find((l) => l.msg === 'engine state restored');
    expect(restoredLine?.releasedWhileDown).toEqual([2]);
    expect(s.agent!.logs().filter((l) => l.msg === 'engine restore')).toEqual([]);
    const devices = s.kubelet.devices(PUBLIC)!;
    expect(devices.find((d) => d.ID === 'accel-2')?.health).toBe('Healthy');
    expect(devices.find((d) => d.ID === 'accel-6')?.health).toBe('Unhealthy');
    await s.until(() => s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE] === 'accel-6', 'accel-6 still separated');
  }, 60_000);

  test('L.6/I.2/I.3 baseDeviceInfos and the pod annotations use public names and the PodConfigurationName key', async () => {
    const s = await withFile(GOOD);
    await s.start([fileFlag(s)], {}, { resource: PUBLIC });
    const base = await s.until(() => s.node()?.metadata?.annotations?.baseDeviceInfos, 'baseDeviceInfos');
    expect(Object.keys(JSON.parse(base) as object).sort()).toEqual(
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `accel-${i}`).sort(),
    );
    const ann = await s.allocatedPodAnnotations(PUBLIC, ['accel-3', 'accel-1'], 'train-0', 20_000);
    expect(ann['huawei.com/AscendReal']).toBe('accel-1,accel-3');
    expect(ann['huawei.com/kltDev']).toBe('accel-1,accel-3');
    const rank = JSON.parse(ann[RANK_KEY]!) as { devices: { device_id: string }[] };
    expect(rank.devices.map((d) => d.device_id)).toEqual(['1', '3']);
    expect(ann['ascend.kubectl.kubernetes.io/ascend-910-configuration']).toBeUndefined();
  });

  test('L.6 a bad file (the shipped one, empty values): one problem per entry, inner names, the agent runs', async () => {
    const shipped = [
      { ResourceType: '', DevicePublicType: '', DevicePublicNamePre: '', PodConfigurationName: '' },
      { ResourceType: 'Ascend910', DevicePublicType: 'x', DevicePublicNamePre: 'accel-', PodConfigurationName: '' },
    ];
    const s = await withFile(shipped);
    await s.start([fileFlag(s)]);
    expect(s.kubelet.devices(RESOURCE)!.map((d) => d.ID)).toContain('Ascend910-0');
    const problems = s
      .agent!.logs()
      .filter((l) => l.msg === 'device name customisation: bad entry')
      .map((l) => l.problem);
    expect(problems).toEqual([
      'entry 0: ResourceType is empty',
      expect.stringMatching(/^entry 1: DevicePublicType "x" does not match/),
    ]);
    expect(s.agent!.child.exitCode).toBeNull();
  });
});
