/**
 * Issue 17 item 6: `simulate` timelines that show each inference mode (docs/inference.md). The built
 * `ascend-npu-agent simulate` runs as a child process with `--agentFlag`s on a 310P scenario and plays
 * `scenarios/timelines/310p-*.jsonl`: what kubelet sees (the IDs per resource), a fault on a shared or named chip
 * making every ID of that chip Unhealthy, its recovery; soft share and dynamic vNPU also create a pod and Allocate.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { devicesAt, simulate, stepAt } from '../helpers/simulate-cli.js';

const scenario = (name: string): string => path.join(PROJECT_ROOT, 'scenarios', name);
const timeline = (name: string): string => path.join(PROJECT_ROOT, 'scenarios', 'timelines', name);

describe('issue 17 item 6: simulate --agentFlag', () => {
  test('simulate --help lists --agentFlag', async () => {
    const r = await simulate(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--agentFlag FLAG .*after the sandbox's own flags/);
  });

  test('A.1 a bad --agentFlag gets the agent flag parser error and exit 2', async () => {
    const r = await simulate(['--scenario', scenario('310p-4chip.json'), '--agentFlag', '-shareDevCount=abc']);
    expect([r.code, r.stderr]).toEqual([
      2,
      'ascend-npu-agent simulate: invalid unsigned integer value "abc" for -shareDevCount\n',
    ]);
  });

  test('A.1 a cross-flag rule is checked as the agent checks it (share mode needs -volcanoType=false)', async () => {
    const r = await simulate([
      '--scenario',
      scenario('310p-4chip.json'),
      '--agentFlag',
      '-shareDevCount=3',
      '--agentFlag=-volcanoType=true',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/-shareDevCount > 1 without -softShareDevConfigDir requires -volcanoType=false/);
  });

  test('--agentFlag without a flag is a simulate usage error (exit 2)', async () => {
    const r = await simulate(['--agentFlag', 'shareDevCount=3']);
    expect([r.code, r.stderr]).toEqual([
      2,
      'ascend-npu-agent simulate: --agentFlag needs an agent flag such as -shareDevCount=3\n',
    ]);
  });
});

describe('issue 17 item 6: the pod and allocate timeline ops', () => {
  test('architecture §7 a pod step without "count" or an allocate step without IDs: exit 2 naming the line', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'demo-modes-'));
    try {
      const pod = path.join(dir, 'pod.jsonl');
      fs.writeFileSync(
        pod,
        '{"t":0,"op":"devices"}\n{"t":1,"op":"pod","name":"a","resource":"huawei.com/Ascend310P"}\n',
      );
      const allocate = path.join(dir, 'allocate.jsonl');
      fs.writeFileSync(allocate, '{"t":0,"op":"allocate","resource":"huawei.com/Ascend310P","ids":[]}\n');
      const r1 = await simulate(['--timeline', pod]);
      expect([r1.code, r1.stderr]).toEqual([
        2,
        `ascend-npu-agent simulate: ${pod}:2: pod needs "count", an integer 1..1600\n`,
      ]);
      const r2 = await simulate(['--timeline', allocate]);
      expect([r2.code, r2.stderr]).toEqual([
        2,
        `ascend-npu-agent simulate: ${allocate}:1: "ids" must be 1..1600 device IDs (strings)\n`,
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('issue 17 item 6: the 310P mode timelines', () => {
  test('B.3/C.1 share mode (310p-share.jsonl, -shareDevCount=3): 3 copies per chip; a fault on chip 2 makes its 3 copies Unhealthy, then they recover', async () => {
    const r = await simulate([
      '--scenario',
      scenario('310p-4chip.json'),
      '--timeline',
      timeline('310p-share.jsonl'),
      '--agentFlag',
      '-shareDevCount=3',
    ]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const R = 'huawei.com/Ascend310P';
    expect(devicesAt(r.stdout, '0.5', R)).toMatch(
      /: 12 IDs Ascend310P-0-0 Ascend310P-0-1 Ascend310P-0-2 .* Ascend310P-3-2; all Healthy$/,
    );
    expect(devicesAt(r.stdout, '6.0', R)).toMatch(/Unhealthy \(3\): Ascend310P-2-0 Ascend310P-2-1 Ascend310P-2-2$/);
    expect(devicesAt(r.stdout, '14.0', R)).toMatch(/all Healthy$/);
    expect(r.stdout).toMatch(/summary\n.*\n\s+kubelet\s+4 Healthy/);
  }, 70_000);

  test('L.6 public names (310p-names.jsonl, names-310p.json): kubelet sees example.com/infer310p infer-<phy>; a fault makes infer-2 Unhealthy, then it recovers', async () => {
    const r = await simulate([
      '--scenario',
      scenario('310p-4chip.json'),
      '--timeline',
      timeline('310p-names.jsonl'),
      '--agentFlag',
      `-nameCustomizationFile=${scenario('names-310p.json')}`,
    ]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const R = 'example.com/infer310p';
    expect(devicesAt(r.stdout, '0.5', R)).toMatch(/: 4 IDs infer-0 infer-1 infer-2 infer-3; all Healthy$/);
    expect(devicesAt(r.stdout, '6.0', R)).toMatch(/Unhealthy \(1\): infer-2$/);
    expect(devicesAt(r.stdout, '14.0', R)).toMatch(/all Healthy$/);
  }, 70_000);

  test('B.3 310P mixed insert (310p-mixed.jsonl, -use310PMixedInsert=true): one resource per product type; a fault makes Ascend310P-IPro-2 Unhealthy, then it recovers', async () => {
    const r = await simulate([
      '--scenario',
      scenario('310p-mixed.json'),
      '--timeline',
      timeline('310p-mixed.jsonl'),
      '--agentFlag',
      '-use310PMixedInsert=true',
    ]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(devicesAt(r.stdout, '0.5', 'huawei.com/Ascend310P-VPro')).toMatch(/: 1 ID Ascend310P-VPro-0; all Healthy$/);
    expect(devicesAt(r.stdout, '0.5', 'huawei.com/Ascend310P-V')).toMatch(/: 1 ID Ascend310P-V-1; all Healthy$/);
    expect(devicesAt(r.stdout, '0.5', 'huawei.com/Ascend310P-IPro')).toMatch(
      /: 2 IDs Ascend310P-IPro-2 Ascend310P-IPro-3; all Healthy$/,
    );
    expect(devicesAt(r.stdout, '6.0', 'huawei.com/Ascend310P-IPro')).toMatch(/Unhealthy \(1\): Ascend310P-IPro-2$/);
    expect(devicesAt(r.stdout, '6.0', 'huawei.com/Ascend310P-VPro')).toMatch(/all Healthy$/);
    expect(devicesAt(r.stdout, '14.0', 'huawei.com/Ascend310P-IPro')).toMatch(/all Healthy$/);
  }, 70_000);

  test('L.7 soft share (310p-soft.jsonl): Allocate of the annotated pod mounts its vNPU folder on chip 2; a fault makes all 100 copies of chip 2 Unhealthy, then they recover', async () => {
    const r = await simulate([
      '--scenario',
      scenario('310p-soft.json'),
      '--timeline',
      timeline('310p-soft.jsonl'),
      '--agentFlag',
      '-shareDevCount=100',
      '--agentFlag',
      '-softShareDevConfigDir={sandbox}/share_device',
      '--agentFlag',
      '-volcanoType=true',
    ]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const R = 'huawei.com/Ascend310P';
    const alloc = stepAt(r.stdout, '1.0', 'allocate');
    expect(alloc).toMatch(/mount \/etc\/enpu\/vcann-rt\/ <- \{sandbox\}\/host\/etc\/enpu\/default\.job1\/2_0\/ \(ro\)/);
    expect(alloc).toMatch(/mount \/dev\/shm\/\S+ <- \{sandbox\}\/share_device\/2\/\S+ \(rw\)/);
    expect(alloc).toMatch(/devices .*\/dev\/davinci2$/m);
    expect(r.stdout).toMatch(/huawei\.com\/Ascend310P: 400 IDs Ascend310P-0-0 .* Ascend310P-3-99; all Healthy/);
    expect(devicesAt(r.stdout, '6.5', R)).toMatch(/Unhealthy \(100\): Ascend310P-2-0 .* Ascend310P-2-99$/);
    expect(devicesAt(r.stdout, '14.5', R)).toMatch(/all Healthy$/);
    expect(stepAt(r.stdout, '15.0', 'pod')).toMatch(/deleted pod default\/infer-a/);
  }, 70_000);

  test('C.1/C.3 dynamic vNPU (310p-vnpu.jsonl): Allocate creates vir02 on chip 1, a phy id not on the node is NoNPUResource, a fault makes chip 1 cores Unhealthy, the vNPU goes with its pod', async () => {
    const r = await simulate([
      '--scenario',
      scenario('310p-vnpu.json'),
      '--timeline',
      timeline('310p-vnpu.jsonl'),
      '--agentFlag',
      '-presetVirtualDevice=false',
      '--agentFlag',
      '-volcanoType=true',
    ]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const R = 'huawei.com/npu-core';
    expect(devicesAt(r.stdout, '0.5', R)).toMatch(/: 32 IDs npu-core-0 .* npu-core-31; all Healthy$/);
    expect(stepAt(r.stdout, '1.2', 'allocate')).toMatch(/devices .*\/dev\/davinci100$/m);
    expect(stepAt(r.stdout, '1.5', 'vdevs')).toMatch(/mock: chip 1: vNPU 100 vir02 \(2 AI cores\); 6 AI cores free/);
    expect(stepAt(r.stdout, '2.2', 'allocate')).toMatch(
      /refused: FAILED_PRECONDITION: NoNPUResource: pod default\/lost-0: .*phy id 9/,
    );
    expect(devicesAt(r.stdout, '8.0', R)).toMatch(
      /Unhealthy \(8\): npu-core-8 npu-core-9 npu-core-10 npu-core-11 npu-core-12 npu-core-13 npu-core-14 npu-core-15$/,
    );
    expect(devicesAt(r.stdout, '16.0', R)).toMatch(/all Healthy$/);
    expect(stepAt(r.stdout, '22.0', 'vdevs')).toMatch(/mock: chip 1: no vNPU; 8 AI cores free/);
  }, 70_000);
});
