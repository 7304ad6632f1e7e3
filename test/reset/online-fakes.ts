/**
 * The rig of the online reset engine tests: fixture F1 of hot-reset.md §6.2 (910B training node, 8 chips, logic =
 * phy 0–7, ring 8, pod `default/job1-w1` with rank index 1, ConfigMap (a) of §2.9) on a {@link FakeClock}, with
 *
 * - the shared {@link FakeResetDcmi} (a reset of any chip reboots its 8-chip ring for `bootSeconds`),
 * - a fault "world" per chip (level, codes) that the engine sees through its cycles and the hooks; a successful
 *   reset of a chip replaces its fault by `afterReset` (default: none),
 * - an in-memory ConfigMap API whose informer cache reflects every write at once, or only on `deliver()` (`lag`),
 * - a training simulator (§6.2): when any of its ranks is `unrecovered` it sets the process count of chips 0–7 to 0
 *   after `stopSeconds`; when all are `recovered` it sets them back to 1; `ignoresConfigMap` keeps them at 1,
 * - main cycles every `cycleMs` that call `engine.cycle` and answer the §3.4.1 handshake.
 */
import { createHash } from 'node:crypto';
import type { FaultLevel } from '../../src/faults/levels.js';
import { ResetCoordinator } from '../../src/reset/coordinator.js';
import { OnlineResetEngine, defaultOnlineTimings } from '../../src/reset/online-engine.js';
import type { EpisodeRecord, EpisodeStore } from '../../src/reset/online-types.js';
import { ResetConfigMapWriter, parseResetJson, type ResetJson } from '../../src/reset/reset-configmap.js';
import type { ResetTask } from '../../src/reset/tasks.js';
import type {
  ChipResetView,
  ChipStateHooks,
  ConfigMapApi,
  ConfigMapCache,
  ConfigMapObject,
  OnlineTimings,
  ResetEvent,
  RingFacts,
} from '../../src/reset/types.js';
import { FakeClock } from '../health/fake-clock.js';
import { FakeResetDcmi } from './fake-dcmi.js';

/** §2.9 (b): the start time of the examples, 1748400000 s. */
export const T0 = 1_748_400_000_000;
export const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** Shipped fault codes used by the scenarios. */
export const CODE = {
  restartNpu: 0x8c03a000,
  restartRequest: 0x80c98009,
  restartBusiness: 0x8c204e00,
  separate: 0x80e18402,
} as const;

const UNHEALTHY: ReadonlySet<FaultLevel> = new Set<FaultLevel>([
  'RestartRequest',
  'RestartBusiness',
  'RestartNPU',
  'PreSeparateNPU',
  'SeparateNPU',
  'ManuallySeparateNPU',
]);

/** One recorded UPDATE of a ConfigMap. */
export interface CmWrite {
  readonly at: number;
  readonly namespace: string;
  readonly name: string;
  readonly data: Readonly<Record<string, string>>;
}

/** In-memory ConfigMap API and informer cache. */
export class MemoryConfigMaps implements ConfigMapApi {
  readonly writes: CmWrite[] = [];
  readonly #objects = new Map<string, ConfigMapObject>();
  readonly #cache = new Map<string, ConfigMapObject | undefined>();
  #rv = 1;
  /** When true, the cache only follows the API on {@link deliver}. */
  lag = false;
  /** The next `failReplaces` UPDATEs reject (an API outage). */
  failReplaces = 0;
  readonly #listeners: ((cm: ConfigMapObject) => void)[] = [];

  constructor(private readonly clock: FakeClock) {}

  readonly cache: ConfigMapCache = { get: (ns, name) => this.#cache.get(`${ns}/${name}`) };

  /** Creates or overwrites an object as its author / another writer would (also in the cache). */
  put(cm: Omit<ConfigMapObject, 'resourceVersion'>): void {
    const obj = { ...cm, resourceVersion: String(++this.#rv) };
    this.#objects.set(`${cm.namespace}/${cm.name}`, obj);
    this.#cache.set(`${cm.namespace}/${cm.name}`, obj);
  }

  /** The informer catches up. */
  deliver(): void {
    for (const [k, v] of this.#objects) this.#cache.set(k, v);
  }

  onWrite(f: (cm: ConfigMapObject) => void): void {
    this.#listeners.push(f);
  }

  current(ns: string, name: string): ConfigMapObject | undefined {
    return this.#objects.get(`${ns}/${name}`);
  }

  get(namespace: string, name: string): Promise<ConfigMapObject | undefined> {
    return Promise.resolve(this.#objects.get(`${namespace}/${name}`));
  }

  replace(object: ConfigMapObject): Promise<void> {
    try {
      this.#replace(object);
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  #replace(object: ConfigMapObject): void {
    const key = `${object.namespace}/${object.name}`;
    if (this.failReplaces > 0) {
      this.failReplaces -= 1;
      throw new Error(`update ${key}: the server is currently unable to handle the request`);
    }
    const old = this.#objects.get(key);
    if (old === undefined) throw new Error(`update ${key}: not found`);
    if (old.resourceVersion !== object.resourceVersion) throw new Error(`update ${key}: conflict`);
    const stored = { ...object, resourceVersion: String(++this.#rv) };
    this.#objects.set(key, stored);
    if (!this.lag) this.#cache.set(key, stored);
    this.writes.push({ at: this.clock.now(), namespace: object.namespace, name: object.name, data: object.data });
    for (const l of this.#listeners) l(stored);
  }

  /** Parsed `reset.json` of the recorded writes of `reset-config-job1`. */
  resetDocs(): (ResetJson & { at: number })[] {
    return this.writes
      .filter((w) => w.name === 'reset-config-job1')
      .map((w) => ({ ...parseResetJson(w.data['reset.json']!), at: w.at }));
  }
}

/** Per-chip fault state the engine sees. */
export class FaultWorld {
  readonly chips = new Map<number, { level: FaultLevel; codes: number[] }>();
  /** What a chip reports after a successful reset of it (default: no fault). */
  readonly afterReset = new Map<number, { level: FaultLevel; codes: number[] }>();

  constructor(ids: readonly number[]) {
    for (const id of ids) this.chips.set(id, { level: 'NormalNPU', codes: [] });
  }

  set(id: number, level: FaultLevel, codes: number[]): void {
    this.chips.set(id, { level, codes });
  }

  clear(id: number): void {
    this.set(id, 'NormalNPU', []);
  }

  views(): ChipResetView[] {
    return [...this.chips].map(([logicId, c]) => ({
      logicId,
      level: c.level,
      codes: [...c.codes],
      healthy: !UNHEALTHY.has(c.level),
      podUsed: true,
    }));
  }
}

/** §3.4.1 handshake answered by the rig's cycles. */
export class FakeHooks implements ChipStateHooks {
  readonly resyncs: number[][] = [];
  readonly #waiters: ((ok: boolean) => void)[] = [];

  constructor(
    private readonly clock: FakeClock,
    private readonly world: FaultWorld,
  ) {}

  markNeedsResync(logicIds: readonly number[]): void {
    this.resyncs.push([...logicIds]);
  }

  waitForCycle(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (ok: boolean): void => {
        if (done) return;
        done = true;
        resolve(ok);
      };
      this.#waiters.push(finish);
      this.clock.setTimeout(() => finish(false), timeoutMs);
    });
  }

  cycleDone(): void {
    for (const w of this.#waiters.splice(0)) w(true);
  }

  chips(): readonly ChipResetView[] {
    return this.world.views();
  }
}

/** In-memory episode store. */
export class MemoryStore implements EpisodeStore {
  records: EpisodeRecord[] | undefined;
  saves = 0;
  load(): EpisodeRecord[] | undefined {
    return this.records === undefined ? undefined : structuredClone(this.records);
  }
  save(records: EpisodeRecord[]): void {
    this.saves += 1;
    this.records = structuredClone(records);
  }
}

export interface RigOptions {
  readonly timings?: Partial<OnlineTimings>;
  /** Boot time after a reset (scenario `B`), default 60 s. */
  readonly bootSeconds?: number;
  /** Training simulator `S`, default 3 s. */
  readonly stopSeconds?: number;
  readonly ignoresConfigMap?: boolean;
  readonly distributed?: boolean;
  /** Main-cycle period, default 1 s. */
  readonly cycleMs?: number;
  readonly store?: MemoryStore;
  /** Share these between two engines (agent restart). */
  readonly shared?: Rig;
  /** Initial `reset.json` text (default example (a)). */
  readonly resetJson?: string;
}

export const F1_CHIPS = [0, 1, 2, 3, 4, 5, 6, 7];

export function f1Facts(): RingFacts {
  return {
    kind: 'Ascend910B',
    usage: 'train',
    boardId: 0,
    chips: F1_CHIPS.map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 })),
  };
}

export function f1Task(distributed = false): ResetTask {
  return {
    name: 'job1',
    namespace: 'default',
    pod: {
      uid: 'uid-job1-w1',
      namespace: 'default',
      name: 'job1-w1',
      phase: 'Running',
      labels: { 'volcano.sh/job-name': 'job1' },
      annotations: {
        'volcano.sh/job-name': 'job1',
        'huawei.com/Ascend910': F1_CHIPS.map((i) => `Ascend910-${i}`).join(','),
        'hccl/rankIndex': '1',
        ...(distributed && { 'distributed-job': 'true' }),
      },
    },
    logicIds: F1_CHIPS,
    ranks: F1_CHIPS.map((i) => ({ logicId: i, rankId: 8 + i })),
    distributed,
  };
}

/** Everything one scenario needs. */
export class Rig {
  readonly clock: FakeClock;
  readonly dcmi: FakeResetDcmi;
  readonly world: FaultWorld;
  readonly cms: MemoryConfigMaps;
  readonly hooks: FakeHooks;
  readonly coordinator: ResetCoordinator;
  readonly events: ResetEvent[] = [];
  readonly engine: OnlineResetEngine;
  readonly timings: OnlineTimings;
  tasks = new Map<string, ResetTask>();
  cyclesOn = true;
  #stopped = false;

  constructor(readonly o: RigOptions = {}) {
    const s = o.shared;
    this.clock = s?.clock ?? new FakeClock(T0);
    this.world = s?.world ?? new FaultWorld(F1_CHIPS);
    this.dcmi =
      s?.dcmi ??
      new FakeResetDcmi({
        clock: this.clock,
        chips: F1_CHIPS,
        affects: (id) => F1_CHIPS.filter((c) => c >> 3 === id >> 3),
      });
    this.cms = s?.cms ?? new MemoryConfigMaps(this.clock);
    this.hooks = s?.hooks ?? new FakeHooks(this.clock, this.world);
    this.coordinator = new ResetCoordinator();
    this.timings = { ...defaultOnlineTimings(), ...o.timings };
    if (s === undefined) {
      this.dcmi.setAll(F1_CHIPS, { processes: 1, bootSeconds: o.bootSeconds ?? 60 });
      this.cms.put({
        namespace: 'default',
        name: 'reset-config-job1',
        labels: { reset: 'true' },
        data: { 'reset.json': o.resetJson ?? '{"status":"initializing"}', checkCode: '' },
      });
      this.#wireWorld();
      this.#trainingSimulator();
    }
    this.tasks.set('job1', f1Task(o.distributed ?? false));
    this.engine = new OnlineResetEngine({
      clock: this.clock,
      timings: this.timings,
      dcmi: this.dcmi,
      facts: f1Facts(),
      ringSize: 8,
      writer: new ResetConfigMapWriter({ api: this.cms, now: () => this.clock.now() }),
      configMaps: this.cms.cache,
      hooks: this.hooks,
      coordinator: this.coordinator,
      events: { record: (e) => void this.events.push(e) },
      ...(o.store !== undefined && { store: o.store }),
    });
    this.#tick();
  }

  /** A successful reset of a chip applies `afterReset` (default: the fault is gone). */
  #wireWorld(): void {
    const original = this.dcmi.setDeviceReset.bind(this.dcmi);
    this.dcmi.setDeviceReset = async (id, channel) => {
      await original(id, channel);
      if (this.dcmi.chip(id).reset[channel] !== 'ok') return;
      const after = this.world.afterReset.get(id);
      if (after === undefined) this.world.clear(id);
      else this.world.set(id, after.level, after.codes);
    };
  }

  #trainingSimulator(): void {
    this.cms.onWrite((cm) => {
      if (cm.name !== 'reset-config-job1' || this.o.ignoresConfigMap === true) return;
      const doc = parseResetJson(cm.data['reset.json']!);
      const mine = doc.RankList.filter((r) => r.RankId >= 8 && r.RankId <= 15);
      if (mine.length === 0) return;
      if (mine.some((r) => r.Status === 'unrecovered')) {
        this.clock.setTimeout(() => this.dcmi.setAll(F1_CHIPS, { processes: 0 }), (this.o.stopSeconds ?? 3) * 1000);
      } else if (mine.every((r) => r.Status === 'recovered')) {
        this.dcmi.setAll(F1_CHIPS, { processes: 1 });
      }
    });
  }

  #tick(): void {
    this.clock.setTimeout(() => {
      if (this.#stopped) return;
      if (this.cyclesOn) {
        this.engine.cycle(this.tasks, this.world.views());
        this.hooks.cycleDone();
      }
      this.#tick();
    }, this.o.cycleMs ?? 1000);
  }

  /** One cycle now (the cycle that first sees the fault), outside the periodic ones. */
  cycle(): void {
    this.engine.cycle(this.tasks, this.world.views());
    this.hooks.cycleDone();
  }

  /** Stops this rig's periodic cycles (the old agent of a restart). */
  stop(): void {
    this.#stopped = true;
  }

  /** Seconds since T0. */
  get t(): number {
    return (this.clock.now() - T0) / 1000;
  }

  /** Advances by `s` seconds. */
  async advance(s: number): Promise<void> {
    await this.clock.advance(s * 1000);
  }

  /** Advances in 1 s steps until `pred` holds or `maxS` seconds passed; returns whether it held. */
  async until(pred: () => boolean, maxS = 600): Promise<boolean> {
    for (let i = 0; i < maxS; i++) {
      if (pred()) return true;
      await this.clock.advance(1000);
    }
    return pred();
  }

  /** Task state reported by the engine. */
  state(task = 'job1'): string | undefined {
    return this.engine.status().tasks.find((t) => t.task === task)?.state;
  }
}

/** The ranks of a write as one `Status/Policy/InitialPolicy` string (`|`-joined when they disagree). */
export function triple(doc: ResetJson): string {
  const s = new Set(doc.RankList.map((r) => `${r.Status}/${r.Policy}/${r.InitialPolicy}`));
  return [...s].join('|');
}
