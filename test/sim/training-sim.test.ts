/**
 * The training side of hot-reset.md §6.2 fixture F1 against the real mock DCMI library: it reads the landed
 * `reset.json` (§2.8) and drives the chips' process counts through the mock's control socket (architecture §5).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { TrainingSimulator, type TrainingSimulatorOptions } from '../../src/sim/training-sim.js';
import type { MockReply } from '../../src/sim/mock-control.js';
import { ResetFileSync } from '../../src/reset/file-sync.js';
import { openMock, tempDir, type MockHarness } from '../helpers/mock-dcmi.js';
import { FakeClock } from '../health/fake-clock.js';

const ALL = [0, 1, 2, 3, 4, 5, 6, 7];
const POLL = 100;

let mock: MockHarness;
let root: string;
let clock: FakeClock;
let sims: TrainingSimulator[];

beforeAll(async () => {
  mock = await openMock('910b-8chip');
});
afterAll(() => mock.close());

beforeEach(async () => {
  for (const logicId of ALL) await mock.control.expectOk({ op: 'processes', logicId, count: 0 });
  root = tempDir('train-');
  clock = new FakeClock();
  sims = [];
});
afterEach(() => {
  for (const s of sims) s.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

function sim(over: Partial<TrainingSimulatorOptions> = {}): TrainingSimulator {
  const s = new TrainingSimulator({
    hostRoot: root,
    namespace: 'default',
    job: 'job1',
    logicIds: ALL,
    control: mock.control,
    clock,
    pollMs: POLL,
    ...over,
  });
  sims.push(s);
  return s;
}

/** Writes the landed reset.json as the agent would (whole file at once). */
function writeReset(ranks: [number, string][], o: { updateTime?: number; retryTime?: number } = {}): void {
  const file = path.join(root, 'user/restore/reset/default.reset-config-job1/reset.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const doc = {
    RankList: ranks.map(([logicId, status]) => ({
      RankId: 8 + logicId,
      LogicId: logicId,
      Status: status,
      Policy: status === 'failed' ? 'isolate' : 'reset',
      InitialPolicy: 'reset',
      ErrorCode: [],
      ErrorCodeHex: '',
    })),
    UpdateTime: o.updateTime ?? 1_767_225_600,
    RetryTime: o.retryTime ?? 1,
    FaultFlushing: false,
    GracefulExit: 0,
    RestartFaultProcess: false,
  };
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(doc));
  fs.renameSync(`${file}.tmp`, file);
}

const all = (status: string): [number, string][] => ALL.map((id) => [id, status]);

async function processes(): Promise<number[]> {
  return (await mock.control.state()).chips.map((c) => c.processes);
}

/** Advances the fake clock and waits for the simulator's I/O to finish. */
async function advance(s: TrainingSimulator, ms: number): Promise<void> {
  await clock.advance(ms);
  await s.idle();
}

async function startedSim(over: Partial<TrainingSimulatorOptions> = {}): Promise<TrainingSimulator> {
  const s = sim(over);
  await s.start();
  await s.idle();
  return s;
}

describe('§6.2 F1 training simulator', () => {
  test('§6.2 F1 start sets the process count of its chips to 1 and leaves other chips alone', async () => {
    const s = await startedSim({ logicIds: [0, 1, 2, 3] });
    expect(await processes()).toEqual([1, 1, 1, 1, 0, 0, 0, 0]);
    expect(s.state).toBe('running');
    expect(s.log.map((e) => e.event)).toEqual(['started']);
  });

  test('§6.2 F1 an unrecovered rank stops all its chips exactly stopAfterMs (default 3 s) after it is seen', async () => {
    const s = await startedSim();
    writeReset([[3, 'unrecovered']]);
    await advance(s, POLL);
    expect(s.state).toBe('stopping');
    const seenAt = s.log.find((e) => e.event === 'stopping')!.at;
    await advance(s, 2999);
    expect(await processes()).toEqual(ALL.map(() => 1));
    await advance(s, 1);
    expect(await processes()).toEqual(ALL.map(() => 0));
    expect(s.state).toBe('stopped');
    expect(s.log.find((e) => e.event === 'stopped')!.at - seenAt).toBe(3000);
  });

  test('§6.2 F1 stopAfterMs is configurable', async () => {
    const s = await startedSim({ stopAfterMs: 500 });
    writeReset(all('unrecovered'));
    await advance(s, POLL);
    await advance(s, 500);
    expect(await processes()).toEqual(ALL.map(() => 0));
  });

  test('§6.2 F1 all ranks recovered restarts the processes (count 1) and counts the restart', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    writeReset(all('unrecovered'));
    await advance(s, POLL);
    await advance(s, 0);
    expect(s.state).toBe('stopped');
    writeReset(all('recovered'));
    await advance(s, POLL);
    expect(await processes()).toEqual(ALL.map(() => 1));
    expect(s.state).toBe('running');
    expect(s.restarts).toBe(1);
  });

  test('§6.2 F1 while one of its ranks is still unrecovered the processes stay stopped', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    writeReset(all('unrecovered'));
    await advance(s, POLL);
    await advance(s, 0);
    writeReset([...ALL.slice(0, 7).map((id): [number, string] => [id, 'recovered']), [7, 'unrecovered']]);
    await advance(s, POLL * 3);
    expect(await processes()).toEqual(ALL.map(() => 0));
    expect(s.restarts).toBe(0);
  });

  test('§6.2 F1 a second episode stops and restarts again (restarts counted)', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    for (let round = 1; round <= 2; round++) {
      writeReset(all('unrecovered'), { retryTime: round });
      await advance(s, POLL);
      await advance(s, 0);
      writeReset(all('recovered'), { retryTime: round });
      await advance(s, POLL);
    }
    expect(s.restarts).toBe(2);
    expect(s.log.filter((e) => e.event === 'stopped')).toHaveLength(2);
  });

  test('§1.1 RetryTime growth is recorded as a restart round', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    writeReset([], { retryTime: 1 });
    await advance(s, POLL);
    writeReset(all('unrecovered'), { retryTime: 2 });
    await advance(s, POLL);
    expect(s.log.find((e) => e.event === 'retry-round')?.detail).toBe('RetryTime 1 → 2');
  });

  test('§2.2 failed after a stop keeps the processes stopped and records it; a later recovered does not restart', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    writeReset(all('unrecovered'));
    await advance(s, POLL);
    await advance(s, 0);
    writeReset(all('failed'));
    await advance(s, POLL);
    expect(s.state).toBe('failed');
    expect(s.log.some((e) => e.event === 'failed')).toBe(true);
    writeReset(all('recovered'));
    await advance(s, POLL * 3);
    expect(await processes()).toEqual(ALL.map(() => 0));
    expect(s.restarts).toBe(0);
  });

  test('§2.2 failed seen while running stops the processes after stopAfterMs and ends failed', async () => {
    const s = await startedSim({ stopAfterMs: 1000 });
    writeReset(all('failed'));
    await advance(s, POLL);
    await advance(s, 1000);
    expect(await processes()).toEqual(ALL.map(() => 0));
    expect(s.state).toBe('failed');
  });

  test('§6.2 F1 ranks of other chips are not ours: the processes keep running', async () => {
    const s = await startedSim({ logicIds: [0, 1, 2, 3] });
    writeReset([[5, 'unrecovered']]);
    await advance(s, POLL * 40);
    expect(await processes()).toEqual([1, 1, 1, 1, 0, 0, 0, 0]);
    expect(s.state).toBe('running');
  });

  test('§2.2 UpdateTime 0 means initialising: its ranks are ignored', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    writeReset(all('unrecovered'), { updateTime: 0 });
    await advance(s, POLL * 3);
    expect(s.state).toBe('running');
  });

  test('§2.1 the job author placeholder {"status":"initializing"} changes nothing', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    fs.mkdirSync(path.dirname(s.file), { recursive: true });
    fs.writeFileSync(s.file, '{"status":"initializing"}');
    await advance(s, POLL * 3);
    expect(s.state).toBe('running');
    expect(s.log.some((e) => e.event === 'seen')).toBe(true);
  });

  test('§2.2 keys are matched case-insensitively like Go encoding/json', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    fs.mkdirSync(path.dirname(s.file), { recursive: true });
    fs.writeFileSync(s.file, '{"ranklist":[{"logicid":2,"STATUS":"unrecovered"}],"updatetime":5}');
    await advance(s, POLL);
    await advance(s, 0);
    expect(s.state).toBe('stopped');
  });

  test('§6.2 F1 an unreadable file is logged once and changes nothing', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    fs.mkdirSync(path.dirname(s.file), { recursive: true });
    fs.writeFileSync(s.file, '{"RankList": [');
    await advance(s, POLL * 5);
    expect(s.log.filter((e) => e.event === 'unreadable')).toHaveLength(1);
    expect(s.state).toBe('running');
  });

  test('HR-07 with ignoreResetFile the processes never stop', async () => {
    const s = await startedSim({ ignoreResetFile: true, stopAfterMs: 0 });
    writeReset(all('unrecovered'));
    await advance(s, POLL * 50);
    expect(await processes()).toEqual(ALL.map(() => 1));
    expect(s.log.map((e) => e.event)).toEqual(['started', 'ignoring']);
    expect(clock.pending()).toBe(0);
  });

  test('§6.2 F1 the simulator never writes the reset file', async () => {
    const s = await startedSim({ stopAfterMs: 0 });
    writeReset(all('unrecovered'));
    const before = fs.readFileSync(s.file, 'utf8');
    const mtime = fs.statSync(s.file).mtimeMs;
    await advance(s, POLL);
    await advance(s, 0);
    expect(fs.readFileSync(s.file, 'utf8')).toBe(before);
    expect(fs.statSync(s.file).mtimeMs).toBe(mtime);
  });
});

describe('TrainingSimulator control and lifecycle', () => {
  test('stop() ends polling and cancels a pending stop; process counts stay', async () => {
    const s = await startedSim();
    writeReset(all('unrecovered'));
    await advance(s, POLL);
    s.stop();
    expect(clock.pending()).toBe(0);
    await advance(s, 5000);
    expect(await processes()).toEqual(ALL.map(() => 1));
    expect(s.state).toBe('halted');
  });

  test('a control function may stand in for the client', async () => {
    const sent: Record<string, unknown>[] = [];
    const s = await startedSim({
      logicIds: [6],
      control: (req) => {
        sent.push(req);
        return mock.control.request(req);
      },
    });
    expect(sent).toEqual([{ op: 'processes', logicId: 6, count: 1 }]);
    expect((await processes())[6]).toBe(1);
    expect(s.state).toBe('running');
  });

  test('a refused control request is logged and retried on a later poll', async () => {
    let refuse = true;
    const control = (req: Record<string, unknown>): Promise<MockReply> =>
      refuse && req.count === 0 ? Promise.resolve({ ok: false, error: 'busy' }) : mock.control.request(req);
    const s = await startedSim({ control, stopAfterMs: 0 });
    writeReset(all('unrecovered'));
    await advance(s, POLL);
    await advance(s, 0);
    expect(s.log.some((e) => e.event === 'error' && e.detail.includes('busy'))).toBe(true);
    expect(s.state).toBe('running');
    refuse = false;
    await advance(s, POLL);
    await advance(s, 0);
    expect(s.state).toBe('stopped');
    expect(await processes()).toEqual(ALL.map(() => 0));
  });

  test('subscribe() sees every new log entry', async () => {
    const s = sim({ stopAfterMs: 0 });
    const events: string[] = [];
    s.subscribe((e) => events.push(e.event));
    await s.start();
    await s.idle();
    writeReset(all('unrecovered'));
    await advance(s, POLL);
    await advance(s, 0);
    expect(events).toEqual(['started', 'seen', 'stopping', 'stopped']);
  });

  test('start() twice is refused', async () => {
    const s = await startedSim();
    await expect(s.start()).rejects.toThrow(/start\(\) in state running/);
  });

  test.each([
    ['no chips', { logicIds: [] }, /logicIds/],
    ['a negative logic id', { logicIds: [-1] }, /logicIds/],
    ['a namespace with a slash', { namespace: 'a/b' }, /namespace/],
    ['a job with ..', { job: '..' }, /job/],
    ['a negative stopAfterMs', { stopAfterMs: -1 }, /stopAfterMs/],
    ['a zero pollMs', { pollMs: 0 }, /pollMs/],
  ])('options with %s are refused', (_what, over, message) => {
    expect(() => sim(over as Partial<TrainingSimulatorOptions>)).toThrow(message);
  });
});

describe('HR-22 + §6.2 F1 end to end with file landing', () => {
  test('HR-22 a reset ConfigMap update lands in the file and the simulator stops then restarts the chips', async () => {
    const data = (status: string): Record<string, string> => {
      const text = JSON.stringify({
        RankList: ALL.map((id) => ({ RankId: 8 + id, LogicId: id, Status: status, Policy: 'reset' })),
        UpdateTime: 1_767_225_600,
        RetryTime: 1,
      });
      return { 'reset.json': text, checkCode: '', restartType: 'hotReset' };
    };
    const cm = (status: string) => ({
      namespace: 'default',
      name: 'reset-config-job1',
      labels: { reset: 'true' },
      data: data(status),
      resourceVersion: '1',
    });
    const landing = new ResetFileSync({ hostRoot: root, kind: 'Ascend910B', configMaps: { get: () => undefined } });
    landing.podAdded({
      uid: 'u1',
      namespace: 'default',
      name: 'job1-w1',
      phase: 'Running',
      labels: { 'volcano.sh/job-name': 'job1' },
      annotations: { 'huawei.com/Ascend910': ALL.map((i) => `Ascend910-${i}`).join(',') },
    });
    await landing.idle();
    const s = await startedSim();
    landing.configMapChanged(cm('unrecovered'));
    await landing.idle();
    await advance(s, POLL);
    await advance(s, 3000);
    expect(await processes()).toEqual(ALL.map(() => 0));
    landing.configMapChanged(cm('recovered'));
    await landing.idle();
    await advance(s, POLL);
    expect(await processes()).toEqual(ALL.map(() => 1));
    expect(s.restarts).toBe(1);
    landing.close();
  });
});
