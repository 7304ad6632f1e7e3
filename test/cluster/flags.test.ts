import { describe, expect, test } from '@jest/globals';
import { envName, parseFaultCenterFlags } from '../../src/cluster/flags.js';

describe('fault-center flags', () => {
  test('defaults follow architecture §4', () => {
    const f = parseFaultCenterFlags([], {});
    expect([f.grpcAddress, f.metricsAddress, f.leaseName, f.leaseNamespace, f.countJoblessFaults]).toEqual([
      ':8899',
      ':9465',
      'ascend-fault-center',
      'cluster-system',
      false,
    ]);
  });

  test.each([
    [['-leaseName=x'], 'x'],
    [['-leaseName', 'x'], 'x'],
    [['--leaseName=x'], 'x'],
  ])('Go syntax %j', (argv, v) => {
    expect(parseFaultCenterFlags(argv, {}).leaseName).toBe(v);
  });

  test('issue [H] item 5 -metricsAddress takes the agent\'s forms and "" (the server off)', () => {
    expect(
      [':9465', '127.0.0.1:0', '[::1]:9465', 'localhost:9465', ''].map(
        (a) => parseFaultCenterFlags([`-metricsAddress=${a}`], {}).metricsAddress,
      ),
    ).toEqual([':9465', '127.0.0.1:0', '[::1]:9465', 'localhost:9465', '']);
  });

  test('a bare boolean is true', () => {
    expect(parseFaultCenterFlags(['-countJoblessFaults'], {}).countJoblessFaults).toBe(true);
  });

  test('the environment mirror applies and the flag wins', () => {
    const env = { [envName('leaseName')]: 'env' };
    expect([parseFaultCenterFlags([], env).leaseName, parseFaultCenterFlags(['-leaseName=f'], env).leaseName]).toEqual([
      'env',
      'f',
    ]);
  });

  test('env name is UPPER_SNAKE', () => {
    expect(envName('countJoblessFaults')).toBe('ASCEND_FAULT_CENTER_COUNT_JOBLESS_FAULTS');
  });

  test.each([
    [['-nope=1'], 'not defined'],
    [['-countJoblessFaults=maybe'], 'invalid boolean'],
    [['-leaseDurationSeconds=0'], 'out of range'],
    [['-leaseName'], 'needs an argument'],
    [['-metricsAddress=9465'], '-metricsAddress=9465 must be [host]:port with a port in [0, 65535], or "" to disable'],
    [['-metricsAddress=:70000'], 'port 70000 is over 65535'],
  ])('%j is rejected', (argv, msg) => {
    expect(() => parseFaultCenterFlags(argv, {})).toThrow(msg);
  });
});
