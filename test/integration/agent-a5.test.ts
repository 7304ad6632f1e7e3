/**
 * Ascend910A5 served end to end (issue [N] item 3; spec B.3, C.4, L.8, H.3, I.1, I.2, A.2 step 8): the built agent
 * on the mock with an Ascend950 scenario (detected through the v1 calls), the kubelet simulator and the API
 * stand-in.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { checkCodeOf, KEY_DEVICE_INFO, KEY_MANUALLY_SEPARATE } from '../../src/kube/device-info.js';
import {
  ANNOTATION_ASCEND_REAL,
  ANNOTATION_RANK_TABLE_910,
  ANNOTATION_RANK_TABLE_NPU,
} from '../../src/kube/pod-annotator.js';
import {
  AgentSandbox,
  deviceList,
  FREQUENCY_CODE,
  listed,
  NODE_NAME,
  runAgentOnce,
  SEPARATE_CODE,
} from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

/** A 1D super pod (super pod 7, server 2, rack 3, super-pod type 1) on the DCMI v2 API. */
const POD_1D = path.join(PROJECT_ROOT, 'scenarios', '950-8chip.json');
/** An 8P server (super pod 3, server 5, rack 1, super-pod type 0) on the DCMI v2 API. */
const SERVER = path.join(PROJECT_ROOT, 'scenarios', '950-server.json');
const NPU = 'huawei.com/npu';

/**
 * The levelList upstream writes for chip `phy` of scenarios/950-8chip.json (1D pod: super pod 7, rack 3) with the
 * demo topology file scenarios/topo/950/atlas_950_1.json (docs/super-node.md "levelList"): the FE 1 die-to-die EID
 * at level 0, the FE 0 EID at level 1, the FE 3 EID as UBG at level 2, no RoCE level.
 */
function demoLevelList(phy: number): string {
  const eid = (fe: string, tail: string): string =>
    `000000000000${fe}00000000${phy.toString(16).padStart(2, '0')}00${tail}`;
  const item = (addr: string, ports: string, plane: string): string =>
    `[{"addr_type":"EID","addr":"${addr}","ports":${ports},"plane_id":"${plane}"}]`;
  const level = (n: number, key: string, id: string, type: string, list: string): string =>
    `{"level":${n},"info":{"${key}":{"net_layer":${n},"net_instance_id":"${id}","net_type":"${type}","net_attr":"",` +
    `"rank_addr_list":${list}}}}`;
  return (
    `[${level(0, 'UB', '7_3', 'TOPO_FILE_DESC', item(eid('0020', '0009'), '["0/1","0/3"]', '0'))},` +
    `${level(1, 'UB', '7', 'CLOS', item(eid('0000', '0412'), '["1/2","1/5"]', '1'))},` +
    `${level(2, 'UBG', 'CLUSTER1', 'CLOS', item(eid('0060', '0000'), '["0/8","1/8"]', 'CLUSTER'))}]`
  );
}

async function startA5(before?: (s: AgentSandbox) => void, scenario = POD_1D): Promise<AgentSandbox> {
  sb = await AgentSandbox.create(scenario);
  before?.(sb);
  await sb.start([], {}, { resource: NPU });
  return sb;
}

interface Cfg {
  DeviceInfo: { DeviceList: Record<string, string>; UpdateTime: number };
  SuperPodID: number;
  ServerIndex: number;
  CheckCode: string;
  RackID?: number;
}

describe('spec B.3, C.1 Ascend910A5 registers huawei.com/npu', () => {
  test('B.3 kubelet sees huawei.com/npu with the IDs npu-<phy>, all healthy', async () => {
    const s = await startA5();
    const devices = await s.kubelet.waitForDevices(NPU, (d) => d.length === 8, 'eight devices');
    expect(devices.map((d) => d.ID).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `npu-${i}`).sort());
    expect(devices.every((d) => d.health === 'Healthy')).toBe(true);
    expect(s.kubelet.devices('huawei.com/Ascend910')).toBeUndefined();
  });

  test('C.4, L.8 Allocate in a 1D super pod sets HCCL_TOPO_FILE_PATH to the 1D topology file, with the chips mounted', async () => {
    const s = await startA5();
    await s.kubelet.waitForDevices(NPU, (d) => d.length === 8, 'eight devices');
    const res = await s.kubelet.allocate(NPU, [['npu-2', 'npu-5']]);
    const c = res.containerResponses[0]!;
    expect(c.envs.HCCL_TOPO_FILE_PATH).toBe('/usr/local/Ascend/driver/topo/950/atlas_950_1.json');
    expect(c.devices.map((d) => d.containerPath)).toEqual(
      expect.arrayContaining(['/dev/davinci2', '/dev/davinci5', '/dev/davinci_manager']),
    );
  });

  test('C.4, L.8 Allocate on an 8P server (super-pod type 0) names the server topology file', async () => {
    const s = await startA5(undefined, SERVER);
    await s.kubelet.waitForDevices(NPU, (d) => d.length === 8, 'eight devices');
    const res = await s.kubelet.allocate(NPU, [['npu-0']]);
    expect(res.containerResponses[0]!.envs.HCCL_TOPO_FILE_PATH).toBe(
      '/usr/local/Ascend/driver/topo/950/atlas_850_1.json',
    );
  });
});

describe('spec H.3 the A5 device-info ConfigMap', () => {
  test('H.3 in a 1D pod: DeviceList keys huawei.com/npu…, names npu-<phy>, SuperPodID/ServerIndex from B.7, RackID last', async () => {
    const s = await startA5();
    const data = await s.until(() => s.deviceInfo()?.data, 'the device-info ConfigMap', 20_000);
    const cfg = JSON.parse(data[KEY_DEVICE_INFO]!) as Cfg;
    expect(Object.keys(cfg.DeviceInfo.DeviceList).sort()).toEqual([
      'huawei.com/npu',
      'huawei.com/npu-Fault',
      'huawei.com/npu-NetworkUnhealthy',
      'huawei.com/npu-Recovering',
      'huawei.com/npu-Unhealthy',
    ]);
    expect(cfg.DeviceInfo.DeviceList[NPU]).toBe([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `npu-${i}`).join(','));
    expect([cfg.SuperPodID, cfg.ServerIndex, cfg.RackID]).toEqual([7, 2, 3]);
    expect(Object.keys(cfg)).toEqual(['DeviceInfo', 'SuperPodID', 'ServerIndex', 'CheckCode', 'RackID']);
    expect(cfg.CheckCode).toBe(checkCodeOf(cfg.DeviceInfo.DeviceList, cfg.DeviceInfo.UpdateTime));
  });

  test('H.3 on an 8P server the A5 DeviceInfoCfg has no RackID', async () => {
    const s = await startA5(undefined, SERVER);
    const data = await s.until(() => s.deviceInfo()?.data, 'the device-info ConfigMap', 20_000);
    const cfg = JSON.parse(data[KEY_DEVICE_INFO]!) as Cfg;
    expect(Object.keys(cfg)).toEqual(['DeviceInfo', 'SuperPodID', 'ServerIndex', 'CheckCode']);
    expect([cfg.SuperPodID, cfg.ServerIndex]).toEqual([3, 5]);
  });

  test('H.3 a SeparateNPU fault on npu-3: npu-3 in huawei.com/npu-Unhealthy and its fault entry named npu-3', async () => {
    const s = await startA5();
    await s.until(() => s.deviceInfo()?.data, 'the device-info ConfigMap', 20_000);
    await s.mock({ op: 'fault', logicId: 3, eventId: SEPARATE_CODE, assertion: 'occur' });
    const list = await s.until(
      () => (deviceList(s)?.['huawei.com/npu-Unhealthy'] === 'npu-3' ? deviceList(s) : undefined),
      'npu-3 in huawei.com/npu-Unhealthy',
    );
    expect(list[NPU]).toBe('npu-0,npu-1,npu-2,npu-4,npu-5,npu-6,npu-7');
    const faults = JSON.parse(list['huawei.com/npu-Fault']!) as { npu_name: string; fault_code: string }[];
    expect(faults.map((f) => [f.npu_name, f.fault_code])).toEqual([['npu-3', SEPARATE_CODE]]);
  });

  test('K.1 the fault Event of an A5 chip names it logicID:<id>', async () => {
    const s = await startA5();
    await s.mock({ op: 'fault', logicId: 3, eventId: SEPARATE_CODE, assertion: 'occur' });
    const e = await s.until(
      () => s.events().find((x) => (x.message ?? '').includes(`faultCodes:${SEPARATE_CODE}`)),
      'the fault Event',
    );
    expect(e.message).toContain('logicID:3,');
    expect(e.message).not.toContain('cardID:');
  });
});

describe('spec G.2, G.3 A5 manual separation with npu names', () => {
  test('G.3 after a restart without the state file npu-5 stays separated: the live ManuallySeparateNPU "npu-5" is read back', async () => {
    const s = await startA5();
    for (const assertion of ['occur', 'recover', 'occur'] as const) {
      await s.mock({ op: 'fault', logicId: 5, eventId: FREQUENCY_CODE, assertion });
      if (assertion === 'recover') {
        await s.until(() => s.kubelet.devices(NPU)?.find((d) => d.ID === 'npu-5')?.health === 'Healthy', 'recovered');
      }
    }
    await s.until(() => listed(s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE], 'npu-5'), 'ManuallySeparateNPU npu-5');
    s.agent!.child.kill('SIGTERM');
    expect((await s.agent!.waitExit()).code).toBe(0);
    await s.mock({ op: 'fault', logicId: 5, eventId: FREQUENCY_CODE, assertion: 'recover' }).catch(() => undefined);
    // without the state file only the live ConfigMap ("npu-5") can tell the agent
    fs.rmSync(path.join(s.dir, 'state'), { recursive: true, force: true });
    fs.mkdirSync(path.join(s.dir, 'state'));
    await s.start([], {}, { resource: NPU });
    const dev = await s.kubelet.waitForDevices(NPU, (d) => d.length === 8, 'eight devices');
    expect(dev.find((d) => d.ID === 'npu-5')?.health).toBe('Unhealthy');
    expect(s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE]).toBe('npu-5');
  });
});

describe('spec I.3 the A5 pod annotations', () => {
  test('I.3 a pod allocated npu-2 gets AscendReal npu-2 and the npu rank table with rack_id and an empty device_ip', async () => {
    const s = await startA5();
    const annotations = await s.allocatedPodAnnotations(NPU, ['npu-2']);
    expect(annotations[ANNOTATION_ASCEND_REAL]).toBe('npu-2');
    expect(annotations[ANNOTATION_RANK_TABLE_910]).toBeUndefined();
    const rank = JSON.parse(annotations[ANNOTATION_RANK_TABLE_NPU]!) as Record<string, unknown>;
    expect(rank).toMatchObject({ pod_name: 'train-0', super_pod_id: 7, rack_id: 3, server_index: '2' });
    expect(rank.devices).toEqual([
      { device_id: '2', device_ip: '', super_device_id: '2', levelList: JSON.parse(demoLevelList(2)) as unknown },
    ]);
    // byte for byte as upstream's encoding/json writes the device
    expect(annotations[ANNOTATION_RANK_TABLE_NPU]).toContain(
      `{"device_id":"2","device_ip":"","super_device_id":"2","levelList":${demoLevelList(2)}}`,
    );
  });
});

describe('spec I.1, I.2, A.2 step 8 the A5 node', () => {
  test('I.1, I.2 labels and annotations of an A5 node in a 1D pod', async () => {
    const s = await startA5();
    const node = await s.until(
      () => (s.node()?.metadata?.annotations?.baseDeviceInfos ? s.node() : undefined),
      'the node annotations',
    );
    const labels = node.metadata!.labels!;
    expect(labels.servertype).toBe('npu-32');
    expect(labels.accelerator).toBe('huawei-npu');
    expect(labels['huawei.com/topotree.superpodid']).toBe('7');
    expect(labels['huawei.com/topotree.rackid']).toBe('3');
    expect(labels['huawei.com/topotree.serverid']).toBe('2');
    const a = node.metadata!.annotations!;
    expect([a.serverType, a.superPodID, a.serverIndex, a.rackID]).toEqual(['npu', '7', '2', '3']);
    const base = JSON.parse(a.baseDeviceInfos!) as Record<string, Record<string, unknown>>;
    expect(Object.keys(base['npu-3']!)).toEqual(['DeviceID', 'IP', 'SuperDeviceID', 'levelList']);
    expect(a.baseDeviceInfos).toContain(
      `"npu-3":{"DeviceID":3,"IP":"","SuperDeviceID":3,"levelList":${demoLevelList(3)}}`,
    );
  });

  test('I.2 an A5 node without its topology file: no UB/UBG address, so levelList is left out', async () => {
    sb = await AgentSandbox.create(POD_1D);
    await sb.start([`-a5TopoDir=${path.join(sb.dir, 'no-topo')}`], {}, { resource: NPU });
    const s = sb;
    const a = await s.until(
      () => (s.node()?.metadata?.annotations?.baseDeviceInfos ? s.node()!.metadata!.annotations! : undefined),
      'the node annotations',
    );
    const base = JSON.parse(a.baseDeviceInfos!) as Record<string, Record<string, unknown>>;
    expect(Object.keys(base['npu-3']!)).toEqual(['DeviceID', 'IP', 'SuperDeviceID']);
  });

  test('I.2 a topology file that is not JSON: the agent runs on and leaves levelList out', async () => {
    sb = await AgentSandbox.create(POD_1D);
    const dir = path.join(sb.dir, 'bad-topo');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'atlas_950_1.json'), '{"edge_list": [');
    await sb.start([`-a5TopoDir=${dir}`], {}, { resource: NPU });
    const s = sb;
    const a = await s.until(
      () => (s.node()?.metadata?.annotations?.baseDeviceInfos ? s.node()!.metadata!.annotations! : undefined),
      'the node annotations',
    );
    const base = JSON.parse(a.baseDeviceInfos!) as Record<string, Record<string, unknown>>;
    expect(base['npu-0']).toEqual({ DeviceID: 0, IP: '', SuperDeviceID: 0 });
    await s.kubelet.waitForDevices(NPU, (d) => d.length === 8, 'eight devices');
  });

  test('A.2 step 8 huawei.com/Ascend910 leaves the capacity and allocatable of an A5 node', async () => {
    const s = await startA5((box) => {
      const t = box.api.resourceType('', 'nodes');
      const node = box.api.store.get(t, undefined, NODE_NAME)!;
      const res = { 'huawei.com/Ascend910': '8', cpu: '64' };
      box.api.store.update(t, undefined, NODE_NAME, { ...node, status: { capacity: res, allocatable: res } }, 'status');
    });
    const node = await s.until(
      () => (s.node()?.status?.capacity?.['huawei.com/Ascend910'] === undefined ? s.node() : undefined),
      'the capacity without huawei.com/Ascend910',
    );
    expect(node.status?.allocatable).toEqual({ cpu: '64' });
    expect(node.status?.capacity).toEqual({ cpu: '64' });
  });
});

describe('spec A.2 step 4.1 a DCMI library of neither generation', () => {
  test('A.2 step 4.1 a library with neither dcmi_init nor dcmiv2_init exits 3 naming both', async () => {
    sb = await AgentSandbox.create(POD_1D);
    // the switch library: a real shared object that is no DCMI library of either generation
    const lib = path.join(PROJECT_ROOT, 'build', 'Release', 'liblingqu-dcmi.so');
    const r = await runAgentOnce(sb.flags([`-dcmiLibrary=${lib}`]), sb.env());
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/lacks dcmi_init.* and dcmiv2_init/);
  });
});
