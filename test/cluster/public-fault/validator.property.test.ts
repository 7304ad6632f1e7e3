import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { validateMessage, type ValidationContext } from '../../../src/cluster/public-fault/validator.js';
import { decodePublicFaultMessage } from '../../../src/cluster/public-fault/message-decode.js';
import type { PublicFault, PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';
import { shippedConfig } from './fixtures.js';

const config = shippedConfig();
const ctx: ValidationContext = { config, nodeBySerial: (sn) => (sn === 'SN-1' ? 'node-sn' : undefined) };

const codes = [...config.levels.keys()];
// mostly-valid pieces mixed with arbitrary ones (weighted), so both branches are exercised
const w = <T>(valid: fc.Arbitrary<T>, other: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: other, weight: 1 });
const idArb = w(fc.stringMatching(/^[A-Za-z0-9_.-]{8,12}$/), fc.string({ maxLength: 140 }));
const timeArb = w(
  fc.integer({ min: 1_735_689_600_000, max: 9_999_999_999_999 }),
  fc.oneof(fc.integer({ min: -1e15, max: 1e15 }), fc.double()),
);
const influenceArb = fc.record({
  nodeName: w(
    fc.constantFrom('node-1', 'a.b-c'),
    fc.oneof(fc.constantFrom('', 'Bad Name'), fc.string({ maxLength: 20 })),
  ),
  nodeSN: fc.constantFrom('', 'SN-1', 'SN-unknown'),
  deviceIds: w(
    fc.uniqueArray(fc.integer({ min: 0, max: 31 }), { minLength: 1, maxLength: 4 }),
    fc.array(fc.integer(), { maxLength: 34 }),
  ),
});
const faultArb: fc.Arbitrary<PublicFault> = fc.record({
  faultId: idArb,
  faultType: w(fc.constantFrom('NPU', 'Node', 'Network', 'Storage'), fc.constantFrom('npu', '', 'Disk')),
  faultCode: w(fc.constantFrom(...codes), fc.string({ maxLength: 12 })),
  faultTime: timeArb,
  assertion: w(fc.constantFrom('occur', 'recover', 'once'), fc.string({ maxLength: 8 })),
  faultLocation: fc.option(fc.dictionary(fc.string({ maxLength: 20 }), fc.string({ maxLength: 140 }), { maxKeys: 12 })),
  influence: w(fc.array(influenceArb, { minLength: 1, maxLength: 3 }), fc.array(influenceArb, { maxLength: 3 })),
  description: w(fc.string({ maxLength: 40 }), fc.string({ minLength: 510, maxLength: 520 })),
});
const messageArb: fc.Arbitrary<PublicFaultMessage> = fc.record({
  id: idArb,
  timestamp: timeArb,
  version: w(fc.constant('1.0'), fc.constantFrom('1', '')),
  resource: w(fc.constantFrom('CCAE', 'pingmesh'), fc.constant('nobody')),
  faults: w(fc.array(faultArb, { minLength: 1, maxLength: 4 }), fc.array(faultArb, { maxLength: 4 })),
});

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');
const is13DigitsSince2025 = (t: number): boolean =>
  Number.isInteger(t) && t >= 1_735_689_600_000 && t <= 9_999_999_999_999;

describe('§2.5 validator properties', () => {
  test('§2.5 no message makes the validator throw', () => {
    fc.assert(
      fc.property(messageArb, (m) => void validateMessage(m, ctx)),
      { numRuns: 2000 },
    );
  });

  test('§2.5 no ConfigMap text makes decode + validate throw anything but a decode error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), fc.string()), (text) => {
        let m: PublicFaultMessage;
        try {
          m = decodePublicFaultMessage(text);
        } catch (e) {
          return (e as Error).name === 'MessageDecodeError';
        }
        validateMessage(m, ctx);
        return true;
      }),
      { numRuns: 2000 },
    );
  });

  test('§2.5 every accepted message and fault satisfies every rule', () => {
    fc.assert(
      fc.property(messageArb, (m) => {
        const r = validateMessage(m, ctx);
        if (!r.ok) return;
        expect(/^[A-Za-z0-9_.-]{8,128}$/.test(m.id)).toBe(true);
        expect(is13DigitsSince2025(m.timestamp)).toBe(true);
        expect(m.version).toBe('1.0');
        expect(config.senders).toContain(m.resource);
        expect(m.faults.length).toBeGreaterThanOrEqual(1);
        expect(m.faults.length).toBeLessThanOrEqual(100);
        expect(r.faults.length).toBeGreaterThanOrEqual(1);
        for (const { fault: f, level, targets } of r.faults) {
          expect(/^[A-Za-z0-9_.-]{8,128}$/.test(f.faultId)).toBe(true);
          expect(['NPU', 'Node', 'Network', 'Storage']).toContain(f.faultType);
          expect(bytes(f.faultCode)).toBe(9);
          expect(level).toBe(config.levels.get(f.faultCode));
          expect(is13DigitsSince2025(f.faultTime)).toBe(true);
          expect(['occur', 'recover', 'once']).toContain(f.assertion);
          const loc = Object.entries(f.faultLocation ?? {});
          expect(loc.length).toBeLessThanOrEqual(10);
          for (const [k, v] of loc) expect(bytes(k) <= 16 && bytes(v) <= 128).toBe(true);
          expect([...f.description].length).toBeLessThanOrEqual(512);
          expect(/[\t\n\f\r]/.test(f.description)).toBe(false);
          expect(f.influence.length).toBeGreaterThanOrEqual(1);
          expect(targets).toHaveLength(f.influence.length);
          for (const [i, inf] of f.influence.entries()) {
            if (inf.nodeName !== '') expect(targets[i]!.node).toBe(inf.nodeName);
            else expect(targets[i]!.node).toBe('node-sn');
            expect(/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/.test(targets[i]!.node)).toBe(true);
            expect(inf.deviceIds.length >= 1 && inf.deviceIds.length <= 32).toBe(true);
            expect(new Set(inf.deviceIds).size).toBe(inf.deviceIds.length);
            for (const d of inf.deviceIds) expect(Number.isInteger(d) && d >= 0 && d <= 31).toBe(true);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });

  test('§2.5 a dropped fault and a kept fault never overlap, and together they are all faults', () => {
    fc.assert(
      fc.property(messageArb, (m) => {
        const r = validateMessage(m, ctx);
        if (!r.ok) return;
        expect(r.faults.length + r.dropped.length).toBe(m.faults.length);
      }),
      { numRuns: 1000 },
    );
  });
});

test('§2.5 the generator reaches accepted messages (the property above is not vacuous)', () => {
  const accepted = fc.sample(messageArb, { numRuns: 3000, seed: 42 }).filter((m) => validateMessage(m, ctx).ok);
  expect(accepted.length).toBeGreaterThan(10);
});
