/** Default device nodes per product (spec C.4 item 1), looked up under -devDir. */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import {
  collectDefaultDeviceNodes,
  FsDeviceNodeProbe,
  InMemoryDeviceNodeProbe,
  ubNodes,
} from '../../src/kubelet/device-nodes.js';
import { DeviceNodeMissingError } from '../../src/kubelet/errors.js';
import { tempRoot } from './harness.js';

const containerPaths = (names: string[], opts: Parameters<typeof collectDefaultDeviceNodes>[1]) =>
  collectDefaultDeviceNodes(new InMemoryDeviceNodeProbe(names), opts).map((n) => n.containerPath);

describe('C.4 default device nodes', () => {
  test('C.4 davinci_manager, then hisi_hdc and devmm_svm when present', () => {
    expect(containerPaths(['davinci_manager', 'devmm_svm'], { chipKind: 'Ascend910B' })).toEqual([
      '/dev/davinci_manager',
      '/dev/devmm_svm',
    ]);
  });

  test('C.4 a missing /dev/davinci_manager is an error naming the path', () => {
    expect(() => collectDefaultDeviceNodes(new InMemoryDeviceNodeProbe([]), { chipKind: 'Ascend910' })).toThrow(
      DeviceNodeMissingError,
    );
    expect(() => collectDefaultDeviceNodes(new InMemoryDeviceNodeProbe([]), { chipKind: 'Ascend910' })).toThrow(
      '/dev/davinci_manager',
    );
  });

  test('C.4 -fdFlag adds the edge nodes that exist', () => {
    expect(containerPaths(['davinci_manager', 'log_drv', 'svm0'], { chipKind: 'Ascend310', fdFlag: true })).toEqual([
      '/dev/davinci_manager',
      '/dev/log_drv',
      '/dev/svm0',
    ]);
  });

  test('C.4 310B mounts davinci_manager_docker at /dev/davinci_manager, plus its optional nodes', () => {
    const nodes = collectDefaultDeviceNodes(new InMemoryDeviceNodeProbe(['davinci_manager_docker', 'venc'], '/d'), {
      chipKind: 'Ascend310B',
    });
    expect(nodes).toEqual([
      { hostPath: '/d/davinci_manager_docker', containerPath: '/dev/davinci_manager' },
      { hostPath: '/d/venc', containerPath: '/dev/venc' },
    ]);
  });

  test('C.4 Atlas 200I SoC A1 needs its own nodes', () => {
    const opts = { chipKind: 'Ascend310' as const, productTypes: ['Atlas 200I SoC A1'] };
    expect(() => containerPaths(['davinci_manager'], opts)).toThrow('/dev/vpc');
    const all = ['davinci_manager', 'vpc', 'vdec', 'sys', 'spi_smbus', 'user_config'];
    all.push('ts_aisle', 'svm0', 'log_drv', 'memory_bandwidth', 'upgrade', 'xsmem_dev');
    expect(containerPaths(all, opts)).toContain('/dev/xsmem_dev');
  });

  test('C.4 the file-system probe reads -devDir', () => {
    const dir = tempRoot();
    try {
      fs.writeFileSync(path.join(dir, 'davinci_manager'), '');
      fs.mkdirSync(path.join(dir, 'ummu', 'sub'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'ummu', 'ummu0'), '');
      const probe = new FsDeviceNodeProbe(dir);
      expect(collectDefaultDeviceNodes(probe, { chipKind: 'Ascend910B' })).toEqual([
        { hostPath: path.join(dir, 'davinci_manager'), containerPath: '/dev/davinci_manager' },
      ]);
      expect(ubNodes(probe)).toEqual([{ hostPath: path.join(dir, 'ummu', 'ummu0'), containerPath: '/dev/ummu/ummu0' }]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
