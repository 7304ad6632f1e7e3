import { describe, expect, test } from '@jest/globals';
import {
  RELEASE_NEVER,
  autofillReleaseSeconds,
  parseCustomizationJson,
  type CustomizationParse,
} from '../../src/faults/index.js';
import { shippedTexts } from './helpers.js';

const MS = 'ManuallySeparateNPU';
function parse(doc: unknown): Extract<CustomizationParse, { ok: true }> {
  const r = parseCustomizationJson(typeof doc === 'string' ? doc : JSON.stringify(doc));
  if (!r.ok) throw new Error(r.fatal.join('\n'));
  return r;
}
const freq = (entry: Record<string, unknown>) =>
  parse({ FaultFrequency: [{ EventId: ['80E01801'], TimeWindow: 60, Times: 1, FaultHandling: MS, ...entry }] });
const freqAccepted = (entry: Record<string, unknown>) => freq(entry).customization.frequency.has(0x80e01801);
const dur = (entry: Record<string, unknown>) =>
  parse({
    FaultDuration: [
      { EventId: ['81078603'], FaultTimeout: 0, RecoverTimeout: 0, FaultHandling: 'PreSeparateNPU', ...entry },
    ],
  });
const durAccepted = (entry: Record<string, unknown>) => dur(entry).customization.duration.has(0x81078603);

describe('F.1 malformed vs out of range', () => {
  test('F.1 the shipped file: every rule accepted', () => {
    const r = parse(shippedTexts().customization);
    expect(r.rules.filter((x) => x.status !== 'accepted')).toEqual([]);
    expect(r.customization.frequency.size).toBe(43);
    expect(r.customization.duration.size).toBe(1);
  });

  test('F.1 a document that is not JSON is malformed', () => {
    expect(parseCustomizationJson('{"FaultFrequency": [}').ok).toBe(false);
  });

  test('F.1 a string where a number belongs makes the whole document malformed, naming the path', () => {
    const r = parseCustomizationJson('{"FaultFrequency":[{"EventId":["1"],"TimeWindow":"60"}]}');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.fatal[0]).toContain('$.FaultFrequency[0].TimeWindow');
  });

  test('F.1 a fraction is a wrong type for an int64 field', () => {
    expect(parseCustomizationJson('{"GraceTolerance":{"WaitDeviceResetTime":60.0}}').ok).toBe(false);
  });

  test('F.1 an integer beyond int64 is a wrong type', () => {
    expect(parseCustomizationJson('{"GraceTolerance":{"WaitDeviceResetTime":9223372036854775808}}').ok).toBe(false);
  });

  test('F.1 a wrong type in an overridden duplicate key still makes the document malformed', () => {
    expect(parseCustomizationJson('{"GraceTolerance":{"WaitDeviceResetTime":"x","WaitDeviceResetTime":60}}').ok).toBe(
      false,
    );
  });

  test('F.1 an out-of-range FaultFrequency entry is ignored whole, the others still apply', () => {
    const r = parse({
      FaultFrequency: [
        { EventId: ['1', '2'], TimeWindow: 59, Times: 1, FaultHandling: MS },
        { EventId: ['3'], TimeWindow: 60, Times: 1, FaultHandling: MS },
      ],
    });
    expect([...r.customization.frequency.keys()]).toEqual([3]);
    expect(r.rules.find((x) => x.index === 0)).toMatchObject({
      status: 'ignored',
      path: '$.FaultFrequency[0].TimeWindow',
      value: '59',
      spec: 'F.3',
    });
  });

  test('F.1 duplicate EventId: the first valid entry wins, other ids of the later entry still apply', () => {
    const r = parse({
      FaultFrequency: [
        { EventId: ['1'], TimeWindow: 10, Times: 1, FaultHandling: MS },
        { EventId: ['1', '2'], TimeWindow: 60, Times: 2, FaultHandling: MS },
        { EventId: ['2', '3'], TimeWindow: 60, Times: 3, FaultHandling: MS },
      ],
    });
    expect(r.customization.frequency.get(1)?.times).toBe(2);
    expect(r.customization.frequency.get(2)?.times).toBe(2);
    expect(r.customization.frequency.get(3)?.times).toBe(3);
    expect(
      r.rules.filter((x) => x.status === 'ignored' && x.reason.startsWith('duplicate')).map((x) => x.path),
    ).toEqual(['$.FaultFrequency[2].EventId[0]']);
  });

  test('F.1 EventIds are lower-cased: 80E01801 and 80e01801 are the same id', () => {
    const r = parse({
      FaultFrequency: [{ EventId: ['80E01801', '80e01801'], TimeWindow: 60, Times: 1, FaultHandling: MS }],
    });
    expect(r.rules.filter((x) => x.status === 'ignored')).toHaveLength(1);
  });

  test('F.1 a non-hex EventId is reported as never matching', () => {
    const r = parse({ FaultFrequency: [{ EventId: ['zz', '1'], TimeWindow: 60, Times: 1, FaultHandling: MS }] });
    expect(r.rules.find((x) => x.eventIds[0] === 'zz')).toMatchObject({ status: 'ignored', spec: 'F.1' });
    expect(r.customization.frequency.has(1)).toBe(true);
  });

  test('F.1 unknown fields are reported as warnings without changing the status', () => {
    const r = freq({ ReleaseTimeWindows: 100 });
    expect(r.rules[3]).toMatchObject({
      status: 'accepted',
      warnings: ['unknown field "ReleaseTimeWindows" is ignored'],
    });
  });
});

describe('F.2 GraceTolerance', () => {
  const cases: [string, number, number, number][] = [
    ['WaitProcessReadCMTime', 5, 90, 30],
    ['WaitDeviceResetTime', 60, 180, 150],
    ['WaitFaultSelfHealingTime', 1, 30, 15],
  ];
  for (const [field, lo, hi, def] of cases) {
    test(`F.2 ${field} bounds [${lo}, ${hi}] are inclusive`, () => {
      expect(parse({ GraceTolerance: { [field]: lo } }).customization.grace[field as 'WaitDeviceResetTime']).toBe(lo);
      expect(parse({ GraceTolerance: { [field]: hi } }).customization.grace[field as 'WaitDeviceResetTime']).toBe(hi);
    });
    test(`F.2 ${field} out of range falls back to ${def} (defaulted)`, () => {
      for (const v of [lo - 1, hi + 1]) {
        const r = parse({ GraceTolerance: { [field]: v } });
        expect(r.customization.grace[field as 'WaitDeviceResetTime']).toBe(def);
        expect(r.rules.find((x) => x.field === field)).toMatchObject({
          status: 'defaulted',
          value: String(v),
          spec: 'F.2',
        });
      }
    });
  }
  test('F.2 a missing value reads as 0 and is defaulted', () => {
    const r = parse({});
    expect(r.customization.grace).toEqual({
      WaitProcessReadCMTime: 30,
      WaitDeviceResetTime: 150,
      WaitFaultSelfHealingTime: 15,
    });
    expect(r.rules.every((x) => x.status === 'defaulted')).toBe(true);
  });
});

describe('F.3 FaultFrequency validation', () => {
  test('F.3 EventId must be non-empty', () => expect(freqAccepted({ EventId: [] })).toBe(false));
  test('F.3 TimeWindow 60 and 864000 are accepted (inclusive)', () => {
    expect(freqAccepted({ TimeWindow: 60 })).toBe(true);
    expect(freqAccepted({ TimeWindow: 864000 })).toBe(true);
  });
  test('F.3 TimeWindow 59 and 864001 invalidate the entry', () => {
    expect(freqAccepted({ TimeWindow: 59 })).toBe(false);
    expect(freqAccepted({ TimeWindow: 864001 })).toBe(false);
  });
  test('F.3 Times 1 and 100 are accepted, 0 and 101 are not', () => {
    expect(freqAccepted({ Times: 1 })).toBe(true);
    expect(freqAccepted({ Times: 100 })).toBe(true);
    expect(freqAccepted({ Times: 0 })).toBe(false);
    expect(freqAccepted({ Times: 101 })).toBe(false);
  });
  test('F.3 ReleaseTimeWindow absent or 0 means never (2^32)', () => {
    expect(freq({}).customization.frequency.get(0x80e01801)?.releaseTimeWindowSec).toBe(RELEASE_NEVER);
    expect(freq({ ReleaseTimeWindow: 0 }).customization.frequency.get(0x80e01801)?.releaseTimeWindowSec).toBe(
      RELEASE_NEVER,
    );
  });
  test('F.3 an absent ReleaseTimeWindow on a ManuallySeparateNPU rule counts as accepted', () => {
    expect(freq({}).rules.find((x) => x.section === 'FaultFrequency')?.status).toBe('accepted');
  });
  test('F.3 ReleaseTimeWindow 60 and 2^32 are accepted, 59 and 2^32+1 are not', () => {
    expect(freqAccepted({ ReleaseTimeWindow: 60 })).toBe(true);
    expect(freqAccepted({ ReleaseTimeWindow: 2 ** 32 })).toBe(true);
    expect(freqAccepted({ ReleaseTimeWindow: 59 })).toBe(false);
    expect(freqAccepted({ ReleaseTimeWindow: 2 ** 32 + 1 })).toBe(false);
  });
  test('F.3 a level other than ManuallySeparateNPU needs an explicit ReleaseTimeWindow', () => {
    expect(freqAccepted({ FaultHandling: 'SeparateNPU' })).toBe(false);
    expect(freqAccepted({ FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 2 ** 32 })).toBe(false);
    expect(freqAccepted({ FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 100 })).toBe(true);
  });
  test('F.3 FaultHandling must be one of the nine levels (exact spelling)', () => {
    expect(freqAccepted({ FaultHandling: 'NormalNPU', ReleaseTimeWindow: 100 })).toBe(false);
    expect(freqAccepted({ FaultHandling: 'separateNPU', ReleaseTimeWindow: 100 })).toBe(false);
    expect(freqAccepted({ FaultHandling: 'SubHealthFault', ReleaseTimeWindow: 100 })).toBe(true);
  });
  test('F.3 an invalid entry reports every reason in one row', () => {
    const row = freq({ TimeWindow: 1, Times: 0 }).rules.find((x) => x.section === 'FaultFrequency');
    expect(row?.reason).toMatch(/TimeWindow 1 .*Times 0/);
  });
});

describe('F.4 FaultDuration validation', () => {
  test('F.4 FaultTimeout 0 and 600 are accepted, -1 and 601 are not', () => {
    expect(durAccepted({ FaultTimeout: 0 })).toBe(true);
    expect(durAccepted({ FaultTimeout: 600 })).toBe(true);
    expect(durAccepted({ FaultTimeout: -1 })).toBe(false);
    expect(durAccepted({ FaultTimeout: 601 })).toBe(false);
  });
  test('F.4 RecoverTimeout 0 and 86400 are accepted, -1 and 86401 are not', () => {
    expect(durAccepted({ RecoverTimeout: 86400 })).toBe(true);
    expect(durAccepted({ RecoverTimeout: -1 })).toBe(false);
    expect(durAccepted({ RecoverTimeout: 86401 })).toBe(false);
  });
  test('F.4 missing numbers mean 0 (valid)', () => {
    expect(
      parse({ FaultDuration: [{ EventId: ['1'], FaultHandling: 'SeparateNPU' }] }).customization.duration.has(1),
    ).toBe(true);
  });
  test('F.4 ManuallySeparateNPU is not a FaultDuration level', () => {
    expect(durAccepted({ FaultHandling: MS })).toBe(false);
  });
});

describe('G.3 autofill release time', () => {
  test('G.3 the largest configured ReleaseTimeWindow below 2^32 (shipped: 172800 s)', () => {
    expect(autofillReleaseSeconds(parse(shippedTexts().customization).customization)).toBe(172800);
  });
  test('G.3 without any release window the autofill reasons never release', () => {
    expect(autofillReleaseSeconds(freq({}).customization)).toBe(RELEASE_NEVER);
  });
});
