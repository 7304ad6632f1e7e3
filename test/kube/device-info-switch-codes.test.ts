/**
 * The SwitchFaultCode.json source (spec L.9, F.8; issue 18 "Bad input": the last good table kept).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { SwitchCodeSource } from '../../src/kube/device-info-switch-codes.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(content: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'switch-codes-'));
  dirs.push(d);
  const f = path.join(d, 'SwitchFaultCode.json');
  fs.writeFileSync(f, content);
  return f;
}

const lines = (): { level: string; line: string }[] => [];

describe('spec L.9 SwitchFaultCode.json source', () => {
  test('F.8 an unusable file at start: the packaged copy is used, with a warning', async () => {
    const log = lines();
    const src = await SwitchCodeSource.open(
      {
        file: tmp('nope'),
        fallbackFile: path.join(PROJECT_ROOT, 'SwitchFaultCode.json'),
        log: (level, line) => log.push({ level, line }),
      },
      false,
    );
    expect(src.current().levels.get('[0x00f103b0,155907,na,na]')).toBe('Separate');
    expect(log.some((l) => l.level === 'warn' && /unusable at start/.test(l.line))).toBe(true);
  });

  test('Bad input: a reload of a malformed document keeps the last good table and logs why', async () => {
    const f = tmp(JSON.stringify({ SeparateFaultCodes: ['[0x1,2,cpu,na]'] }));
    const log = lines();
    const src = await SwitchCodeSource.open({ file: f, log: (level, line) => log.push({ level, line }) }, false);
    const changes: number[] = [];
    src.onChange((t) => changes.push(t.levels.size));
    fs.writeFileSync(f, '{"SeparateFaultCodes": 7}');
    await src.reload();
    expect(src.current().levels.get('[0x1,2,cpu,na]')).toBe('Separate');
    expect(src.lastLoad()?.status).toBe('rejected');
    expect(log.some((l) => l.level === 'error' && /last good table stays/.test(l.line))).toBe(true);
    fs.writeFileSync(f, JSON.stringify({ NotHandleFaultCodes: ['[0x1,2,cpu,na]', 'bad'] }));
    await src.reload();
    expect(src.current().levels.get('[0x1,2,cpu,na]')).toBe('NotHandle');
    expect(changes).toEqual([1]);
    expect(log.filter((l) => /\$\.NotHandleFaultCodes\[1\]/.test(l.line))).toHaveLength(1);
  });
});
