import { describe, expect, test } from '@jest/globals';
import { buildChunks, mergeFaults, publishedNodeJson } from '../../src/cluster/cluster-info.js';
import type { DeviceFault, NodeDeviceView } from '../../src/cluster/device-view.js';
import { manualMarker } from '../../src/cluster/manual-fault-processor.js';
import { faultObject } from './helpers.js';

const df = (dev: string, code: string, level: string, type = 'CardUnhealthy'): DeviceFault => ({
  code,
  level,
  faultTime: 7,
  receivedTime: 1,
  object: faultObject(dev, code, level, 7, type),
});

function view(node: string, faults: [string, DeviceFault[]][] = []): NodeDeviceView {
  return {
    node,
    deviceType: 'Ascend910',
    deviceList: { 'huawei.com/Ascend910': 'Ascend910-0', 'huawei.com/Ascend910-Fault': '[]' },
    updateTime: 5,
    superPodId: -2,
    serverIndex: -2,
    rackId: -2,
    faults: new Map(faults),
  };
}

describe('0.3 published view', () => {
  test('0.3 same-type faults of a device merge with the most severe level', () => {
    const m = mergeFaults(
      new Map([['Ascend910-3', [df('Ascend910-3', 'A', 'RestartNPU'), df('Ascend910-3', 'B', 'SeparateNPU')]]]),
    );
    expect(m.map((o) => [o.fault_code, o.fault_level, Object.keys(o.fault_time_and_level_map)])).toEqual([
      ['A,B', 'SeparateNPU', ['A', 'B']],
    ]);
  });

  test('0.3 ManuallySeparateNPU members are excluded from code and map but set the level', () => {
    const m = mergeFaults(
      new Map([['Ascend910-3', [df('Ascend910-3', 'A', 'RestartNPU'), manualMarker('Ascend910-3')]]]),
    );
    expect([m[0]?.fault_code, m[0]?.fault_level, Object.keys(m[0]!.fault_time_and_level_map)]).toEqual([
      'A',
      'ManuallySeparateNPU',
      ['A'],
    ]);
  });

  test('0.3 devices sorted by name and fault types sorted', () => {
    const m = mergeFaults(
      new Map([
        ['Ascend910-3', [df('Ascend910-3', 'A', 'RestartNPU', 'PublicFault'), df('Ascend910-3', 'B', 'RestartNPU')]],
        ['Ascend910-0', [df('Ascend910-0', 'C', 'RestartNPU')]],
      ]),
    );
    expect(m.map((o) => `${o.npu_name}/${o.fault_type}`)).toEqual([
      'Ascend910-0/CardUnhealthy',
      'Ascend910-3/CardUnhealthy',
      'Ascend910-3/PublicFault',
    ]);
  });

  test('0.3 a node value has Go field order and CmName', () => {
    expect(publishedNodeJson(view('node-1'))).toBe(
      '{"DeviceList":{"huawei.com/Ascend910":"Ascend910-0","huawei.com/Ascend910-Fault":"[]","huawei.com/Ascend910-NetworkUnhealthy":"","huawei.com/Ascend910-Recovering":"","huawei.com/Ascend910-Unhealthy":""},"UpdateTime":5,"CmName":"mindx-dl-deviceinfo-node-1","SuperPodID":-2,"RackID":-2,"ServerIndex":-2}',
    );
  });

  test('0.3 nodes are split into chunks under the size limit', () => {
    const views = new Map(Array.from({ length: 10 }, (_, i) => [`n${i}`, view(`n${i}`)] as const));
    const chunks = buildChunks(views, 0, 600);
    expect([chunks.length > 1, chunks.every((c) => Buffer.byteLength(c) <= 600)]).toEqual([true, true]);
  });

  test('0.3 a chunk index once used stays in use with empty content', () => {
    expect(buildChunks(new Map([['n', view('n')]]), 3)).toHaveLength(3);
  });
});
