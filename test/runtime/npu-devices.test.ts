/**
 * Spec L.5: which NPUs a container holds by its OCI spec — the `ASCEND_VISIBLE_DEVICES` forms of upstream's parser,
 * the `/proc/devices` line rule for `devdrv-cdev`/`vdevdrv-cdev`, and the bounds.
 */
import { describe, expect, test } from '@jest/globals';
import {
  devicesOfSpec,
  NPU_DEVICE_LIMITS,
  parseNpuMajors,
  parseVisibleDevices,
} from '../../src/runtime/npu-devices.js';

const spec = (o: object): Buffer => Buffer.from(JSON.stringify(o));

describe('L.5 ASCEND_VISIBLE_DEVICES', () => {
  test.each([
    ['0,1,2', [0, 1, 2]],
    ['0-3', [0, 1, 2, 3]],
    ['0-1, 3', [0, 1, 3]],
    ['Ascend910-0,Ascend910-5', [0, 5]],
    ['', []],
  ])('L.5 %p names %p', (value, devices) => {
    expect(parseVisibleDevices(value)).toEqual({ devices, problems: [] });
  });

  test('L.5 unreadable numbers are problems and skipped; the rest is kept', () => {
    expect(parseVisibleDevices('1,x,40000,2-1-0,4')).toEqual({
      devices: [1, 4],
      problems: [
        'ASCEND_VISIBLE_DEVICES part "x" is not a device number (0 to 32767)',
        'ASCEND_VISIBLE_DEVICES part "40000" is not a device number (0 to 32767)',
        'ASCEND_VISIBLE_DEVICES part "2-1-0" is not a device number or range',
      ],
    });
  });

  test('L.5 a value naming "Ascend" takes the number after the dash of each part; others are problems', () => {
    expect(parseVisibleDevices('Ascend910-1,Ascend910,Ascend910-2c-100')).toEqual({
      devices: [1],
      problems: [
        'ASCEND_VISIBLE_DEVICES part "Ascend910" is not <name>-<device number>',
        'ASCEND_VISIBLE_DEVICES part "Ascend910-2c-100" is not <name>-<device number>',
      ],
    });
  });

  test('L.5 a reversed or too large range and a value over 1024 bytes are problems', () => {
    expect(parseVisibleDevices('3-2').problems).toEqual([
      'ASCEND_VISIBLE_DEVICES part "3-2" is a range whose start is after its end',
    ]);
    expect(parseVisibleDevices('0-99999').devices).toEqual([]);
    expect(parseVisibleDevices('1,'.repeat(600)).problems).toEqual([
      `ASCEND_VISIBLE_DEVICES is longer than ${NPU_DEVICE_LIMITS.maxEnvValueBytes} bytes`,
    ]);
  });
});

describe('L.5 /proc/devices', () => {
  test('L.5 only "<1-3 digits> devdrv-cdev" and "vdevdrv-cdev" lines give NPU majors', () => {
    const text = [
      'Character devices:',
      '  1 mem',
      '236 devdrv-cdev',
      '237 vdevdrv-cdev',
      '238 devdrv-cdev-x',
      '1234 devdrv-cdev',
      '239 xdevdrv-cdev',
    ].join('\n');
    expect([...parseNpuMajors(text)].sort()).toEqual([236, 237]);
  });

  test('L.5 lines after the 512th are not read (upstream bound)', () => {
    const text = `${'5 tty\n'.repeat(600)}236 devdrv-cdev\n`;
    expect(parseNpuMajors(text).size).toBe(0);
  });
});

describe('L.5 OCI spec', () => {
  test('L.5 the last ASCEND_VISIBLE_DEVICES entry wins over the device rules', () => {
    const s = spec({
      process: { env: ['ASCEND_VISIBLE_DEVICES=1', 'ASCEND_VISIBLE_DEVICES=2'] },
      linux: { resources: { devices: [{ allow: true, type: 'c', major: 236, minor: 7 }] } },
    });
    expect(devicesOfSpec(s, new Set([236]))).toEqual({ devices: [2], source: 'env', problems: [] });
  });

  test('L.5 an env naming no device falls back to the device rules', () => {
    const s = spec({
      process: { env: ['ASCEND_VISIBLE_DEVICES='] },
      linux: {
        resources: {
          devices: [
            { allow: true, type: 'c', major: 236, minor: 7 },
            { allow: true, type: 'b', major: 236, minor: 8 },
          ],
        },
      },
    });
    expect(devicesOfSpec(s, new Set([236]))).toEqual({ devices: [7], source: 'device-cgroup', problems: [] });
  });

  test('L.5 without NPU majors the device rules name nothing', () => {
    const s = spec({ linux: { resources: { devices: [{ allow: true, type: 'c', major: 236, minor: 7 }] } } });
    expect(devicesOfSpec(s, new Set())).toEqual({ devices: [], source: 'none', problems: [] });
  });

  test('L.5 a spec that is not a JSON object is a problem', () => {
    expect(devicesOfSpec(Buffer.from('[1]'), new Set()).problems).toEqual([]);
    expect(devicesOfSpec(Buffer.from('null'), new Set()).problems).toEqual(['OCI spec is not a JSON object']);
    expect(devicesOfSpec(Buffer.from('{'), new Set()).problems[0]).toMatch(/^OCI spec is not JSON: /);
  });
});
