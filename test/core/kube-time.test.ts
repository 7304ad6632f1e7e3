/**
 * MicroTime and metav1.Time as the Kubernetes API server parses and writes them (issue [R] item 1; the Go layouts
 * `2006-01-02T15:04:05.000000Z07:00` and RFC 3339 of apimachinery meta/v1).
 */
import { describe, expect, test } from '@jest/globals';
import {
  canonicalMicroTime,
  microTime,
  MicroTime,
  parseKubeTime,
  parseMicroTime,
  wholeSecondTime,
  WholeSecondTime,
} from '../../src/core/kube-time.js';

const T = Date.UTC(2026, 11, 3, 14, 20, 45, 167);

describe('issue [R] item 1: MicroTime has exactly six fractional digits', () => {
  test('microTime(ms) writes UTC with six digits', () => {
    expect(microTime(T)).toBe('2026-12-03T14:20:45.167000Z');
    expect(microTime(Date.UTC(2026, 0, 1, 0, 0, 0, 7))).toBe('2026-01-01T00:00:00.007000Z');
  });

  test('a MicroTime value serialises with six digits through JSON.stringify and toISOString', () => {
    const v = new MicroTime(T);
    expect(JSON.stringify({ eventTime: v })).toBe('{"eventTime":"2026-12-03T14:20:45.167000Z"}');
    expect(v.toISOString()).toBe('2026-12-03T14:20:45.167000Z');
    expect(v).toBeInstanceOf(Date);
  });

  test("a JavaScript Date's three digits are refused with the server's message", () => {
    expect(() => parseMicroTime(new Date(T).toISOString())).toThrow(
      'parsing time "2026-12-03T14:20:45.167Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".167Z" as ".000000"',
    );
  });

  test.each([
    ['2026-12-03T14:20:45Z', 'cannot parse "Z" as ".000000"'],
    ['2026-12-03T14:20:45.1670000Z', 'cannot parse "0Z" as "Z07:00"'],
    ['2026-12-03T14:20:45.167000', 'cannot parse "" as "Z07:00"'],
    ['2026-12-03T14:20:45.167000z', 'cannot parse "z" as "Z07:00"'],
    ['2026-02-30T14:20:45.167000Z', 'day out of range'],
    ['2026-12-03T24:20:45.167000Z', 'hour out of range'],
  ])('%s is refused (%s)', (text, why) => {
    expect(() => parseMicroTime(text)).toThrow(why);
  });

  test('six digits with Z or an offset are accepted; the server writes them back in UTC', () => {
    expect(parseMicroTime('2026-12-03T14:20:45.167000Z')).toBe(T);
    expect(canonicalMicroTime('2026-12-03T22:20:45.167123+08:00')).toBe('2026-12-03T14:20:45.167123Z');
  });
});

describe('issue [R] item 1: metav1.Time is RFC 3339, stored in whole seconds', () => {
  test('wholeSecondTime(ms) and WholeSecondTime drop the milliseconds', () => {
    expect(wholeSecondTime(T)).toBe('2026-12-03T14:20:45Z');
    expect(JSON.stringify(new WholeSecondTime(T))).toBe('"2026-12-03T14:20:45Z"');
  });

  test('a fraction is accepted and dropped, as Go time.Parse(RFC3339) does', () => {
    expect(parseKubeTime('2026-12-03T14:20:45.167Z')).toBe(Date.UTC(2026, 11, 3, 14, 20, 45));
    expect(parseKubeTime('2026-12-03T16:20:45+02:00')).toBe(Date.UTC(2026, 11, 3, 14, 20, 45));
  });

  test.each(['2026-12-03 14:20:45Z', '2026-12-03T14:20:45', '1701612045'])('%s is refused', (text) => {
    expect(() => parseKubeTime(text)).toThrow(`parsing time ${JSON.stringify(text)}`);
  });
});
