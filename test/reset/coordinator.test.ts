import { describe, expect, test } from '@jest/globals';
import { ResetCoordinator } from '../../src/reset/coordinator.js';

describe('ResetCoordinator (D4: one per-chip resetting set for both engines)', () => {
  test('D4 tryAcquire takes every chip of the group for the owner', () => {
    const c = new ResetCoordinator();
    expect(c.tryAcquire([0, 1, 2, 3], 'offline')).toBe(true);
    expect([...c.resetting()]).toEqual([
      [0, 'offline'],
      [1, 'offline'],
      [2, 'offline'],
      [3, 'offline'],
    ]);
    expect(c.owner(2)).toBe('offline');
    expect(c.owner(4)).toBeUndefined();
  });

  test('D4 tryAcquire is all or nothing when one chip is held by the other engine', () => {
    const c = new ResetCoordinator();
    expect(c.tryAcquire([3], 'online')).toBe(true);
    expect(c.tryAcquire([0, 1, 2, 3], 'offline')).toBe(false);
    expect(c.owner(0)).toBeUndefined();
    expect([...c.resetting().keys()]).toEqual([3]);
  });

  test('D4 a chip already held by the same owner is not taken twice', () => {
    const c = new ResetCoordinator();
    c.tryAcquire([1], 'offline');
    expect(c.tryAcquire([1, 2], 'offline')).toBe(false);
  });

  test('D4 release gives the chips back; releasing a free chip is ignored', () => {
    const c = new ResetCoordinator();
    c.tryAcquire([0, 1], 'online');
    c.release([0, 1, 5], 'online');
    expect(c.resetting().size).toBe(0);
    expect(c.tryAcquire([0, 1], 'offline')).toBe(true);
  });

  test('D4 releasing a chip held by another owner throws and releases nothing', () => {
    const c = new ResetCoordinator();
    c.tryAcquire([0], 'online');
    c.tryAcquire([1], 'offline');
    expect(() => c.release([1, 0], 'offline')).toThrow('chip 0 is held by "online", not by "offline"');
    expect(c.owner(1)).toBe('offline');
  });

  test('resetting() is a copy', () => {
    const c = new ResetCoordinator();
    c.tryAcquire([0], 'online');
    const snap = c.resetting() as Map<number, string>;
    snap.delete(0);
    expect(c.owner(0)).toBe('online');
  });

  test('bad input names what was wrong', () => {
    const c = new ResetCoordinator();
    expect(() => c.tryAcquire([1.5], 'x')).toThrow('logic id 1.5 is not a non-negative integer');
    expect(() => c.tryAcquire([-1], 'x')).toThrow('logic id -1');
    expect(() => c.tryAcquire([1], '')).toThrow('owner must be a non-empty string');
    expect(() => c.release('1' as unknown as number[], 'x')).toThrow('logic ids must be an array');
  });
});
