/** Spec C.4 ("A5 only") and L.8: the A5 `HCCL_TOPO_FILE_PATH` chosen by card type, else super-pod type. */
import { describe, expect, test } from '@jest/globals';
import { A5_TOPO_DIR, hcclTopoFilePath } from '../../src/kubelet/hccl-topo.js';
import { withTopoFile } from '../../src/agent/wire-kubelet.js';
import { NOOP_LOGGER } from '../../src/core/logger.js';

describe('spec L.8 the A5 topology file', () => {
  test.each([
    [0, 'atlas_850_1.json'],
    [1, 'atlas_950_1.json'],
    [2, 'atlas_950_2.json'],
    [3, 'atlas_850_2.json'],
    [4, 'atlas_850_3.json'],
  ])('L.8 super-pod type %d selects %s', (superPodType, file) => {
    expect(hcclTopoFilePath({ superPodType })).toEqual({ path: `${A5_TOPO_DIR}${file}` });
  });

  test.each([
    ['300I-A5', 'atlas_350_1.json'],
    ['300I-A5-4p', 'atlas_350_3.json'],
  ])('L.8 the %s card selects %s whatever the super-pod type', (cardType, file) => {
    expect(hcclTopoFilePath({ cardType, superPodType: 2 })).toEqual({ path: `${A5_TOPO_DIR}${file}` });
  });

  test('L.8 a super-pod type without a file gives no path and says which type', () => {
    const r = hcclTopoFilePath({ superPodType: 9 });
    expect(r).toEqual({ problem: expect.stringContaining('super-pod type 9') });
  });

  test('L.8 no super-pod answer gives no path', () => {
    expect('problem' in hcclTopoFilePath({ superPodType: undefined })).toBe(true);
  });
});

describe('spec C.4 HCCL_TOPO_FILE_PATH in the Allocate variables', () => {
  const a5 = { rackId: 0, superPodType: 1, superPodSize: 64, answered: true };

  test('C.4 on A5 the variable comes first and the -enableSlowNode variables follow', () => {
    const envs = withTopoFile({ kind: 'Ascend910A5', a5 }, NOOP_LOGGER, () => ({ PERF_DUMP_PATH: '/p' }));
    expect(envs?.()).toEqual({ HCCL_TOPO_FILE_PATH: `${A5_TOPO_DIR}atlas_950_1.json`, PERF_DUMP_PATH: '/p' });
  });

  test('C.4 other kinds get no HCCL_TOPO_FILE_PATH', () => {
    const base = (): Record<string, string> => ({ PERF_DUMP_PATH: '/p' });
    expect(withTopoFile({ kind: 'Ascend910B' }, NOOP_LOGGER, base)).toBe(base);
    expect(withTopoFile({ kind: 'Ascend910A3' }, NOOP_LOGGER, undefined)).toBeUndefined();
  });

  test('C.4 an A5 node whose chips did not answer the super-pod query sets no variable', () => {
    const envs = withTopoFile({ kind: 'Ascend910A5', a5: { ...a5, answered: false } }, NOOP_LOGGER, undefined);
    expect(envs).toBeUndefined();
  });
});
