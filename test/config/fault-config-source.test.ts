import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileFaultConfigSource, type FaultConfigReport } from '../../src/config/fault-config-source.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { MAX_CONFIG_BYTES } from '../../src/faults/index.js';

let dir: string;
let fcFile: string;
let cuFile: string;
const packagedFc = path.join(PROJECT_ROOT, 'faultCode.json');
const packagedCu = path.join(PROJECT_ROOT, 'faultCustomization.json');
const validCu = JSON.stringify({
  FaultFrequency: [{ EventId: ['80E01801'], TimeWindow: 60, Times: 1, FaultHandling: 'ManuallySeparateNPU' }],
});

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultcfg-'));
  fcFile = path.join(dir, 'faultCode.json');
  cuFile = path.join(dir, 'faultCustomization.json');
  fs.writeFileSync(fcFile, JSON.stringify({ SeparateNPUCodes: ['80E18402'] }));
  fs.writeFileSync(cuFile, validCu);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const open = (watch = false, extra = {}) =>
  FileFaultConfigSource.open(
    {
      faultCodeFile: fcFile,
      customizationFile: cuFile,
      fallbackFaultCodeFile: packagedFc,
      fallbackCustomizationFile: packagedCu,
      debounceMs: 20,
      ...extra,
    },
    watch,
  );

describe('FaultConfig file source', () => {
  test('F.8 loads both files at start', async () => {
    const src = await open();
    expect(src.current().codes.chip.size).toBe(1);
    expect(src.current().customization.frequency.size).toBe(1);
    expect(src.lastReport().files.map((f) => f.status)).toEqual(['loaded', 'loaded']);
    src.close();
  });

  test('F.1 an unusable file at start falls back to the packaged copy and says why', async () => {
    fs.writeFileSync(cuFile, '{not json');
    const lines: string[] = [];
    const src = await open(false, { log: (_l: string, line: string) => lines.push(line) });
    expect(src.current().customization.frequency.size).toBe(43);
    expect(src.lastReport().files[1]).toMatchObject({ status: 'fallback' });
    expect(lines.some((l) => l.includes('not valid JSON'))).toBe(true);
    src.close();
  });

  test('F.1 a broken new version is rejected and the last good one is kept', async () => {
    const src = await open();
    fs.writeFileSync(cuFile, '{"FaultFrequency":[{"EventId":["1"],"Times":"2"}]}');
    await src.reload();
    expect(src.lastReport().files[1]).toMatchObject({ status: 'rejected' });
    expect(src.lastReport().files[1]?.fatal[0]).toContain('$.FaultFrequency[0].Times');
    expect(src.current().customization.frequency.has(0x80e01801)).toBe(true);
    src.close();
  });

  test('F.1 a file over the 1 MiB limit is rejected without being parsed', async () => {
    const src = await open();
    fs.writeFileSync(cuFile, ' '.repeat(MAX_CONFIG_BYTES + 1));
    await src.reload();
    expect(src.lastReport().files[1]?.fatal[0]).toContain('limit');
    src.close();
  });

  test('an unchanged file is reported as unchanged and no swap happens', async () => {
    const src = await open();
    const before = src.current();
    await src.reload();
    expect(src.lastReport()).toMatchObject({ changed: false });
    expect(src.current()).toBe(before);
    src.close();
  });

  test('a replaced file is picked up by the folder watch and reported', async () => {
    const src = await open(true);
    const seen = new Promise<FaultConfigReport>((resolve) => src.subscribe((r) => r.changed && resolve(r)));
    const tmp = path.join(dir, 'tmp.json');
    fs.writeFileSync(
      tmp,
      JSON.stringify({
        FaultDuration: [
          { EventId: ['81078603'], FaultTimeout: 20, RecoverTimeout: 60, FaultHandling: 'PreSeparateNPU' },
        ],
      }),
    );
    fs.renameSync(tmp, cuFile); // editors replace files
    const report = await seen;
    expect(report.trigger).toBe('watch');
    expect(src.current().customization.duration.size).toBe(1);
    src.close();
  });
});
