/**
 * Issue [O] item 2 (pure part): a take-over from the per-node records (docs/fault-center.md "Persisted state")
 * never re-counts a present fault and never loses a manual separation; `clusterd-manual-info-cm` as it is at the
 * take-over is merged in (cluster-faults §1.6, §1.9).
 */
import { describe, expect, test } from '@jest/globals';
import { faultKey, PublicFaultCache } from '../../src/cluster/public-fault/cache.js';
import { PubFaultProcessor } from '../../src/cluster/public-fault/processor.js';
import { encodeNodeEntry } from '../../src/cluster/manual-cache.js';
import { parsePolicy } from '../../src/cluster/policy.js';
import { FaultCenterCore } from '../../src/cluster/processing-center.js';
import { ccaeSeparateFault, deviceInfoCm, faultObject, jobPod, podGroup, policyText } from './helpers.js';

const T1 = 1_772_359_200_000;
const FAULT = () => [faultObject('Ascend910-3', '80E01801', 'RestartNPU', T1)];

function fresh(cache?: PublicFaultCache): FaultCenterCore {
  const c = new FaultCenterCore(cache ? { extraProcessors: [new PubFaultProcessor(cache)] } : {});
  c.manual.setPolicy(parsePolicy(policyText()));
  c.jobIndex.upsertPod(jobPod('p0', 'node-1', 'uid-J', [2, 3, 5]));
  c.jobIndex.upsertPodGroup(podGroup('pg', 'uid-J'));
  return c;
}

/** Every record of a core, as the store would hold them. */
function persisted(c: FaultCenterCore): Map<string, string> {
  c.stateChanges();
  return new Map(c.records);
}

function restart(records: Map<string, string>, seq: number, cm?: Record<string, string>, cache?: PublicFaultCache) {
  const next = fresh(cache);
  const r = next.restoreRecords(records, seq, cm);
  return { next, r };
}

describe('issue [O] item 2: a restart from the records', () => {
  test('1.9 deviation: a fault present before and after the restart is not counted again', () => {
    const a = fresh();
    a.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', FAULT()) });
    a.cycle(T1);
    a.cycle(T1 + 30_000); // decided: counted once
    const { next } = restart(persisted(a), a.nextJobSeq);
    next.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', FAULT()) });
    next.cycle(T1 + 100_000);
    next.cycle(T1 + 200_000);
    expect([next.manual.counter.times('node-1', 'Ascend910-3', '80E01801'), next.manual.jobs.jobIds]).toEqual([
      [T1],
      [],
    ]);
  });

  test('1.4 a pending job fault survives the restart with its receive time and is decided once', () => {
    const a = fresh();
    a.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', FAULT()) });
    a.cycle(T1);
    const { next } = restart(persisted(a), a.nextJobSeq);
    next.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', FAULT()) });
    next.cycle(T1 + 5_000);
    const pending = next.manual.jobs.faultsOf('uid-J').map((f) => f.receivedTime);
    next.cycle(T1 + 31_000);
    expect([pending, next.manual.counter.times('node-1', 'Ascend910-3', '80E01801')]).toEqual([[T1], [T1]]);
  });

  test('1.10 a present public fault (receive time 0) restored with the store is not counted again', () => {
    const rec = ccaeSeparateFault();
    const cacheA = new PublicFaultCache();
    cacheA.insert('node-1', faultKey('CCAE', 'f'), rec, 1);
    const a = fresh(cacheA);
    a.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', []) });
    a.cycle(T1);
    a.cycle(T1 + 1000);
    const counted = a.manual.counter.times('node-1', 'Ascend910-2', '220001001');
    const cacheB = new PublicFaultCache();
    cacheB.insert('node-1', faultKey('CCAE', 'f'), rec, 2);
    const { next } = restart(persisted(a), a.nextJobSeq, undefined, cacheB);
    next.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', []) });
    next.cycle(T1 + 100_000);
    next.cycle(T1 + 101_000);
    expect(next.manual.counter.times('node-1', 'Ascend910-2', '220001001')).toEqual(counted);
  });

  test('1.6 a separation made after the last write of clusterd-manual-info-cm is kept (not in the ConfigMap yet)', () => {
    const a = fresh();
    a.manual.cache.addSeparateDev('node-1', 'Ascend910-3', '80E01801', T1);
    const { next } = restart(persisted(a), a.nextJobSeq, {});
    const tick = next.manual.releaseTick(T1 + 1000, { kind: 'data', data: {} });
    expect([next.manual.cache.has('node-1', 'Ascend910-3'), tick.action.kind]).toEqual([true, 'write']);
  });

  test('1.6 a written separation the operator removed while the center was down is released at the first step', () => {
    const a = fresh();
    a.manual.cache.addSeparateDev('node-1', 'Ascend910-3', '80E01801', T1);
    const written = a.manual.releaseTick(T1, { kind: 'missing' });
    a.manual.written(written.action);
    const { next } = restart(persisted(a), a.nextJobSeq, {});
    next.manual.releaseTick(T1 + 1000, { kind: 'data', data: {} });
    expect(next.manual.cache.has('node-1', 'Ascend910-3')).toBe(false);
  });

  test('1.9 a separation found in clusterd-manual-info-cm that this center never wrote there is adopted', () => {
    const a = fresh();
    const cm = {
      'node-2': encodeNodeEntry({
        Total: ['Ascend910-0'],
        Detail: new Map([
          ['Ascend910-0', [{ FaultCode: 'X', FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: T1 }]],
        ]),
      }),
    };
    const { next } = restart(persisted(a), a.nextJobSeq, cm);
    expect(next.manual.cache.entry('node-2')?.Detail.get('Ascend910-0')?.[0]?.FaultCode).toBe('X');
  });

  test('1.6 a separation released by this center whose ConfigMap write did not land stays released', () => {
    const a = fresh();
    a.manual.cache.addSeparateDev('node-1', 'Ascend910-3', '80E01801', T1);
    const first = a.manual.releaseTick(T1, { kind: 'missing' });
    a.manual.written(first.action); // the ConfigMap has Ascend910-3
    a.manual.cache.deleteSeparateDev('node-1', 'Ascend910-3'); // released; the delete of the ConfigMap failed
    const cmData = first.action.kind === 'write' ? first.action.data : {};
    const { next } = restart(persisted(a), a.nextJobSeq, cmData);
    expect(next.manual.cache.has('node-1', 'Ascend910-3')).toBe(false);
  });

  test('issue [O] 2: unchanged records are not reported as changes after the restore', () => {
    const a = fresh();
    a.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', FAULT()) });
    a.cycle(T1);
    const { next } = restart(persisted(a), a.nextJobSeq);
    next.intake.offer({ type: 'add', cm: deviceInfoCm('node-1', FAULT()) });
    next.cycle(T1 + 1000, { jobPass: false });
    expect([...next.stateChanges().keys()]).toEqual([]);
  });
});
