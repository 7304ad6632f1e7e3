import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { ReceiveGate } from '../../../src/cluster/public-fault/receive-gate.js';

describe('[K] item 2 receive gate', () => {
  test('grants at once while a slot is free', () => {
    const gate = new ReceiveGate(2, 10);
    const granted: number[] = [];
    gate.enter(() => granted.push(1));
    gate.enter(() => granted.push(2));
    expect([granted, gate.holding, gate.waiting]).toEqual([[1, 2], 2, 0]);
  });

  test('waiters are granted in arrival order as slots free up', () => {
    const gate = new ReceiveGate(1, 10);
    const granted: string[] = [];
    const a = gate.enter(() => granted.push('a'))!;
    const b = gate.enter(() => granted.push('b'))!;
    gate.enter(() => granted.push('c'));
    expect(granted).toEqual(['a']);
    a();
    expect(granted).toEqual(['a', 'b']);
    b();
    expect([granted, gate.holding, gate.waiting]).toEqual([['a', 'b', 'c'], 1, 0]);
  });

  test('a waiter that leaves before its turn is never granted', () => {
    const gate = new ReceiveGate(1, 10);
    const granted: string[] = [];
    const a = gate.enter(() => granted.push('a'))!;
    const b = gate.enter(() => granted.push('b'))!;
    gate.enter(() => granted.push('c'));
    b();
    a();
    expect(granted).toEqual(['a', 'c']);
  });

  test('a full queue refuses without keeping anything', () => {
    const gate = new ReceiveGate(1, 1);
    gate.enter(() => undefined);
    gate.enter(() => undefined);
    expect(gate.enter(() => undefined)).toBeUndefined();
    expect([gate.holding, gate.waiting]).toEqual([1, 1]);
  });

  test('releasing twice gives one slot back', () => {
    const gate = new ReceiveGate(1, 10);
    const a = gate.enter(() => undefined)!;
    gate.enter(() => undefined);
    gate.enter(() => undefined);
    a();
    a();
    expect([gate.holding, gate.waiting]).toEqual([1, 1]);
  });

  test.each([
    [0, 1],
    [1.5, 1],
    [1, -1],
  ])('a gate of %p slots and %p waiting is refused', (slots, waiting) => {
    expect(() => new ReceiveGate(slots, waiting)).toThrow(RangeError);
  });

  test('property: never more holders than slots nor waiters than the queue; every entry granted or withdrawn', () => {
    const op = fc.oneof(
      fc.constant({ kind: 'enter' as const }),
      fc.record({ kind: fc.constant('leave' as const), i: fc.nat() }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        fc.array(op, { maxLength: 60 }),
        (slots, max, ops) => {
          const gate = new ReceiveGate(slots, max);
          const open: (() => void)[] = [];
          for (const o of ops) {
            if (o.kind === 'enter') {
              const release = gate.enter(() => undefined);
              if (release) open.push(release);
            } else if (open.length > 0) {
              open.splice(o.i % open.length, 1)[0]!();
            }
            expect(gate.holding).toBeLessThanOrEqual(slots);
            expect(gate.waiting).toBeLessThanOrEqual(max);
            expect(gate.holding + gate.waiting).toBe(open.length);
            if (gate.waiting > 0) expect(gate.holding).toBe(slots);
          }
          for (const r of open) r();
          expect([gate.holding, gate.waiting]).toEqual([0, 0]);
        },
      ),
    );
  });
});
