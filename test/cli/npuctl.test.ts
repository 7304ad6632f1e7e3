import { describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkConfig, renderConfigCheck } from '../../src/cli/npuctl/config-check.js';
import { UsageError } from '../../src/cli/npuctl/io.js';
import { replay, type ReplayLine } from '../../src/cli/npuctl/replay.js';
import { parseScenarioChips, parseTimeline } from '../../src/cli/npuctl/timeline.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { shippedPolicy } from '../faults/helpers.js';

const FC = path.join(PROJECT_ROOT, 'faultCode.json');
const CU = path.join(PROJECT_ROOT, 'faultCustomization.json');
const SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json');
const TIMELINES = path.join(PROJECT_ROOT, 'scenarios', 'timelines');

function tmpFile(name: string, content: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npuctl-'));
  const f = path.join(dir, name);
  fs.writeFileSync(f, content);
  return f;
}

function runReplay(file: string): ReplayLine[] {
  const chips = parseScenarioChips(fs.readFileSync(SCENARIO, 'utf8'));
  const steps = parseTimeline(
    fs.readFileSync(path.join(TIMELINES, file), 'utf8'),
    new Set(chips.map((c) => c.logicId)),
  );
  const lines: ReplayLine[] = [];
  replay(shippedPolicy(), chips, steps, { onLine: (l) => lines.push(l) });
  return lines;
}

describe('npuctl config check', () => {
  test('§7 the shipped files: exit 0, every rule accepted, duplicates only as warnings', () => {
    const r = checkConfig(FC, CU);
    expect(r.exitCode).toBe(0);
    expect(r.faultCode.problems.every((p) => p.kind === 'warning')).toBe(true);
    expect(r.customization.rules.every((x) => x.status === 'accepted')).toBe(true);
  });

  test('§7 an out-of-range value: exit 1, the rule names path, value, reason and spec section', () => {
    const cu = tmpFile(
      'c.json',
      JSON.stringify({
        GraceTolerance: { WaitDeviceResetTime: 500 },
        FaultFrequency: [{ EventId: ['1'], TimeWindow: 10, Times: 1, FaultHandling: 'ManuallySeparateNPU' }],
      }),
    );
    const r = checkConfig(FC, cu);
    expect(r.exitCode).toBe(1);
    expect(r.customization.rules.find((x) => x.field === 'WaitDeviceResetTime')).toMatchObject({
      status: 'defaulted',
      value: '500',
      spec: 'F.2',
      path: '$.GraceTolerance.WaitDeviceResetTime',
    });
    expect(r.customization.rules.find((x) => x.section === 'FaultFrequency')).toMatchObject({
      status: 'ignored',
      path: '$.FaultFrequency[0].TimeWindow',
      value: '10',
      spec: 'F.3',
    });
    const text = renderConfigCheck(r);
    expect(text).toContain('$.FaultFrequency[0].TimeWindow = 10');
    expect(text).toContain('[F.3]');
  });

  test('§7 a wrong JSON type: exit 2 naming the path', () => {
    const cu = tmpFile('c.json', '{"FaultDuration":[{"EventId":"81078603"}]}');
    const r = checkConfig(FC, cu);
    expect(r.exitCode).toBe(2);
    expect(r.customization.fatal?.[0]).toContain('$.FaultDuration[0].EventId');
  });

  test('§7 an unreadable file: exit 2', () => {
    expect(checkConfig(path.join(os.tmpdir(), 'does-not-exist.json'), CU).exitCode).toBe(2);
  });

  test('§7 a non-hex faultCode entry is reported and exits 1', () => {
    const fc = tmpFile('f.json', JSON.stringify({ SeparateNPUCodes: ['80E18402', 'nothex'] }));
    const r = checkConfig(fc, CU);
    expect(r.exitCode).toBe(1);
    expect(r.faultCode.problems[0]).toMatchObject({
      kind: 'ignored',
      path: '$.SeparateNPUCodes[1]',
      value: '"nothex"',
    });
  });
});

describe('npuctl policy replay: timelines', () => {
  test('§7 ops other than fault/release/podUses/query are refused naming the line', () => {
    expect(() =>
      parseTimeline('{"t":0,"op":"query"}\n{"t":1,"op":"link","logicId":1,"status":"DOWN"}\n', new Set([1])),
    ).toThrow(/line 2: op "link"/);
  });

  test('§7 a line going back in time is refused', () => {
    expect(() => parseTimeline('{"t":5,"op":"query"}\n{"t":1,"op":"query"}', new Set())).toThrow(UsageError);
  });

  test('§7 a fault on a chip outside the scenario is refused', () => {
    expect(() =>
      parseTimeline('{"t":0,"op":"fault","logicId":9,"eventId":"1","assertion":"occur"}', new Set([1])),
    ).toThrow(/logic id 9/);
  });

  test('§7 severity defaults to 2', () => {
    const [s] = parseTimeline(
      '{"t":0,"op":"fault","logicId":1,"eventId":"80e01801","assertion":"occur"}',
      new Set([1]),
    );
    expect(s).toMatchObject({ code: 0x80e01801, severity: 2 });
  });

  test('§7 a line over 64 KiB is refused', () => {
    expect(() => parseTimeline(`{"t":0,"op":"query","x":"${'a'.repeat(70000)}"}`, new Set())).toThrow(/longer than/);
  });
});

describe('npuctl policy replay: spec worked examples', () => {
  const chip = (l: ReplayLine | undefined, id: number) => l?.chips.find((c) => c.logicId === id);

  test('F.3 80E01801 twice in 24 h: ManuallySeparateNPU at t=90000, back to normal after the operator release', () => {
    const lines = runReplay('f3-hbm-escalation.jsonl');
    expect(chip(lines[0], 3)).toMatchObject({ level: 'NormalNPU', health: 'Healthy' });
    expect(lines[1]?.t).toBe(90000);
    expect(chip(lines[1], 3)).toEqual({
      logicId: 3,
      name: 'Ascend910-3',
      level: 'ManuallySeparateNPU',
      health: 'Unhealthy',
      networkHealth: 'Healthy',
      faultCodes: ['80E01801'],
      manuallySeparated: true,
      networkLevel: 'NormalNPU',
    });
    expect(chip(lines[2], 3)).toMatchObject({ level: 'ManuallySeparateNPU', faultCodes: [], manuallySeparated: true });
    expect(chip(lines[3], 3)).toMatchObject({ level: 'NormalNPU', health: 'Healthy', manuallySeparated: false });
  });

  test('F.6 link down: NotHandle, then PreSeparateNPU after 20 s, cleared after 60 s up, ManuallySeparateNPU after 5 drops, released after 48 h', () => {
    const lines = runReplay('f6-link-down.jsonl');
    const at = (i: number) => chip(lines[i], 5);
    expect(at(0)).toMatchObject({ networkLevel: 'NotHandleFault', networkHealth: 'Healthy', faultCodes: ['81078603'] });
    expect(at(1)).toMatchObject({ networkLevel: 'PreSeparateNPU', networkHealth: 'Unhealthy', health: 'Healthy' });
    expect(at(2)).toMatchObject({ networkLevel: 'PreSeparateNPU', faultCodes: [] });
    expect(at(3)).toMatchObject({ networkLevel: 'NormalNPU', networkHealth: 'Healthy' });
    expect(at(4)).toMatchObject({
      networkLevel: 'ManuallySeparateNPU',
      manuallySeparated: true,
      health: 'Healthy',
      level: 'NormalNPU',
    });
    expect(at(5)).toMatchObject({ manuallySeparated: true });
    expect(at(6)).toMatchObject({ manuallySeparated: false, networkLevel: 'NormalNPU' });
  });

  test('D.6 a notice is visible for one cycle; D.7 PreSeparateNPU on a pod-used chip is Healthy', () => {
    const lines = runReplay('d6-notice.jsonl');
    expect(chip(lines[0], 2)).toMatchObject({ level: 'SeparateNPU', health: 'Unhealthy', faultCodes: ['80E18402'] });
    expect(chip(lines[1], 2)).toMatchObject({ level: 'NormalNPU', health: 'Healthy', faultCodes: [] });
    expect(chip(lines[2], 4)).toMatchObject({ level: 'PreSeparateNPU', health: 'Unhealthy' });
    expect(chip(lines[3], 4)).toMatchObject({ level: 'PreSeparateNPU', health: 'Healthy' });
  });

  test('§7 one line per query plus one at the end, all chips by logic id', () => {
    const lines = runReplay('d6-notice.jsonl');
    expect(lines).toHaveLength(5);
    expect(lines[4]?.chips.map((c) => c.logicId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('npuctl process', () => {
  const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', path.join(PROJECT_ROOT, 'src', 'cli', 'npuctl.ts'), ...args],
        { cwd: PROJECT_ROOT },
        (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });

  test('§7 config check --json on the shipped files exits 0 with the report shape', async () => {
    const r = await run(['config', 'check', '--fault-code', FC, '--customization', CU, '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.faultCode.ok).toBe(true);
    expect(doc.customization.rules[3]).toMatchObject({
      section: 'FaultFrequency',
      index: 0,
      status: 'accepted',
      spec: 'F.3',
    });
  });

  test('§7 policy replay with an invalid op exits 2 naming the line', async () => {
    const tl = tmpFile('t.jsonl', '{"t":0,"op":"drop","logicId":1}\n');
    const r = await run(['policy', 'replay', '--timeline', tl, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('line 1');
  });

  test('§3 --version answers', async () => {
    const r = await run(['--version']);
    expect(r.stdout).toMatch(/^npuctl \d+\.\d+\.\d+/);
  });
});

describe('npuctl config check --names (issue 17 item 5, spec L.6)', () => {
  test('L.6 a good file is listed entry by entry; exit 0', () => {
    const f = tmpFile(
      'names.json',
      JSON.stringify([
        { ResourceType: 'Ascend310P', DevicePublicType: 'example.com/infer310', DevicePublicNamePre: 'inf-' },
      ]),
    );
    const r = checkConfig(FC, CU, { names: f });
    expect(r.exitCode).toBe(0);
    expect(r.deviceNames).toMatchObject({ found: true, ok: true, problems: [] });
    expect(renderConfigCheck(r)).toContain(
      'accepted   Ascend310P: resource huawei.com/Ascend310P → example.com/infer310, names Ascend310P-<id> → inf-<id>',
    );
  });

  test('L.6 a bad file is explained one problem per entry; exit 1 (the agent runs with the inner names)', () => {
    const f = tmpFile(
      'names.json',
      JSON.stringify([{ ResourceType: '', DevicePublicType: '', DevicePublicNamePre: '', PodConfigurationName: '' }]),
    );
    const r = checkConfig(FC, CU, { names: f });
    expect(r.exitCode).toBe(1);
    const text = renderConfigCheck(r);
    expect(text).toContain('NOT USED (the agent keeps the inner names) [L.6]');
    expect(text).toContain('  ignored    entry 0: ResourceType is empty');
  });

  test('L.6 no file: no customisation, exit 0', () => {
    const r = checkConfig(FC, CU, { names: path.join(os.tmpdir(), 'no-such-dir-npuctl', 'names.json') });
    expect(r.exitCode).toBe(0);
    expect(r.deviceNames).toMatchObject({ found: false, ok: true });
  });
});
