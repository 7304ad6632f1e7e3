/**
 * The direct encoder of a node's published value (issue [O], start-up at 10,000 nodes) against the generic Go
 * encoder it replaces: the same bytes for every input, including the characters Go escapes and keys whose order
 * differs between UTF-16 and UTF-8.
 */
import v8 from 'node:v8';
import { describe, expect, test } from '@jest/globals';
import { publishedNodeJson, publishedNodeJsonGeneric } from '../../src/cluster/cluster-info.js';
import { compareGoStrings } from '../../src/core/go-json.js';
import type { DeviceFault, NodeDeviceView } from '../../src/cluster/device-view.js';
import { manualMarker } from '../../src/cluster/manual-fault-processor.js';
import { faultObject } from './helpers.js';

const df = (dev: string, code: string, level: string, type = 'CardUnhealthy', t = 7): DeviceFault => ({
  code,
  level,
  faultTime: t,
  receivedTime: 1,
  object: faultObject(dev, code, level, t, type),
});

function view(
  deviceType: string,
  faults: [string, DeviceFault[]][],
  list: Record<string, string> = {},
): NodeDeviceView {
  return {
    node: 'node-<&>\u2028',
    deviceType,
    deviceList: list,
    updateTime: 1772359200,
    superPodId: -2,
    serverIndex: 3,
    rackId: -0,
    faults: new Map(faults),
  };
}

describe('0.3 published node value, written directly', () => {
  test('0.3 the same bytes as the Go encoder for merged faults, HTML characters, separators and markers', () => {
    const v = view(
      'Ascend910',
      [
        ['Ascend910-3', [df('Ascend910-3', '220001001', 'SeparateNPU'), df('Ascend910-3', '80E01801', 'RestartNPU')]],
        [
          'Ascend910-10',
          [df('Ascend910-10', 'A<B>&"\\', 'RestartBusiness', 'Public\u2029Fault'), manualMarker('Ascend910-10')],
        ],
        ['Ascend910-2', [df('Ascend910-2', 'x\n\t\u0001\u001f\u007f/', 'NotHandleFault', 'CardUnhealthy', -5)]],
        ['Ascend910-4', [df('Ascend910-4', 'b\bf\f', 'RestartNPU'), df('Ascend910-4', 'lone\ud800', 'RestartNPU')]],
      ],
      {
        'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1',
        'huawei.com/Ascend910-Unhealthy': 'Ascend910-3',
        'huawei.com/Ascend910-Recovering': '<x>',
        'huawei.com/Ascend910-extra': 'dropped',
      },
    );
    expect(publishedNodeJson(v)).toBe(publishedNodeJsonGeneric(v));
  });

  test('0.3 a fault code "__proto__" is a key of the time map like any other, alone or merged, as in a Go map', () => {
    const v = view('Ascend910', [
      ['Ascend910-1', [df('Ascend910-1', '__proto__', 'RestartNPU')]],
      ['Ascend910-2', [df('Ascend910-2', '__proto__', 'RestartNPU'), df('Ascend910-2', '80E01801', 'RestartNPU')]],
    ]);
    const entry = '\\"__proto__\\":{\\"fault_time\\":7,\\"fault_level\\":\\"RestartNPU\\"}';
    for (const json of [publishedNodeJson(v), publishedNodeJsonGeneric(v)]) {
      expect(json.split(entry)).toHaveLength(3);
    }
    expect(publishedNodeJson(v)).toBe(publishedNodeJsonGeneric(v));
  });

  test('0.3 the same bytes as the Go encoder for device types with HTML and non-Latin-1 characters in the keys', () => {
    const fault = (t: string): [string, DeviceFault[]][] => [[`${t}-1`, [df(`${t}-1`, 'A', 'RestartNPU')]]];
    const types = ['Ascend<&>', 'Ascend\u4e00', 'Ascend\u00e9', 'Ascend\u2028'];
    expect(
      types.map((t) => {
        const v = view(t, fault(t), { [`huawei.com/${t}`]: `${t}-0`, [`huawei.com/${t}-Unhealthy`]: `${t}-1` });
        return publishedNodeJson(v) === publishedNodeJsonGeneric(v);
      }),
    ).toEqual(types.map(() => true));
  });

  test('0.3 the same bytes as the Go encoder when map keys sort differently in UTF-16 and UTF-8', () => {
    // U+FF01 is above a surrogate pair in UTF-16 order but below it in UTF-8 (code point) order
    const v = view('Ascend310P', [
      ['d', [df('d', '\uff01', 'RestartNPU'), df('d', '\ud83d\ude00', 'RestartNPU'), df('d', 'z', 'RestartNPU')]],
      ['\uff01', [df('\uff01', 'a', 'RestartNPU')]],
      ['\ud83d\ude00', [df('\ud83d\ude00', 'a', 'RestartNPU')]],
    ]);
    expect(publishedNodeJson(v)).toBe(publishedNodeJsonGeneric(v));
  });

  test('0.3 the same bytes as the Go encoder for 300 random views (several types per device, markers, repeated and empty codes)', () => {
    let seed = 7;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
    const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
    const types = ['CardUnhealthy', 'PublicFault', 'CardNetworkUnhealthy', 'Z<'];
    const levels = ['SeparateNPU', 'RestartNPU', 'NotHandleFault', 'SubHealthFault', 'ManuallySeparateNPU', 'Odd'];
    const codes = ['220001001', '80E01801', '', 'A,B', '8C084E00'];
    const mismatches: number[] = [];
    for (let i = 0; i < 300; i++) {
      const faults: [string, DeviceFault[]][] = [];
      for (let d = Math.floor(rnd() * 5); d > 0; d--) {
        const dev = `Ascend910-${Math.floor(rnd() * 16)}`;
        const list = Array.from({ length: Math.floor(rnd() * 5) }, () =>
          rnd() < 0.1 ? manualMarker(dev) : df(dev, pick(codes), pick(levels), pick(types), Math.floor(rnd() * 100)),
        );
        faults.push([dev, list]);
      }
      const v = view('Ascend910', faults);
      if (publishedNodeJson(v) !== publishedNodeJsonGeneric(v)) mismatches.push(i);
    }
    expect(mismatches).toEqual([]);
  });

  test('0.3 codes are joined with repeats and empties kept (",X" for an empty code then X), as the Go encoder writes them', () => {
    const v = view('Ascend910', [
      ['Ascend910-1', [df('Ascend910-1', '', 'RestartNPU'), df('Ascend910-1', 'X', 'RestartNPU')]],
    ]);
    expect([publishedNodeJson(v), publishedNodeJson(v).includes('\\"fault_code\\":\\",X\\"')]).toEqual([
      publishedNodeJsonGeneric(v),
      true,
    ]);
  });

  test('0.3 a time that is not an integer is refused as the Go encoder refuses it', () => {
    const v = view('Ascend910', [['Ascend910-0', [df('Ascend910-0', 'A', 'RestartNPU', 'CardUnhealthy', 1.5)]]]);
    expect(() => publishedNodeJson(v)).toThrow(/not a safe integer/);
  });

  test('issue [P] 6 0.3 a value of ASCII text is stored one byte per character, also once the encoder is optimised', () => {
    // V8's serialisation tags a string by its storage: '"' one byte per character, 'c' UTF-16 (after padding)
    const storage = (s: string): string => {
      const b = v8.serialize(s);
      let i = 2;
      while (b[i] === 0) i++;
      return b[i] === 0x22 ? 'one byte' : b[i] === 0x63 ? 'UTF-16' : `tag ${b[i]}`;
    };
    const ascii = (n: number): NodeDeviceView => ({
      ...view('Ascend910', [
        [`Ascend910-${n % 16}`, [df(`Ascend910-${n % 16}`, '010001001', 'SubHealthFault', 'PublicFault', 1772359140)]],
      ]),
      node: `node-${n}`,
      deviceList: {
        'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1',
        'huawei.com/Ascend910-Unhealthy': 'Ascend910-3',
      },
    });
    const first = publishedNodeJson(ascii(0));
    // enough calls for the optimising compiler to take the function over (the published values of a 10,000-node start)
    let last = first;
    for (let n = 1; n <= 50_000; n++) last = publishedNodeJson(ascii(n));
    expect([storage(first), storage(last), last]).toEqual([
      'one byte',
      'one byte',
      publishedNodeJsonGeneric(ascii(50_000)),
    ]);
  });

  test('0.3 names sort by their UTF-8 bytes, as Go sorts map keys', () => {
    const names = ['b', 'a\uff01', 'a\ud83d\ude00', 'a', 'ab', 'A', 'a~'];
    const bytes = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect([...names].sort(compareGoStrings)).toEqual(bytes);
  });
});
