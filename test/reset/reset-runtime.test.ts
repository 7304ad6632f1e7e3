/**
 * The reset layer as the agent composes it (src/reset/reset-runtime.ts): the `-hotReset` mode gate (hot-reset.md
 * §1.2), the offline engine (device-plugin.md §J.2) and the online engine (hot-reset.md §3) fed from a state-store
 * port, the §3.10 health filter going back into the store, D4 (the offline engine leaves task rings alone), the
 * timings of §5 (scaled, GraceTolerance read at use), the episode file, the file landing of §2.8 and the coalescing
 * of engine cycles. Everything runs on a {@link FakeClock} with fakes; files go to fresh temporary folders.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FaultLevel } from '../../src/faults/levels.js';
import type { Logger } from '../../src/core/logger.js';
import type { EpisodeRecord } from '../../src/reset/online-types.js';
import {
  EpisodeFileStore,
  ResetRuntime,
  type GraceValues,
  type ResetRuntimeOptions,
  type ResetStorePort,
} from '../../src/reset/reset-runtime.js';
import type {
  ChipResetView,
  HotResetMode,
  NodeAnnotationApi,
  ResetEvent,
  ResetPod,
  RingFacts,
} from '../../src/reset/types.js';
import { FakeClock, settle } from '../health/fake-clock.js';
import { FakeResetDcmi } from './fake-dcmi.js';
import { CODE, F1_CHIPS, MemoryConfigMaps, T0, f1Facts, f1Task, triple } from './online-fakes.js';

const UNHEALTHY: ReadonlySet<FaultLevel> = new Set<FaultLevel>([
  'RestartRequest',
  'RestartBusiness',
  'RestartNPU',
  'FreeRestartNPU',
  'PreSeparateNPU',
  'SeparateNPU',
  'ManuallySeparateNPU',
]);

/** The state store and health monitor as the runtime sees them: views under test control, calls recorded. */
class FakeStore implements ResetStorePort {
  readonly views = new Map<number, ChipResetView>();
  readonly overrides: { healthy: number[]; networkHealthy: number[] }[] = [];
  readonly resyncs: { ids: number[]; why: string }[] = [];
  chipCalls = 0;
  /** Like the real store: a change of the overrides publishes a snapshot (listeners called). */
  publishOnOverrides = false;
  readonly #listeners = new Set<() => void>();

  constructor(ids: readonly number[], podUsed: boolean) {
    for (const id of ids) this.views.set(id, { logicId: id, level: 'NormalNPU', codes: [], healthy: true, podUsed });
  }

  set(id: number, level: FaultLevel, codes: number[]): void {
    const old = this.views.get(id)!;
    this.views.set(id, { ...old, level, codes, healthy: !UNHEALTHY.has(level) });
  }

  /** A published snapshot. */
  emit(): void {
    for (const l of [...this.#listeners]) l();
  }

  listenerCount(): number {
    return this.#listeners.size;
  }

  lastOverrides(): { healthy: number[]; networkHealthy: number[] } | undefined {
    return this.overrides.at(-1);
  }

  chips(): readonly ChipResetView[] {
    this.chipCalls += 1;
    return [...this.views.values()].sort((a, b) => a.logicId - b.logicId);
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  setResetOverrides(healthy: ReadonlySet<number>, networkHealthy: ReadonlySet<number>): void {
    const asc = (s: ReadonlySet<number>): number[] => [...s].sort((a, b) => a - b);
    this.overrides.push({ healthy: asc(healthy), networkHealthy: asc(networkHealthy) });
    if (this.publishOnOverrides) queueMicrotask(() => this.emit());
  }

  markResync(logicIds: readonly number[], why: string): void {
    this.resyncs.push({ ids: [...logicIds], why });
  }

  resyncApplied(): Promise<void> {
    return Promise.resolve();
  }
}

class FakeAnnotations implements NodeAnnotationApi {
  readonly values = new Map<string, string>();
  read(key: string): Promise<string | undefined> {
    return Promise.resolve(this.values.get(key));
  }
  write(key: string, value: string): Promise<void> {
    this.values.set(key, value);
    return Promise.resolve();
  }
}

interface LogLine {
  readonly level: string;
  readonly obj: object | undefined;
  readonly msg: string;
}

function recordingLogger(lines: LogLine[]): Logger {
  const fn =
    (level: string) =>
    (a: string | object, b?: string): void => {
      if (typeof a === 'string') lines.push({ level, obj: undefined, msg: a });
      else lines.push({ level, obj: a, msg: b ?? '' });
    };
  return { debug: fn('debug'), info: fn('info'), warn: fn('warn'), error: fn('error') };
}

const GRACE_DEFAULTS: GraceValues = {
  WaitProcessReadCMTime: 30,
  WaitDeviceResetTime: 150,
  WaitFaultSelfHealingTime: 15,
};

interface RigOptions {
  readonly mode: HotResetMode;
  readonly facts?: RingFacts;
  readonly workModeSmp?: boolean;
  readonly timeScale?: number;
  readonly listWatchPeriodMs?: number;
  readonly grace?: () => GraceValues;
  /** The store's `podUsed` for every chip (default true). */
  readonly podUsed?: boolean;
  readonly stateDir?: string;
  readonly configMapsSynced?: () => boolean;
}

/** One runtime over fakes; the lists it reads (`pods`) and the fakes stay reachable for the test. */
class RuntimeRig {
  readonly clock = new FakeClock(T0);
  readonly dcmi: FakeResetDcmi;
  readonly cms = new MemoryConfigMaps(this.clock);
  readonly store: FakeStore;
  readonly annotations = new FakeAnnotations();
  readonly events: ResetEvent[] = [];
  readonly logs: LogLine[] = [];
  readonly hostRoot: string;
  pods: ResetPod[] = [];
  podCalls = 0;
  readonly runtime: ResetRuntime;

  constructor(o: RigOptions, tmp: () => string) {
    const facts = o.facts ?? f1Facts();
    const ids = facts.chips.map((c) => c.logicId);
    this.dcmi = new FakeResetDcmi({
      clock: this.clock,
      chips: ids,
      affects: (id) => ids.filter((c) => c >> 3 === id >> 3),
    });
    this.store = new FakeStore(ids, o.podUsed ?? true);
    this.hostRoot = tmp();
    const options: ResetRuntimeOptions = {
      mode: o.mode,
      clock: this.clock,
      logger: recordingLogger(this.logs),
      facts,
      workModeSmp: o.workModeSmp ?? false,
      listWatchPeriodMs: o.listWatchPeriodMs ?? 1000,
      timeScale: o.timeScale ?? 1,
      grace: o.grace ?? (() => GRACE_DEFAULTS),
      dcmi: this.dcmi,
      configMapApi: this.cms,
      configMapCache: this.cms.cache,
      nodeAnnotations: this.annotations,
      events: (e) => void this.events.push(e),
      store: this.store,
      pods: () => {
        this.podCalls += 1;
        return this.pods;
      },
      logicIdOfPhy: (phy) => (ids.includes(phy) ? phy : undefined),
      hostRoot: this.hostRoot,
      ...(o.stateDir !== undefined && { stateDir: o.stateDir }),
      ...(o.configMapsSynced !== undefined && { configMapsSynced: o.configMapsSynced }),
    };
    this.runtime = new ResetRuntime(options);
  }

  /** ConfigMap (a) of §2.9 for job1 (an "initializing" `reset.json`). */
  putResetConfigMap(): void {
    this.cms.put({
      namespace: 'default',
      name: 'reset-config-job1',
      labels: { reset: 'true' },
      data: { 'reset.json': '{"status":"initializing"}', checkCode: '' },
    });
  }

  resetCalls(): number {
    return this.dcmi.count('setDeviceReset');
  }
}

describe('reset runtime', () => {
  const dirs: string[] = [];
  const rigs: RuntimeRig[] = [];
  const tmp = (): string => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-'));
    dirs.push(d);
    return d;
  };
  const rig = (o: RigOptions): RuntimeRig => {
    const r = new RuntimeRig(o, tmp);
    rigs.push(r);
    return r;
  };

  afterEach(async () => {
    for (const r of rigs.splice(0)) await r.runtime.stop();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  /** A RestartNPU chip 0 on a node where no pod holds a chip and no process runs: an offline candidate. */
  const idleFaultyNode = (mode: HotResetMode): RuntimeRig => {
    const r = rig({ mode, timeScale: 0.01, podUsed: false });
    r.dcmi.setAll(F1_CHIPS, { processes: 0 });
    r.dcmi.set(0, { health: 1 });
    r.store.set(0, 'RestartNPU', [CODE.restartNpu]);
    return r;
  };

  describe('§1.2 the -hotReset modes', () => {
    test('§1.2 mode -1: an idle RestartNPU chip is never reset', async () => {
      const r = idleFaultyNode(-1);
      r.runtime.start();
      await r.clock.advance(10_000); // 16× the scaled 60 s idle time
      expect(r.resetCalls()).toBe(0);
      expect(r.store.resyncs).toEqual([]);
      expect(r.runtime.onlineEnabled).toBe(false);
    });

    test('§1.2 mode 2 / §J.2: an idle RestartNPU chip is reset after the scaled idle time, then re-synced (D.5)', async () => {
      const r = idleFaultyNode(2);
      r.runtime.start();
      await r.clock.advance(590); // idle = 60 s × 0.01
      expect(r.resetCalls()).toBe(0);
      await r.clock.advance(20);
      expect(r.dcmi.callsOf('setDeviceReset').map((c) => [c.logicId, c.arg])).toEqual([[0, 'inband']]);
      expect(r.dcmi.callsOf('setDeviceReset')[0]!.at).toBe(T0 + 600);
      await r.clock.advance(100); // boot polls every 1 s × 0.01
      await r.runtime.idle();
      expect(r.store.resyncs).toEqual([{ ids: [0], why: 'chip reset finished' }]);
      expect(r.events.map((e) => e.reason)).toEqual(['OfflineResetSucceeded']);
    });

    test.each([
      ['Ascend310P node', { kind: 'Ascend310P', usage: 'infer' }, false],
      ['Ascend910 (910A) node in AMP mode', { kind: 'Ascend910', usage: 'train' }, false],
    ] as const)('§1.2 mode 1 on an %s: online engine off, warning logged', (_name, kind, smp) => {
      const facts: RingFacts = {
        ...kind,
        boardId: 0,
        chips: [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 })),
      };
      const r = rig({ mode: 1, facts, workModeSmp: smp });
      expect(r.runtime.onlineEnabled).toBe(false);
      expect(r.runtime.status().online).toBeNull();
      const warns = r.logs.filter((l) => l.level === 'warn');
      expect(warns).toHaveLength(1);
      expect(warns[0]!.msg).toContain('§1.2');
      expect(warns[0]!.obj).toMatchObject({ kind: kind.kind });
    });

    test('issue 12 item 6 §J.2 a failing offline reset uses at most one token per listWatchPeriod tick', async () => {
      const r = rig({ mode: 2, timeScale: 0.01, podUsed: false, listWatchPeriodMs: 1000 });
      r.store.publishOnOverrides = true; // the end of a reset changes the resetting set: a snapshot, a cycle
      r.dcmi.setAll(F1_CHIPS, { processes: 0 });
      r.dcmi.set(0, { health: 1, reset: { inband: 'fail', outband: 'ok' } });
      r.store.set(0, 'RestartNPU', [CODE.restartNpu]);
      r.runtime.start();
      await r.clock.advance(600); // the scaled 60 s idle time
      expect(r.resetCalls()).toBe(1);
      const perTick: number[] = [];
      for (let tick = 0; tick < 4; tick++) {
        const before = r.resetCalls();
        await r.clock.advance(1000);
        perTick.push(r.resetCalls() - before);
      }
      expect(perTick).toEqual([1, 1, 0, 0]);
      expect(r.runtime.status().offline[0]).toMatchObject({ state: 'exhausted', tokens: 0 });
      expect(r.events.map((e) => e.reason)).toEqual([
        'OfflineResetFailed',
        'OfflineResetFailed',
        'OfflineResetFailed',
        'OfflineResetLimitReached',
      ]);
    });

    test('§1.2 mode 1 on a 910A node in SMP mode and on a 910B training node: online engine on, no warning', () => {
      const a = rig({
        mode: 1,
        facts: { ...f1Facts(), kind: 'Ascend910' },
        workModeSmp: true,
      });
      const b = rig({ mode: 1 });
      expect([a.runtime.onlineEnabled, b.runtime.onlineEnabled]).toEqual([true, true]);
      expect([...a.logs, ...b.logs].filter((l) => l.level === 'warn')).toEqual([]);
    });

    test('constructor: a bad timeScale or listWatchPeriodMs is refused naming the option', () => {
      expect(() => rig({ mode: 2, timeScale: 0 })).toThrow(/timeScale must be a positive number, got 0/);
      expect(() => rig({ mode: 2, timeScale: Number.NaN })).toThrow(/timeScale/);
      expect(() => rig({ mode: 2, listWatchPeriodMs: -1 })).toThrow(/listWatchPeriodMs must be a positive number/);
    });
  });

  describe('§3 online engine through the runtime (mode 1, fixture F1)', () => {
    /** F1: pod default/job1-w1 on chips 0–7, ConfigMap (a), training processes running. */
    const f1 = (o: Partial<RigOptions> = {}): RuntimeRig => {
      const r = rig({ mode: 1, ...o });
      r.putResetConfigMap();
      r.pods = [f1Task().pod];
      r.dcmi.setAll(F1_CHIPS, { processes: 1 });
      return r;
    };

    test('§2.3 the online engine waits for the first list of the reset ConfigMaps', async () => {
      let synced = false;
      const r = f1({ configMapsSynced: () => synced });
      r.store.set(3, 'RestartNPU', [CODE.restartNpu]);
      r.runtime.start();
      await settle();
      expect(r.cms.resetDocs()).toHaveLength(0);
      expect(r.events).toEqual([]);
      synced = true;
      r.store.emit();
      await settle();
      expect(r.cms.resetDocs().map(triple)).toEqual(['unrecovered/reset/reset']);
    });

    const isolatedText =
      '{"RankList":[{"RankId":8,"LogicId":0,"Status":"failed","Policy":"isolate","InitialPolicy":"reset",' +
      '"ErrorCode":[],"ErrorCodeHex":""}],"UpdateTime":1748400151,"RetryTime":1,"FaultFlushing":false,' +
      '"GracefulExit":0,"RestartFaultProcess":false}';

    const isolatedConfigMap = (r: RuntimeRig): void =>
      r.cms.put({
        namespace: 'default',
        name: 'reset-config-job1',
        labels: { reset: 'true' },
        data: { 'reset.json': isolatedText, checkCode: '', restartType: 'hotReset' },
      });

    test('§2.6 HR-21 the agent annotates a newly placed pod of the task: its reset ConfigMap is emptied', async () => {
      const r = rig({ mode: 1 });
      isolatedConfigMap(r);
      r.pods = [f1Task().pod];
      r.runtime.start();
      await settle();
      r.runtime.podAnnotated('default', 'job1-w1');
      await settle();
      const docs = r.cms.resetDocs();
      expect(docs.map((d) => [d.RankList.length, d.RetryTime])).toEqual([[0, 1]]);
      expect(r.cms.current('default', 'reset-config-job1')!.data.restartType).toBe('hotReset');
    });

    test('§2.6 a pod merely seen again (agent restart) leaves an isolated ConfigMap alone', async () => {
      const r = rig({ mode: 1 });
      isolatedConfigMap(r);
      r.pods = [f1Task().pod];
      r.runtime.start();
      r.runtime.podsChanged();
      await settle();
      expect(r.cms.resetDocs()).toHaveLength(0);
      expect(r.cms.current('default', 'reset-config-job1')!.data['reset.json']).toBe(isolatedText);
    });

    test('§3.3 a RestartNPU fault: the reset ConfigMap gets the unrecovered write', async () => {
      const r = f1();
      r.store.set(3, 'RestartNPU', [CODE.restartNpu]);
      r.runtime.start();
      await settle();
      const docs = r.cms.resetDocs();
      expect(docs.map(triple)).toEqual(['unrecovered/reset/reset']);
      expect(docs[0]!.RankList.map((rk) => rk.RankId)).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
      expect(docs[0]!.RetryTime).toBe(1);
      expect(r.runtime.status().tasks).toEqual(['job1']);
    });

    test('§3.10 the faulty chip is reported Healthy (its ring NetworkHealthy) only once the cache holds the write', async () => {
      const r = f1();
      r.cms.lag = true; // the informer has not delivered the unrecovered write yet
      r.store.set(3, 'RestartNPU', [CODE.restartNpu]);
      r.runtime.start();
      await settle();
      expect(r.cms.resetDocs()).toHaveLength(1);
      expect(r.store.overrides.every((o) => o.healthy.length === 0 && o.networkHealthy.length === 0)).toBe(true);
      r.cms.deliver();
      r.runtime.configMapChanged(r.cms.current('default', 'reset-config-job1')!, false);
      await settle();
      expect(r.store.lastOverrides()).toEqual({ healthy: [3], networkHealthy: F1_CHIPS });
    });

    test('D4 the ring of a task in an online episode is held for the task; the offline engine does not reset it', async () => {
      const r = f1({ timeScale: 0.01 });
      r.dcmi.set(3, { health: 1 });
      r.store.set(3, 'RestartNPU', [CODE.restartNpu]);
      r.runtime.start();
      await settle();
      expect(r.runtime.status().resetting).toEqual(Object.fromEntries(F1_CHIPS.map((i) => [String(i), 'task:job1'])));
      await r.clock.advance(500); // processes never stop: the episode waits (60 s × 0.01), offline idle is 600 ms
      expect(r.resetCalls()).toBe(0);
      expect(r.runtime.status().offline.find((c) => c.logicId === 3)!.state).toBe('idle');
    });

    test('D4 the offline engine skips a ring a task uses (mode 1) and resets it once the task has left', async () => {
      // FreeRestartNPU (policy free_reset, level 4) starts no online episode; the store says no pod holds a chip.
      const r = f1({ timeScale: 0.01, podUsed: false });
      r.dcmi.setAll(F1_CHIPS, { processes: 0 });
      r.dcmi.set(3, { health: 1 });
      r.store.set(3, 'FreeRestartNPU', [CODE.restartNpu]);
      r.runtime.start();
      await r.clock.advance(3000); // 5× the scaled idle time
      expect(r.resetCalls()).toBe(0);
      expect(r.runtime.status().resetting).toEqual({});
      r.pods = [];
      r.runtime.podsChanged();
      await r.clock.advance(700);
      expect(r.dcmi.callsOf('setDeviceReset').map((c) => c.logicId)).toEqual([3]);
    });

    test('§3 agent restart: the running episode is saved in <stateDir>/reset-episodes.json', async () => {
      const stateDir = tmp();
      const r = f1({ stateDir });
      r.store.set(3, 'RestartNPU', [CODE.restartNpu]);
      r.runtime.start();
      await settle();
      const saved = new EpisodeFileStore(stateDir).load();
      expect(saved).toHaveLength(1);
      expect(saved![0]).toMatchObject({
        task: 'job1',
        namespace: 'default',
        initialPolicy: 'reset',
        rankChips: F1_CHIPS,
      });
    });
  });

  describe('§5 timings', () => {
    const l3 = (o: Partial<RigOptions>): RuntimeRig => {
      const r = rig({ mode: 1, timeScale: 0.01, ...o });
      r.putResetConfigMap();
      r.pods = [f1Task().pod];
      r.store.set(3, 'RestartBusiness', [CODE.restartBusiness]);
      return r;
    };

    test('§5 timeScale scales the fixed online timings: WaitProcessesToZeroTime 60 s × 0.01', async () => {
      const r = l3({});
      r.dcmi.setAll(F1_CHIPS, { processes: 1 }); // the training never stops: §3.4.2 times out
      r.runtime.start();
      await settle();
      expect(r.cms.resetDocs().map(triple)).toEqual(['unrecovered/restart/restart']);
      await r.clock.advance(590);
      expect(r.cms.writes).toHaveLength(1);
      await r.clock.advance(20);
      expect(r.cms.resetDocs().map(triple)).toEqual(['unrecovered/restart/restart', 'failed/isolate/restart']);
      expect(r.cms.writes[1]!.at - r.cms.writes[0]!.at).toBe(600);
    });

    test('§5 GraceTolerance values are read at use: a changed value applies to the next sleep', async () => {
      const grace = { ...GRACE_DEFAULTS };
      const r = l3({ grace: () => ({ ...grace }) }); // a fresh object per call, as a config reload gives
      r.dcmi.setAll(F1_CHIPS, { processes: 0 });
      grace.WaitFaultSelfHealingTime = 20; // changed after construction: 200 ms, not 150
      r.runtime.start();
      await settle();
      const first = r.cms.writes[0]!.at;
      r.store.set(3, 'NormalNPU', []); // the fault heals during the §3.6 self-healing sleep
      grace.WaitProcessReadCMTime = 50; // the sleep after the recovered write: 500 ms, not 300
      await r.clock.advance(190);
      expect(r.cms.writes).toHaveLength(1);
      await r.clock.advance(10);
      expect(r.cms.resetDocs().map(triple)).toEqual(['unrecovered/restart/restart', 'recovered/restart/restart']);
      expect(r.cms.writes[1]!.at - first).toBe(200);
      await r.clock.advance(490);
      expect(Object.keys(r.runtime.status().resetting)).toHaveLength(8);
      await r.clock.advance(10);
      expect(r.runtime.status().resetting).toEqual({});
    });
  });

  describe('§3 EpisodeFileStore (reset-episodes.json)', () => {
    const record: EpisodeRecord = {
      task: 'job1',
      namespace: 'default',
      podUid: 'uid-job1-w1',
      initialPolicy: 'reset',
      policy: 'reset',
      state: 'waitingProcesses',
      startedAt: T0,
      snapshot: F1_CHIPS.map((i) => ({
        logicId: i,
        rankId: 8 + i,
        policy: i === 3 ? 'reset' : 'empty',
        codes: i === 3 ? [CODE.restartNpu] : [],
      })),
      rankChips: F1_CHIPS,
      ringChips: F1_CHIPS,
    };
    const asideFiles = (dir: string): string[] =>
      fs.readdirSync(dir).filter((f) => /^reset-episodes\.json\.corrupt-\d+$/.test(f));

    test('save then load returns the records; the file is private (0600)', () => {
      const dir = tmp();
      const store = new EpisodeFileStore(path.join(dir, 'state'));
      store.save([record]);
      expect(store.load()).toEqual([record]);
      expect(fs.statSync(path.join(dir, 'state', 'reset-episodes.json')).mode & 0o777).toBe(0o600);
      expect(fs.readdirSync(path.join(dir, 'state'))).toEqual(['reset-episodes.json']);
    });

    test('a missing file loads as undefined and nothing is set aside', () => {
      const dir = tmp();
      expect(new EpisodeFileStore(dir).load()).toBeUndefined();
      expect(fs.readdirSync(dir)).toEqual([]);
    });

    test.each([
      ['corrupt JSON', '[{"task":'],
      ['not an array', '{"task":"job1"}'],
      ['a record of the wrong shape', '[{"task":"job1","state":"nowhere"}]'],
    ])('%s loads as undefined and the file is moved aside', (_name, text) => {
      const dir = tmp();
      const lines: LogLine[] = [];
      fs.writeFileSync(path.join(dir, 'reset-episodes.json'), text);
      expect(new EpisodeFileStore(dir, recordingLogger(lines)).load()).toBeUndefined();
      expect(fs.existsSync(path.join(dir, 'reset-episodes.json'))).toBe(false);
      const aside = asideFiles(dir);
      expect(aside).toHaveLength(1);
      expect(fs.readFileSync(path.join(dir, aside[0]!), 'utf8')).toBe(text);
      expect(lines.filter((l) => l.level === 'error')).toHaveLength(1);
    });

    test('a file over 4 MiB is refused without being parsed, and moved aside', () => {
      const dir = tmp();
      const lines: LogLine[] = [];
      fs.writeFileSync(path.join(dir, 'reset-episodes.json'), `[${' '.repeat(4 * 1024 * 1024)}]`);
      expect(new EpisodeFileStore(dir, recordingLogger(lines)).load()).toBeUndefined();
      expect(asideFiles(dir)).toHaveLength(1);
      expect(lines[0]!.obj).toMatchObject({ why: expect.stringContaining('larger than 4194304 bytes') });
    });
  });

  describe('§2.8 file landing', () => {
    const landed = (r: RuntimeRig): string =>
      path.join(r.hostRoot, 'user/restore/reset/default.reset-config-job1/reset.json');
    const landing = (mode: HotResetMode): RuntimeRig => {
      const r = rig({ mode });
      r.putResetConfigMap();
      return r;
    };

    test.each([-1, 0, 1, 2] as const)(
      '§2.8 mode %i: a new pod with the device annotation gets its reset files; they go with the pod',
      async (mode) => {
        const r = landing(mode);
        r.runtime.start();
        r.pods = [f1Task().pod];
        r.runtime.podsChanged();
        await r.runtime.idle();
        expect(fs.readFileSync(landed(r), 'utf8')).toBe('{"status":"initializing"}');
        r.pods = [];
        r.runtime.podsChanged();
        await r.runtime.idle();
        expect(fs.existsSync(path.dirname(landed(r)))).toBe(false);
      },
    );

    test('§2.8 a pod that finishes (phase Succeeded) loses its reset files', async () => {
      const r = landing(0);
      r.pods = [f1Task().pod];
      r.runtime.start();
      await r.runtime.idle();
      expect(fs.existsSync(landed(r))).toBe(true);
      r.pods = [{ ...f1Task().pod, phase: 'Succeeded' }];
      r.runtime.podsChanged();
      await r.runtime.idle();
      expect(fs.existsSync(path.dirname(landed(r)))).toBe(false);
    });

    test('§2.8 a pod without the device annotation lands nothing until the annotation appears', async () => {
      const r = landing(0);
      const pod = f1Task().pod;
      const bare = Object.fromEntries(Object.entries(pod.annotations).filter(([k]) => k !== 'huawei.com/Ascend910'));
      r.pods = [{ ...pod, annotations: bare }];
      r.runtime.start();
      await r.runtime.idle();
      expect(fs.existsSync(path.dirname(landed(r)))).toBe(false);
      r.pods = [pod]; // the device annotation is written after the pod first appeared
      r.runtime.podsChanged();
      await r.runtime.idle();
      expect(fs.readFileSync(landed(r), 'utf8')).toBe('{"status":"initializing"}');
    });

    test('§2.8 a pod re-created under the same name (new uid) keeps its job files', async () => {
      const r = landing(0);
      r.pods = [f1Task().pod];
      r.runtime.start();
      await r.runtime.idle();
      r.pods = [{ ...f1Task().pod, uid: 'uid-job1-w1-second' }];
      r.runtime.podsChanged();
      await r.runtime.idle();
      expect(fs.readFileSync(landed(r), 'utf8')).toBe('{"status":"initializing"}');
    });

    test('§2.8 a reset ConfigMap change is mirrored into the landed file', async () => {
      const r = landing(0);
      r.pods = [f1Task().pod];
      r.runtime.start();
      await r.runtime.idle();
      r.cms.put({
        namespace: 'default',
        name: 'reset-config-job1',
        labels: { reset: 'true' },
        data: { 'reset.json': '{"RankList":[]}', restartType: 'hotReset' },
      });
      r.runtime.configMapChanged(r.cms.current('default', 'reset-config-job1')!, false);
      await r.runtime.idle();
      expect(fs.readFileSync(landed(r), 'utf8')).toBe('{"RankList":[]}');
      expect(fs.readFileSync(path.join(path.dirname(landed(r)), 'restartType'), 'utf8')).toBe('hotReset');
    });
  });

  describe('engine cycles', () => {
    test('many store, pod and ConfigMap changes in one turn cause one engine cycle (coalescing)', async () => {
      const r = rig({ mode: 1, listWatchPeriodMs: 60_000 });
      r.putResetConfigMap();
      r.pods = [f1Task().pod];
      r.runtime.start();
      await settle();
      const chips = r.store.chipCalls;
      const pods = r.podCalls;
      for (let i = 0; i < 50; i++) r.store.emit();
      r.runtime.podsChanged();
      r.runtime.configMapChanged(r.cms.current('default', 'reset-config-job1')!, false);
      expect(r.store.chipCalls).toBe(chips); // nothing runs synchronously
      await settle();
      expect(r.store.chipCalls - chips).toBe(1);
      expect(r.podCalls - pods).toBe(2); // podsChanged reads the pods once, the one cycle once
    });

    test('a cycle also runs every listWatchPeriod without any change', async () => {
      const r = rig({ mode: 2, listWatchPeriodMs: 5000 });
      r.runtime.start();
      await settle();
      const before = r.store.chipCalls;
      await r.clock.advance(4999);
      expect(r.store.chipCalls).toBe(before);
      await r.clock.advance(1);
      expect(r.store.chipCalls).toBe(before + 1);
      await r.clock.advance(10_000);
      expect(r.store.chipCalls).toBe(before + 3);
    });

    test('stop() unsubscribes from the store and ends the periodic cycles', async () => {
      const r = rig({ mode: 2, listWatchPeriodMs: 5000 });
      r.runtime.start();
      await settle();
      expect(r.store.listenerCount()).toBe(1);
      await r.runtime.stop();
      const before = r.store.chipCalls;
      r.store.emit();
      await r.clock.advance(20_000);
      expect(r.store.chipCalls).toBe(before);
      expect(r.store.listenerCount()).toBe(0);
      expect(r.clock.pending()).toBe(0);
    });
  });
});
