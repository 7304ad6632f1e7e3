/** Registration retry backoff. */
import { describe, expect, test } from '@jest/globals';
import { Backoff } from '../../src/kubelet/backoff.js';

describe('A.5 registration backoff', () => {
  test('A.5 doubles up to the cap and starts over after reset', () => {
    const b = new Backoff(50, 300);
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([50, 100, 200, 300, 300]);
    b.reset();
    expect(b.next()).toBe(50);
  });

  test('A.5 a cap below the initial delay is refused', () => {
    expect(() => new Backoff(100, 50)).toThrow(RangeError);
  });
});
