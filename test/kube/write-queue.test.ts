import { describe, expect, test } from '@jest/globals';
import {
  ApiRecovery,
  ObjectWriteQueue,
  backoffDelay,
  type ObjectWriter,
  type QueueClock,
} from '../../src/kube/write-queue.js';

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
  get timers(): number {
    return this.#timers.length;
  }
  /** Moves time forward, firing due timers in order and letting the writes they start settle. */
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

/** Lets pending promise chains (a few writer round trips) run; no wall-clock wait. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

class HttpError extends Error {
  constructor(readonly code: number) {
    super(`HTTP ${code}`);
  }
}

/** A writer against a fake API server that can be down, missing the object, or conflicting. */
class FakeApi implements ObjectWriter<string> {
  down = false;
  exists = true;
  conflictsLeft = 0;
  calls: string[] = [];
  stored: string | undefined;
  async update(s: string): Promise<void> {
    await Promise.resolve();
    this.calls.push(`update ${s}`);
    if (this.down) throw new HttpError(503);
    if (!this.exists) throw new HttpError(404);
    if (this.conflictsLeft > 0) {
      this.conflictsLeft--;
      throw new HttpError(409);
    }
    this.stored = s;
  }
  async create(s: string): Promise<void> {
    await Promise.resolve();
    this.calls.push(`create ${s}`);
    if (this.down) throw new HttpError(503);
    this.exists = true;
    this.stored = s;
  }
}

function setup(api = new FakeApi(), extra: Partial<ConstructorParameters<typeof ObjectWriteQueue<string>>[0]> = {}) {
  const clock = new FakeClock();
  const written: string[] = [];
  const q = new ObjectWriteQueue<string>({
    writer: api,
    clock,
    random: () => 0.5,
    onWritten: (s) => written.push(s),
    ...extra,
  });
  return { api, clock, q, written };
}

describe('write queue (architecture §2, issue D.8)', () => {
  test('a submitted state is written', async () => {
    const { clock, q, written } = setup();
    q.submit('s1');
    await clock.advance(0);
    expect(written).toEqual(['s1']);
  });

  test('submit returns before the writer runs', () => {
    const { api, q } = setup();
    q.submit('s1');
    expect(api.calls).toEqual([]);
  });

  test('states submitted in one tick coalesce: only the last is written', async () => {
    const { clock, q, written } = setup();
    q.submit('s1');
    q.submit('s2');
    q.submit('s3');
    await clock.advance(0);
    expect(written).toEqual(['s3']);
  });

  test('a state submitted during a write is written next', async () => {
    const { clock, q, written } = setup();
    q.submit('s1');
    await Promise.resolve();
    q.submit('s2');
    await clock.advance(0);
    expect(written).toEqual(['s1', 's2']);
  });

  test('a producer is evaluated only when its state is written', async () => {
    const { clock, q } = setup();
    const evaluated: number[] = [];
    for (let i = 0; i < 5; i++) q.submit(() => (evaluated.push(i), `s${i}`));
    await clock.advance(0);
    expect(evaluated).toEqual([4]);
  });

  test('UPDATE answering 404 is followed by CREATE', async () => {
    const api = new FakeApi();
    api.exists = false;
    const { clock, q } = setup(api);
    q.submit('s1');
    await clock.advance(0);
    expect([api.calls, q.stats.creates]).toEqual([['update s1', 'create s1'], 1]);
  });

  test('409 re-reads through reconcile and writes its result', async () => {
    const api = new FakeApi();
    api.conflictsLeft = 1;
    const reconciled: string[] = [];
    const writer: ObjectWriter<string> = {
      update: (s) => api.update(s),
      create: (s) => api.create(s),
      reconcile: (s) => (reconciled.push(s), Promise.resolve(`${s}+fresh`)),
    };
    const { clock, q } = setup(api, { writer });
    q.submit('s1');
    await clock.advance(0);
    expect([reconciled, api.stored, q.stats.conflicts]).toEqual([['s1'], 's1+fresh', 1]);
  });

  test('reconcile returning null ends the write without retry', async () => {
    const api = new FakeApi();
    api.conflictsLeft = 1;
    const writer: ObjectWriter<string> = {
      update: (s) => api.update(s),
      create: (s) => api.create(s),
      reconcile: () => Promise.resolve(null),
    };
    const { clock, q } = setup(api, { writer });
    q.submit('s1');
    await clock.advance(60_000);
    expect(api.calls).toEqual(['update s1']);
  });

  test('a 30 s outage with a state every second ends with exactly one write of the final state', async () => {
    const { api, clock, q, written } = setup();
    api.down = true;
    for (let i = 1; i <= 30; i++) {
      q.submit(`s${i}`);
      await clock.advance(1000);
    }
    api.down = false;
    await clock.advance(60_000);
    expect(written).toEqual(['s30']);
  });

  test('during an outage attempts follow the backoff, not the submissions', async () => {
    const { api, clock, q } = setup();
    api.down = true;
    for (let i = 1; i <= 30; i++) {
      q.submit(`s${i}`);
      await clock.advance(1000);
    }
    // 0.5, 1, 2, 4, 8, 16 s (random 0.5 = no jitter): attempts at t = 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s
    expect(api.calls.length).toBe(6);
  });

  test('memory is bounded: one pending state however many are submitted', async () => {
    const { api, clock, q } = setup();
    api.down = true;
    q.submit('first');
    await clock.advance(0);
    for (let i = 0; i < 10_000; i++) q.submit(`s${i}`);
    // the failed 'first' waits for its retry as the one pending state, so all 10 000 submissions replaced one
    expect([q.stats.superseded, q.busy, clock.timers]).toEqual([10_000, true, 1]);
  });

  test('a newer state replaces the failed one in the retry', async () => {
    const { api, clock, q } = setup();
    api.down = true;
    q.submit('old');
    await clock.advance(0);
    q.submit('new');
    api.down = false;
    await clock.advance(1000);
    expect(api.calls).toEqual(['update old', 'update new']);
  });

  test('a 422 rejection drops the state and counts it', async () => {
    const writer: ObjectWriter<string> = {
      update: () => Promise.reject(new HttpError(422)),
      create: () => Promise.resolve(),
    };
    const { clock, q } = setup(new FakeApi(), { writer });
    q.submit('bad');
    await clock.advance(60_000);
    expect([q.stats.rejected, q.stats.failures, q.busy]).toEqual([1, 0, false]);
  });

  test('a network error (no status) is retried', async () => {
    let fail = true;
    const done: string[] = [];
    const writer: ObjectWriter<string> = {
      update: (s) => {
        if (fail) {
          fail = false;
          return Promise.reject(new Error('ECONNREFUSED'));
        }
        done.push(s);
        return Promise.resolve();
      },
      create: () => Promise.resolve(),
    };
    const { clock, q } = setup(new FakeApi(), { writer });
    q.submit('s');
    await clock.advance(1000);
    expect([done, q.stats.failures]).toEqual([['s'], 1]);
  });

  test('stats: pending age grows during an outage and clears after the write', async () => {
    const { api, clock, q } = setup();
    api.down = true;
    q.submit('s');
    await clock.advance(10_000);
    const during = q.pendingAgeMs();
    api.down = false;
    await clock.advance(20_000);
    expect([during, q.pendingAgeMs(), q.stats.writes, q.stats.consecutiveFailures]).toEqual([10_000, 0, 1, 0]);
  });

  test('whenIdle resolves after the last write', async () => {
    const { clock, q, written } = setup();
    q.submit('s1');
    const idle = q.whenIdle();
    await clock.advance(0);
    await idle;
    expect(written).toEqual(['s1']);
  });

  test('close drops the pending state and cancels the retry timer', async () => {
    const { api, clock, q } = setup();
    api.down = true;
    q.submit('s');
    await clock.advance(0);
    q.close();
    api.down = false;
    await clock.advance(60_000);
    expect([api.calls.length, clock.timers]).toEqual([1, 0]);
  });
});

describe('write queue backoff', () => {
  test('the delay doubles from the initial value up to the cap (no jitter at random 0.5)', () => {
    const d = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((a) => backoffDelay(a, { initialMs: 500, maxMs: 30_000 }, () => 0.5));
    expect(d).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });

  test('jitter stays within ±20 % of the base delay', () => {
    const lo = backoffDelay(3, {}, () => 0);
    const hi = backoffDelay(3, {}, () => 0.999999);
    expect([lo, hi]).toEqual([1600, 2400]);
  });

  test('jitter spreads the delays of equal attempts', () => {
    let x = 0;
    const random = () => ((x = (x * 9301 + 49297) % 233280), x / 233280);
    const delays = new Set(Array.from({ length: 20 }, () => backoffDelay(4, {}, random)));
    expect(delays.size).toBeGreaterThan(10);
  });
});

/** A recovery signal whose probe answers like `api` (ready unless down); counts the probes. */
function recoveryOver(clock: FakeClock, ready: () => boolean, probeIntervalMs = 1000) {
  const probes: number[] = [];
  const recovery = new ApiRecovery({
    clock,
    random: () => 0.5,
    probeIntervalMs,
    probe: () => (probes.push(clock.monotonic()), Promise.resolve(ready())),
  });
  return { recovery, probes };
}

describe('issue [K] item 8: the shared "API reachable again" signal (ApiRecovery)', () => {
  test('after a 20 s outage the write happens at the first probe after the API returns, not after the backoff', async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    const { recovery } = recoveryOver(clock, () => !api.down);
    const { q, written } = setup(api, { clock, backoff: { recovery } });
    api.down = true;
    q.submit('final');
    await clock.advance(20_000); // attempts at 0, 0.5, 1.5, 3.5, 7.5, 15.5 s; the next one is due at 31.5 s
    api.down = false;
    await clock.advance(1000);
    expect([written, q.stats.nextRetryAtMs]).toEqual([['final'], undefined]);
  });

  test('without the signal the same write waits for its backoff (the old behaviour, for comparison)', async () => {
    const { api, clock, q, written } = setup();
    api.down = true;
    q.submit('final');
    await clock.advance(20_000);
    api.down = false;
    await clock.advance(1000);
    expect(written).toEqual([]);
  });

  test('while a retrier waits after an outage failure, one probe runs per interval', async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    const { recovery, probes } = recoveryOver(clock, () => !api.down);
    const { q } = setup(api, { clock, backoff: { recovery } });
    api.down = true;
    q.submit('s');
    await clock.advance(10_000);
    expect(probes).toEqual([1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10_000]);
  });

  test('no probe runs while nothing waits, and none after a 4xx (429 is an answer, not an outage)', async () => {
    const clock = new FakeClock();
    const { recovery, probes } = recoveryOver(clock, () => true);
    const writer: ObjectWriter<string> = {
      update: () => Promise.reject(new HttpError(429)),
      create: () => Promise.resolve(),
    };
    const { q } = setup(new FakeApi(), { clock, writer, backoff: { recovery } });
    await clock.advance(5000);
    q.submit('s');
    await clock.advance(10_000);
    expect([probes, recovery.reachable]).toEqual([[], true]);
  });

  test('one success of any request wakes every waiting retrier at once', async () => {
    const clock = new FakeClock();
    const recovery = new ApiRecovery({ clock });
    const api = new FakeApi();
    const a = setup(api, { clock, backoff: { recovery } });
    const b = setup(api, { clock, backoff: { recovery } });
    api.down = true;
    a.q.submit('a');
    b.q.submit('b');
    await clock.advance(20_000);
    api.down = false;
    const before = recovery.waiting;
    recovery.reportSuccess(); // e.g. an Event posted by another part of the agent
    await clock.advance(0);
    expect([before, a.written, b.written, recovery.waiting]).toEqual([2, ['a'], ['b'], 0]);
  });

  test('a probe that says ready while writes still fail cannot cause a retry storm (doubling guard)', async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    const { recovery } = recoveryOver(clock, () => true); // /readyz answers 200, the writes answer 503
    const { q } = setup(api, { clock, backoff: { recovery } });
    api.down = true;
    q.submit('s');
    await clock.advance(60_000);
    // plain backoff: 7 attempts in 60 s; a wake every probe would be ≈ 60; the guard (1, 2, 4, 8 … s) keeps it near the backoff
    expect(api.calls.length).toBeLessThanOrEqual(10);
  });

  test('close stops the probes', async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    const { recovery, probes } = recoveryOver(clock, () => false);
    const { q } = setup(api, { clock, backoff: { recovery } });
    api.down = true;
    q.submit('s');
    await clock.advance(2500);
    recovery.close();
    await clock.advance(10_000);
    expect(probes).toEqual([1000, 2000]);
  });
});

/**
 * An object on a fake API server whose writes carry a version (`value@version`): a write of a stale version is a
 * 409, as is every write during a storm (`storm` true); `read` is the writer's reconcile (a GET: the live version).
 */
class VersionedApi implements ObjectWriter<string> {
  version = 1;
  stored = '';
  storm = false;
  /** `put <state>` / `get`, with the monotonic time of each call. */
  calls: { call: string; at: number }[] = [];
  constructor(readonly clock: FakeClock) {}
  async update(s: string): Promise<void> {
    await Promise.resolve();
    this.calls.push({ call: `put ${s}`, at: this.clock.t });
    const [value, version] = s.split('@');
    if (this.storm || Number(version) !== this.version) throw new HttpError(409);
    this.version++;
    this.stored = value!;
  }
  async create(): Promise<void> {
    await Promise.resolve();
    throw new HttpError(409); // the object exists
  }
  async reconcile(s: string): Promise<string> {
    await Promise.resolve();
    this.calls.push({ call: 'get', at: this.clock.t });
    return `${s.split('@')[0]!}@${this.version}`;
  }
  /** Someone else's write of the object. */
  edit(): void {
    this.version++;
  }
  count(prefix: string, from = -Infinity, to = Infinity): number {
    return this.calls.filter((c) => c.call.startsWith(prefix) && c.at >= from && c.at < to).length;
  }
}

function stormSetup(o: { random?: number; recovery?: ApiRecovery; clock?: FakeClock } = {}) {
  const clock = o.clock ?? new FakeClock();
  const api = new VersionedApi(clock);
  const retries: (number | undefined)[] = [];
  const written: string[] = [];
  const q = new ObjectWriteQueue<string>({
    writer: api,
    clock,
    random: () => o.random ?? 0.5,
    ...(o.recovery ? { backoff: { recovery: o.recovery } } : {}),
    onWritten: (s) => written.push(s),
    onError: (_e, info) => retries.push(info.retryInMs),
  });
  return { clock, api, q, retries, written };
}

describe('issue [T] item 2: a 409 means the copy is stale, not that the server is down', () => {
  test('[T] 2 a 409 is read and retried at once: PUT, GET, PUT of the fresh copy, no wait', async () => {
    const { clock, api, q, written } = stormSetup();
    api.edit(); // someone wrote since our copy (version 1)
    q.submit('a@1');
    await clock.advance(0);
    expect([api.calls, written, q.stats.conflicts]).toEqual([
      [
        { call: 'put a@1', at: 0 },
        { call: 'get', at: 0 },
        { call: 'put a@2', at: 0 },
      ],
      ['a@2'],
      1,
    ]);
  });

  test('[T] 2 the immediate retries are bounded: 3 PUTs and 2 GETs, then a wait of 250 ms (not the outage backoff)', async () => {
    const { clock, api, q, retries } = stormSetup();
    api.storm = true;
    q.submit('a@1');
    await clock.advance(0);
    expect([api.calls.map((c) => c.call), retries, q.stats.nextRetryAtMs]).toEqual([
      ['put a@1', 'get', 'put a@1', 'get', 'put a@1'],
      [250],
      250,
    ]);
  });

  test('[T] 2 the retry after a conflict wait reads the object first (the copy read before the wait is stale)', async () => {
    const { clock, api, q, written } = stormSetup();
    api.storm = true;
    q.submit('a@1');
    await clock.advance(0);
    api.storm = false;
    api.edit(); // written by someone else during the wait
    await clock.advance(250);
    expect([api.calls.slice(5).map((c) => c.call), written]).toEqual([['get', 'put a@2'], ['a@2']]);
  });

  test('[T] 2 the conflict wait doubles from 250 ms and stops at 1 s (the outage backoff grows to 30 s)', async () => {
    const { clock, api, q, retries } = stormSetup();
    api.storm = true;
    q.submit('a@1');
    await clock.advance(30_000);
    expect(retries.slice(0, 5)).toEqual([250, 500, 1000, 1000, 1000]);
    expect(Math.max(...retries.map((r) => r ?? Infinity))).toBe(1000);
  });

  for (const seconds of [30, 90]) {
    test(`[T] 2 a ${seconds} s storm is caught up within 1.2 s of its end even at the largest jitter`, async () => {
      const { clock, api, q, written } = stormSetup({ random: 0.999_999 }); // every wait +20 %
      api.storm = true;
      q.submit('a@1');
      await clock.advance(seconds * 1000);
      api.storm = false;
      const end = clock.t;
      await clock.advance(1200);
      const put = api.calls.findLast((c) => c.call.startsWith('put'))!;
      expect([written, put.at - end <= 1200, api.count('put', end)]).toEqual([['a@1'], true, 1]);
    });

    test(`[T] 2 no write loop in a ${seconds} s storm: after the first 3 PUTs, at most one PUT and one GET per 0.8 s`, async () => {
      const { clock, api, q } = stormSetup({ random: 0 }); // every wait −20 %: the most attempts
      api.storm = true;
      q.submit('a@1');
      await clock.advance(seconds * 1000);
      // the waits: 200, 400, then 800 ms each
      const rounds = 2 + Math.floor((seconds * 1000 - 600) / 800);
      expect([api.count('put') <= 3 + rounds, api.count('get') <= 2 + rounds]).toEqual([true, true]);
    });
  }

  test('[T] 2 conflicts do not raise the outage backoff: a 503 after a storm waits 500 ms', async () => {
    const { clock, api, q, retries } = stormSetup();
    api.storm = true;
    q.submit('a@1');
    await clock.advance(10_000);
    const conflictsRetries = retries.length;
    api.update = () => Promise.reject(new HttpError(503));
    await clock.advance(1000);
    expect(retries[conflictsRetries]).toBe(500);
  });

  test("[T] 2 another object's successful write wakes a conflict wait at once (shared ApiRecovery)", async () => {
    const clock = new FakeClock();
    const recovery = new ApiRecovery({ clock });
    const a = stormSetup({ clock, recovery });
    const b = setup(new FakeApi(), { clock, backoff: { recovery } });
    a.api.storm = true;
    a.q.submit('a@1');
    await clock.advance(5000); // waiting 1 s at a time
    a.api.storm = false;
    const due = a.q.stats.nextRetryAtMs!;
    b.q.submit('b');
    await clock.advance(0);
    expect([b.written, a.written, clock.t < due, recovery.stats.writeWakes]).toEqual([['b'], ['a@1'], true, 1]);
  });

  test('[T] 2 a read succeeding wakes nothing: during a storm GETs and watches work', async () => {
    const clock = new FakeClock();
    const recovery = new ApiRecovery({ clock });
    const a = stormSetup({ clock, recovery });
    a.api.storm = true;
    a.q.submit('a@1');
    await clock.advance(0);
    a.api.storm = false;
    recovery.reportSuccess(); // a GET answered 200
    await clock.advance(0);
    expect([a.written, a.q.stats.nextRetryAtMs]).toEqual([[], 250]);
  });

  test('[T] 2 retrySoon (a watch event of another writer) ends a conflict wait', async () => {
    const { clock, api, q, written } = stormSetup();
    api.storm = true;
    q.submit('a@1');
    await clock.advance(2000);
    api.storm = false;
    api.edit();
    q.retrySoon();
    await clock.advance(0);
    expect(written).toEqual(['a@2']);
  });

  test('[T] 2 writes of other objects succeeding while this one keeps conflicting cannot make a loop (guard)', async () => {
    const clock = new FakeClock();
    const recovery = new ApiRecovery({ clock });
    const a = stormSetup({ clock, recovery });
    a.api.storm = true;
    a.q.submit('a@1');
    for (let i = 0; i < 1000; i++) {
      recovery.reportWriteSuccess(); // another object written every 10 ms
      await clock.advance(10);
    }
    // 10 s: the timed attempts (≈ 11) plus the early ones the doubling guard lets through (1, 2, 4, 8 s: ≤ 4)
    expect(a.api.count('put')).toBeLessThanOrEqual(3 + 11 + 4);
  });

  test('[T] 1 a conflict wait is timed on the monotonic clock: the wall clock stepped back an hour holds no wake', async () => {
    const clock = new FakeClock();
    const recovery = new ApiRecovery({ clock });
    const a = stormSetup({ clock, recovery });
    a.api.storm = true;
    a.q.submit('a@1');
    await clock.advance(0);
    clock.stepWall(-3_600_000); // an NTP correction during the wait
    a.api.storm = false;
    recovery.reportWriteSuccess(); // another object written: the wake is due at once, not an hour later
    await clock.advance(0);
    expect([a.written, clock.t]).toEqual([['a@1'], 0]);
  });

  test("[T] 1 the queue's ages are monotonic: a wall step changes no pending age", async () => {
    const { clock, api, q } = stormSetup();
    api.storm = true;
    q.submit('a@1');
    await clock.advance(3000);
    clock.stepWall(3_600_000);
    expect(q.pendingAgeMs()).toBe(3000);
  });
});
