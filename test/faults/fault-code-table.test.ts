import { describe, expect, test } from '@jest/globals';
import {
  parseFaultCodeJson,
  rankOf,
  mostSevere,
  LEVELS_BY_SEVERITY,
  FormatTable,
  parseHexCode,
} from '../../src/faults/index.js';
import { shippedTexts } from './helpers.js';

function table(doc: unknown) {
  const r = parseFaultCodeJson(JSON.stringify(doc));
  if (!r.ok) throw new Error(r.fatal.join());
  return r;
}

describe('E.1 faultCode.json', () => {
  test('E.1 the shipped file loads with no ignored entry', () => {
    const r = parseFaultCodeJson(shippedTexts().faultCode);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.problems.filter((p) => p.kind !== 'warning')).toEqual([]);
  });

  test('E.1 the shipped duplicate B4060011 and cross-level A2301001 are warnings', () => {
    const r = parseFaultCodeJson(shippedTexts().faultCode);
    if (!r.ok) throw new Error('unusable');
    const texts = r.problems.map((p) => `${p.kind} ${p.value} ${p.reason}`);
    expect(texts.some((t) => t.startsWith('warning "B4060011" listed twice'))).toBe(true);
    expect(texts.some((t) => t.startsWith('warning "A2301001" also listed in RestartBusinessCodes'))).toBe(true);
  });

  test('E.1 an unparsable entry is skipped and reported with its path', () => {
    const r = table({ SeparateNPUCodes: ['80E18402', 'XYZ', '0x12'] });
    expect(r.table.chip.has(0x80e18402)).toBe(true);
    expect(r.problems.filter((p) => p.kind === 'ignored').map((p) => p.path)).toEqual([
      '$.SeparateNPUCodes[1]',
      '$.SeparateNPUCodes[2]',
    ]);
  });

  test('E.1 unknown keys are reported as ignored, missing keys are empty', () => {
    const r = table({ SeparateNPUCode: ['80E18402'] });
    expect(r.table.chip.size).toBe(0);
    expect(r.problems[0]).toMatchObject({ kind: 'ignored', path: '$.SeparateNPUCode', spec: 'E.1' });
  });

  test('E.1 key names match case-insensitively, like Go struct decoding', () => {
    expect(table({ separatenpucodes: ['80E18402'] }).table.chip.get(0x80e18402)).toBe(rankOf('SeparateNPU'));
  });

  test('E.1 a wrong JSON type makes the document unusable, naming the path', () => {
    const r = parseFaultCodeJson('{"SeparateNPUCodes":[1]}');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.fatal[0]).toContain('$.SeparateNPUCodes[0]');
  });

  test('E.1 a document that is not JSON is unusable', () => {
    const r = parseFaultCodeJson('{"SeparateNPUCodes":[');
    expect(r.ok).toBe(false);
  });

  test('E.1 a code under several keys takes the most severe', () => {
    expect(table({ NotHandleFaultCodes: ['1'], SeparateNPUCodes: ['1'] }).table.chip.get(1)).toBe(
      rankOf('SeparateNPU'),
    );
  });

  test('E.1 parameter-plane codes in chip lists are copied to the network lists', () => {
    expect(table({ PreSeparateNPUCodes: ['81078603'] }).table.network.get(0x81078603)).toBe(rankOf('PreSeparateNPU'));
    expect(table({ SubHealthFaultCodes: ['81078603'] }).table.network.get(0x81078603)).toBe(rankOf('SubHealthFault'));
  });

  test('E.1 a parameter-plane code under a restart level becomes network NotHandleFault with a warning', () => {
    const r = table({ RestartNPUCodes: ['81078603'] });
    expect(r.table.network.get(0x81078603)).toBe(rankOf('NotHandleFault'));
    expect(r.problems[0]?.kind).toBe('warning');
  });
});

describe('E.2 severity order', () => {
  test('E.2 order is ManuallySeparate > Separate > PreSeparate > RestartNPU > FreeRestart > RestartBusiness > RestartRequest > SubHealth > NotHandle > Normal', () => {
    expect([...LEVELS_BY_SEVERITY].reverse()).toEqual([
      'ManuallySeparateNPU',
      'SeparateNPU',
      'PreSeparateNPU',
      'RestartNPU',
      'FreeRestartNPU',
      'RestartBusiness',
      'RestartRequest',
      'SubHealthFault',
      'NotHandleFault',
      'NormalNPU',
    ]);
  });

  test('E.2 mostSevere of nothing is NormalNPU', () => {
    expect(mostSevere([])).toBe('NormalNPU');
    expect(mostSevere(['SubHealthFault', 'NotHandleFault'])).toBe('SubHealthFault');
  });
});

describe('E.3 fault code text', () => {
  test('E.3 the first configured spelling wins and keeps leading zeros', () => {
    const f = FormatTable.empty().extend(['020001002', '20001002']);
    expect(f.upper(0x20001002)).toBe('020001002');
  });

  test('E.3 an unconfigured code formats as %x without leading zeros', () => {
    expect(FormatTable.empty().lower(0x0abc)).toBe('abc');
    expect(FormatTable.empty().upper(0x80e01801)).toBe('80E01801');
  });

  test('E.3 hex parsing follows ParseInt(s, 16): no 0x prefix, sign allowed', () => {
    expect(parseHexCode('0x1').ok).toBe(false);
    expect(parseHexCode('-1')).toEqual({ ok: true, value: -1 });
    expect(parseHexCode('200001002')).toEqual({ ok: true, value: 0x200001002 });
    expect(parseHexCode('8000000000000000').ok).toBe(false);
  });
});
