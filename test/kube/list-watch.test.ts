/**
 * The list+watch loop's backoff after failures and its early end by the shared recovery signal (issue [K] item 8:
 * after an outage the device-info watch must be back within about a second, so an operator's release is seen).
 */
import type * as k8s from '@kubernetes/client-node';
import { describe, expect, test } from '@jest/globals';
import { ListWatch, type ListResult, type WatchFn } from '../../src/kube/list-watch.js';
import { ApiRecovery, type QueueClock } from '../../src/kube/write-queue.js';

/**
 * A manual clock: timers fire only in advance(). `t` is monotonic time (timers are due on it); the wall clock is
 * `t + wallOffset`, and `stepWall` moves it alone (an NTP correction, a resumed VM: issue [T] item 1).
 */
class FakeClock implements QueueClock {
  t = 0;
  wallOffset = 1_767_225_600_000;
  #timers: { at: number; fn: () => void; id: number }[] = [];
  #id = 0;
  now(): number {
    return this.t + this.wallOffset;
  }
  monotonic(): number {
    return this.t;
  }
  stepWall(ms: number): void {
    this.wallOffset += ms;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.#id;
    this.#timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.#timers = this.#timers.filter((x) => x.id !== h);
  }
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      this.#timers.sort((a, b) => a.at - b.at);
      const next = this.#timers[0];
      if (next === undefined || next.at > end) break;
      this.#timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = end;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

class HttpError extends Error {
  constructor(readonly code: number) {
    super(`HTTP ${code}`);
  }
}

/** A collection behind a fake API server that can be down; watches stay open until the server goes down. */
class FakeCollection {
  down = false;
  lists: number[] = [];
  watches: number[] = [];
  readonly #open = new Set<(err: unknown) => void>();
  constructor(readonly clock: FakeClock) {}

  list = (): Promise<ListResult<k8s.V1ConfigMap>> => {
    this.lists.push(this.clock.monotonic());
    if (this.down) return Promise.reject(new HttpError(503));
    return Promise.resolve({ items: [{ metadata: { name: 'cm', resourceVersion: '1' } }], resourceVersion: '1' });
  };

  watch: WatchFn = (_path, _query, _cb, done) => {
    this.watches.push(this.clock.monotonic());
    const c = new AbortController();
    if (this.down) {
      done(Object.assign(new Error('Service Unavailable'), { statusCode: 503 }));
      return Promise.resolve(c);
    }
    this.#open.add(done);
    c.signal.addEventListener('abort', () => this.#open.delete(done));
    return Promise.resolve(c);
  };

  /** The API server goes down: open watches end cleanly (as the stand-in's), requests answer 503. */
  goDown(): void {
    this.down = true;
    for (const d of [...this.#open]) d(null);
    this.#open.clear();
  }
}

function loop(clock: FakeClock, api: FakeCollection, recovery?: ApiRecovery): ListWatch<k8s.V1ConfigMap> {
  return new ListWatch<k8s.V1ConfigMap>({
    what: 'configmap test',
    path: '/api/v1/namespaces/x/configmaps',
    list: api.list,
    watch: api.watch,
    onSync: () => undefined,
    onEvent: () => undefined,
    clock,
    random: () => 0.5,
    ...(recovery ? { backoff: { recovery } } : {}),
  });
}

describe('issue [K] item 8: list-watch after an outage', () => {
  test('the loop re-lists and watches again at the first probe after the API returns, not after its backoff', async () => {
    const clock = new FakeClock();
    const api = new FakeCollection(clock);
    const recovery = new ApiRecovery({ clock, random: () => 0.5, probe: () => Promise.resolve(!api.down) });
    const lw = loop(clock, api, recovery);
    await lw.start();
    api.goDown();
    await clock.advance(20_000); // re-lists at 1.5, 3.5, 7.5, 15.5 s; the next one is due at 31.5 s
    const listsDuringOutage = api.lists.length;
    api.down = false;
    await clock.advance(1000); // probes run every second
    lw.stop();
    expect([api.lists.length - listsDuringOutage, api.watches.at(-1)! >= 20_000]).toEqual([1, true]);
  });

  test('without the signal the loop sleeps out its backoff after the API returns (the old behaviour)', async () => {
    const clock = new FakeClock();
    const api = new FakeCollection(clock);
    const lw = loop(clock, api);
    await lw.start();
    api.goDown();
    await clock.advance(20_000);
    const listsDuringOutage = api.lists.length;
    api.down = false;
    await clock.advance(1000);
    lw.stop();
    expect(api.lists.length - listsDuringOutage).toBe(0);
  });

  test("a successful list of one loop wakes another loop's backoff at once", async () => {
    const clock = new FakeClock();
    const a = new FakeCollection(clock);
    const b = new FakeCollection(clock);
    const recovery = new ApiRecovery({ clock }); // no probe: only successes of real requests count
    const la = loop(clock, a, recovery);
    const lb = loop(clock, b, recovery);
    await la.start();
    await lb.start();
    a.goDown();
    await clock.advance(5000);
    b.goDown(); // b's backoff runs 5 s behind a's: b re-lists at 20.5 s and next at 36.5 s, a next at 31.5 s
    await clock.advance(16_000);
    a.down = false;
    b.down = false;
    await clock.advance(11_000);
    la.stop();
    lb.stop();
    expect([a.lists.at(-1), b.lists.at(-1)]).toEqual([31_500, 31_500]);
  });

  test('stop cancels the wait: no list after stop even when the API returns', async () => {
    const clock = new FakeClock();
    const api = new FakeCollection(clock);
    const recovery = new ApiRecovery({ clock, random: () => 0.5, probe: () => Promise.resolve(!api.down) });
    const lw = loop(clock, api, recovery);
    await lw.start();
    api.goDown();
    await clock.advance(5000);
    lw.stop();
    const lists = api.lists.length;
    api.down = false;
    await clock.advance(60_000);
    expect([api.lists.length, recovery.waiting]).toEqual([lists, 0]);
  });
});

describe('issue [T] item 1: the list-watch backoff on the monotonic clock', () => {
  test('a wall clock stepped back an hour during an outage does not hold the re-list after the API returns', async () => {
    const clock = new FakeClock();
    const api = new FakeCollection(clock);
    const recovery = new ApiRecovery({ clock }); // only successes of real requests count
    const lw = loop(clock, api, recovery);
    await lw.start();
    api.goDown();
    await clock.advance(20_000);
    clock.stepWall(-3_600_000);
    api.down = false;
    recovery.reportSuccess(); // another request of the agent answered
    await clock.advance(0);
    lw.stop();
    expect(api.lists.at(-1)).toBe(20_000);
  });
});
