/**
 * The chunks' writer loop (src/cluster/write-gate.ts; cluster-faults §0.3 "a writer loop", issue [P] item 6): at
 * most `limit` writes in flight, the others in the order they asked, a turn handed on however a write ends.
 */
import { describe, expect, test } from '@jest/globals';
import { WriteGate } from '../../src/cluster/write-gate.js';

/** A task that runs until released, recording when it started. */
function controlled(log: string[], name: string) {
  let release!: () => void;
  let fail!: (e: Error) => void;
  const done = new Promise<string>((resolve, reject) => {
    release = () => resolve(name);
    fail = reject;
  });
  return {
    task: () => {
      log.push(name);
      return done;
    },
    release: () => release(),
    fail: (e: Error) => fail(e),
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('write gate (0.3 writer loop, issue [P] item 6)', () => {
  test('issue [P] 6 no more than limit writes are in flight; the others start in the order they asked', async () => {
    const gate = new WriteGate(2);
    const started: string[] = [];
    const t = ['a', 'b', 'c', 'd'].map((n) => controlled(started, n));
    const results = t.map((x) => gate.run(x.task));
    await settle();
    expect(started).toEqual(['a', 'b']);
    expect([gate.running, gate.waiting]).toEqual([2, 2]);
    t[1]!.release();
    await settle();
    expect(started).toEqual(['a', 'b', 'c']);
    t[0]!.release();
    await settle();
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    t[2]!.release();
    t[3]!.release();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c', 'd']);
    expect([gate.running, gate.waiting]).toEqual([0, 0]);
  });

  test('issue [P] 6 a failed write hands its turn on and its error reaches its caller', async () => {
    const gate = new WriteGate(1);
    const started: string[] = [];
    const a = controlled(started, 'a');
    const b = controlled(started, 'b');
    const ra = gate.run(a.task);
    const rb = gate.run(b.task);
    await settle();
    expect(started).toEqual(['a']);
    a.fail(new Error('503 from the API server'));
    await expect(ra).rejects.toThrow('503 from the API server');
    await settle();
    expect(started).toEqual(['a', 'b']);
    b.release();
    await expect(rb).resolves.toBe('b');
    expect(gate.running).toBe(0);
  });

  test('issue [P] 6 a task that throws before it returns a promise also hands its turn on', async () => {
    const gate = new WriteGate(1);
    await expect(
      gate.run(() => {
        throw new Error('bad body');
      }),
    ).rejects.toThrow('bad body');
    await expect(gate.run(() => Promise.resolve(7))).resolves.toBe(7);
    expect(gate.running).toBe(0);
  });

  test('issue [P] 6 an unlimited gate lets every write through at once', async () => {
    const gate = new WriteGate(Infinity);
    const started: string[] = [];
    const t = ['a', 'b', 'c'].map((n) => controlled(started, n));
    const results = t.map((x) => gate.run(x.task));
    await settle();
    expect(started).toEqual(['a', 'b', 'c']);
    for (const x of t) x.release();
    await Promise.all(results);
  });

  test('issue [P] 6 a limit that is not a positive integer is refused with a message naming it', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new WriteGate(bad)).toThrow(`write gate limit ${bad}`);
  });
});
