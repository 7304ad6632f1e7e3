/**
 * `npuctl config check` explains SwitchFaultCode.json (issue 18 item 1; spec L.9).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { checkConfig, renderConfigCheck } from '../../src/cli/npuctl/config-check.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';

const FC = path.join(PROJECT_ROOT, 'faultCode.json');
const CU = path.join(PROJECT_ROOT, 'faultCustomization.json');
const SW = path.join(PROJECT_ROOT, 'SwitchFaultCode.json');

function tmpFile(content: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npuctl-sw-'));
  const f = path.join(dir, 'SwitchFaultCode.json');
  fs.writeFileSync(f, content);
  return f;
}

describe('npuctl config check: SwitchFaultCode.json', () => {
  test('L.9 the shipped file: exit 0 and the codes counted per level', () => {
    const r = checkConfig(FC, CU, { switchFaultCode: SW });
    expect(r.exitCode).toBe(0);
    expect(r.switchFaultCode?.ok).toBe(true);
    expect(r.switchFaultCode?.codes?.Separate).toBeGreaterThan(0);
    expect(renderConfigCheck(r)).toMatch(/SwitchFaultCode\.json .*: ok \(/);
  });

  test('Bad input: a malformed entry is named with its path and the rule, exit 1', () => {
    const r = checkConfig(FC, CU, {
      switchFaultCode: tmpFile(JSON.stringify({ SeparateFaultCodes: ['[0x1,2,cpu]', '[0x1,2,cpu,na]'] })),
    });
    expect(r.exitCode).toBe(1);
    const text = renderConfigCheck(r);
    expect(text).toMatch(/ignored +\$\.SeparateFaultCodes\[0\] = "\[0x1,2,cpu\]": 3 comma-separated parts/);
    expect(text).toMatch(/\[L\.9\]/);
  });

  test('Bad input: an unusable file is exit 2 and says the last good table is kept', () => {
    const r = checkConfig(FC, CU, { switchFaultCode: tmpFile('not json') });
    expect(r.exitCode).toBe(2);
    expect(renderConfigCheck(r)).toMatch(/UNUSABLE \(the agent keeps its last good switch code table\)/);
  });
});
