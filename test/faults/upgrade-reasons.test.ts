/**
 * The readers of operator values (spec G.2 `ManuallySeparateNPU`, G.5 `UpgradeFaultReason`) against hostile input
 * (issue 12 items 3 and 4): one rule for a value typed while the agent runs or while it is down, bounded problems.
 */
import { describe, expect, test } from '@jest/globals';
import {
  checkManualValue,
  MAX_KEPT_PROBLEMS,
  MAX_OPERATOR_VALUE_CHARS,
  parseManualNames,
  parseReasonsJson,
} from '../../src/faults/index.js';

const ON_NODE: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 5, 6, 7]);

describe('G.2 the rule for an operator ManuallySeparateNPU value', () => {
  test.each(['', 'Ascend910-3', 'Ascend910-5,Ascend910-3', 'Ascend910-3,Ascend910-3'])('%j is clean', (v) => {
    expect(checkManualValue(v, 'Ascend910', ON_NODE).ok).toBe(true);
  });

  test.each([
    'garbage',
    'Ascend910-3;Ascend910-5',
    'ascend910-3,ascend910-5',
    'Ascend910-3,',
    ',Ascend910-3',
    'Ascend910-3,Ascend910-99',
    'Ascend910-3x',
    'Ascend310P-3',
  ])('%j is rejected as a whole', (v) => {
    expect(checkManualValue(v, 'Ascend910', ON_NODE).ok).toBe(false);
  });

  test('a clean value gives its phy ids', () => {
    expect(checkManualValue('Ascend910-5,Ascend910-3', 'Ascend910', ON_NODE)).toEqual({ ok: true, phyIds: [5, 3] });
  });

  test('a value over the limit is refused without being parsed', () => {
    const r = checkManualValue('Ascend910-1,'.repeat(MAX_OPERATOR_VALUE_CHARS / 8), 'Ascend910', ON_NODE);
    expect(r).toEqual({ ok: false, problems: [expect.stringContaining('longer than')] });
  });
});

describe('G.2 bounded problems of a hostile ManuallySeparateNPU', () => {
  test('"x," × 200000: the first problems kept, the rest counted in one entry', () => {
    const { problems } = parseManualNames('x,'.repeat(200_000), 'Ascend910');
    expect([problems.length, problems.at(-1)]).toEqual([
      MAX_KEPT_PROBLEMS + 1,
      `… and ${200_001 - MAX_KEPT_PROBLEMS} more problems`,
    ]);
  });

  test('a 1 MiB entry is quoted by its first 64 characters and its length', () => {
    const { problems } = parseManualNames('y'.repeat(MAX_OPERATOR_VALUE_CHARS), 'Ascend910');
    expect([
      problems.length,
      problems[0]!.length < 200,
      problems[0]!.includes(`(${MAX_OPERATOR_VALUE_CHARS} chars)`),
    ]).toEqual([1, true, true]);
  });

  test('names of phy ids not on the node: bounded as well', () => {
    const value = Array.from({ length: 50_000 }, (_, i) => `Ascend910-${i + 100}`).join(',');
    const r = checkManualValue(value, 'Ascend910', ON_NODE);
    expect(r.ok ? [] : [r.problems.length, r.problems.at(-1)]).toEqual([
      MAX_KEPT_PROBLEMS + 1,
      `… and ${50_000 - MAX_KEPT_PROBLEMS} more problems`,
    ]);
  });
});

describe('G.5 bounded problems of a hostile UpgradeFaultReason', () => {
  test('25 000 reasons not understood: the first problems kept, the rest counted', () => {
    const text = `{"Ascend910-1":[${Array(25_000).fill('{"fault_level":"x","upgrade_type":"y"}').join(',')}]}`;
    const { problems } = parseReasonsJson(text);
    expect([problems.length, problems.at(-1)]).toEqual([
      MAX_KEPT_PROBLEMS + 1,
      `… and ${25_000 - MAX_KEPT_PROBLEMS} more problems`,
    ]);
  });

  test('a key of a million characters is quoted short', () => {
    const { problems } = parseReasonsJson(`{"${'k'.repeat(1_000_000)}":[]}`);
    expect([problems.length, problems[0]!.length < 300]).toEqual([1, true]);
  });

  test('a valid key of a million characters names its items by a short path', () => {
    const text = `{"${'k'.repeat(1_000_000)}-1":[{"fault_level":"x","upgrade_type":"y"}]}`;
    const { problems } = parseReasonsJson(text);
    expect([problems.length, problems[0]!.length < 300]).toEqual([1, true]);
  });

  test('wrong types in 30 000 items: bounded', () => {
    const text = `{"Ascend910-1":[${Array(30_000).fill('{"upgrade_time":"t"}').join(',')}]}`;
    const { problems } = parseReasonsJson(text);
    expect(problems.length).toBe(MAX_KEPT_PROBLEMS + 1);
  });

  test('40 000 duplicate members of one reason are read (the last one wins, as in Go)', () => {
    const dup = Array.from({ length: 40_000 }, (_, i) => `"fault_code":"c${i}"`).join(',');
    const text = `{"Ascend910-1":[{${dup},"fault_level":"ManuallySeparateNPU","upgrade_type":"FaultFrequency"}]}`;
    expect(
      parseReasonsJson(text)
        .reasons.get(1)
        ?.map((r) => r.fault_code),
    ).toEqual(['c39999']);
  });

  test('a value over the limit is refused without being parsed', () => {
    const { problems } = parseReasonsJson(' '.repeat(MAX_OPERATOR_VALUE_CHARS + 1));
    expect(problems).toEqual([expect.stringContaining('longer than')]);
  });
});
