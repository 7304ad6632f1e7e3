import { describe, expect, test } from '@jest/globals';
import { type DeviceFault, type NodeDeviceView } from '../../../src/cluster/device-view.js';
import { faultKey, PublicFaultCache, type NewRecord } from '../../../src/cluster/public-fault/cache.js';
import { PubFaultProcessor } from '../../../src/cluster/public-fault/processor.js';

const S = 1_772_330_400;
const NOW_MS = 1_772_446_000_123;

function view(node: string, faults: [string, DeviceFault][] = []): NodeDeviceView {
  const m = new Map<string, DeviceFault[]>();
  for (const [d, f] of faults) m.set(d, [...(m.get(d) ?? []), f]);
  return {
    node,
    deviceType: 'Ascend910',
    deviceList: {
      'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-3,Ascend910-4,Ascend910-6,Ascend910-7',
      'huawei.com/Ascend910-Unhealthy': faults.length > 0 ? 'Ascend910-5' : '',
      'huawei.com/Ascend910-NetworkUnhealthy': '',
    },
    updateTime: 1,
    superPodId: -2,
    serverIndex: -2,
    rackId: -2,
    faults: m,
  };
}

function rec(over: Partial<NewRecord> = {}): NewRecord {
  return {
    resource: 'CCAE',
    faultId: 'fault-0001',
    faultType: 'Storage',
    faultCode: '220001001',
    level: 'SeparateNPU',
    devIds: [0, 1],
    faultTime: S,
    ...over,
  };
}

function run(cache: PublicFaultCache, views: NodeDeviceView[]): Map<string, NodeDeviceView> {
  const m = new Map(views.map((v) => [v.node, v]));
  new PubFaultProcessor(cache).process(m, NOW_MS);
  return m;
}

function codes(v: NodeDeviceView | undefined, device: string): string[] {
  return (v?.faults.get(device) ?? []).map((f) => `${f.object.fault_type}:${f.code}@${f.faultTime}`);
}

describe('§2.9 PubFaultProcessor', () => {
  test('§4.2 TestProcessor: an empty cache leaves the input unchanged', () => {
    const before = view('node-1');
    const after = run(new PublicFaultCache(), [view('node-1')]);
    expect(after.get('node-1')).toEqual(before);
  });

  test('§4.2 TestProcessor: a fault for a node without a device view leaves the input unchanged', () => {
    const c = new PublicFaultCache();
    c.insert('ghost', faultKey('CCAE', 'fault-0001'), rec(), S);
    expect(run(c, [view('node-1')]).get('node-1')).toEqual(view('node-1'));
  });

  test('§4.2 TestProcessor: SeparateNPU devices 0 and 1 get PublicFault entries and move to Unhealthy', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec(), S);
    const v = run(c, [view('node-1')]).get('node-1')!;
    expect([
      v.deviceList['huawei.com/Ascend910'],
      v.deviceList['huawei.com/Ascend910-Unhealthy'],
      codes(v, 'Ascend910-0'),
      codes(v, 'Ascend910-1'),
    ]).toEqual([
      'Ascend910-2,Ascend910-3,Ascend910-4,Ascend910-6,Ascend910-7',
      'Ascend910-0,Ascend910-1',
      [`PublicFault:220001001@${S}`],
      [`PublicFault:220001001@${S}`],
    ]);
  });

  test('§4.2 TestProcessor: a device with a device-plugin fault keeps it and gets the public one too', () => {
    const c = new PublicFaultCache();
    c.insert('node-2', faultKey('CCAE', 'fault-0001'), rec({ devIds: [0, 5] }), S);
    const own: DeviceFault = {
      code: '80E01801',
      level: 'RestartNPU',
      faultTime: 1,
      receivedTime: 1,
      object: {
        fault_type: 'CardUnhealthy',
        npu_name: 'Ascend910-5',
        large_model_fault_level: 'RestartNPU',
        fault_level: 'RestartNPU',
        fault_handling: 'RestartNPU',
        fault_code: '80E01801',
        fault_time_and_level_map: { '80E01801': { fault_time: 1, fault_level: 'RestartNPU' } },
      },
    };
    const v = run(c, [view('node-2', [['Ascend910-5', own]])]).get('node-2')!;
    expect([v.deviceList['huawei.com/Ascend910-Unhealthy'], codes(v, 'Ascend910-5')]).toEqual([
      'Ascend910-5,Ascend910-0',
      ['CardUnhealthy:80E01801@1', `PublicFault:220001001@${S}`],
    ]);
  });

  test('§2.9 the injected object is exactly the documented one', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec({ devIds: [3] }), S);
    const f = run(c, [view('node-1')])
      .get('node-1')!
      .faults.get('Ascend910-3')![0]!;
    expect([f.receivedTime, f.object]).toEqual([
      0,
      {
        fault_type: 'PublicFault',
        npu_name: 'Ascend910-3',
        large_model_fault_level: 'SeparateNPU',
        fault_level: 'SeparateNPU',
        fault_handling: 'SeparateNPU',
        fault_code: '220001001',
        fault_time_and_level_map: { '220001001': { fault_time: S, fault_level: 'SeparateNPU' } },
      },
    ]);
  });

  test('§2.9 UpdateTime becomes now (s) when something was added', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec(), S);
    expect(run(c, [view('node-1')]).get('node-1')!.updateTime).toBe(Math.floor(NOW_MS / 1000));
  });

  test('§2.9 a SubHealthFault public fault only adds the entry (device stays available)', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec({ level: 'SubHealthFault', faultCode: '010001001' }), S);
    const v = run(c, [view('node-1')]).get('node-1')!;
    expect([v.deviceList['huawei.com/Ascend910']?.includes('Ascend910-0'), codes(v, 'Ascend910-0').length]).toEqual([
      true,
      1,
    ]);
  });

  test('§2.9 a NotHandleFault public fault leaves Unhealthy untouched', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec({ level: 'NotHandleFault', faultCode: '200001006' }), S);
    expect(run(c, [view('node-1')]).get('node-1')!.deviceList['huawei.com/Ascend910-Unhealthy']).toBe('');
  });

  test('§2.9 "A,A": the same code with different faultTime gives two entries on the NPU', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec({ devIds: [2] }), S);
    c.insert(
      'node-1',
      faultKey('CCAE', 'fault-0002'),
      rec({ faultId: 'fault-0002', devIds: [2], faultTime: S + 7 }),
      S,
    );
    expect(codes(run(c, [view('node-1')]).get('node-1'), 'Ascend910-2')).toEqual([
      `PublicFault:220001001@${S}`,
      `PublicFault:220001001@${S + 7}`,
    ]);
  });

  test('§2.9 fully identical injected objects collapse into one', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec({ devIds: [2] }), S);
    c.insert('node-1', faultKey('pingmesh', 'fault-0001'), rec({ resource: 'pingmesh', devIds: [2] }), S);
    expect(codes(run(c, [view('node-1')]).get('node-1'), 'Ascend910-2')).toHaveLength(1);
  });

  test('§2.9 distinct codes A and B both land on the NPU', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec({ devIds: [2] }), S);
    c.insert(
      'node-1',
      faultKey('CCAE', 'fault-0002'),
      rec({ faultId: 'fault-0002', faultCode: '220001002', devIds: [2] }),
      S,
    );
    expect(codes(run(c, [view('node-1')]).get('node-1'), 'Ascend910-2').map((s) => s.split('@')[0])).toEqual([
      'PublicFault:220001001',
      'PublicFault:220001002',
    ]);
  });

  test('§2.9 re-running on an unchanged view adds nothing and keeps UpdateTime', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', faultKey('CCAE', 'fault-0001'), rec(), S);
    const views = run(c, [view('node-1')]);
    views.get('node-1')!.updateTime = 42;
    new PubFaultProcessor(c).process(views, NOW_MS + 5000);
    expect([views.get('node-1')!.updateTime, codes(views.get('node-1'), 'Ascend910-0').length]).toEqual([42, 1]);
  });
});

describe('§2.9 the injected object', () => {
  test('§2.9 a faultCode "__proto__" is an own key of fault_time_and_level_map, not the prototype', () => {
    const cache = new PublicFaultCache();
    cache.insert('n1', faultKey('CCAE', 'f-1'), rec({ faultCode: '__proto__', devIds: [0] }), S);
    const map = run(cache, [view('n1')])
      .get('n1')!
      .faults.get('Ascend910-0')![0]!.object.fault_time_and_level_map;
    expect([Object.keys(map), Object.getPrototypeOf(map), map.__proto__]).toEqual([
      ['__proto__'],
      Object.prototype,
      { fault_time: S, fault_level: 'SeparateNPU' },
    ]);
  });
});
