/** Ascend910A5 node labels, node annotations, rank table, capacity clean-up and in-use test (spec I.1, I.2, I.3,
 * A.2 step 8, D.7). */
import { describe, expect, test } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import {
  baseDeviceInfosValue,
  nodeAnnotationsOf,
  nodeLabelsOf,
  type NodeLabelFacts,
} from '../../src/kube/node-labeler.js';
import { rankTableJson, type RankChip } from '../../src/kube/pod-annotator.js';
import { removalPatchOf } from '../../src/kube/node-capacity.js';
import { devicesInUseOf, type CachedPod } from '../../src/kube/pod-cache-watcher.js';
import { faultEvent } from '../../src/kube/agent-events.js';

const A5: NodeLabelFacts = {
  chipKind: 'Ascend910A5',
  chipName: 'Ascend950PR',
  driverVersion: '25.5.0',
  aiCoreCount: 28,
  realCardType: 'Ascend910A5',
  boardId: 0x30,
  productTypes: [],
  superPodId: 3,
  serverIndex: 5,
  rackId: 7,
  superPodType: 0,
};

const LEVELS = '[{"net_layer":0}]';

describe('spec I.1 A5 topotree labels', () => {
  test('I.1 superpodid, rackid and serverid are written when not negative', () => {
    const { labels } = nodeLabelsOf(A5);
    expect(labels['huawei.com/topotree.superpodid']).toBe('3');
    expect(labels['huawei.com/topotree.rackid']).toBe('7');
    expect(labels['huawei.com/topotree.serverid']).toBe('5');
  });

  test('I.1 a negative rack id or server index leaves its label out', () => {
    const { labels } = nodeLabelsOf({ ...A5, rackId: -2, serverIndex: -2, superPodId: -2 });
    expect(Object.keys(labels).filter((k) => k.startsWith('huawei.com/topotree.'))).toEqual([]);
  });
});

describe('spec I.2 A5 node annotations', () => {
  test('I.2 baseDeviceInfos on A5 is DeviceID, IP, SuperDeviceID in that order', () => {
    const v = baseDeviceInfosValue([{ name: 'npu-1', ip: '', superDeviceId: 9, deviceId: 1 }], true);
    expect(v).toBe('{"npu-1":{"DeviceID":1,"IP":"","SuperDeviceID":9}}');
  });

  test('I.2 an empty levelList is left out, a non-empty one is written as the array', () => {
    const chips = [
      { name: 'npu-0', ip: '', superDeviceId: 0, deviceId: 0, levelListJson: '[]' },
      { name: 'npu-1', ip: '', superDeviceId: 1, deviceId: 1, levelListJson: LEVELS },
    ];
    expect(baseDeviceInfosValue(chips, true)).toBe(
      '{"npu-0":{"DeviceID":0,"IP":"","SuperDeviceID":0},' +
        `"npu-1":{"DeviceID":1,"IP":"","SuperDeviceID":1,"levelList":${LEVELS}}}`,
    );
  });

  test('I.2 other kinds keep {"IP","SuperDeviceID"}', () => {
    const v = baseDeviceInfosValue([{ name: 'Ascend910-0', ip: '1.2.3.4', superDeviceId: 0, deviceId: 0 }], false);
    expect(v).toBe('{"Ascend910-0":{"IP":"1.2.3.4","SuperDeviceID":0}}');
  });

  test('I.2 serverType npu; rackID only in a 1D or 2D pod', () => {
    expect(nodeAnnotationsOf(A5, []).serverType).toBe('npu');
    expect(nodeAnnotationsOf(A5, []).rackID).toBeUndefined();
    expect(nodeAnnotationsOf({ ...A5, superPodType: 1 }, []).rackID).toBe('7');
    expect(nodeAnnotationsOf({ ...A5, superPodType: 2 }, []).rackID).toBe('7');
  });

  test('I.2 cardType on the A5 300I cards', () => {
    expect(nodeAnnotationsOf({ ...A5, cardType: '300I-A5-4p' }, []).cardType).toBe('300I-A5-4p');
    expect(nodeAnnotationsOf(A5, []).cardType).toBeUndefined();
  });
});

describe('spec I.3 the A5 rank table', () => {
  const table = (chips: ReadonlyMap<number, RankChip>): string =>
    rankTableJson({
      podName: 'p',
      podUid: 'u',
      hostIp: 'h',
      superPodId: 3,
      serverIndex: 5,
      rackId: 7,
      realNames: ['npu-1'],
      chips,
      a5: true,
    });

  test('I.3 levelList is the array when present, rack_id the rack id, device_ip empty', () => {
    const json = table(new Map([[1, { phyId: 1, ip: '', superDeviceId: 1, levelList: LEVELS }]]));
    expect(json).toBe(
      '{"pod_name":"p","server_id":"u","host_ip":"h","super_pod_id":3,"devices":[{"device_id":"1",' +
        `"device_ip":"","super_device_id":"1","levelList":${LEVELS}}],"rack_id":7,"server_index":"5","server_ip":"h"}`,
    );
  });

  test('I.3 without levelList content the member is left out (omitempty)', () => {
    const json = table(new Map([[1, { phyId: 1, ip: '', superDeviceId: 1 }]]));
    expect(JSON.parse(json).devices[0]).toEqual({ device_id: '1', device_ip: '', super_device_id: '1' });
  });
});

describe('spec A.2 step 8 the obsolete 910 resource', () => {
  const node = (status: k8s.V1NodeStatus): k8s.V1Node => ({ metadata: { name: 'n' }, status });

  test('A.2 step 8 capacity and allocatable entries are removed by a merge patch of null', () => {
    const patch = removalPatchOf(
      node({ capacity: { 'huawei.com/Ascend910': '8', cpu: '4' }, allocatable: { 'huawei.com/Ascend910': '8' } }),
      'huawei.com/Ascend910',
    );
    expect(patch).toEqual({
      status: { capacity: { 'huawei.com/Ascend910': null }, allocatable: { 'huawei.com/Ascend910': null } },
    });
  });

  test('A.2 step 8 nothing to patch when the node does not list the resource', () => {
    expect(removalPatchOf(node({ capacity: { cpu: '4' } }), 'huawei.com/Ascend910')).toBeUndefined();
    expect(removalPatchOf({ metadata: { name: 'n' } }, 'huawei.com/Ascend910')).toBeUndefined();
  });
});

describe('spec D.7 the A5 in-use test reads huawei.com/npu', () => {
  const pod = (annotations: Record<string, string>): CachedPod => ({
    uid: 'u',
    namespace: 'ns',
    name: 'p',
    annotations,
    containerLimits: [],
    deleting: false,
    waitingMessages: [],
    phase: 'Running',
    labels: {},
  });

  test('D.7 on A5 the chips of huawei.com/npu are in use', () => {
    expect([...devicesInUseOf([pod({ 'huawei.com/npu': 'npu-1,npu-2' })], 'npu')]).toEqual(['npu-1', 'npu-2']);
  });

  test('D.7 on A5 the huawei.com/Ascend910 annotation does not count', () => {
    expect(devicesInUseOf([pod({ 'huawei.com/Ascend910': 'Ascend910-1' })], 'npu').size).toBe(0);
  });
});

describe('spec K.1 the A5 fault Event', () => {
  const e = { logicId: 3, cardId: 3, deviceId: 0, code: '80E3A201', assertion: 'occur' as const, level: 'SeparateNPU' };

  test('K.1 on A5 the message names the chip by logic id', () => {
    expect(faultEvent('n', { ...e, a5: true }, 0).message).toMatch(/assertion:Occur, logicID:3, faultCodes:80E3A201,/);
  });

  test('K.1 other kinds name cardID and deviceID', () => {
    expect(faultEvent('n', e, 0).message).toMatch(/assertion:Occur, cardID:3, deviceID:0, faultCodes:80E3A201,/);
  });
});
