import { describe, expect, test } from '@jest/globals';
import { decodeManualInfoData, encodeNodeEntry, ManualCache } from '../../src/cluster/manual-cache.js';

const node1 = () => {
  const c = new ManualCache();
  c.addSeparateDev('node-1', 'Ascend910-3', '80E01801', 10);
  return c;
};

describe('1.6 manual cache', () => {
  test('1.6 addSeparateDev on a new node creates Total and Detail', () => {
    expect(node1().toConfigMapData()).toEqual({
      'node-1':
        '{"Total":["Ascend910-3"],"Detail":{"Ascend910-3":[{"FaultCode":"80E01801","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":10}]}}',
    });
  });

  test('1.6 a new device is appended to Total', () => {
    const c = node1();
    c.addSeparateDev('node-1', 'Ascend910-0', 'X', 11);
    expect(c.snapshot().get('node-1')?.Total).toEqual(['Ascend910-3', 'Ascend910-0']);
  });

  test('1.6 a new code is appended to Detail', () => {
    const c = node1();
    c.addSeparateDev('node-1', 'Ascend910-3', '8C084E00', 11);
    expect(
      c
        .snapshot()
        .get('node-1')
        ?.Detail.get('Ascend910-3')
        ?.map((x) => x.FaultCode),
    ).toEqual(['80E01801', '8C084E00']);
  });

  test('1.6 the same code refreshes LastSeparateTime', () => {
    const c = node1();
    c.addSeparateDev('node-1', 'Ascend910-3', '80E01801', 99);
    expect(c.snapshot().get('node-1')?.Detail.get('Ascend910-3')?.[0]?.LastSeparateTime).toBe(99);
  });

  test('1.6 the written Total is sorted by byte order', () => {
    const c = new ManualCache();
    c.addSeparateDev('n', 'Ascend910-2', 'a', 1);
    c.addSeparateDev('n', 'Ascend910-10', 'a', 1);
    expect(JSON.parse(c.toConfigMapData().n!).Total).toEqual(['Ascend910-10', 'Ascend910-2']);
  });

  test('1.6 deleteSeparateDev removes the node when Total empties', () => {
    const c = node1();
    c.deleteSeparateDev('node-1', 'Ascend910-3');
    c.deleteSeparateDev('node-9', 'Ascend910-3');
    expect(c.isEmpty).toBe(true);
  });

  test('1.6 deleteSeparateDev keeps other devices', () => {
    const c = node1();
    c.addSeparateDev('node-1', 'Ascend910-0', 'X', 1);
    c.deleteSeparateDev('node-1', 'Ascend910-3');
    expect([c.has('node-1', 'Ascend910-0'), c.has('node-1', 'Ascend910-3')]).toEqual([true, false]);
  });

  test('1.6 deleteDevCode removes one code and keeps the device while codes remain', () => {
    const c = node1();
    c.addSeparateDev('node-1', 'Ascend910-3', 'X', 1);
    c.deleteDevCode('node-1', 'Ascend910-3', '80E01801');
    expect(c.has('node-1', 'Ascend910-3')).toBe(true);
  });

  test('1.6 deleteDevCode of the last code removes device and node', () => {
    const c = node1();
    c.deleteDevCode('node-1', 'Ascend910-3', '80E01801');
    c.deleteDevCode('node-x', 'd', 'c');
    expect(c.isEmpty).toBe(true);
  });

  test('1.6 decode treats a missing Detail as {} and reports unreadable keys', () => {
    const { entries, bad } = decodeManualInfoData({ a: '{"Total":["Ascend910-1"]}', b: '{oops' });
    expect([entries.get('a')?.Detail.size, bad.map((x) => x.key)]).toEqual([0, ['b']]);
  });

  test('1.6 encode/decode round-trip', () => {
    const e = node1().snapshot().get('node-1')!;
    expect(decodeManualInfoData({ n: encodeNodeEntry(e) }).entries.get('n')).toEqual(e);
  });

  test('1.6 set(null) empties the cache', () => {
    const c = node1();
    c.set(null);
    expect(c.isEmpty).toBe(true);
  });
});
