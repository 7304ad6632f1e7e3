/**
 * Issue [DRA] item 6: CDI specs of kind ascend.com/npu — device numbers read from the host, names checked, the
 * lowest cdiVersion the content needs, atomic files in the spec folder, the driver mounts by chip kind.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import {
  buildSpec,
  CDI_KIND,
  CDI_VERSION,
  CdiNameError,
  CdiNodeError,
  checkDeviceName,
  driverMounts,
  qualifiedName,
  readCharDevice,
} from '../../src/cdi/spec.js';
import { CdiSpecDir } from '../../src/cdi/spec-dir.js';
import { makeCharDevices, MAJOR, mknod } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dra-cdi-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('issue [DRA] item 6: device nodes read from the host', () => {
  test('major and minor are the host node’s, as stat reports them (not guessed from the name)', () => {
    const node = path.join(dir, 'davinci3');
    mknod(node, 4093, 1048575); // the largest Linux numbers: both parts of the 64-bit rdev encoding
    expect(readCharDevice({ hostPath: node, containerPath: '/dev/davinci3' })).toEqual({
      path: '/dev/davinci3',
      hostPath: node,
      type: 'c',
      major: 4093,
      minor: 1048575,
      fileMode: 0o666,
      permissions: 'rw',
    });
  });

  test('a regular file or a missing node is refused, naming the path', () => {
    fs.writeFileSync(path.join(dir, 'davinci0'), '');
    expect(() => readCharDevice({ hostPath: path.join(dir, 'davinci0'), containerPath: '/dev/davinci0' })).toThrow(
      new CdiNodeError(path.join(dir, 'davinci0'), 'is not a character device'),
    );
    expect(() => readCharDevice({ hostPath: path.join(dir, 'nope'), containerPath: '/dev/nope' })).toThrow(
      /nope: cannot be read/,
    );
  });
});

describe('issue [DRA] item 6: the spec', () => {
  test('kind ascend.com/npu, cdiVersion 0.5.0 (hostPath and digit-first names need it), per-device and shared nodes', () => {
    makeCharDevices(dir, 2);
    const spec = buildSpec({
      devices: [
        { name: '0a-Ascend910-1', nodes: [{ hostPath: path.join(dir, 'davinci1'), containerPath: '/dev/davinci1' }] },
      ],
      shared: [{ hostPath: path.join(dir, 'davinci_manager'), containerPath: '/dev/davinci_manager' }],
      mounts: [],
    });
    expect([spec.kind, spec.cdiVersion]).toEqual([CDI_KIND, '0.5.0']);
    expect(CDI_VERSION).toBe('0.5.0');
    expect(spec.devices[0]!.containerEdits.deviceNodes!.map((n) => [n.path, n.major, n.minor])).toEqual([
      ['/dev/davinci1', MAJOR.davinci, 1],
    ]);
    expect(spec.containerEdits.deviceNodes!.map((n) => [n.path, n.major])).toEqual([
      ['/dev/davinci_manager', MAJOR.manager],
    ]);
    expect(spec.containerEdits.mounts).toBeUndefined();
  });

  test.each([['a b'], ['-x'], [''], ['x/y'], ['x'.repeat(129)]])('device name %j is refused', (name) => {
    expect(() => checkDeviceName(name)).toThrow(CdiNameError);
  });

  test('a spec with no device, or a name twice, is refused', () => {
    makeCharDevices(dir, 1);
    const d = { name: 'a', nodes: [{ hostPath: path.join(dir, 'davinci0'), containerPath: '/dev/davinci0' }] };
    expect(() => buildSpec({ devices: [], shared: [], mounts: [] })).toThrow(CdiNameError);
    expect(() => buildSpec({ devices: [d, d], shared: [], mounts: [] })).toThrow(/named twice/);
  });

  test('qualified names: ascend.com/npu=<name>', () => {
    expect(qualifiedName('uid-Ascend910-3')).toBe('ascend.com/npu=uid-Ascend910-3');
  });
});

describe('issue [DRA] item 6: driver mounts', () => {
  test('the driver paths present under -hostRoot, read-only binds; /var/queue_schedule not on Ascend910A5', () => {
    for (const p of ['usr/local/Ascend/driver/lib64', 'usr/local/dcmi', 'var/queue_schedule']) {
      fs.mkdirSync(path.join(dir, p), { recursive: true });
    }
    const on910B = driverMounts('Ascend910B', dir);
    expect(on910B.map((m) => m.containerPath)).toEqual([
      '/usr/local/Ascend/driver/lib64',
      '/usr/local/dcmi',
      '/var/queue_schedule',
    ]);
    expect(on910B[0]).toEqual({
      hostPath: '/usr/local/Ascend/driver/lib64',
      containerPath: '/usr/local/Ascend/driver/lib64',
      options: ['ro', 'nosuid', 'nodev', 'bind'],
    });
    expect(driverMounts('Ascend910A5', dir).map((m) => m.containerPath)).not.toContain('/var/queue_schedule');
  });
});

describe('issue [DRA] item 6: the spec folder', () => {
  test('a write leaves exactly <stem>.json (0644), no temporary file; remove is idempotent', () => {
    makeCharDevices(path.join(dir, 'dev'), 1);
    const specs = new CdiSpecDir(path.join(dir, 'cdi'));
    const spec = buildSpec({
      devices: [
        { name: 'a', nodes: [{ hostPath: path.join(dir, 'dev', 'davinci0'), containerPath: '/dev/davinci0' }] },
      ],
      shared: [],
      mounts: [],
    });
    specs.write('ascend.com-npu_x', spec);
    expect(fs.readdirSync(specs.dir)).toEqual(['ascend.com-npu_x.json']);
    expect(fs.statSync(specs.pathOf('ascend.com-npu_x')).mode & 0o777).toBe(0o644);
    expect(JSON.parse(fs.readFileSync(specs.pathOf('ascend.com-npu_x'), 'utf8'))).toEqual(spec);
    expect([specs.remove('ascend.com-npu_x'), specs.remove('ascend.com-npu_x')]).toEqual([true, false]);
  });

  test('stems that would leave the folder or hide the file are refused', () => {
    const specs = new CdiSpecDir(dir);
    for (const bad of ['../x', '.x', '', 'a/b']) expect(() => specs.pathOf(bad)).toThrow(/bad CDI spec name/);
  });

  test('list and leftovers touch only names matching the pattern', () => {
    const specs = new CdiSpecDir(dir);
    for (const f of [
      'ascend.com-npu_a.json',
      'ascend.com-npu.json',
      'other.json',
      '.ascend.com-npu_b.json.77.tmp',
      '.other.json.1.tmp',
    ]) {
      fs.writeFileSync(path.join(dir, f), '{}');
    }
    const pattern = /^ascend\.com-npu_[a-z]+$/;
    expect(specs.list(pattern)).toEqual(['ascend.com-npu_a']);
    expect(specs.removeLeftovers(pattern)).toBe(1);
    expect(fs.readdirSync(dir).sort()).toEqual([
      '.other.json.1.tmp',
      'ascend.com-npu.json',
      'ascend.com-npu_a.json',
      'other.json',
    ]);
  });
});
