import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import {
  FaultEngine,
  parseCustomizationJson,
  parseFaultCodeJson,
  parsePolicy,
  parseReasonsJson,
  rankOf,
  type FaultEvent,
} from '../../src/faults/index.js';
import { T0, policyOf, shippedTexts } from './helpers.js';

/** Random edits of a valid document: most results are malformed in interesting ways. */
const mutated = (base: string) =>
  fc
    .tuple(fc.nat(base.length), fc.nat(40), fc.string({ maxLength: 12 }))
    .map(([at, cut, insert]) => base.slice(0, at) + insert + base.slice(Math.min(base.length, at + cut)));

describe('properties: loaders never throw past their API', () => {
  const { faultCode, customization } = shippedTexts();
  const anyText = fc.oneof(
    fc.string(),
    fc.json(),
    fc.anything().map((v) => JSON.stringify(v) ?? 'undefined'),
    mutated(faultCode),
    mutated(customization),
  );

  test('F.1 / E.1 any text: parseFaultCodeJson and parseCustomizationJson return a result', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const a = parseFaultCodeJson(text);
        const b = parseCustomizationJson(text);
        expect(typeof a.ok).toBe('boolean');
        expect(typeof b.ok).toBe('boolean');
        if (!b.ok) expect(b.fatal.length).toBeGreaterThan(0);
      }),
      { numRuns: 600 },
    );
  });

  test('F.1 documents shaped like the real one with random values never throw', () => {
    const value = fc.oneof(
      fc.integer(),
      fc.double(),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 3 }),
    );
    const entry = fc.dictionary(
      fc.constantFrom(
        'EventId',
        'TimeWindow',
        'Times',
        'FaultHandling',
        'ReleaseTimeWindow',
        'FaultTimeout',
        'RecoverTimeout',
        'eventid',
      ),
      value,
    );
    const doc = fc.record(
      {
        GraceTolerance: fc.dictionary(fc.constantFrom('WaitDeviceResetTime', 'WaitProcessReadCMTime', 'x'), value),
        FaultFrequency: fc.array(entry, { maxLength: 4 }),
        FaultDuration: fc.array(entry, { maxLength: 4 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(doc, (d) => {
        const r = parsePolicy(JSON.stringify({ SeparateNPUCodes: ['1'] }), JSON.stringify(d));
        expect(r.customization.ok || !r.policy).toBe(true);
      }),
      { numRuns: 600 },
    );
  });

  test('G.5 any UpgradeFaultReason text returns reasons and problems', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        const r = parseReasonsJson(text);
        expect(r.reasons instanceof Map).toBe(true);
      }),
    );
  });
});

describe('properties: engine invariants under any event sequence', () => {
  const policy = policyOf(
    {
      NotHandleFaultCodes: ['81078603', 'A'],
      RestartBusinessCodes: ['80E01801'],
      SeparateNPUCodes: ['B'],
      PreSeparateNPUCodes: ['C'],
      RestartRequestCodes: ['80C98009'],
    },
    {
      FaultFrequency: [
        { EventId: ['80E01801', 'B'], TimeWindow: 60, Times: 2, FaultHandling: 'ManuallySeparateNPU' },
        {
          EventId: ['81078603'],
          TimeWindow: 600,
          Times: 3,
          FaultHandling: 'ManuallySeparateNPU',
          ReleaseTimeWindow: 60,
        },
        { EventId: ['C'], TimeWindow: 60, Times: 3, FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 60 },
      ],
      FaultDuration: [
        { EventId: ['81078603'], FaultTimeout: 2, RecoverTimeout: 3, FaultHandling: 'PreSeparateNPU' },
        { EventId: ['80E01801'], FaultTimeout: 5, RecoverTimeout: 1, FaultHandling: 'SeparateNPU' },
      ],
    },
  );
  const code = fc.constantFrom(0x81078603, 0x80e01801, 0xa, 0xb, 0xc, 0x80c98009, 0x1234, 0x8c2fa009, 0);
  const event = fc.record({
    logicId: fc.integer({ min: 0, max: 3 }),
    code,
    assertion: fc.constantFrom('occur' as const, 'recover' as const, 'once' as const),
    severity: fc.integer({ min: 0, max: 3 }),
    back: fc.integer({ min: 0, max: 8000 }),
  });
  const step = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('cycle' as const),
        dt: fc.integer({ min: 0, max: 40000 }),
        events: fc.array(event, { maxLength: 5 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('release' as const), logicId: fc.integer({ min: 0, max: 3 }) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('pod' as const),
        logicId: fc.integer({ min: 0, max: 3 }),
        used: fc.boolean(),
      }),
    },
  );

  test('E.4/F.5 level >= code level; G.2 separated until released; F.3 history bounded', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const engine = new FaultEngine(policy, { chips: [0, 1, 2, 3].map((i) => ({ logicId: i, phyId: i })) });
        const live = new Map<number, number[]>();
        let now = T0;
        const separated = new Set<number>();
        for (const s of steps) {
          if (s.kind === 'release') {
            engine.release(s.logicId);
            separated.delete(s.logicId);
            continue;
          }
          if (s.kind === 'pod') {
            engine.setPodUsed(s.logicId, s.used);
            continue;
          }
          now += s.dt;
          const events: FaultEvent[] = s.events.map((e) => ({
            logicId: e.logicId,
            code: e.code,
            assertion: e.assertion,
            severity: e.severity,
            timeMs: Math.max(1, now - e.back),
            ...(e.assertion === 'recover' && live.has(e.logicId) ? { liveCodes: live.get(e.logicId) } : {}),
          }));
          const r = engine.cycle({ now, events });
          const releasedNow = new Set(r.transitions.filter((t) => t.kind === 'released').map((t) => t.logicId));
          for (const v of engine.snapshot()) {
            // E.4 / F.5: never below the codes' own level.
            const own = engine.codeLevel(v.faultCodes.map((c) => parseInt(c, 16)));
            expect(rankOf(v.level)).toBeGreaterThanOrEqual(rankOf(own));
            const ownNet = engine.networkCodeLevel(v.networkFaultCodes.map((c) => parseInt(c, 16)));
            expect(rankOf(v.networkLevel)).toBeGreaterThanOrEqual(rankOf(ownNet));
            // G.2: separated stays separated until a release.
            if (separated.has(v.logicId) && !releasedNow.has(v.logicId)) expect(v.manuallySeparated).toBe(true);
            if (v.manuallySeparated) separated.add(v.logicId);
            else separated.delete(v.logicId);
          }
          // F.3: after a cycle no history holds Times or more occurrences; duration queues stay small.
          for (const chip of engine.order) {
            for (const [c, h] of chip.freq) {
              const rule = policy.customization.frequency.get(c)!;
              expect((h.times ?? []).length).toBeLessThan(rule.times);
            }
            for (const d of chip.dur.values()) expect(d.queue.length).toBeLessThanOrEqual(2 + 5);
            expect(chip.reasons.size).toBeLessThanOrEqual(8);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  test('D.2 a duration flip is re-evaluated in the next cycle even at the same time (found by the property below)', () => {
    // seed -37547744: a 81078603 notice, a cycle 3001 ms later, then a cycle at the same time
    const chips = [{ logicId: 0, phyId: 0 }];
    const fast = new FaultEngine(policy, { chips });
    const full = new FaultEngine(policy, { chips, evaluateAllChips: true });
    const steps: { dt: number; events: FaultEvent[] }[] = [
      { dt: 0, events: [{ logicId: 0, code: 0x81078603, assertion: 'once', severity: 0, timeMs: T0 }] },
      { dt: 3001, events: [] },
      { dt: 0, events: [] },
    ];
    let now = T0;
    for (const s of steps) {
      now += s.dt;
      expect(fast.cycle({ now, events: s.events }).transitions).toEqual(
        full.cycle({ now, events: s.events }).transitions,
      );
      expect(fast.snapshot()).toEqual(full.snapshot());
    }
  });

  test('D.2 skipping idle chips gives the same views and transitions as evaluating every chip every cycle', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const chips = [0, 1, 2, 3].map((i) => ({ logicId: i, phyId: i }));
        const fast = new FaultEngine(policy, { chips });
        const full = new FaultEngine(policy, { chips, evaluateAllChips: true });
        let now = T0;
        for (const s of steps) {
          for (const engine of [fast, full]) {
            if (s.kind === 'release') engine.release(s.logicId);
            if (s.kind === 'pod') engine.setPodUsed(s.logicId, s.used);
          }
          if (s.kind !== 'cycle') continue;
          now += s.dt;
          const events: FaultEvent[] = s.events.map((e) => ({
            logicId: e.logicId,
            code: e.code,
            assertion: e.assertion,
            severity: e.severity,
            timeMs: Math.max(1, now - e.back),
          }));
          const a = fast.cycle({ now, events });
          const b = full.cycle({ now, events });
          expect(a.transitions).toEqual(b.transitions);
          expect(fast.snapshot()).toEqual(full.snapshot());
        }
      }),
      { numRuns: 400 },
    );
  });
});
