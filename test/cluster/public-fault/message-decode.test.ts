import { describe, expect, test } from '@jest/globals';
import { decodePublicFaultMessage, MessageDecodeError } from '../../../src/cluster/public-fault/message-decode.js';

const DOC = `{"id":"msg.20260301-0001","timestamp":1772330400000,"version":"1.0","resource":"CCAE",
 "faults":[{"faultId":"fault-0001","faultType":"Storage","faultCode":"010001001",
            "faultTime":1772330390000,"assertion":"occur","faultLocation":{"npuIp":"10.0.0.1"},
            "influence":[{"nodeName":"node-1","deviceIds":[0,1]},{"nodeSN":"2102313ABCD","deviceIds":[7]}],
            "description":"storage latency high"}]}`;

describe('§2.1 JSON decoding of the ConfigMap value (Go semantics)', () => {
  test('§2.1 the documented example decodes', () => {
    const m = decodePublicFaultMessage(DOC);
    expect([m.timestamp, m.faults[0]!.influence[1], m.faults[0]!.faultLocation]).toEqual([
      1772330400000,
      { nodeName: '', nodeSN: '2102313ABCD', deviceIds: [7] },
      { npuIp: '10.0.0.1' },
    ]);
  });

  test('§2.1 field names match case-insensitively', () => {
    expect(decodePublicFaultMessage('{"ID":"abc","Resource":"CCAE"}')).toMatchObject({ id: 'abc', resource: 'CCAE' });
  });

  test('§2.1 unknown fields are ignored', () => {
    expect(decodePublicFaultMessage('{"id":"abc","extra":{"x":[1,2]}}').id).toBe('abc');
  });

  test('§2.1 null is the zero value', () => {
    expect(decodePublicFaultMessage('{"id":null,"timestamp":null,"faults":null}')).toMatchObject({
      id: '',
      timestamp: 0,
      faults: [],
    });
  });

  const unparsable: [string, string][] = [
    ['§2.1 a timestamp given as a string', '{"timestamp":"1772330400000"}'],
    ['§2.1 a non-integer timestamp', '{"timestamp":1772330400000.5}'],
    ['§2.1 an exponent for an integer', '{"timestamp":1.7e12}'],
    ['§2.1 a timestamp beyond int64', '{"timestamp":9223372036854775808}'],
    ['§2.1 a faultTime given as a string', '{"faults":[{"faultTime":"1"}]}'],
    ['§2.1 a device id given as a string', '{"faults":[{"influence":[{"deviceIds":["1"]}]}]}'],
    ['§2.1 a device id beyond int32', '{"faults":[{"influence":[{"deviceIds":[2147483648]}]}]}'],
    ['§2.1 a number for a string field', '{"id":12345678}'],
    ['§2.1 an object for faults', '{"faults":{}}'],
    ['§2.1 a number as a faultLocation value', '{"faults":[{"faultLocation":{"a":1}}]}'],
    ['§2.1 a top-level array', '[]'],
    ['§2.1 invalid JSON', '{"id":'],
    ['§2.1 trailing data', '{} x'],
  ];
  test.each(unparsable)('%s makes the message unparsable', (_n, text) => {
    expect(() => decodePublicFaultMessage(text)).toThrow(MessageDecodeError);
  });

  test('§2.1 int32 minimum is a valid device id encoding', () => {
    expect(
      decodePublicFaultMessage('{"faults":[{"influence":[{"deviceIds":[-2147483648]}]}]}').faults[0]!.influence[0]!
        .deviceIds,
    ).toEqual([-2147483648]);
  });

  test('§2.1 the error names the JSON path', () => {
    expect(() => decodePublicFaultMessage('{"faults":[{},{"faultTime":"x"}]}')).toThrow('$.faults[1].faultTime');
  });

  test('§2.1 deep nesting is refused, not a stack overflow', () => {
    expect(() => decodePublicFaultMessage('{"x":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}')).toThrow(
      MessageDecodeError,
    );
  });
});
