/**
 * Issue [H] item 5: one listen-address rule (src/observability/listen-address.ts) for `-metricsAddress` of both
 * programs (architecture §4), every form in one table; a bad address is a flag error naming what is wrong.
 */
import { describe, expect, test } from '@jest/globals';
import { parseAgentArgs } from '../../src/cli/agent-flags.js';
import { FlagError, parseFaultCenterFlags } from '../../src/cluster/flags.js';
import {
  listenAddress,
  ListenAddressError,
  listenAddressProblem,
  MAX_LISTEN_ADDRESS_CHARS,
  parseListenAddress,
} from '../../src/observability/listen-address.js';

/** Accepted: the address → host ("" = every interface) and port. */
const ACCEPTED: [string, string, number][] = [
  [':9464', '', 9464],
  [':9465', '', 9465],
  [':0', '', 0],
  [':65535', '', 65535],
  [':09464', '', 9464],
  ['127.0.0.1:0', '127.0.0.1', 0],
  ['0.0.0.0:9465', '0.0.0.0', 9465],
  ['10.1.2.3:9464', '10.1.2.3', 9464],
  ['localhost:9464', 'localhost', 9464],
  ['node-1.example.com:9464', 'node-1.example.com', 9464],
  ['my_host:1', 'my_host', 1],
  ['[::1]:9464', '::1', 9464],
  ['[::]:0', '::', 0],
  ['[fe80::1%eth0]:9464', 'fe80::1%eth0', 9464],
  ['[2001:db8::42]:80', '2001:db8::42', 80],
  ['[127.0.0.1]:80', '127.0.0.1', 80],
];

/** Refused: the address → what the reason says. */
const REFUSED: [string, RegExp][] = [
  ['', /empty/],
  ['9464', /a port alone is written ":9464"/],
  ['localhost', /no ":port"/],
  [':', /no port after the ":"/],
  ['localhost:', /no port after the ":"/],
  [':65536', /port 65536 is over 65535/],
  [':99999', /over 65535/],
  [':123456', /not a decimal number of 1 to 5 digits/],
  [':-1', /not a decimal number/],
  [':+80', /not a decimal number/],
  [':0x50', /not a decimal number/],
  [':1e3', /not a decimal number/],
  [': 80', /not a decimal number/],
  [':http', /not a decimal number/],
  ['::1:9464', /an IPv6 address must be in brackets/],
  ['::9464', /an IPv6 address must be in brackets, e.g. \[::1\]:9464/],
  ['fe80::1:80', /an IPv6 address must be in brackets, e.g. \[fe80::1\]:80/],
  ['[::1]', /no ":port" after the "]"/],
  ['[::1]9464', /no ":port" after the "]"/],
  ['[::1:9464', /a "\[" without its "\]"/],
  ['[]:80', /"" in brackets is not an IP address/],
  ['[:::]:80', /":::" in brackets is not an IP address/],
  ['[localhost]:80', /"localhost" in brackets is not an IP address/],
  ['my host:80', /host "my host" has a character other than/],
  [' :80', /host " " has a character other than/],
  ['a]:80', /host "a]" has a character other than/],
  ['a/b:80', /host "a\/b" has a character other than/],
  [`${'a'.repeat(MAX_LISTEN_ADDRESS_CHARS)}:1`, /characters, over the limit of 300/],
];

describe('issue [H] item 5 one listen-address rule', () => {
  test.each(ACCEPTED)('%j is accepted: host %j, port %d', (address, host, port) => {
    expect([parseListenAddress(address), listenAddress(address), listenAddressProblem(address)]).toEqual([
      { host, port },
      { host, port },
      undefined,
    ]);
  });

  test.each(REFUSED)('%j is refused: %s', (address, reason) => {
    expect([parseListenAddress(address), listenAddressProblem(address)]).toEqual([
      undefined,
      expect.stringMatching(reason),
    ]);
    expect(() => listenAddress(address)).toThrow(ListenAddressError);
    expect(() => listenAddress(address)).toThrow(reason);
  });

  test('the error names the address, what is wrong and the rule', () => {
    expect(() => listenAddress('::1:9464')).toThrow(
      'bad listen address "::1:9464": an IPv6 address must be in brackets, e.g. [::1]:9464 ' +
        '([host]:port with a port in [0, 65535])',
    );
  });
});

describe('issue [H] item 5 both programs take -metricsAddress by the same rule (exit 2 otherwise)', () => {
  const agent = (address: string): { ok: boolean; errors: readonly string[] } => {
    const r = parseAgentArgs([`-metricsAddress=${address}`], { NODE_NAME: 'node-1' });
    return { ok: r.ok, errors: r.ok ? [] : r.errors };
  };
  const faultCenter = (address: string): string | undefined => {
    try {
      parseFaultCenterFlags([`-metricsAddress=${address}`], {});
      return undefined;
    } catch (e) {
      if (!(e instanceof FlagError)) throw e;
      return e.message;
    }
  };

  test.each([...ACCEPTED.map(([a]) => [a]), ['']])('%j: accepted by both', (address) => {
    expect([agent(address), faultCenter(address)]).toEqual([{ ok: true, errors: [] }, undefined]);
  });

  test.each(REFUSED.filter(([a]) => a !== ''))('%j: refused by both, the flag error naming the reason', (a, reason) => {
    const rule = `must be [host]:port with a port in [0, 65535], or "" to disable: `;
    const a1 = agent(a);
    const fc = faultCenter(a);
    expect([a1.ok, a1.errors.filter((e) => e.startsWith('-metricsAddress='))]).toEqual([
      false,
      [expect.stringContaining(rule)],
    ]);
    expect(a1.errors.find((e) => e.startsWith('-metricsAddress='))).toMatch(reason);
    expect(fc).toEqual(expect.stringContaining(`-metricsAddress=${a.slice(0, MAX_LISTEN_ADDRESS_CHARS)} ${rule}`));
    expect(fc).toMatch(reason);
  });

  test('the fault center names the environment variable when the bad value came from it', () => {
    expect(() => parseFaultCenterFlags([], { ASCEND_FAULT_CENTER_METRICS_ADDRESS: '9465' })).toThrow(
      'ASCEND_FAULT_CENTER_METRICS_ADDRESS=9465 must be [host]:port with a port in [0, 65535], or "" to disable: ' +
        'no host part: a port alone is written ":9465"',
    );
  });
});
