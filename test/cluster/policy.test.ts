import { describe, expect, test } from '@jest/globals';
import { parsePolicy, policyFromConfigMapData, PolicyError, releaseMs, windowMs } from '../../src/cluster/policy.js';
import { policyText } from './helpers.js';

describe('1.2 policy', () => {
  test('1.2 shipped policy parses to enabled/24/3/48', () => {
    expect(parsePolicy(policyText())).toEqual({
      enabled: true,
      faultWindowHours: 24,
      faultThreshold: 3,
      faultFreeHours: 48,
    });
  });

  test.each([
    ['window 0', { window: '0' }, 'fault_window_hours must be in [1, 720]'],
    ['window 721', { window: '721' }, 'fault_window_hours must be in [1, 720]'],
    ['threshold 0', { threshold: '0' }, 'fault_threshold must be in [1, 50]'],
    ['threshold 51', { threshold: '51' }, 'fault_threshold must be in [1, 50]'],
    ['free hours 0', { free: '0' }, 'fault_free_hours must be in [1, 240] or -1'],
    ['free hours 241', { free: '241' }, 'fault_free_hours must be in [1, 240] or -1'],
    ['quoted number is a type error', { threshold: '"3"' }, 'quoted'],
    ['window checked before threshold', { window: '0', threshold: '0' }, 'fault_window_hours'],
  ])('1.2 validation rejects %s', (_n, o, msg) => {
    expect(() => parsePolicy(policyText(o))).toThrow(msg);
  });

  test.each([
    ['free hours 1', { free: '1' }, 1],
    ['free hours 240', { free: '240' }, 240],
    ['free hours -1', { free: '-1' }, -1],
    ['float truncated toward zero', { free: '24.9' }, 24],
    ['negative float -1.5 truncates to -1', { free: '-1.5' }, -1],
  ])('1.2 validation accepts %s', (_n, o, free) => {
    expect(parsePolicy(policyText(o)).faultFreeHours).toBe(free);
  });

  test.each(['yes', 'on', 'Y', 'TRUE', 'True'])('1.2 YAML 1.1 boolean %s is true', (v) => {
    expect(parsePolicy(policyText({ enabled: v })).enabled).toBe(true);
  });

  test.each(['no', 'off', 'N', 'false'])('1.2 YAML 1.1 boolean %s is false', (v) => {
    expect(parsePolicy(policyText({ enabled: v })).enabled).toBe(false);
  });

  test('1.2 missing enabled means false while the numbers apply', () => {
    const p = parsePolicy(policyText().replace('enabled: true\n', ''));
    expect(p).toEqual({ enabled: false, faultWindowHours: 24, faultThreshold: 3, faultFreeHours: 48 });
  });

  test('1.2 missing fault_window_hours rejects the whole config', () => {
    expect(() => parsePolicy(policyText().replace('  fault_window_hours: 24\n', ''))).toThrow('fault_window_hours');
  });

  test('1.2 unknown keys and comments are ignored', () => {
    expect(parsePolicy(`# c\nfoo: bar\n${policyText()}`).faultThreshold).toBe(3);
  });

  test('1.2 a missing key in the ConfigMap names the key', () => {
    expect(() => policyFromConfigMapData({ other: 'x' })).toThrow('manually_separate_policy.conf');
  });

  test('1.2 nil data is rejected', () => {
    expect(() => policyFromConfigMapData(null)).toThrow(PolicyError);
  });

  test('1.2 invalid YAML is rejected naming the key', () => {
    expect(() => policyFromConfigMapData({ 'manually_separate_policy.conf': 'enabled: [true' })).toThrow(
      /manually_separate_policy.conf: line 1/,
    );
  });

  test('1.2 getters convert hours to ms, -1 stays -1', () => {
    const p = parsePolicy(policyText({ free: '-1' }));
    expect([windowMs(p), releaseMs(p)]).toEqual([24 * 3_600_000, -1]);
  });
});
