/**
 * Issue [N] item 3: the A5 demo timeline (`scenarios/timelines/950-serve.jsonl`) played by the built
 * `ascend-npu-agent simulate` on `scenarios/950-8chip.json` (a 1D super pod on the DCMI v2 API): kubelet sees `huawei.com/npu` with `npu-<phy>`,
 * Allocate answers with `HCCL_TOPO_FILE_PATH`, a SeparateNPU fault on npu-3 makes it Unhealthy, then it recovers;
 * FaultFrequency separates npu-5 and the operator's edit of `ManuallySeparateNPU` (`npu-5`) releases it.
 */
import path from 'node:path';
import { beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { simulate, stepAt, type SimulateRun } from '../helpers/simulate-cli.js';

describe('issue [N] item 3: the A5 demo', () => {
  // one run of the timeline (24 s) serves both tests
  let played: Promise<SimulateRun>;
  beforeAll(() => {
    played = simulate([
      '--scenario',
      path.join(PROJECT_ROOT, 'scenarios', '950-8chip.json'),
      '--timeline',
      path.join(PROJECT_ROOT, 'scenarios', 'timelines', '950-serve.jsonl'),
    ]);
  });

  test('B.3, C.4, L.8 950-serve.jsonl: huawei.com/npu npu-<phy>, HCCL_TOPO_FILE_PATH in Allocate, npu-3 Unhealthy then Healthy', async () => {
    const r = await played;
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(stepAt(r.stdout, '0.5', 'devices')).toMatch(/huawei\.com\/npu: 8 IDs npu-0 npu-1 .* npu-7; all Healthy$/);
    const alloc = stepAt(r.stdout, '1.0', 'allocate');
    expect(alloc).toMatch(/envs HCCL_TOPO_FILE_PATH=\/usr\/local\/Ascend\/driver\/topo\/950\/atlas_950_1\.json$/m);
    expect(alloc).toMatch(/devices .*\/dev\/davinci2 \/dev\/davinci5$/m);
    expect(stepAt(r.stdout, '3.0', 'devices')).toMatch(/Unhealthy \(1\): npu-3$/);
    expect(stepAt(r.stdout, '6.0', 'devices')).toMatch(/all Healthy$/);
  }, 70_000);

  test('G.2, L.6 950-serve.jsonl: FaultFrequency separates npu-5, ManuallySeparateNPU says npu-5, the operator removes npu-5 and the chip is released', async () => {
    const r = await played;
    expect([r.code, r.stderr]).toEqual([0, '']);
    const before = stepAt(r.stdout, '18.0', 'query');
    expect(before).toMatch(/npu-5\s+ManuallySeparateNPU\s+Unhealthy\s+Healthy\s+yes/);
    expect(before).toContain('ManuallySeparateNPU="npu-5"');
    const after = stepAt(r.stdout, '22.5', 'query');
    expect(after).toContain('(8/8 Healthy in kubelet) ConfigMap: ManuallySeparateNPU=""');
  }, 70_000);
});
