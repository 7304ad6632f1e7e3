import { describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import {
  encodeResetJson,
  faultConfigMapName,
  hasIsolateDecision,
  isTaskInResetByOthers,
  MAX_RESET_JSON_BYTES,
  parseResetJson,
  ranksOf,
  resetConfigMapName,
  ResetConfigMapError,
  ResetConfigMapWriter,
  ResetJsonError,
  selectRanks,
  type RankSource,
  type ResetJson,
  type ResetRank,
} from '../../src/reset/reset-configmap.js';
import type { ConfigMapApi, ConfigMapObject } from '../../src/reset/types.js';

// ---------------------------------------------------------------------------------------------------------------
// In-memory ConfigMap API: GET returns a copy; UPDATE succeeds only with the stored resourceVersion (then bumps it).

class ConflictError extends Error {
  readonly statusCode = 409;
}

class FakeConfigMapApi implements ConfigMapApi {
  readonly objects = new Map<string, ConfigMapObject>();
  readonly replaced: ConfigMapObject[] = [];
  #rv = 100;
  /** Runs between a GET and the caller's next step (to simulate a concurrent writer). */
  afterGet: (() => void) | undefined;
  getError: Error | undefined;

  put(o: Omit<ConfigMapObject, 'resourceVersion'>): ConfigMapObject {
    const stored = { ...o, resourceVersion: String(++this.#rv) };
    this.objects.set(`${o.namespace}/${o.name}`, stored);
    return stored;
  }

  get(namespace: string, name: string): Promise<ConfigMapObject | undefined> {
    if (this.getError) return Promise.reject(this.getError);
    const o = this.objects.get(`${namespace}/${name}`);
    const copy = o && { ...o, labels: { ...o.labels }, data: { ...o.data } };
    this.afterGet?.();
    return Promise.resolve(copy);
  }

  replace(object: ConfigMapObject): Promise<void> {
    const key = `${object.namespace}/${object.name}`;
    const cur = this.objects.get(key);
    if (cur === undefined) return Promise.reject(new Error(`${key} not found`));
    if (cur.resourceVersion !== object.resourceVersion) {
      return Promise.reject(new ConflictError(`conflict: ${key} resourceVersion ${object.resourceVersion} is stale`));
    }
    this.replaced.push(object);
    this.objects.set(key, { ...object, resourceVersion: String(++this.#rv) });
    return Promise.resolve();
  }

  data(namespace: string, name: string): Readonly<Record<string, string>> {
    return this.objects.get(`${namespace}/${name}`)!.data;
  }
}

const NS = 'default';
const JOB = 'job1';
const CM = 'reset-config-job1';
const LABELS = { reset: 'true' };
const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** §2.9 setting: 910B train node, chips 0–7 = ranks 8–15, chip 3 has 0x8C03A000 (RestartNPU). */
const SOURCES: RankSource[] = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({
  logicId: i,
  rankId: 8 + i,
  policy: i === 3 ? 'reset' : 'empty',
  codes: i === 3 ? [0x8c03a000] : [],
}));

const EXAMPLE_B =
  '{"RankList":[{"RankId":8,"LogicId":0,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":9,"LogicId":1,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":10,"LogicId":2,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":11,"LogicId":3,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":"8C03A000"},{"RankId":12,"LogicId":4,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":13,"LogicId":5,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":14,"LogicId":6,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":15,"LogicId":7,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""}],"UpdateTime":1748400000,"RetryTime":1,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';
const CHECK_B = '6ebd4cb4c39472e67b0c6b8bcc4c7b751d6df6a7f463f1657f2814eabb331952';
const CHECK_C = 'ab97557ed1cc113f5d53e1655da1030524ce7ed01f6479e52c1091097adafc4e';
const CHECK_D = '2187525dab2dd3bc096b4daee9dd35605ff84dab513b74562d8ec960a0e1baea';
const EXAMPLE_G =
  '{"RankList":[],"UpdateTime":1748400300,"RetryTime":1,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';
const CHECK_G = '3e5413a11792c2726e715751baa1ea799a02ec897388bf92b83435ff254f7a49';
const EXAMPLE_H = '{"FaultRank":[8,9,10,11,12,13,14,15],"UpdateTime":1748400000}';
const CHECK_H = '0d6c1b77c29e4fe7df33abaf2e886bfcf2c743f16f25e68dc19041b35793a3a7';

function setup(
  data: Record<string, string>,
  at = 1748400000_000,
): { api: FakeConfigMapApi; writer: ResetConfigMapWriter; clock: { ms: number } } {
  const api = new FakeConfigMapApi();
  api.put({ namespace: NS, name: CM, labels: LABELS, data });
  const clock = { ms: at };
  return { api, clock, writer: new ResetConfigMapWriter({ api, now: () => clock.ms }) };
}

/** §2.9 (a) as created by the job author. */
const PLACEHOLDER = { 'reset.json': '{"status":"initializing"}', checkCode: '' };

function doc(over: Partial<ResetJson> = {}): ResetJson {
  return {
    RankList: [],
    UpdateTime: 1,
    RetryTime: 0,
    FaultFlushing: false,
    GracefulExit: 0,
    RestartFaultProcess: false,
    ...over,
  };
}

function rank(over: Partial<ResetRank> = {}): ResetRank {
  return {
    RankId: 0,
    LogicId: 0,
    Status: 'unrecovered',
    Policy: 'reset',
    InitialPolicy: 'reset',
    ErrorCode: [],
    ErrorCodeHex: '',
    ...over,
  };
}

function cmWith(resetJson: string | undefined): ConfigMapObject {
  return {
    namespace: NS,
    name: CM,
    labels: LABELS,
    data: resetJson === undefined ? {} : { 'reset.json': resetJson },
    resourceVersion: '1',
  };
}

const reasonOf = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
  } catch (e) {
    return e instanceof ResetConfigMapError ? e.reason : `other: ${(e as Error).message}`;
  }
  return 'resolved';
};

// ---------------------------------------------------------------------------------------------------------------

describe('§2.1 names', () => {
  test('§2.1 reset ConfigMap is reset-config-<task>', () => {
    expect(resetConfigMapName(JOB)).toBe('reset-config-job1');
  });

  test('§2.5 fault ConfigMap is fault-config-<task>', () => {
    expect(faultConfigMapName(JOB)).toBe('fault-config-job1');
  });
});

describe('§2.9 worked examples (byte-exact with their checkCode)', () => {
  test('§2.9(b) / HR-02 L5 start: preProcess write over the placeholder', async () => {
    const { api, writer } = setup(PLACEHOLDER);
    const text = await writer.write(JOB, NS, selectRanks(SOURCES, 8, 'reset', 'reset', 'unrecovered'), true);
    expect(text).toBe(EXAMPLE_B);
    expect(api.data(NS, CM)).toEqual({ 'reset.json': EXAMPLE_B, checkCode: CHECK_B, restartType: 'hotReset' });
    expect(sha(EXAMPLE_B)).toBe(CHECK_B);
  });

  test('§2.9(c) L5 success: recovered with the start snapshot, RetryTime and restartType kept', async () => {
    const { api, writer } = setup(
      { 'reset.json': EXAMPLE_B, checkCode: CHECK_B, restartType: 'hotReset' },
      1748400152_000,
    );
    await writer.write(JOB, NS, selectRanks(SOURCES, 8, 'reset', 'reset', 'recovered'), false);
    const data = api.data(NS, CM);
    expect(data.checkCode).toBe(CHECK_C);
    expect(sha(data['reset.json']!)).toBe(CHECK_C);
    expect(data.restartType).toBe('hotReset');
    expect(parseResetJson(data['reset.json']!).RetryTime).toBe(1);
  });

  test('§2.9(d) L5 failure: failed/isolate/reset', async () => {
    const { api, writer } = setup(
      { 'reset.json': EXAMPLE_B, checkCode: CHECK_B, restartType: 'hotReset' },
      1748400151_000,
    );
    await writer.write(JOB, NS, selectRanks(SOURCES, 8, 'isolate', 'reset', 'failed'), false);
    const data = api.data(NS, CM);
    expect(data.checkCode).toBe(CHECK_D);
    expect(sha(data['reset.json']!)).toBe(CHECK_D);
    expect(data['reset.json']).toContain(
      '"RankId":11,"LogicId":3,"Status":"failed","Policy":"isolate","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":"8C03A000"',
    );
  });

  test('§2.9(g) / HR-21 clearing after rescheduling writes an empty RankList, RetryTime and restartType kept', async () => {
    const { writer, api } = setup(
      { 'reset.json': EXAMPLE_B, checkCode: CHECK_B, restartType: 'hotReset' },
      1748400151_000,
    );
    await writer.write(JOB, NS, selectRanks(SOURCES, 8, 'isolate', 'reset', 'failed'), false);
    const w2 = new ResetConfigMapWriter({ api, now: () => 1748400300_000 });
    expect(await w2.clearAfterReschedule(JOB, NS)).toBe(true);
    expect(api.data(NS, CM)).toEqual({ 'reset.json': EXAMPLE_G, checkCode: CHECK_G, restartType: 'hotReset' });
  });

  test('§2.9(h) fault-config-<task> at episode start', async () => {
    const api = new FakeConfigMapApi();
    api.put({ namespace: NS, name: 'fault-config-job1', labels: {}, data: {} });
    const writer = new ResetConfigMapWriter({ api, now: () => 1748400000_000 });
    const ranks = selectRanks(SOURCES, 8, 'reset', 'reset', 'unrecovered').map((r) => r.RankId);
    expect(await writer.writeFaultConfig(JOB, NS, ranks)).toBe(true);
    expect(api.data(NS, 'fault-config-job1')).toEqual({ 'fault-npus': EXAMPLE_H, checkCode: CHECK_H });
  });
});

describe('§2.2 encoding', () => {
  test('§2.2 encodeResetJson writes the fields in struct order with ErrorCode as an array', () => {
    const text = encodeResetJson(doc({ RankList: [rank({ RankId: 1, ErrorCode: [5] })] }));
    expect(text).toBe(
      '{"RankList":[{"RankId":1,"LogicId":0,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[5],"ErrorCodeHex":""}],"UpdateTime":1,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}',
    );
  });

  test('§2.2 an empty RankList is encoded as [] (never null)', () => {
    expect(encodeResetJson(doc())).toMatch(/^\{"RankList":\[\],/);
  });

  test('§2.2 encode then parse gives the same document', () => {
    const d = doc({
      RankList: [rank({ RankId: -1, LogicId: 7, ErrorCode: [1, 2], ErrorCodeHex: '1,2' })],
      RetryTime: 3,
    });
    expect(parseResetJson(encodeResetJson(d))).toEqual(d);
  });

  test('§2.2 a LogicId outside int32 is refused', () => {
    expect(() => encodeResetJson(doc({ RankList: [rank({ LogicId: 2 ** 31 })] }))).toThrow(
      /LogicId 2147483648 is not an int32/,
    );
  });
});

describe('§2.3 parseResetJson (Go encoding/json rules)', () => {
  test('§2.3 the placeholder {"status":"initializing"} parses to UpdateTime 0 and no ranks', () => {
    expect(parseResetJson('{"status":"initializing"}')).toEqual(doc({ UpdateTime: 0 }));
  });

  test('§2.2 keys match case-insensitively as in Go', () => {
    const d = parseResetJson(
      '{"ranklist":[{"rankid":4,"LOGICID":2,"status":"recovered","policy":"reset"}],"updateTime":9,"retrytime":2,"faultflushing":true}',
    );
    expect(d.UpdateTime).toBe(9);
    expect(d.RetryTime).toBe(2);
    expect(d.FaultFlushing).toBe(true);
    expect(d.RankList).toEqual([rank({ RankId: 4, LogicId: 2, Status: 'recovered', InitialPolicy: '' })]);
  });

  test('§2.3 null members keep the zero value', () => {
    expect(parseResetJson('{"RankList":null,"UpdateTime":null,"FaultFlushing":null}')).toEqual(doc({ UpdateTime: 0 }));
  });

  test('§2.3 a duplicate key (any spelling) is decoded in order, the last one wins', () => {
    expect(parseResetJson('{"UpdateTime":1,"updatetime":2}').UpdateTime).toBe(2);
  });

  test('§2.3 a null RankList element decodes to a zero rank', () => {
    expect(parseResetJson('{"RankList":[null]}').RankList).toEqual([
      { RankId: 0, LogicId: 0, Status: '', Policy: '', InitialPolicy: '', ErrorCode: [], ErrorCodeHex: '' },
    ]);
  });

  test('§2.3 an integer beyond 2^53 is refused (not representable)', () => {
    expect(() => parseResetJson('{"UpdateTime":9007199254740993}')).toThrow(
      '$.UpdateTime: 9007199254740993 is outside the safe integer range',
    );
  });

  test('§2.3 unknown keys are ignored', () => {
    expect(parseResetJson('{"UpdateTime":5,"Extra":{"a":[1]}}').UpdateTime).toBe(5);
  });

  test('§2.3 more than 1 MiB is refused with the size in the message', () => {
    const text = `{"UpdateTime":1,"pad":"${'x'.repeat(MAX_RESET_JSON_BYTES)}"}`;
    expect(() => parseResetJson(text)).toThrow(/bytes, more than the limit of 1048576/);
  });

  test('§2.3 exactly 1 MiB is accepted', () => {
    const head = '{"UpdateTime":1,"pad":"';
    const text = `${head}${'x'.repeat(MAX_RESET_JSON_BYTES - head.length - 2)}"}`;
    expect(Buffer.byteLength(text)).toBe(MAX_RESET_JSON_BYTES);
    expect(parseResetJson(text).UpdateTime).toBe(1);
  });

  test('§2.3 malformed JSON is refused naming the position', () => {
    expect(() => parseResetJson('{"UpdateTime":1,}')).toThrow(/reset\.json is not valid JSON: .* at line 1, column 17/);
  });

  test('§2.3 a member of the wrong type is refused naming its path and the expected type', () => {
    expect(() =>
      parseResetJson('{"UpdateTime":"5","RankList":[{"LogicId":1.5,"Status":3}],"FaultFlushing":0}'),
    ).toThrow(
      'reset.json has members of the wrong type: $.UpdateTime: expected an int64, found string "5"; ' +
        '$.RankList[0].LogicId: expected an int32, found number 1.5; $.RankList[0].Status: expected a string, found number 3; ' +
        '$.FaultFlushing: expected a boolean, found number 0',
    );
  });

  test('§2.3 a LogicId that overflows int32 is refused', () => {
    expect(() => parseResetJson('{"RankList":[{"LogicId":2147483648}]}')).toThrow(
      '$.RankList[0].LogicId: 2147483648 overflows int32',
    );
  });

  test('§2.3 a top-level value that is not an object is refused', () => {
    expect(() => parseResetJson('[]')).toThrow('$: expected an object, found array');
  });

  test('§2.3 errors are ResetJsonError with one problem per bad member', () => {
    let err: unknown;
    try {
      parseResetJson('{"RetryTime":true,"GracefulExit":"1"}');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ResetJsonError);
    expect((err as ResetJsonError).problems.map((p) => p.path)).toEqual(['$.RetryTime', '$.GracefulExit']);
  });
});

describe('§2.3 ranksOf and the predicates', () => {
  test('§2.3 ranksOf is empty while UpdateTime is 0 even with ranks', () => {
    expect(ranksOf(cmWith(encodeResetJson(doc({ UpdateTime: 0, RankList: [rank()] }))))).toEqual([]);
  });

  test('§2.3 ranksOf returns the RankList when UpdateTime is set', () => {
    expect(ranksOf(cmWith(encodeResetJson(doc({ RankList: [rank({ RankId: 3 })] }))))).toEqual([rank({ RankId: 3 })]);
  });

  test('§2.3 ranksOf throws naming the missing reset.json key', () => {
    expect(() => ranksOf(cmWith(undefined))).toThrow('default/reset-config-job1: data key "reset.json" is missing');
  });

  test('§2.3 ranksOf throws ResetConfigMapError for invalid JSON', () => {
    expect(() => ranksOf(cmWith('nonsense'))).toThrow(ResetConfigMapError);
  });

  test('§2.3 isTaskInReset: absent ConfigMap is an error', () => {
    expect(() => isTaskInResetByOthers(undefined)).toThrow(/not in the informer cache/);
  });

  test('§2.3 isTaskInReset: invalid reset.json is an error', () => {
    expect(() => isTaskInResetByOthers(cmWith('{'))).toThrow(/not valid JSON/);
  });

  test('§2.3 isTaskInReset: the placeholder is not in reset', () => {
    expect(isTaskInResetByOthers(cmWith(PLACEHOLDER['reset.json']))).toBe(false);
  });

  test('§2.3 / HR-19 isTaskInReset: all ranks unrecovered means another node is resetting', () => {
    expect(isTaskInResetByOthers(cmWith(EXAMPLE_B))).toBe(true);
  });

  test('§2.3 isTaskInReset: one rank not unrecovered means not in reset', () => {
    const text = encodeResetJson(doc({ RankList: [rank(), rank({ RankId: 1, Status: 'recovered' })] }));
    expect(isTaskInResetByOthers(cmWith(text))).toBe(false);
  });

  test('§2.3 isDevShouldBeIsolate: absent ConfigMap → isolate', () => {
    expect(hasIsolateDecision(undefined)).toBe(true);
  });

  test('§2.3 isDevShouldBeIsolate: invalid reset.json → isolate', () => {
    expect(hasIsolateDecision(cmWith('{"UpdateTime":"x"}'))).toBe(true);
  });

  test('§2.3 / HR-20 isDevShouldBeIsolate: empty ranks (placeholder) → isolate', () => {
    expect(hasIsolateDecision(cmWith(PLACEHOLDER['reset.json']))).toBe(true);
  });

  test('§2.3 / HR-20 isDevShouldBeIsolate: unrecovered reset ranks → not isolated', () => {
    expect(hasIsolateDecision(cmWith(EXAMPLE_B))).toBe(false);
  });

  test('§2.3 / HR-20 isDevShouldBeIsolate: a rank with policy isolate → isolate', () => {
    const text = encodeResetJson(doc({ RankList: [rank(), rank({ Policy: 'isolate', Status: 'failed' })] }));
    expect(hasIsolateDecision(cmWith(text))).toBe(true);
  });
});

describe('§2.4 selectRanks (GetTaskResetInfo)', () => {
  const src = (logicId: number, policy: string, codes: number[] = []): RankSource => ({
    logicId,
    rankId: 100 + logicId,
    policy,
    codes,
  });

  test('§2.4 only the rings holding a chip at level 2, 3 or 5 are selected', () => {
    const list = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => src(i, i === 5 ? 'restart' : 'empty'));
    expect(selectRanks(list, 4, 'restart', 'restart', 'unrecovered').map((r) => r.LogicId)).toEqual([4, 5, 6, 7]);
  });

  test('§2.4 free_reset and isolate chips do not make their ring faulty', () => {
    const list = [src(0, 'free_reset'), src(1, 'empty'), src(2, 'isolate'), src(3, 'empty')];
    expect(selectRanks(list, 2, 'reset', 'reset', 'unrecovered')).toEqual([]);
  });

  test('§2.4 ranks carry the write policy, initial policy and status, in logic-id order', () => {
    const out = selectRanks([src(1, 'empty'), src(0, 'restart_request')], 2, 'reset', 'restart_request', 'recovered');
    expect(out).toEqual([
      rank({ RankId: 100, LogicId: 0, Status: 'recovered', Policy: 'reset', InitialPolicy: 'restart_request' }),
      rank({ RankId: 101, LogicId: 1, Status: 'recovered', Policy: 'reset', InitialPolicy: 'restart_request' }),
    ]);
  });

  test('§2.2 ErrorCodeHex is upper-case hex joined by commas, duplicates kept, ErrorCode []', () => {
    const [r] = selectRanks([src(0, 'reset', [0x8c03a000, 0xab, 0xab])], 1, 'reset', 'reset', 'unrecovered');
    expect(r).toMatchObject({ ErrorCode: [], ErrorCodeHex: '8C03A000,AB,AB' });
  });

  test('§2.4 an unknown chip policy is an error naming the chip', () => {
    expect(() => selectRanks([src(3, 'bogus')], 8, 'reset', 'reset', 'unrecovered')).toThrow(
      'chip 3: unknown reset policy "bogus"',
    );
  });

  test('§2.4 an unknown write policy is an error', () => {
    expect(() => selectRanks([src(0, 'reset')], 8, 'resett', 'reset', 'unrecovered')).toThrow(
      'policy of the write: unknown reset policy "resett"',
    );
  });

  test('§2.4 a ring size that is not positive is an error', () => {
    expect(() => selectRanks([src(0, 'reset')], 0, 'reset', 'reset', 'unrecovered')).toThrow(
      'ring size 0 is not a positive integer',
    );
  });
});

describe('§2.4 write()', () => {
  const OLD = (over: Partial<ResetJson> = {}): string =>
    encodeResetJson(doc({ UpdateTime: 1000, RetryTime: 4, ...over }));

  test('§2.4 UpdateTime is now in whole Unix seconds', async () => {
    const { writer } = setup(PLACEHOLDER, 1748400000_999);
    expect(parseResetJson(await writer.write(JOB, NS, [rank()], false)).UpdateTime).toBe(1748400000);
  });

  test('§2.4 RetryTime +1 with addRetry', async () => {
    const { writer } = setup({ 'reset.json': OLD() });
    expect(parseResetJson(await writer.write(JOB, NS, [rank()], true)).RetryTime).toBe(5);
  });

  test('§2.4 RetryTime unchanged without addRetry', async () => {
    const { writer } = setup({ 'reset.json': OLD() });
    expect(parseResetJson(await writer.write(JOB, NS, [rank()], false)).RetryTime).toBe(4);
  });

  test('§2.4 restartType is copied without addRetry', async () => {
    const { api, writer } = setup({ 'reset.json': OLD(), restartType: 'podReschedule' });
    await writer.write(JOB, NS, [rank()], false);
    expect(api.data(NS, CM).restartType).toBe('podReschedule');
  });

  test('§2.4 restartType is set to hotReset with addRetry', async () => {
    const { api, writer } = setup({ 'reset.json': OLD(), restartType: 'podReschedule' });
    await writer.write(JOB, NS, [rank()], true);
    expect(api.data(NS, CM).restartType).toBe('hotReset');
  });

  test('§2.4 restartType stays absent without addRetry when it was absent', async () => {
    const { api, writer } = setup({ 'reset.json': OLD() });
    await writer.write(JOB, NS, [rank()], false);
    expect(Object.keys(api.data(NS, CM)).sort()).toEqual(['checkCode', 'reset.json']);
  });

  test('§7.14 D9 unknown data keys are kept, checkCode is replaced', async () => {
    const { api, writer } = setup({ 'reset.json': OLD(), checkCode: 'stale', 'other.key': 'x' });
    const text = await writer.write(JOB, NS, [rank()], false);
    expect(api.data(NS, CM)).toEqual({ 'reset.json': text, checkCode: sha(text), 'other.key': 'x' });
  });

  test('§7.14 D9 FaultFlushing, GracefulExit and RestartFaultProcess are still reset', async () => {
    const { writer } = setup({
      'reset.json': OLD({ FaultFlushing: true, GracefulExit: 1, RestartFaultProcess: true }),
    });
    expect(parseResetJson(await writer.write(JOB, NS, [rank()], false))).toMatchObject({
      FaultFlushing: false,
      GracefulExit: 0,
      RestartFaultProcess: false,
    });
  });

  test('§2.4 the UPDATE carries the labels and resourceVersion of the object read', async () => {
    const api = new FakeConfigMapApi();
    const stored = api.put({
      namespace: NS,
      name: CM,
      labels: { reset: 'true', team: 'a' },
      data: { 'reset.json': OLD() },
    });
    await new ResetConfigMapWriter({ api, now: () => 0 }).write(JOB, NS, [rank()], false);
    expect(api.replaced[0]).toMatchObject({
      namespace: NS,
      name: CM,
      labels: { reset: 'true', team: 'a' },
      resourceVersion: stored.resourceVersion,
    });
  });

  test('§2.4 ErrorCode given to the writer is written as [] with its hex in ErrorCodeHex', async () => {
    const { writer } = setup(PLACEHOLDER);
    const text = await writer.write(JOB, NS, [rank({ ErrorCode: [0x8c03a000], ErrorCodeHex: '' })], false);
    expect(parseResetJson(text).RankList[0]).toMatchObject({ ErrorCode: [], ErrorCodeHex: '8C03A000' });
  });

  test('§2.4 a conflict from the API is propagated unchanged', async () => {
    const { api, writer } = setup({ 'reset.json': OLD() });
    api.afterGet = () => {
      api.afterGet = undefined;
      api.put({ namespace: NS, name: CM, labels: LABELS, data: { 'reset.json': OLD() } });
    };
    await expect(writer.write(JOB, NS, [rank()], false)).rejects.toBeInstanceOf(ConflictError);
  });

  test('§2.4 a GET failure is propagated unchanged', async () => {
    const { api, writer } = setup({ 'reset.json': OLD() });
    api.getError = new Error('apiserver down');
    await expect(writer.write(JOB, NS, [rank()], false)).rejects.toBe(api.getError);
  });

  test('§2.4 a missing ConfigMap is refused as not-found', async () => {
    const api = new FakeConfigMapApi();
    const writer = new ResetConfigMapWriter({ api, now: () => 0 });
    expect(await reasonOf(writer.write(JOB, NS, [rank()], true))).toBe('not-found');
  });

  test('§2.4 a ConfigMap without reset.json is refused and not written', async () => {
    const { api, writer } = setup({ checkCode: '' });
    expect(await reasonOf(writer.write(JOB, NS, [rank()], true))).toBe('missing-reset-json');
    expect(api.replaced).toEqual([]);
  });

  test('§2.3 an oversized old reset.json is refused and not written', async () => {
    const { api, writer } = setup({ 'reset.json': `{"x":"${'y'.repeat(MAX_RESET_JSON_BYTES)}"}` });
    await expect(writer.write(JOB, NS, [rank()], true)).rejects.toThrow(/more than the limit of 1048576/);
    expect(api.replaced).toEqual([]);
  });

  test('§2.4 a malformed old reset.json is refused and not written', async () => {
    const { api, writer } = setup({ 'reset.json': '{"RetryTime":' });
    expect(await reasonOf(writer.write(JOB, NS, [rank()], true))).toBe('invalid-reset-json');
    expect(api.replaced).toEqual([]);
  });
});

describe('§2.4 isolate guard (D8, §7.13)', () => {
  const ISOLATED = encodeResetJson(doc({ UpdateTime: 5, RankList: [rank({ Status: 'failed', Policy: 'isolate' })] }));

  test('§2.4 / HR-07 a non-empty write over an isolate decision is refused: task should be rescheduled', async () => {
    const { api, writer } = setup({ 'reset.json': ISOLATED });
    await expect(writer.write(JOB, NS, [rank({ Status: 'failed', Policy: 'isolate' })], false)).rejects.toThrow(
      'default/reset-config-job1: a rank has policy "isolate": task should be rescheduled',
    );
    expect(api.replaced).toEqual([]);
  });

  test('§2.4 / HR-19 a recovered write over another node’s isolate decision is refused', async () => {
    const { writer } = setup({ 'reset.json': ISOLATED });
    expect(await reasonOf(writer.write(JOB, NS, [rank({ Status: 'recovered' })], false))).toBe('isolated');
  });

  test('§2.4 an empty write passes the guard', async () => {
    const { writer } = setup({ 'reset.json': ISOLATED });
    expect(await writer.write(JOB, NS, [], false)).toMatch(/^\{"RankList":\[\],/);
  });

  test('§7.13 D8 the word "isolate" outside a rank Policy does not block', async () => {
    const text =
      '{"RankList":[{"RankId":1,"Status":"failed","Policy":"reset","InitialPolicy":"isolate"}],"UpdateTime":5,"note":"isolate"}';
    const { writer } = setup({ 'reset.json': text });
    expect(await reasonOf(writer.write(JOB, NS, [rank()], false))).toBe('resolved');
  });
});

describe('§2.5 writeFaultConfig', () => {
  test('§2.5 a missing fault-config ConfigMap is skipped (false, nothing written)', async () => {
    const api = new FakeConfigMapApi();
    expect(await new ResetConfigMapWriter({ api, now: () => 0 }).writeFaultConfig(JOB, NS, [1])).toBe(false);
    expect(api.replaced).toEqual([]);
  });

  test('§2.5 an empty rank list is written as [] and other keys are kept', async () => {
    const api = new FakeConfigMapApi();
    api.put({ namespace: NS, name: 'fault-config-job1', labels: { a: 'b' }, data: { keep: '1', 'fault-npus': 'old' } });
    await new ResetConfigMapWriter({ api, now: () => 7_000 }).writeFaultConfig(JOB, NS, []);
    const text = '{"FaultRank":[],"UpdateTime":7}';
    expect(api.data(NS, 'fault-config-job1')).toEqual({ keep: '1', 'fault-npus': text, checkCode: sha(text) });
  });

  test('§2.5 an API failure other than NotFound is propagated', async () => {
    const api = new FakeConfigMapApi();
    api.getError = new Error('forbidden');
    await expect(new ResetConfigMapWriter({ api, now: () => 0 }).writeFaultConfig(JOB, NS, [1])).rejects.toThrow(
      'forbidden',
    );
  });
});

describe('§2.6 clearAfterReschedule', () => {
  test('§2.6 / HR-21 a ConfigMap with UpdateTime 0 is left untouched', async () => {
    const { api, writer } = setup(PLACEHOLDER);
    expect(await writer.clearAfterReschedule(JOB, NS)).toBe(false);
    expect(api.replaced).toEqual([]);
  });

  test('§2.6 a missing ConfigMap is skipped', async () => {
    const api = new FakeConfigMapApi();
    expect(await new ResetConfigMapWriter({ api, now: () => 0 }).clearAfterReschedule(JOB, NS)).toBe(false);
  });

  test('§2.6 an unparsable reset.json is not written and names the problem', async () => {
    const { api, writer } = setup({ 'reset.json': '{"UpdateTime":"soon"}' });
    await expect(writer.clearAfterReschedule(JOB, NS)).rejects.toThrow(
      '$.UpdateTime: expected an int64, found string "soon"',
    );
    expect(api.replaced).toEqual([]);
  });

  test('§2.6 / HR-21 after clearing, the isolate guard no longer blocks', async () => {
    const isolated = encodeResetJson(
      doc({ UpdateTime: 5, RetryTime: 1, RankList: [rank({ Status: 'failed', Policy: 'isolate' })] }),
    );
    const { writer } = setup({ 'reset.json': isolated });
    await writer.clearAfterReschedule(JOB, NS);
    expect(await reasonOf(writer.write(JOB, NS, [rank()], true))).toBe('resolved');
  });
});
