import { describe, expect, test } from '@jest/globals';
import {
  EMPTY_RESET_INFO,
  RESET_INFO_ANNOTATION,
  ResetInfoManager,
  appendDevs,
  dedupeByPhyId,
  deleteDevs,
  encodeResetInfo,
  overwriteDevs,
  parseResetInfo,
  type ResetDev,
} from '../../src/reset/reset-info.js';
import type { NodeAnnotationApi } from '../../src/reset/types.js';
import type { Logger } from '../../src/core/logger.js';
import { FakeClock } from '../health/fake-clock.js';

const dev = (phy: number, logic = phy, card = phy, assoc = -1): ResetDev => ({
  CardId: card,
  DeviceId: 0,
  AssociatedCardId: assoc,
  PhyID: phy,
  LogicID: logic,
});

/** A Node's annotations: reads/writes logged; the first `failWrites` writes (and `failReads` reads) reject. */
class FakeNode implements NodeAnnotationApi {
  writes: string[] = [];
  reads = 0;
  failWrites = 0;
  failReads = 0;
  constructor(public value?: string) {}
  read(key: string): Promise<string | undefined> {
    expect(key).toBe(RESET_INFO_ANNOTATION);
    this.reads++;
    if (this.failReads > 0) {
      this.failReads--;
      return Promise.reject(new Error('read refused'));
    }
    return Promise.resolve(this.value);
  }
  write(key: string, value: string): Promise<void> {
    expect(key).toBe(RESET_INFO_ANNOTATION);
    if (this.failWrites > 0) {
      this.failWrites--;
      return Promise.reject(new Error('patch refused'));
    }
    this.writes.push(value);
    this.value = value;
    return Promise.resolve();
  }
}

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (a: unknown, b?: string): void => {
      lines.push(`${level} ${typeof a === 'string' ? a : (b ?? '')}`);
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

async function loaded(value?: string) {
  const clock = new FakeClock();
  const node = new FakeNode(value);
  const logger = recordingLogger();
  const m = new ResetInfoManager({ api: node, clock, logger });
  await m.load();
  return { clock, node, m, logger };
}

describe('ResetInfo text (§J.7, §4.3)', () => {
  test('§4.3 Go-exact JSON: both lists always arrays, fields in declaration order (HR-08 vector)', () => {
    expect(encodeResetInfo({ ThirdPartyResetDevs: null, ManualResetDevs: [dev(0, 0, 0)] })).toBe(
      '{"ThirdPartyResetDevs":[],"ManualResetDevs":[{"CardId":0,"DeviceId":0,"AssociatedCardId":-1,"PhyID":0,"LogicID":0}]}',
    );
    expect(encodeResetInfo(EMPTY_RESET_INFO)).toBe('{"ThirdPartyResetDevs":[],"ManualResetDevs":[]}');
  });

  test('§J.7 parse keeps upstream nil lists as null', () => {
    expect(parseResetInfo('{"ThirdPartyResetDevs":null,"ManualResetDevs":null}')).toEqual({
      info: { ThirdPartyResetDevs: null, ManualResetDevs: null },
    });
  });

  test('§4.3 parse follows json.Unmarshal: case-insensitive keys, unknown keys ignored, null fields zero', () => {
    const p = parseResetInfo(
      '{"manualresetdevs":[{"cardid":3,"DEVICEID":1,"AssociatedCardId":null,"PhyID":7,"LogicID":6,"x":1}],"Other":2}',
    );
    expect(p.warning).toBeUndefined();
    expect(p.info).toEqual({
      ThirdPartyResetDevs: null,
      ManualResetDevs: [{ CardId: 3, DeviceId: 1, AssociatedCardId: 0, PhyID: 7, LogicID: 6 }],
    });
  });

  test('§4.3 missing annotation → empty with a warning', () => {
    const p = parseResetInfo(undefined);
    expect(p.info).toEqual(EMPTY_RESET_INFO);
    expect(p.warning).toContain('absent');
  });

  test.each([
    ['not JSON', '{', 'not usable'],
    ['not an object', '[1]', 'not a JSON object'],
    ['list not an array', '{"ManualResetDevs":{}}', 'ManualResetDevs is not an array'],
    ['entry not an object', '{"ThirdPartyResetDevs":[1]}', 'ThirdPartyResetDevs[0] is not an object'],
    ['field not an integer', '{"ManualResetDevs":[{"PhyID":"1"}]}', 'ManualResetDevs[0].PhyID is not an integer'],
    ['fractional number', '{"ManualResetDevs":[{"PhyID":1.5}]}', 'PhyID is not an integer'],
  ])('§4.3 unparsable (%s) → empty with a warning', (_name, text, why) => {
    const p = parseResetInfo(text);
    expect(p.info).toEqual(EMPTY_RESET_INFO);
    expect(p.warning).toContain(why);
  });
});

describe('ResetInfo list operations (§4.3)', () => {
  test('§4.3 de-duplication by PhyID keeps the first entry', () => {
    expect(dedupeByPhyId([dev(1, 1), dev(2), dev(1, 9)])).toEqual([dev(1, 1), dev(2)]);
  });

  test('§4.3 append = current then new, de-duplicated', () => {
    expect(appendDevs([dev(1, 1)], [dev(1, 5), dev(3)])).toEqual([dev(1, 1), dev(3)]);
    expect(appendDevs(null, [dev(2)])).toEqual([dev(2)]);
  });

  test('§4.3 delete = current minus the given PhyIDs', () => {
    expect(deleteDevs([dev(1), dev(2), dev(3)], [2, 9])).toEqual([dev(1), dev(3)]);
    expect(deleteDevs(null, [1])).toEqual([]);
  });

  test('§4.3 overwrite = the new list, de-duplicated', () => {
    expect(overwriteDevs([dev(4), dev(4, 8)])).toEqual([dev(4)]);
  });
});

describe('ResetInfoManager (§4.3 writes, only on change)', () => {
  test('§4.3 loads once from the Node', async () => {
    const { node, m } = await loaded('{"ThirdPartyResetDevs":[],"ManualResetDevs":[{"PhyID":2,"LogicID":2}]}');
    await m.load();
    expect(node.reads).toBe(1);
    expect(m.has('ManualResetDevs', 2)).toBe(true);
  });

  test('§4.3 an append is written once as Go-exact JSON', async () => {
    const { node, m } = await loaded();
    m.append('ManualResetDevs', [dev(0)]);
    await m.whenIdle();
    expect(node.writes).toEqual([
      '{"ThirdPartyResetDevs":[],"ManualResetDevs":[{"CardId":0,"DeviceId":0,"AssociatedCardId":-1,"PhyID":0,"LogicID":0}]}',
    ]);
  });

  test('§J.7 fix: appending an entry already present writes nothing (upstream patches every cycle)', async () => {
    const { node, m } = await loaded();
    m.append('ManualResetDevs', [dev(0)]);
    await m.whenIdle();
    for (let i = 0; i < 5; i++) m.append('ManualResetDevs', [dev(0)]);
    m.remove([5]);
    await m.whenIdle();
    expect(node.writes).toHaveLength(1);
  });

  test('§4.3 removing a chip that is in no list writes nothing, also over an upstream null value', async () => {
    const { node, m } = await loaded('{"ThirdPartyResetDevs":null,"ManualResetDevs":null}');
    m.remove([0, 1, 2]);
    await m.whenIdle();
    expect(node.writes).toEqual([]);
  });

  test('§4.3 remove deletes the chip from both lists in one write', async () => {
    const { node, m } = await loaded(
      encodeResetInfo({ ThirdPartyResetDevs: [dev(1), dev(2)], ManualResetDevs: [dev(1), dev(3)] }),
    );
    m.remove([1]);
    await m.whenIdle();
    expect(node.writes).toEqual([encodeResetInfo({ ThirdPartyResetDevs: [dev(2)], ManualResetDevs: [dev(3)] })]);
  });

  test('§4.3 the changes of one synchronous turn go out in one write (HR-27: removal and move together)', async () => {
    const { node, m } = await loaded(
      encodeResetInfo({ ThirdPartyResetDevs: [dev(1), dev(2)], ManualResetDevs: [dev(3)] }),
    );
    m.remove([3]);
    m.moveToManual([2]);
    await m.whenIdle();
    expect(node.writes).toEqual([encodeResetInfo({ ThirdPartyResetDevs: [dev(1)], ManualResetDevs: [dev(2)] })]);
  });

  test('§4.3 overwrite replaces both lists, de-duplicated', async () => {
    const { node, m } = await loaded(encodeResetInfo({ ThirdPartyResetDevs: [dev(1)], ManualResetDevs: [] }));
    m.overwrite({ ThirdPartyResetDevs: null, ManualResetDevs: [dev(4), dev(4, 7)] });
    await m.whenIdle();
    expect(node.writes).toEqual([encodeResetInfo({ ThirdPartyResetDevs: [], ManualResetDevs: [dev(4)] })]);
  });

  test('§4.3 a change then its undo in the same turn writes nothing', async () => {
    const { node, m } = await loaded();
    m.append('ManualResetDevs', [dev(0)]);
    m.remove([0]);
    await m.whenIdle();
    expect(node.writes).toEqual([]);
  });

  test('§4.3 a write is tried 3 times 1 s apart', async () => {
    const { clock, node, m } = await loaded();
    node.failWrites = 2;
    const t0 = clock.now();
    m.append('ManualResetDevs', [dev(0)]);
    await clock.advance(999);
    expect(node.writes).toHaveLength(0);
    await clock.advance(1001);
    expect(node.writes).toHaveLength(1);
    expect(clock.now() - t0).toBe(2000);
  });

  test('§4.3 after 3 failed tries the value is written again on the next flush', async () => {
    const { clock, node, m, logger } = await loaded();
    node.failWrites = 3;
    m.append('ManualResetDevs', [dev(0)]);
    await clock.advance(5000);
    expect(node.writes).toHaveLength(0);
    expect(logger.lines.some((l) => l.startsWith('error') && l.includes('3 tries'))).toBe(true);
    m.flush();
    await m.whenIdle();
    expect(node.writes).toEqual([encodeResetInfo({ ThirdPartyResetDevs: [], ManualResetDevs: [dev(0)] })]);
    m.flush();
    await m.whenIdle();
    expect(node.writes).toHaveLength(1);
  });

  test('§4.3 changes made before the load are applied on top of the Node value', async () => {
    const clock = new FakeClock();
    const node = new FakeNode(encodeResetInfo({ ThirdPartyResetDevs: [], ManualResetDevs: [dev(5)] }));
    const m = new ResetInfoManager({ api: node, clock });
    m.append('ManualResetDevs', [dev(6)]);
    expect(m.loaded()).toBe(false);
    await m.whenIdle();
    expect(node.reads).toBe(1);
    expect(node.writes).toEqual([encodeResetInfo({ ThirdPartyResetDevs: [], ManualResetDevs: [dev(5), dev(6)] })]);
  });

  test('§4.3 an unparsable value starts empty with a warning', async () => {
    const { m, logger } = await loaded('garbage');
    expect(m.current()).toEqual(EMPTY_RESET_INFO);
    expect(logger.lines.some((l) => l.startsWith('warn') && l.includes('not usable'))).toBe(true);
  });

  test('§4.3 a read that fails 3 times (1 s apart) starts empty with a warning', async () => {
    const clock = new FakeClock();
    const node = new FakeNode('{"ManualResetDevs":[{"PhyID":1}]}');
    node.failReads = 3;
    const logger = recordingLogger();
    const m = new ResetInfoManager({ api: node, clock, logger });
    const p = m.load();
    await clock.advance(2000);
    await p;
    expect(node.reads).toBe(3);
    expect(m.current()).toEqual(EMPTY_RESET_INFO);
    expect(logger.lines.some((l) => l.startsWith('warn') && l.includes('failed 3 times'))).toBe(true);
  });

  test('bad entries are refused with the field named', async () => {
    const { m } = await loaded();
    expect(() => m.append('ManualResetDevs', [{ ...dev(1), PhyID: 1.5 }])).toThrow('PhyID of');
    expect(() => new ResetInfoManager({ api: new FakeNode(), clock: new FakeClock(), tries: 0 })).toThrow(
      'tries must be a positive integer',
    );
  });
});
