import { describe, expect, test } from '@jest/globals';
import { FaultEngine, exportEngineState, importEngineState } from '../../src/faults/index.js';
import { Harness, T0, policyOf, shippedPolicy } from './helpers.js';

const SEP = 0x80e18402; // SeparateNPU
const PRE = 0x8118043c; // PreSeparateNPU
const NOT = 0x80e21007; // NotHandleFault
const SUB = 0x81a3880c; // SubHealthFault
const FREE = 0x8c0e4e00; // FreeRestartNPU
const RR = 0x80c98008; // RestartRequest
const HBM = 0x80e01801; // RestartBusiness, frequency 2 / 24 h -> ManuallySeparateNPU
const LINK = 0x81078603;
const UNKNOWN = 0x12345678;
const MS = 'ManuallySeparateNPU';

const shipped = () => new Harness(shippedPolicy());

describe('E.4 GetFaultType', () => {
  test('E.4 no codes is NormalNPU', () => {
    const h = shipped();
    h.cycle(0);
    expect(h.view(0).level).toBe('NormalNPU');
  });

  test('E.4 several codes combine as the most severe configured level', () => {
    const h = shipped();
    h.cycle(0, [
      { logicId: 1, code: RR },
      { logicId: 1, code: SEP },
      { logicId: 1, code: NOT },
    ]);
    expect(h.view(1).level).toBe('SeparateNPU');
  });

  test('E.4 an unknown code delivered with severity >= 2 is SeparateNPU', () => {
    const h = shipped();
    h.occur(0, 1, UNKNOWN, { severity: 2 });
    expect(h.view(1).level).toBe('SeparateNPU');
  });

  test('E.4 an unknown code with severity 1 (minor) is NotHandleFault', () => {
    const h = shipped();
    h.occur(0, 1, UNKNOWN, { severity: 1 });
    expect(h.view(1).level).toBe('NotHandleFault');
  });

  test('E.4 an unknown code found by polling (severity 0) is NotHandleFault', () => {
    const h = shipped();
    h.occur(0, 1, UNKNOWN, { severity: 0 });
    expect(h.view(1).level).toBe('NotHandleFault');
  });

  test('E.4 severity is last writer wins across chips', () => {
    const h = shipped();
    h.occur(0, 1, UNKNOWN, { severity: 0 });
    h.occur(1000, 2, UNKNOWN, { severity: 3 });
    h.engine.setPodUsed(1, true); // any input makes the next cycle re-evaluate chip 1
    h.cycle(2000);
    expect(h.view(1).level).toBe('SeparateNPU');
  });

  test('E.4 the severity fallback applies only when no code is configured', () => {
    const h = shipped();
    h.cycle(0, [
      { logicId: 1, code: NOT },
      { logicId: 1, code: UNKNOWN, severity: 3 },
    ]);
    expect(h.view(1).level).toBe('NotHandleFault');
  });

  test('E.4 SubHealth ranks above NotHandle when both are on a chip', () => {
    const h = shipped();
    h.cycle(0, [
      { logicId: 1, code: NOT },
      { logicId: 1, code: SUB },
    ]);
    expect(h.view(1).level).toBe('SubHealthFault');
  });

  test('E.4 parameter-plane codes do not count for the chip level', () => {
    const h = new Harness(policyOf({ SeparateNPUCodes: ['81078603'] }));
    h.occur(0, 1, LINK);
    expect(h.view(1).level).toBe('NormalNPU');
    expect(h.view(1).networkLevel).toBe('SeparateNPU');
  });

  test('E.4 an unlisted network code is network PreSeparateNPU', () => {
    const h = new Harness(policyOf({}));
    h.occur(0, 1, LINK);
    expect(h.view(1).networkLevel).toBe('PreSeparateNPU');
  });
});

describe('D.6 applying events', () => {
  test('D.6 an occurrence adds the code with its time; recovery removes it', () => {
    const h = shipped();
    h.occur(0, 1, SEP);
    expect(h.view(1)).toMatchObject({ faultCodes: ['80E18402'], faultTimes: { '80E18402': T0 }, alarmRaisedTime: T0 });
    h.recover(1000, 1, SEP);
    expect(h.view(1)).toMatchObject({ faultCodes: [], faultTimes: {}, alarmRaisedTime: 0 });
  });

  test('D.6 a code repeating without recovery (a storm) is held once; one recovery still removes it', () => {
    const h = shipped();
    for (let i = 0; i < 1000; i++)
      h.cycle(i, [
        { logicId: 1, code: SEP },
        { logicId: 1, code: LINK },
      ]);
    const chip = exportEngineState(h.engine).chips[1]!;
    expect([chip.faultCodes, chip.networkCodes]).toEqual([[SEP], [LINK]]);
    expect(h.view(1)).toMatchObject({ faultCodes: ['80E18402'], faultTimes: { '80E18402': T0 } });
    h.recover(2000, 1, SEP);
    expect(h.view(1)).toMatchObject({ faultCodes: [], health: 'Healthy' });
  });

  test('D.6 the fault time is the earliest occurrence', () => {
    const h = shipped();
    h.occur(5000, 1, SEP);
    h.occur(6000, 1, SEP, { timeMs: T0 + 1000 });
    expect(h.view(1).faultTimes['80E18402']).toBe(T0 + 1000);
  });

  test('D.6 event time 0 means now', () => {
    const h = shipped();
    h.occur(7000, 1, SEP, { timeMs: 0 });
    expect(h.view(1).faultTimes['80E18402']).toBe(T0 + 7000);
  });

  test('D.6 recovery of a code DCMI still reports is ignored', () => {
    const h = shipped();
    h.occur(0, 1, SEP);
    h.live.set(1, [SEP]);
    const tr = h.recover(1000, 1, SEP);
    expect(h.view(1).faultCodes).toEqual(['80E18402']);
    expect(tr.some((t) => t.kind === 'event-ignored' && t.reason.includes('DCMI still reports'))).toBe(true);
  });

  test('D.6 the list DCMI still reports comes with the recovery event; a recovery without one is applied', () => {
    const h = shipped(); // h.live stays empty: the events below carry their own lists, or none
    h.occur(0, 1, SEP);
    h.occur(0, 2, SEP);
    h.cycle(1000, [
      { logicId: 1, code: SEP, assertion: 'recover', liveCodes: [HBM, SEP] },
      { logicId: 2, code: SEP, assertion: 'recover' },
    ]);
    expect([h.view(1).faultCodes, h.view(2).faultCodes]).toEqual([['80E18402'], []]);
  });

  test("D.6 each recovery is checked against its own event's list", () => {
    const h = shipped();
    h.cycle(0, [
      { logicId: 1, code: SEP },
      { logicId: 1, code: RR },
    ]);
    h.cycle(1000, [
      { logicId: 1, code: SEP, assertion: 'recover', liveCodes: [SEP] },
      { logicId: 1, code: RR, assertion: 'recover', liveCodes: [] },
    ]);
    expect(h.view(1).faultCodes).toEqual(['80E18402']);
  });

  test('D.6 the "still reported" check does not apply to network codes', () => {
    const h = shipped();
    h.occur(0, 1, LINK);
    h.live.set(1, [LINK]);
    h.recover(1000, 1, LINK);
    expect(h.view(1).networkFaultCodes).toEqual([]);
  });

  test('D.6 recovery removes every duplicate of the code', () => {
    const h = shipped();
    h.occur(0, 1, SEP);
    h.occur(1000, 1, SEP);
    h.recover(2000, 1, SEP);
    expect(h.view(1).faultCodes).toEqual([]);
  });

  test('D.6 a recovery that arrives before its occurrence (recovered in advance) leaves the code for one cycle', () => {
    const h = shipped();
    h.cycle(0, [
      { logicId: 1, code: SEP, assertion: 'recover' },
      { logicId: 1, code: SEP, assertion: 'occur' },
    ]);
    expect(h.view(1)).toMatchObject({ faultCodes: ['80E18402'], health: 'Unhealthy' });
    h.cycle(5000);
    expect(h.view(1)).toMatchObject({ faultCodes: [], health: 'Healthy' });
  });

  test('D.6 a notice is visible for exactly one cycle', () => {
    const h = shipped();
    h.cycle(0, [{ logicId: 2, code: SEP, assertion: 'once' }]);
    expect(h.view(2)).toMatchObject({ faultCodes: ['80E18402'], level: 'SeparateNPU', health: 'Unhealthy' });
    h.cycle(5000);
    expect(h.view(2)).toMatchObject({ faultCodes: [], level: 'NormalNPU', health: 'Healthy' });
  });

  test('D.6 a notice of a network code is visible for one cycle', () => {
    const h = new Harness(policyOf({ SeparateNPUNetworkCodes: ['81078603'] }));
    h.cycle(0, [{ logicId: 2, code: LINK, assertion: 'once' }]);
    expect(h.view(2).networkHealth).toBe('Unhealthy');
    h.cycle(5000);
    expect(h.view(2)).toMatchObject({ networkFaultCodes: [], networkHealth: 'Healthy' });
  });

  test('D.6 a notice counts as an occurrence for FaultFrequency', () => {
    const h = shipped();
    h.cycle(0, [{ logicId: 1, code: HBM, assertion: 'once' }]);
    h.cycle(1000, [{ logicId: 1, code: HBM, assertion: 'once' }]);
    expect(h.view(1).level).toBe(MS);
  });

  test('D.6 hyper-plane codes are not applied on non-A5 chips, and say so', () => {
    const h = shipped();
    const tr = h.occur(0, 1, 0x81b18603);
    expect(h.view(1).faultCodes).toEqual([]);
    expect(tr.some((t) => t.kind === 'event-ignored')).toBe(true);
  });

  test('D.4 the reset-finished event requests a re-sync and is not a fault', () => {
    const h = shipped();
    const r = h.engine.cycle({ now: T0, events: [{ logicId: 4, code: 0x8c2fa009, assertion: 'occur' }] });
    expect(r.resync).toEqual([4]);
    expect(h.view(4).faultCodes).toEqual([]);
  });

  test('D.4 event id 0 is ignored', () => {
    const h = shipped();
    h.occur(0, 1, 0);
    expect(h.view(1).faultCodes).toEqual([]);
  });
});

describe('D.6 HBM / AIC correlation hold', () => {
  const withHold = () =>
    new Harness(
      policyOf(
        { RestartBusinessCodes: ['80E01801'], RestartRequestCodes: ['80C98009'] },
        {
          FaultDuration: [
            { EventId: ['80E01801'], FaultTimeout: 600, RecoverTimeout: 0, FaultHandling: 'SeparateNPU' },
          ],
        },
      ),
    );

  test('D.6 without a FaultDuration for 80E01801 AIC faults are applied at once', () => {
    const h = shipped();
    h.occur(0, 1, 0x80c98009);
    expect(h.view(1).faultCodes).toEqual(['80C98009']);
  });

  test('D.6 an AIC fault 4999 ms from the HBM fault is dropped', () => {
    const h = withHold();
    h.cycle(0, [
      { logicId: 1, code: HBM },
      { logicId: 1, code: 0x80c98009, timeMs: T0 + 4999 },
    ]);
    h.cycle(20000);
    expect(h.view(1).faultCodes).toEqual(['80E01801']);
  });

  test('D.6 an AIC fault exactly 5000 ms from the HBM fault is not dropped (strict <)', () => {
    const h = withHold();
    h.cycle(0, [
      { logicId: 1, code: HBM },
      { logicId: 1, code: 0x80c98009, timeMs: T0 + 5000 },
    ]);
    h.cycle(20000);
    expect(h.view(1).faultCodes).toContain('80C98009');
  });

  test('D.6 a held AIC recovery keeps the DCMI list it came with until the hold releases it', () => {
    const h = withHold();
    h.occur(100000, 1, 0x80c98009);
    h.cycle(105001);
    h.cycle(106000, [{ logicId: 1, code: 0x80c98009, assertion: 'recover', liveCodes: [0x80c98009] }]);
    h.cycle(111001);
    expect(h.view(1).faultCodes).toEqual(['80C98009']);
    expect(h.transitions).toContainEqual(
      expect.objectContaining({ kind: 'event-ignored', code: '80C98009', reason: 'DCMI still reports the code (D.6)' }),
    );
  });

  test('D.6 a held AIC fault is released only when strictly older than 5 s', () => {
    const h = withHold();
    h.occur(100000, 1, 0x80c98009);
    h.cycle(105000);
    expect(h.view(1).faultCodes).toEqual([]);
    h.cycle(105001);
    expect(h.view(1).faultCodes).toEqual(['80C98009']);
  });
});

describe('D.7 health', () => {
  const levelHealth: [string, number, string][] = [
    ['NotHandleFault', NOT, 'Healthy'],
    ['SubHealthFault', SUB, 'Healthy'],
    ['RestartRequest', RR, 'Unhealthy'],
    ['FreeRestartNPU', FREE, 'Unhealthy'],
    ['PreSeparateNPU', PRE, 'Unhealthy'],
    ['SeparateNPU', SEP, 'Unhealthy'],
  ];
  for (const [level, code, health] of levelHealth) {
    test(`D.7 ${level} is ${health}`, () => {
      const h = shipped();
      h.occur(0, 3, code);
      expect(h.view(3)).toMatchObject({ level, health });
    });
  }

  test('D.7 PreSeparateNPU on a chip listed in an active pod is Healthy', () => {
    const h = shipped();
    h.engine.setPodUsed(3, true);
    h.occur(0, 3, PRE);
    expect(h.view(3).health).toBe('Healthy');
  });

  test('D.7 FreeRestartNPU on a chip used by a pod is Unhealthy without grace tolerance (upstream HEAD)', () => {
    const h = shipped();
    h.engine.setPodUsed(3, true);
    h.occur(0, 3, FREE);
    expect(h.view(3).health).toBe('Unhealthy');
  });

  test('D.7 / hot-reset §1.2 with grace tolerance a FreeRestartNPU chip in use is Healthy, and Unhealthy once free', () => {
    const h = new Harness(shippedPolicy(), 8, { graceTolerance: true });
    h.engine.setPodUsed(3, true);
    h.occur(0, 3, FREE);
    expect(h.view(3).health).toBe('Healthy');
    h.engine.setPodUsed(3, false);
    h.cycle(5000);
    expect(h.view(3).health).toBe('Unhealthy');
  });

  test('D.7 SeparateNPU on a chip used by a pod stays Unhealthy', () => {
    const h = shipped();
    h.engine.setPodUsed(3, true);
    h.occur(0, 3, SEP);
    expect(h.view(3).health).toBe('Unhealthy');
  });

  test('D.7 a pod-use change takes effect at the next cycle without events', () => {
    const h = shipped();
    h.occur(0, 3, PRE);
    h.engine.setPodUsed(3, true);
    h.cycle(5000);
    expect(h.view(3).health).toBe('Healthy');
  });

  test('D.7 network SubHealthFault is network-Unhealthy', () => {
    const h = new Harness(policyOf({ SubHealthFaultNetworkCodes: ['81078603'] }));
    h.occur(0, 1, LINK);
    expect(h.view(1).networkHealth).toBe('Unhealthy');
  });

  test('D.7 network NotHandleFault is network-Healthy and the chip health is untouched', () => {
    const h = shipped();
    h.occur(0, 1, LINK);
    expect(h.view(1)).toMatchObject({ networkLevel: 'NotHandleFault', networkHealth: 'Healthy', health: 'Healthy' });
  });

  test('D.7 post-rule: an Unhealthy chip makes every chip of its health group Unhealthy', () => {
    const h = new Harness(shippedPolicy(), 4, { healthGroups: [[0, 1]] });
    h.occur(0, 0, SEP);
    expect([h.view(0).health, h.view(1).health, h.view(2).health]).toEqual(['Unhealthy', 'Unhealthy', 'Healthy']);
    h.recover(1000, 0, SEP);
    h.cycle(2000);
    expect(h.view(1).health).toBe('Healthy');
  });
});

describe('F.3 FaultFrequency evaluation', () => {
  const policy = (entry: Record<string, unknown> = {}) =>
    policyOf(
      { RestartBusinessCodes: ['80E01801'] },
      { FaultFrequency: [{ EventId: ['80E01801'], TimeWindow: 100, Times: 2, FaultHandling: MS, ...entry }] },
    );

  test('F.3 Times occurrences within the window escalate (count >= Times)', () => {
    const h = new Harness(policy());
    h.occur(0, 1, HBM);
    expect(h.view(1).level).toBe('RestartBusiness');
    h.occur(1000, 1, HBM);
    expect(h.view(1)).toMatchObject({ level: MS, manuallySeparated: true });
  });

  test('F.3 TimeWindow boundary: an occurrence exactly TimeWindow old is kept', () => {
    const h = new Harness(policy());
    h.occur(0, 1, HBM);
    h.occur(100000, 1, HBM);
    expect(h.view(1).level).toBe(MS);
  });

  test('F.3 TimeWindow boundary: an occurrence 1 ms older than the window is dropped', () => {
    const h = new Harness(policy());
    h.occur(0, 1, HBM, { timeMs: T0 - 1 });
    h.occur(100000, 1, HBM);
    expect(h.view(1).level).toBe('RestartBusiness');
  });

  test('F.3 the window start uses whole seconds of now', () => {
    const h = new Harness(policy());
    h.occur(0, 1, HBM);
    h.occur(100999, 1, HBM); // now_s = T0/1000 + 100, start = T0
    expect(h.view(1).level).toBe(MS);
  });

  test('F.3 after escalation the counter restarts from zero', () => {
    const h = new Harness(policy());
    h.occur(0, 1, HBM);
    h.occur(1000, 1, HBM);
    h.engine.release(1);
    h.occur(3000, 1, HBM);
    expect(h.view(1).level).toBe('RestartBusiness');
  });

  test('F.3 release: reason removed only strictly after ReleaseTimeWindow since the last recovery', () => {
    const h = new Harness(policy({ FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 60 }));
    h.occur(0, 1, HBM);
    h.occur(1000, 1, HBM);
    expect(h.view(1).level).toBe('SeparateNPU');
    h.recover(2000, 1, HBM);
    h.cycle(62000);
    expect(h.view(1).level).toBe('SeparateNPU');
    const tr = h.cycle(62001);
    expect(h.view(1).level).toBe('NormalNPU');
    expect(tr).toContainEqual(
      expect.objectContaining({ kind: 'reasons-removed', by: 'ReleaseTimeWindow', k8sEvent: true }),
    );
  });

  test('F.3 no release while the last occurrence is newer than the last recovery', () => {
    const h = new Harness(policy({ FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 60 }));
    h.occur(0, 1, HBM);
    h.occur(1000, 1, HBM);
    h.cycle(500000);
    expect(h.view(1).level).toBe('SeparateNPU');
  });

  test('F.3 while escalated, the reason time follows the last occurrence', () => {
    const h = new Harness(policy());
    h.occur(0, 1, HBM);
    h.occur(1000, 1, HBM);
    h.occur(9000, 1, HBM);
    expect(h.view(1).reasons).toEqual([
      { upgrade_time: T0 + 9000, fault_code: '80e01801', fault_level: MS, upgrade_type: 'FaultFrequency' },
    ]);
  });

  test('F.3 history is per chip', () => {
    const h = new Harness(policy());
    h.occur(0, 1, HBM);
    h.occur(1000, 2, HBM);
    expect([h.view(1).level, h.view(2).level]).toEqual(['RestartBusiness', 'RestartBusiness']);
  });
});

describe('F.4 FaultDuration state machine', () => {
  const policy = () =>
    policyOf(
      { NotHandleFaultCodes: ['81078603'] },
      {
        FaultDuration: [
          { EventId: ['81078603'], FaultTimeout: 20, RecoverTimeout: 60, FaultHandling: 'PreSeparateNPU' },
        ],
      },
    );

  test('F.4 FaultTimeout boundary: a fault raised exactly FaultTimeout does not time out', () => {
    const h = new Harness(policy());
    h.occur(0, 5, LINK);
    h.cycle(20000);
    expect(h.view(5).networkLevel).toBe('NotHandleFault');
  });

  test('F.4 a fault raised 1 ms longer than FaultTimeout times out, alarm at start + FaultTimeout', () => {
    const h = new Harness(policy());
    h.occur(0, 5, LINK);
    h.cycle(20001);
    expect(h.view(5)).toMatchObject({ networkLevel: 'PreSeparateNPU', networkHealth: 'Unhealthy' });
    expect(h.view(5).reasons).toEqual([
      {
        upgrade_time: T0 + 20000,
        fault_code: '81078603',
        fault_level: 'PreSeparateNPU',
        upgrade_type: 'FaultDuration',
      },
    ]);
  });

  test('F.4 a short flap (occur/recover within FaultTimeout) never times out', () => {
    const h = new Harness(policy());
    h.occur(0, 5, LINK);
    h.recover(20000, 5, LINK);
    h.cycle(100000);
    expect(h.view(5).networkLevel).toBe('NormalNPU');
  });

  test('F.4 a completed pair longer than FaultTimeout times out in the same cycle', () => {
    const h = new Harness(policy());
    h.cycle(30000, [
      { logicId: 5, code: LINK, assertion: 'occur', timeMs: T0 },
      { logicId: 5, code: LINK, assertion: 'recover', timeMs: T0 + 25000 },
    ]);
    expect(h.view(5).networkLevel).toBe('PreSeparateNPU');
  });

  test('F.4 RecoverTimeout boundary: recovered exactly RecoverTimeout keeps the timeout', () => {
    const h = new Harness(policy());
    h.occur(0, 5, LINK);
    h.cycle(25000);
    h.recover(30000, 5, LINK);
    h.cycle(90000);
    expect(h.view(5).networkLevel).toBe('PreSeparateNPU');
  });

  test('F.4 recovered 1 ms longer than RecoverTimeout clears it and removes the reason', () => {
    const h = new Harness(policy());
    h.occur(0, 5, LINK);
    h.cycle(25000);
    h.recover(30000, 5, LINK);
    const tr = h.cycle(90001);
    expect(h.view(5)).toMatchObject({ networkLevel: 'NormalNPU', reasons: [] });
    expect(tr).toContainEqual(expect.objectContaining({ kind: 'reasons-removed', by: 'RecoverTimeout' }));
  });

  test('F.4 a new fault while timed out keeps the timeout', () => {
    const h = new Harness(policy());
    h.occur(0, 5, LINK);
    h.cycle(25000);
    h.recover(30000, 5, LINK);
    h.occur(40000, 5, LINK);
    h.cycle(200000);
    expect(h.view(5).networkLevel).toBe('PreSeparateNPU');
  });
});

describe('F.5 combination rule', () => {
  test('F.5 a code with duration and frequency rules counts towards frequency only when timed out', () => {
    const p = shippedPolicy();
    const h = new Harness(p);
    for (let i = 0; i < 5; i++) {
      h.occur(i * 100000, 5, LINK);
      h.recover(i * 100000 + 10000, 5, LINK); // 10 s: a short flap
    }
    h.cycle(600000);
    expect(h.view(5)).toMatchObject({ networkLevel: 'NormalNPU', manuallySeparated: false });
  });

  test('F.5 the effective level is the most severe of code, frequency, duration and reasons', () => {
    const h = new Harness(
      policyOf(
        { SeparateNPUCodes: ['80E18402'], NotHandleFaultCodes: ['1'] },
        { FaultDuration: [{ EventId: ['1'], FaultTimeout: 0, RecoverTimeout: 0, FaultHandling: 'RestartNPU' }] },
      ),
    );
    h.occur(0, 1, 1);
    h.cycle(1);
    expect(h.view(1).level).toBe('RestartNPU');
    h.occur(2, 1, SEP);
    expect(h.view(1).level).toBe('SeparateNPU');
  });

  test('F.5 a chip level is never below its codes own level after escalation rules', () => {
    const h = shipped();
    h.occur(0, 1, SEP);
    h.occur(1000, 1, HBM);
    h.occur(2000, 1, HBM);
    expect(h.view(1).level).toBe(MS);
  });
});

describe('F.6 81078603 (RoCE link down) with the shipped configuration', () => {
  const drop = (h: Harness, at: number): void => {
    h.occur(at, 5, LINK);
    for (let t = at + 5000; t < at + 30000; t += 5000) h.cycle(t);
    h.recover(at + 30000, 5, LINK);
    for (let t = at + 35000; t <= at + 95000; t += 5000) h.cycle(t);
  };

  test('F.6 a short link drop changes nothing (NotHandle)', () => {
    const h = shipped();
    h.occur(0, 5, LINK);
    expect(h.view(5)).toMatchObject({ networkLevel: 'NotHandleFault', networkHealth: 'Healthy', health: 'Healthy' });
  });

  test('F.6 down > 20 s makes the chip NetworkUnhealthy (PreSeparateNPU) but kubelet-Healthy', () => {
    const h = shipped();
    h.occur(0, 5, LINK);
    h.cycle(25000);
    expect(h.view(5)).toMatchObject({
      networkLevel: 'PreSeparateNPU',
      networkHealth: 'Unhealthy',
      health: 'Healthy',
      level: 'NormalNPU',
    });
  });

  test('F.6 it clears after the link has been up > 60 s', () => {
    const h = shipped();
    drop(h, 0);
    expect(h.view(5)).toMatchObject({ networkLevel: 'NormalNPU', networkHealth: 'Healthy', reasons: [] });
  });

  test('F.6 five timed-out drops within 24 h: ManuallySeparateNPU, kubelet health stays Healthy', () => {
    const h = shipped();
    for (let i = 0; i < 4; i++) drop(h, i * 100000);
    expect(h.view(5).manuallySeparated).toBe(false);
    h.occur(400000, 5, LINK);
    h.cycle(425000);
    expect(h.view(5)).toMatchObject({ networkLevel: MS, manuallySeparated: true, health: 'Healthy' });
  });

  test('F.6 auto-release 172800 s after the last recovery (strict)', () => {
    const h = shipped();
    for (let i = 0; i < 5; i++) drop(h, i * 100000);
    expect(h.view(5).manuallySeparated).toBe(true);
    const lastRecovery = 400000 + 30000 + 60000; // the flip back happens at recovery + RecoverTimeout
    h.cycle(lastRecovery + 172800000);
    expect(h.view(5).manuallySeparated).toBe(true);
    const tr = h.cycle(lastRecovery + 172800001);
    expect(h.view(5)).toMatchObject({ manuallySeparated: false, networkLevel: 'NormalNPU' });
    expect(tr).toContainEqual({ kind: 'released', logicId: 5, by: 'ReleaseTimeWindow' });
  });
});

describe('G ManuallySeparateNPU and upgrade reasons', () => {
  const escalate = (h: Harness, chip = 3): void => {
    h.occur(0, chip, HBM);
    h.occur(1000, chip, HBM);
  };

  test('G.1 escalation adds the chip and a FaultFrequency reason', () => {
    const h = shipped();
    const tr = [...h.occur(0, 3, HBM), ...h.occur(1000, 3, HBM)];
    expect(tr).toContainEqual({ kind: 'separated', logicId: 3, by: 'FaultFrequency', code: '80E01801' });
    expect(h.engine.manualSeparationValue()).toBe('Ascend910-3');
  });

  test('G.1 logic ids above 15 are not stored, and that is reported', () => {
    const h = new Harness(shippedPolicy(), 17);
    h.occur(0, 16, HBM);
    const tr = h.occur(1000, 16, HBM);
    expect(h.view(16).manuallySeparated).toBe(false);
    expect(tr.some((t) => t.kind === 'separation-refused')).toBe(true);
  });

  test('G.2 a separated chip stays separated after the fault recovers', () => {
    const h = shipped();
    escalate(h);
    h.recover(2000, 3, HBM);
    h.cycle(86400000 * 3);
    expect(h.view(3)).toMatchObject({ manuallySeparated: true, level: MS, health: 'Unhealthy' });
  });

  test('G.2 an operator release removes the chip and its ManuallySeparateNPU reasons (release Event)', () => {
    const h = shipped();
    escalate(h);
    const tr = h.engine.release(3);
    h.cycle(2000);
    expect(h.view(3)).toMatchObject({ manuallySeparated: false, reasons: [], level: 'RestartBusiness' });
    expect(tr).toContainEqual(expect.objectContaining({ kind: 'reasons-removed', by: 'operator', k8sEvent: true }));
  });

  test('G.2 reconcile: a written entry missing from the live value is released', () => {
    const h = shipped();
    escalate(h);
    h.engine.reconcileManualSeparation('Ascend910-3'); // first write
    const { transitions } = h.engine.reconcileManualSeparation('');
    expect(transitions).toContainEqual({ kind: 'released', logicId: 3, by: 'operator' });
  });

  test('G.2 reconcile: an entry not yet written is not released', () => {
    const h = shipped();
    escalate(h);
    h.engine.reconcileManualSeparation('');
    expect(h.engine.manuallySeparated()).toEqual([3]);
  });

  test('G.2 reconcile: names not in the cache are not adopted', () => {
    const h = shipped();
    h.engine.reconcileManualSeparation('Ascend910-4');
    expect(h.engine.manuallySeparated()).toEqual([]);
  });

  test('G.3 start-up: listed names without a reason get an autofill reason that releases after 172800 s', () => {
    const h = shipped();
    h.engine.loadStartup({ manuallySeparateNPU: 'Ascend910-2', upgradeFaultReason: '{}', now: T0 });
    expect(h.view(2)).toMatchObject({
      manuallySeparated: true,
      reasons: [expect.objectContaining({ fault_code: 'AutofillFaultCode', upgrade_type: 'FaultAutofill' })],
    });
    expect(h.view(2).level).toBe('NormalNPU'); // E.4 note 4: autofill never contributes
    h.cycle(172800000 - 1);
    expect(h.view(2).manuallySeparated).toBe(true);
    const tr = h.cycle(172800000);
    expect(h.view(2).manuallySeparated).toBe(false);
    expect(tr).toContainEqual({ kind: 'released', logicId: 2, by: 'autofill-timer' });
  });

  test('G.3 start-up: reasons are re-injected as occurrences and re-sync is requested for every chip', () => {
    const h = shipped();
    const r = h.engine.loadStartup({
      manuallySeparateNPU: 'Ascend910-3',
      upgradeFaultReason: JSON.stringify({
        'Ascend910-3': [
          { upgrade_time: T0 - 5000, fault_code: '80e01801', fault_level: MS, upgrade_type: 'FaultFrequency' },
        ],
      }),
      now: T0,
    });
    expect(h.view(3)).toMatchObject({ level: MS, faultCodes: ['80E01801'], manuallySeparated: true });
    expect(r.resync).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('G.3 start-up: ManuallySeparateNPU reasons of chips not listed are removed', () => {
    const h = shipped();
    h.engine.loadStartup({
      manuallySeparateNPU: '',
      upgradeFaultReason: JSON.stringify({
        'Ascend910-3': [{ upgrade_time: T0, fault_code: '80e01801', fault_level: MS, upgrade_type: 'FaultFrequency' }],
      }),
      now: T0,
    });
    expect(h.view(3)).toMatchObject({ manuallySeparated: false, reasons: [] });
  });

  test('G.2 an entry whose number is not an integer stops the reading of the following entries', () => {
    const h = shipped();
    const r = h.engine.loadStartup({
      manuallySeparateNPU: 'Ascend910-1,Ascend910-2x,Ascend910-3',
      upgradeFaultReason: '',
      now: T0,
    });
    expect(h.engine.manuallySeparated()).toEqual([1]);
    expect(r.problems[0]).toContain('following');
  });

  test('G.2 entries not matching the run-mode pattern are skipped with a warning', () => {
    const h = shipped();
    const r = h.engine.loadStartup({
      manuallySeparateNPU: 'Ascend310P-1,Ascend910-2',
      upgradeFaultReason: '',
      now: T0,
    });
    expect(h.engine.manuallySeparated()).toEqual([2]);
    expect(r.problems).toHaveLength(1);
  });

  test('G.5 duplicates of one (code, level, type) keep the latest time', () => {
    const h = shipped();
    const r = (t: number) => ({
      upgrade_time: t,
      fault_code: '80e18402',
      fault_level: 'SeparateNPU',
      upgrade_type: 'FaultDuration',
    });
    h.engine.loadStartup({
      manuallySeparateNPU: '',
      upgradeFaultReason: JSON.stringify({ 'Ascend910-1': [r(T0 - 10), r(T0 - 5)] }),
      now: T0,
    });
    expect(h.view(1).reasons).toEqual([r(T0 - 5)]);
  });

  test('G.6 a config change drops reasons of codes no longer configured, without an Event or a release', () => {
    const h = shipped();
    escalate(h);
    const tr = h.engine.setPolicy(policyOf({ RestartBusinessCodes: ['80E01801'] }, {}));
    h.cycle(2000);
    expect(tr).toContainEqual(
      expect.objectContaining({ kind: 'reasons-removed', by: 'config-change', k8sEvent: false }),
    );
    expect(h.view(3)).toMatchObject({ reasons: [], manuallySeparated: true, level: 'RestartBusiness' });
  });

  test('G.6 a config change re-levels a reason whose rule now has another level (time kept)', () => {
    const h = shipped();
    escalate(h);
    h.engine.setPolicy(
      policyOf(
        { RestartBusinessCodes: ['80E01801'] },
        {
          FaultFrequency: [
            {
              EventId: ['80E01801'],
              TimeWindow: 86400,
              Times: 2,
              FaultHandling: 'SeparateNPU',
              ReleaseTimeWindow: 600,
            },
          ],
        },
      ),
    );
    h.cycle(2000);
    expect(h.view(3).reasons).toEqual([
      { upgrade_time: T0 + 1000, fault_code: '80e01801', fault_level: 'SeparateNPU', upgrade_type: 'FaultFrequency' },
    ]);
  });

  test('F.3 reload keeps the occurrence history of codes still configured', () => {
    const h = shipped();
    h.occur(0, 3, HBM);
    h.engine.setPolicy(shippedPolicy());
    h.occur(1000, 3, HBM);
    expect(h.view(3).level).toBe(MS);
  });

  test('F.1 reload with resetHistory forgets occurrence histories', () => {
    const h = shipped();
    h.occur(0, 3, HBM);
    h.engine.setPolicy(shippedPolicy(), { resetHistory: true });
    h.occur(1000, 3, HBM);
    expect(h.view(3).level).toBe('RestartBusiness');
  });
});

describe('state export / import', () => {
  test('a round trip preserves behaviour: a pending escalation and a duration timer continue after import', () => {
    const a = shipped();
    a.occur(0, 3, HBM);
    a.occur(0, 5, LINK);
    const doc = JSON.parse(JSON.stringify(exportEngineState(a.engine)));
    const b = new Harness(shippedPolicy());
    expect(importEngineState(b.engine, doc)).toEqual({ ok: true, problems: [] });
    for (const h of [a, b]) {
      h.occur(1000, 3, HBM);
      h.cycle(25000);
    }
    expect(b.engine.snapshot()).toEqual(a.engine.snapshot());
    expect(b.view(3).level).toBe(MS);
    expect(b.view(5).networkLevel).toBe('PreSeparateNPU');
  });

  test('import refuses a malformed document and changes nothing', () => {
    const h = shipped();
    h.occur(0, 3, SEP);
    const doc = exportEngineState(h.engine);
    (doc.chips[3] as unknown as Record<string, unknown>).faultCodes = ['x'];
    const fresh = new FaultEngine(shippedPolicy(), { chips: [{ logicId: 3, phyId: 3 }] });
    const r = importEngineState(fresh, doc);
    expect(r.ok).toBe(false);
    expect(fresh.chipView(3)?.faultCodes).toEqual([]);
  });

  test('import reports chips that are not on this node', () => {
    const h = shipped();
    const fresh = new FaultEngine(shippedPolicy(), { chips: [{ logicId: 0, phyId: 0 }] });
    const r = importEngineState(fresh, exportEngineState(h.engine));
    expect(r.ok && r.problems.length).toBe(7);
  });
});
