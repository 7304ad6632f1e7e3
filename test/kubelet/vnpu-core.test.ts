/**
 * Issue 17 item 3, the pure part of dynamic vNPU: the `huawei.com/npu-core` annotation (C.3), template cores and
 * names (B.3), the AI-core pseudo-devices (B.3, D.7), their health (C.1), the C.4 worker variables, and the
 * start-up rules (A.1, A.2 step 5.5, B.6).
 */
import { describe, expect, test } from '@jest/globals';
import type { KubeletDevice } from '../../src/kubelet/device-source.js';
import {
  advertiseCores,
  coreDevices,
  dynamicVnpuEnvs,
  parseNpuCoreAnnotation,
  requestedCores,
  templateCores,
  templatesOf,
  vnpuName,
} from '../../src/kubelet/vnpu-core.js';
import { checkDynamicVnpu, DynamicVnpuUnsupportedError } from '../../src/kubelet/vnpu-setup.js';

function chip(phyId: number, health: 'Healthy' | 'Unhealthy' = 'Healthy'): KubeletDevice {
  return {
    id: `Ascend310P-${phyId}`,
    logicId: phyId,
    phyId,
    cardId: phyId,
    deviceId: 0,
    health,
    level: health === 'Healthy' ? 'NormalNPU' : 'SeparateNPU',
    manuallySeparated: false,
  };
}

describe('C.3 the huawei.com/npu-core annotation', () => {
  test('<phy>-<template> asks for the template AI cores on that chip', () => {
    expect(parseNpuCoreAnnotation('1-vir04_3c')).toEqual({ kind: 'vnpu', phyId: 1, template: 'vir04_3c', cores: 4 });
  });

  test('<phy>,<phy> asks for whole chips, cores-per-chip each', () => {
    const req = parseNpuCoreAnnotation('0,3');
    expect(req).toEqual({ kind: 'chips', phyIds: [0, 3] });
    expect(requestedCores(req as never, 8)).toBe(16);
  });

  test.each([
    ['1-vir02-x', 'neither'],
    ['x-vir02', 'phy id x'],
    ['1-tmpl', 'no template'],
    ['0,0', 'given twice'],
    ['0,,1', 'no phy id'],
    ['256', 'no phy id'],
  ])('Bad input: %s is malformed (%s)', (value, words) => {
    const r = parseNpuCoreAnnotation(value);
    expect('problem' in r && r.problem).toContain(words);
  });

  test('Bad input: an oversized annotation is refused before it is split', () => {
    const r = parseNpuCoreAnnotation('1,'.repeat(5000));
    expect('problem' in r && r.problem).toContain('over 4096');
  });
});

describe('B.3 templates and names', () => {
  test('AI cores are the number after vir (upstream GetAICore)', () => {
    expect([templateCores('vir01'), templateCores('vir10_3c_16g'), templateCores('virx')]).toEqual([1, 10, undefined]);
  });

  test('a vNPU is <name>-<spec>-<vdevId>-<phy>', () => {
    expect(vnpuName('Ascend310P', 'vir02_1c', 101, 3)).toBe('Ascend310P-2c.1cpu-101-3');
    expect(vnpuName('Ascend310P', 'vir99', 101, 3)).toBeUndefined();
  });

  test('dcmi-abi §4.5: the 310P templates', () => {
    expect(templatesOf('Ascend310P')).toEqual(
      expect.arrayContaining(['vir01', 'vir02', 'vir04', 'vir02_1c', 'vir04_3c', 'vir04_4c_dvpp', 'vir04_3c_ndvpp']),
    );
    expect(templatesOf('Ascend910')).toEqual([]);
  });
});

describe('B.3/D.7 AI-core pseudo-devices and C.1 their health', () => {
  test('npu-core-<k>, cores of one chip consecutive, each with its chip health and ids', () => {
    const cores = coreDevices([chip(0), chip(1, 'Unhealthy')], 2);
    expect(cores.map((c) => [c.id, c.phyId, c.health])).toEqual([
      ['npu-core-0', 0, 'Healthy'],
      ['npu-core-1', 0, 'Healthy'],
      ['npu-core-2', 1, 'Unhealthy'],
      ['npu-core-3', 1, 'Unhealthy'],
    ]);
  });

  test('C.1 with no pod, the free cores of the Unhealthy chip are the Unhealthy ones', () => {
    const chips = [chip(0), chip(1, 'Unhealthy'), chip(2)];
    const list = advertiseCores(coreDevices(chips, 8), chips, new Map(), 8);
    expect(list.filter((d) => d.real.health === 'Unhealthy').map((d) => d.real.phyId)).toEqual(Array(8).fill(1));
  });

  test('C.1 a held core whose real device is on the Unhealthy chip counts first; free cores make up the rest', () => {
    const chips = [chip(0), chip(1, 'Unhealthy')];
    const cores = coreDevices(chips, 8);
    // npu-core-0, -1 (on chip 0's share of ids) were given a vNPU of chip 1: they are Unhealthy
    const used = new Map([
      ['npu-core-0', 1],
      ['npu-core-1', 1],
      ['npu-core-2', 0],
    ]);
    const bad = advertiseCores(cores, chips, used, 8)
      .filter((d) => d.real.health === 'Unhealthy')
      .map((d) => d.id);
    expect(bad).toHaveLength(8);
    expect(bad).toEqual(expect.arrayContaining(['npu-core-0', 'npu-core-1']));
    expect(bad).not.toContain('npu-core-2');
  });

  test('C.4 the worker variables count the visible devices', () => {
    expect(dynamicVnpuEnvs(2)).toEqual({
      MS_LOCAL_WORKER: '2',
      MS_WORKER_NUM: '2',
      WORLD_SIZE: '2',
      LOCAL_WORLD_SIZE: '2',
      CM_WORKER_SIZE: '2',
      CM_LOCAL_WORKER: '2',
      LOCAL_RANK: '0,1',
    });
  });
});

describe('A.1/A.2/B.6 start-up rules', () => {
  test('A.1 a 910 (A1) node cannot run dynamic vNPU', () => {
    expect(() => checkDynamicVnpu({ kind: 'Ascend910' }, () => 32)).toThrow(DynamicVnpuUnsupportedError);
  });

  test('A.2 step 5.5 an Atlas 300I Duo on the node refuses the mode', () => {
    expect(() =>
      checkDynamicVnpu({ kind: 'Ascend310P', productTypes: ['Atlas 300I Pro', 'Atlas 300I Duo'] }, () => 8),
    ).toThrow('Atlas 300I Duo is not supported by dynamic vNPU');
  });

  test('B.6 an AI-core count outside 8..36 (e.g. the 8255 quirk) refuses the mode', () => {
    expect(() => checkDynamicVnpu({ kind: 'Ascend910B' }, () => 8255)).toThrow('outside 8..36');
    expect(checkDynamicVnpu({ kind: 'Ascend910B' }, () => 20)).toBe(20);
  });
});
