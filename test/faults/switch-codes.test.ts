/**
 * SwitchFaultCode.json (spec L.9; issue 18 item 1 and its "Bad input" rules).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { parseSwitchFaultCodeJson, switchCodeProblem } from '../../src/faults/index.js';

const SHIPPED = path.join(PROJECT_ROOT, 'SwitchFaultCode.json');

describe('spec L.9 SwitchFaultCode.json', () => {
  test('L.9 the shipped file parses without problems and levels every listed code', () => {
    const text = fs.readFileSync(SHIPPED, 'utf8');
    const r = parseSwitchFaultCodeJson(text);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.problems).toEqual([]);
    const raw = JSON.parse(text) as Record<string, string[]>;
    const listed = new Set(Object.values(raw).flat());
    expect(r.table.levels.size).toBe(listed.size);
    expect(r.table.levels.get('[0x00f103b0,155907,na,na]')).toBe('Separate');
    expect(r.table.levels.get('[0x00f1fef5,155914,npu,na]')).toBe('RestartRequest');
    expect(r.table.levels.get('[0x00f103b6,155908,na,na]')).toBe('SubHealthFault');
    expect(r.table.levels.get('[0x08520003,na,L2,na]')).toBe('NotHandle');
  });

  test('L.9 ResetFaultCodes are merged into Separate', () => {
    const r = parseSwitchFaultCodeJson(JSON.stringify({ ResetFaultCodes: ['[0x1,2,cpu,na]'] }));
    expect(r.ok && r.table.levels.get('[0x1,2,cpu,na]')).toBe('Separate');
  });

  test('L.9 a code listed at two levels takes the more severe one, with a warning', () => {
    const r = parseSwitchFaultCodeJson(
      JSON.stringify({ SeparateFaultCodes: ['[0x1,2,L2,na]'], NotHandleFaultCodes: ['[0x1,2,L2,na]'] }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.table.levels.get('[0x1,2,L2,na]')).toBe('Separate');
    expect(r.problems.map((p) => p.kind)).toEqual(['warning']);
  });

  test('Bad input: an entry too long, not bracketed or with the wrong part count gives one problem per entry', () => {
    const long = `[0x00f1fef5,${'1'.repeat(40)},cpu,na]`;
    const r = parseSwitchFaultCodeJson(
      JSON.stringify({
        NotHandleFaultCodes: [
          long,
          '0x00f1fef5,155913,cpu,na',
          '[0x00f1fef5,155913,cpu]',
          '[0x00f1fef5,155913,cpu,na]',
        ],
      }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.problems).toHaveLength(3);
    expect(r.problems.map((p) => p.path)).toEqual([
      '$.NotHandleFaultCodes[0]',
      '$.NotHandleFaultCodes[1]',
      '$.NotHandleFaultCodes[2]',
    ]);
    expect(r.problems.every((p) => p.kind === 'ignored' && p.spec === 'L.9')).toBe(true);
    expect(r.problems[0]!.reason).toMatch(/longer than 50/);
    expect(r.problems[1]!.reason).toMatch(/\[ and \]/);
    expect(r.problems[2]!.reason).toMatch(/3 comma-separated parts, expected 4/);
    expect([...r.table.levels.keys()]).toEqual(['[0x00f1fef5,155913,cpu,na]']);
  });

  test('Bad input: a document that is not JSON or has a wrong type is rejected whole', () => {
    const a = parseSwitchFaultCodeJson('{"SeparateFaultCodes": [');
    expect(a.ok).toBe(false);
    const b = parseSwitchFaultCodeJson(JSON.stringify({ SeparateFaultCodes: 'x' }));
    expect(b.ok).toBe(false);
    if (!b.ok) expect(b.fatal[0]).toMatch(/SeparateFaultCodes/);
  });

  test('L.9 the entry rule on its own', () => {
    expect(switchCodeProblem('[0x00f1fef5,na,L2,na]')).toBeUndefined();
    expect(switchCodeProblem('[a,b,c,d,e]')).toMatch(/5 comma-separated parts/);
  });
});
