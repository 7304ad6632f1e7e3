import { describe, expect, test } from '@jest/globals';
import { JobFaultManager, SLIDING_WINDOW_MS, type JobFault } from '../../src/cluster/job-fault-manager.js';

const T = 1772373600000;
const jf = (t: number, dev: string, code = '80E01801', jobId = 'J', node = 'node-1'): JobFault => ({
  jobId,
  node,
  dev,
  code,
  receivedTime: t,
});

function run(faults: JobFault[], now: number, hasPg = true) {
  const m = new JobFaultManager();
  for (const f of faults) m.add(f);
  const counted: JobFault[] = [];
  const r = m.pass(
    now,
    () => hasPg,
    (f) => counted.push(f),
  );
  return { m, counted, r };
}

describe('1.4 job-level software-fault detector', () => {
  test('1.4 a fault with an empty job id is not queued', () => {
    const m = new JobFaultManager();
    m.add(jf(T, 'Ascend910-3', 'c', ''));
    m.add(null);
    expect(m.jobIds).toEqual([]);
  });

  test('1.4 the head waits until its 30 s window has elapsed', () => {
    expect(run([jf(T, 'Ascend910-3')], T + SLIDING_WINDOW_MS - 1).counted).toEqual([]);
  });

  test('1.4 the head is decided at exactly receive time + 30 s (<=)', () => {
    expect(run([jf(T, 'Ascend910-3')], T + SLIDING_WINDOW_MS).counted.length).toBe(1);
  });

  test('1.4 same code on another device makes the head a software fault', () => {
    const { counted, r } = run([jf(T, 'Ascend910-3'), jf(T + 10_000, 'Ascend910-5')], T + 30_000);
    expect([counted.length, r.software.length]).toEqual([0, 2]);
  });

  test('1.4 same code on another node of the job is also software', () => {
    const { counted } = run([jf(T, 'Ascend910-3'), jf(T + 1, 'Ascend910-3', '80E01801', 'J', 'node-2')], T + 30_000);
    expect(counted).toEqual([]);
  });

  test('1.12 item 3: no time condition, a same-code fault far later still makes the head software', () => {
    const { counted, m } = run([jf(T, 'Ascend910-3'), jf(T + 3_600_000, 'Ascend910-5')], T + 30_000);
    expect([counted.length, m.faultsOf('J').length]).toEqual([0, 1]);
  });

  test('1.4 on one device, code1 twice and code2 once are counted 2 and 1', () => {
    const { counted } = run(
      [jf(T, 'Ascend910-3', 'c1'), jf(T + 1000, 'Ascend910-3', 'c1'), jf(T + 2000, 'Ascend910-3', 'c2')],
      T + 40_000,
    );
    expect(counted.map((c) => c.code)).toEqual(['c1', 'c1', 'c2']);
  });

  test('1.4 code1 on dev1 twice and on dev2 once is a software fault: nothing counted', () => {
    const { counted } = run(
      [jf(T, 'Ascend910-1', 'c1'), jf(T + 1000, 'Ascend910-1', 'c1'), jf(T + 2000, 'Ascend910-2', 'c1')],
      T + 40_000,
    );
    expect(counted).toEqual([]);
  });

  test('1.4 same code on the same device beyond head + 30 s stays pending', () => {
    const { m } = run([jf(T, 'Ascend910-3'), jf(T + 31_000, 'Ascend910-3')], T + 31_000);
    expect(m.faultsOf('J').map((f) => f.receivedTime)).toEqual([T + 31_000]);
  });

  test('1.4 the job entry is removed at the first pass that finds it empty', () => {
    const { m } = run([jf(T, 'Ascend910-3')], T + 30_000);
    m.pass(
      T + 31_000,
      () => true,
      () => undefined,
    );
    expect(m.jobIds).toEqual([]);
  });

  test('1.4 pending faults are dropped uncounted when the PodGroup is gone', () => {
    const { counted, r, m } = run([jf(T, 'Ascend910-3')], T + 30_000, false);
    expect([counted.length, r.orphaned.length, m.jobIds.length]).toEqual([0, 1, 0]);
  });

  test('1.4 head means earliest arrival, not earliest receive time', () => {
    const { counted } = run([jf(T + 20_000, 'Ascend910-3', 'a'), jf(T, 'Ascend910-3', 'b')], T + 31_000);
    expect(counted.map((c) => c.code)).toEqual([]);
  });

  test('1.4 faultsOf returns the queued faults', () => {
    const m = new JobFaultManager();
    m.add(jf(T, 'Ascend910-3'));
    expect(m.faultsOf('J')).toEqual([jf(T, 'Ascend910-3')]);
  });

  test('1.4 export and restore keep pending faults', () => {
    const m = new JobFaultManager();
    m.add(jf(T, 'Ascend910-3'));
    const n = new JobFaultManager();
    n.restore(m.export());
    expect(n.faultsOf('J')).toEqual(m.faultsOf('J'));
  });
});
