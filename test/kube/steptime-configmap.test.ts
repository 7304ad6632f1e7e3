/**
 * `-enableSlowNode`: the PERF_DUMP_* variables from `kube-system/steptime-dtpgroup` (spec C.4; issue 18 item 4).
 */
import { describe, expect, test } from '@jest/globals';
import { perfDumpEnvOf } from '../../src/kube/steptime-configmap.js';

const value = (path: string, config: string): string =>
  JSON.stringify({ data: { PerfDumpPath: path, PerfDumpConfig: config } });

describe('spec C.4 -enableSlowNode variables', () => {
  test('C.4 one value gives PERF_DUMP_PATH and PERF_DUMP_CONFIG', () => {
    expect(perfDumpEnvOf({ job: value('/root/a', 'step:true,time=4') })).toEqual({
      PERF_DUMP_PATH: '/root/a',
      PERF_DUMP_CONFIG: 'step:true,time=4',
    });
  });

  test('C.4 several values: the last one (key order) wins', () => {
    expect(perfDumpEnvOf({ b: value('/b', 'B'), a: value('/a', 'A') })).toEqual({
      PERF_DUMP_PATH: '/b',
      PERF_DUMP_CONFIG: 'B',
    });
  });

  test('C.4 no ConfigMap, or an empty one: no variables', () => {
    expect(perfDumpEnvOf(undefined)).toEqual({});
    expect(perfDumpEnvOf({})).toEqual({});
  });

  test('Bad input: a value that does not parse gives no variables and a warning naming the key', () => {
    const warnings: string[] = [];
    const env = perfDumpEnvOf({ a: value('/a', 'A'), z: '{not json' }, (k, r) => warnings.push(`${k}: ${r}`));
    expect(env).toEqual({});
    expect(warnings).toEqual([expect.stringMatching(/^z: not JSON/)]);
    expect(perfDumpEnvOf({ a: JSON.stringify({ data: { PerfDumpPath: 3 } }) }, (k, r) => warnings.push(r))).toEqual({});
    expect(warnings.at(-1)).toMatch(/PerfDumpPath is not a string/);
  });
});
