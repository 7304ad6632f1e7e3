import { describe, expect, test } from '@jest/globals';
import { FaultCounter, MAX_WINDOW_MS, reachedFrequency, type CountedFault } from '../../src/cluster/fault-counter.js';

const H = 3_600_000;
const P3 = { threshold: 3, windowMs: 24 * H };
const T0 = 1772359200000;

function counter(): { c: FaultCounter; separated: CountedFault[] } {
  const separated: CountedFault[] = [];
  return { c: new FaultCounter((f) => separated.push(f)), separated };
}
const f = (t: number, dev = 'Ascend910-3', code = '80E01801', node = 'node-1'): CountedFault => ({
  node,
  dev,
  code,
  receivedTime: t,
});

describe('1.5 frequency counter', () => {
  test.each([
    ['span below the window is reached', [0, 1, 24 * H - 1], true],
    ['1.5 window comparison is strict: span equal to the window is not reached', [0, 1, 24 * H], false],
    ['span of 25 h is not reached', [0, 1, 25 * H], false],
    ['span of 25 h 0 m 10 s is not reached', [0, 1, 25 * H + 10_000], false],
    ['fewer entries than the threshold', [0, 1], false],
    ['only the last N entries count', [0, 30 * H, 31 * H, 32 * H], true],
    ['arrival order: a negative span is reached', [10 * H, 5 * H, 1 * H], true],
  ])('1.5 %s', (_n, times, expected) => {
    expect(reachedFrequency(times, P3)).toBe(expected);
  });

  test('1.5 threshold 1 needs no window', () => {
    expect(reachedFrequency([5], { threshold: 1, windowMs: 1 })).toBe(true);
  });

  test('1.5 threshold 1: a single fault separates and the counter stays empty', () => {
    const { c, separated } = counter();
    c.add(f(T0), { threshold: 1, windowMs: H }, T0);
    expect([separated.length, c.size]).toEqual([1, 0]);
  });

  test('1.5 separation deletes the key and passes the triggering receive time', () => {
    const { c, separated } = counter();
    for (const t of [T0, T0 + H, T0 + 2 * H]) c.add(f(t), P3, T0 + 3 * H);
    expect([separated[0]?.receivedTime, c.times('node-1', 'Ascend910-3', '80E01801')]).toEqual([T0 + 2 * H, undefined]);
  });

  test('1.5 different code, device and node make separate lists', () => {
    const { c } = counter();
    c.add(f(T0), P3, T0);
    c.add(f(T0, 'Ascend910-3', '8C084E00'), P3, T0);
    c.add(f(T0, 'Ascend910-4'), P3, T0);
    c.add(f(T0, 'Ascend910-3', '80E01801', 'node-2'), P3, T0);
    expect(c.size).toBe(4);
  });

  test('1.5 old entries are pruned against 720 h on append', () => {
    const { c } = counter();
    c.add(f(T0), P3, T0);
    c.add(f(T0 + 1), P3, T0 + MAX_WINDOW_MS + 1);
    expect(c.times('node-1', 'Ascend910-3', '80E01801')).toEqual([T0 + 1]);
  });

  test('1.5 pruning may leave an empty list and the key remains', () => {
    const { c } = counter();
    c.add(f(0), P3, 0);
    c.add(f(1), P3, MAX_WINDOW_MS + 10);
    expect(c.times('node-1', 'Ascend910-3', '80E01801')).toEqual([]);
  });

  test('1.5 the first entry of a fresh key is never pruned', () => {
    const { c } = counter();
    c.add(f(0), P3, T0);
    expect(c.times('node-1', 'Ascend910-3', '80E01801')).toEqual([0]);
  });

  test('1.5 clearDevFault removes one code and prunes empty maps', () => {
    const { c } = counter();
    c.add(f(T0), P3, T0);
    c.add(f(T0, 'Ascend910-3', 'X'), P3, T0);
    c.clearDevFault('node-1', 'Ascend910-3', '80E01801');
    c.clearDevFault('node-1', 'Ascend910-3', 'nope');
    expect(c.export()).toEqual({ 'node-1': { 'Ascend910-3': { X: [T0] } } });
  });

  test('1.5 clearDevFaults removes a device and its node when empty', () => {
    const { c } = counter();
    c.add(f(T0), P3, T0);
    c.clearDevFaults('node-1', 'Ascend910-3');
    c.clearDevFaults('node-9', 'Ascend910-3');
    expect(c.export()).toEqual({});
  });

  test('1.5 a threshold change applies at the next add', () => {
    const { c, separated } = counter();
    c.add(f(T0), P3, T0);
    c.add(f(T0 + 1), P3, T0);
    c.add(f(T0 + 2), { threshold: 1, windowMs: H }, T0 + 2);
    expect(separated.length).toBe(1);
  });

  test('1.5 export and restore round-trip', () => {
    const { c } = counter();
    c.add(f(T0), P3, T0);
    const { c: d } = counter();
    expect(d.restore(c.export())).toEqual([]);
    expect(d.export()).toEqual(c.export());
  });

  test('1.5 restore skips invalid entries with a message', () => {
    const { c } = counter();
    expect(c.restore({ n: { d: { x: ['a'] } } })).toEqual(['counter.n.d.x is not a list of integers']);
  });
});
