/**
 * bench/hostile/configmap: a hostile-input campaign against the device-info ConfigMap (issue 12 items 1, 3, 4).
 *
 * The real publisher and start-up code (`DeviceInfoPublisher`, `NodeStateStore.restore`) in-process, the Kubernetes API
 * stand-in over real HTTP (all three watch orders), a fake clock for the 1 s spacing. Every input starts from chips 3
 * and 5 manually separated and written; an operator then types one hostile value into `ManuallySeparateNPU`,
 * `UpgradeFaultReason` or `DeviceInfoCfg` — random garbage, near-valid names, values up to the 1 MiB ConfigMap limit —
 * either while the publisher runs (watch → reconcile → overwrite) or while it is stopped (then the restore and a
 * new publisher, with and without a state file). After it, a new fault on chip 6 must still reach the ConfigMap.
 *
 * Counted per input:
 * - crash: an exception, or a device-info write that failed or was rejected;
 * - wrong release: chip 3 or 5 released although the value does not release it under the documented rule (a clean
 *   value — every entry `Ascend910-<phy id>` of this node — releases the chips of our last write it omits; anything
 *   else releases nothing);
 * - lost separation: the ConfigMap does not end showing the engine's separations (and the new fault);
 * - the longest log line (as pino writes it) and Event message, and the slowest input (ms, wall clock).
 *
 * `npx tsx bench/hostile/configmap.ts` (default 240 inputs, ≈ 35 s); `BENCH_HOSTILE_INPUTS=N`, `BENCH_HOSTILE_SEED=S`.
 * Prints a table and one JSON line `{"campaign":"configmap",...}`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { FaultEngine, parsePolicy, type FaultPolicy } from '../../src/faults/index.js';
import type { AgentEvent } from '../../src/kube/event-recorder.js';
import { DeviceInfoPublisher, readStartupValues, storeSeparationHost } from '../../src/kube/device-info-publisher.js';
import { CONFIGMAP_MAX_BYTES } from '../../src/sim/kube-api-store.js';
import { deviceInfoConfigMapName } from '../../src/kube/device-info.js';
import { EngineStatePersistence } from '../../src/kube/engine-state-persistence.js';
import { deviceInfoViewOf } from '../../src/kube/device-info-view.js';
import type { DurableState } from '../../src/state/restore.js';
import { NodeStateStore } from '../../src/state/store.js';
import type { Logger } from '../../src/core/logger.js';
import { createLogger } from '../../src/observability/logger.js';
import type { QueueClock } from '../../src/kube/write-queue.js';
import { KubeApiStandIn, type WatchOrder } from '../../src/sim/kube-api.js';

const INPUTS = Number(process.env.BENCH_HOSTILE_INPUTS ?? 240);
const SEED = Number(process.env.BENCH_HOSTILE_SEED ?? 12);
const NODE = 'hostile';
const CM = deviceInfoConfigMapName(NODE);
const NS = 'kube-system';
const CHIPS = 8;
const SEPARATED = [3, 5];
const HBM = 0x80e01801; // shipped: twice in 24 h → ManuallySeparateNPU
const SEP = 0x80e18402; // SeparateNPU
const T0 = Date.UTC(2026, 0, 1);
/** Longest wait for the publisher to be idle (real time). */
const SETTLE_MS = 2000;
const ORDERS: readonly WatchOrder[] = ['as-is', 'watch-first', 'response-first'];
const VIEW = { runMode: 'Ascend910', resourceName: 'huawei.com/Ascend910', superPodId: -2, serverIndex: -2 } as const;
const KEYS = ['ManuallySeparateNPU', 'UpgradeFaultReason', 'DeviceInfoCfg'] as const;
type Key = (typeof KEYS)[number];
type Mode = 'running' | 'start-state-file' | 'start-no-state';
const MODES: readonly Mode[] = ['running', 'start-state-file', 'start-no-state'];

// ---------------------------------------------------------------------------------------------------------------
// Inputs

/** Deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Input {
  readonly kind: string;
  readonly key: Key;
  readonly value: string;
}

/** Bytes left for one value in the ConfigMap (the other keys as the agent writes them stay). */
const VALUE_BUDGET = CONFIGMAP_MAX_BYTES - 8 * 1024;

function garbage(r: () => number, max: number): string {
  const n = Math.floor(r() * max);
  let s = '';
  for (let i = 0; i < n; i++) {
    const x = r();
    s +=
      x < 0.6
        ? String.fromCharCode(32 + Math.floor(r() * 95))
        : x < 0.8
          ? ',;-'[Math.floor(r() * 3)]
          : x < 0.95
            ? String.fromCodePoint(0xa0 + Math.floor(r() * 0x2000))
            : String.fromCodePoint(0x1f600 + Math.floor(r() * 64));
  }
  return s;
}

const NEAR = [
  'Ascend910-3;Ascend910-5',
  'ascend910-3,ascend910-5',
  'ASCEND910-3,ASCEND910-5',
  'Ascend910-3,Ascend910-5,',
  ',Ascend910-3,Ascend910-5',
  'Ascend910-3,,Ascend910-5',
  'Ascend910-3 ,Ascend910-5',
  ' Ascend910-3,Ascend910-5',
  'Ascend910-3,Ascend910-5 ',
  'Ascend910-3\nAscend910-5',
  'Ascend910-3|Ascend910-5',
  'Ascend910-3x,Ascend910-5',
  'Ascend910-+3,Ascend910-5',
  'Ascend910--3,Ascend910-5',
  'Ascend910-３,Ascend910-５',
  'Ascend910-99999999999999999999,Ascend910-5',
  'Ascend910-3,Ascend910-99',
  'Ascend910-3,Ascend910-8',
  'Ascend310P-3,Ascend310P-5',
  'Ascend910-3,Ascend910-5,Ascend910',
  'Ascend910 3,Ascend910 5',
  'Ascend910_3,Ascend910_5',
  '"Ascend910-3","Ascend910-5"',
  '["Ascend910-3","Ascend910-5"]',
  'Ascend910-3\u0000,Ascend910-5',
  'Ascend910-3\u200b,Ascend910-5',
  // clean (the rule releases or adopts by them): the oracle decides
  'Ascend910-03,Ascend910-05',
  'Ascend910-5,Ascend910-3',
  'Ascend910-3,Ascend910-3,Ascend910-5',
  'Ascend910-3',
  'Ascend910-3,Ascend910-5,Ascend910-6',
  '',
];

const REASON_TEMPLATES = [
  '{oops',
  '[]',
  '"x"',
  '{"Ascend910-3":"x"}',
  '{"Ascend910-3-1":[]}',
  '{"Ascend9103":[]}',
  '{"Ascend910-3":[{"upgrade_time":"t"}]}',
  '{"Ascend910-3":[{"fault_level":"Nope","upgrade_type":"FaultFrequency"}]}',
  '{"Ascend910-3":[{"upgrade_time":1e400}]}',
  'null',
];

/** Kinds of input generated, in turn. */
const GENERATORS = 12;

function inputs(n: number, r: () => number): Input[] {
  const out: Input[] = [];
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
  const budget = (): number => Math.floor(VALUE_BUDGET * (0.5 + r() / 2));
  const generators: (() => Input)[] = [
    () => ({ kind: 'random garbage', key: pick(KEYS), value: garbage(r, 400) }),
    () => ({ kind: 'near-valid names', key: 'ManuallySeparateNPU', value: pick(NEAR) }),
    () => ({ kind: 'near-valid names', key: 'ManuallySeparateNPU', value: pick(NEAR) }),
    () => ({ kind: '"x," up to 1 MiB', key: 'ManuallySeparateNPU', value: 'x,'.repeat(Math.floor(budget() / 2)) }),
    () => ({ kind: 'one 1 MiB entry', key: pick(KEYS), value: 'y'.repeat(budget()) }),
    () => {
      const count = Math.floor(budget() / 16);
      const v = Array.from({ length: count }, (_, i) => `Ascend910-${(i % 5000) + 100}`).join(',');
      return { kind: 'off-node names up to 1 MiB', key: 'ManuallySeparateNPU', value: v };
    },
    () => {
      const v = Array.from({ length: Math.floor(budget() / 6) }, (_, i) => `z${i.toString(36)}`).join(',');
      return { kind: 'distinct entries up to 1 MiB', key: 'ManuallySeparateNPU', value: v };
    },
    () => ({ kind: 'bad reasons JSON', key: 'UpgradeFaultReason', value: pick(REASON_TEMPLATES) }),
    () => {
      const item = '{"fault_level":"x","upgrade_type":"y"},';
      const v = `{"Ascend910-1":[${item.repeat(Math.floor(budget() / item.length))}{}]}`;
      return { kind: 'reasons JSON up to 1 MiB', key: 'UpgradeFaultReason', value: v };
    },
    () => {
      const member = '"fault_code":"c",';
      const dup = member.repeat(Math.floor(budget() / member.length));
      const v = `{"Ascend910-1":[{${dup}"fault_level":"ManuallySeparateNPU","upgrade_type":"FaultFrequency"}]}`;
      return { kind: 'duplicate members up to 1 MiB', key: 'UpgradeFaultReason', value: v };
    },
    () => ({ kind: 'deep nesting up to 1 MiB', key: pick(KEYS), value: '['.repeat(budget()) }),
    () => ({ kind: 'bad DeviceInfoCfg', key: 'DeviceInfoCfg', value: pick(['[', '{}', '{"DeviceInfo":{}}', 'x']) }),
  ];
  if (generators.length !== GENERATORS) throw new Error('GENERATORS is out of date');
  for (let i = 0; i < n; i++) out.push(generators[i % generators.length]!());
  return out;
}

/** The documented rule (docs/device-info.md), written independently of the code under test. */
function clean(value: string): number[] | undefined {
  if (value === '') return [];
  const phys: number[] = [];
  for (const e of value.split(',')) {
    const m = /^Ascend910-(\d+)$/.exec(e);
    if (m === null || Number(m[1]) >= CHIPS) return undefined;
    phys.push(Number(m[1]));
  }
  return phys;
}

/** Chips of {3, 5} that must still be separated after the input. */
function mustStay(input: Input, mode: Mode): number[] {
  if (input.key !== 'ManuallySeparateNPU') return SEPARATED;
  const listed = clean(input.value);
  if (listed === undefined) return SEPARATED; // not clean: releases nothing
  // clean: a chip of our last write (3 and 5) that the value omits is released — running and at start alike
  void mode;
  return SEPARATED.filter((p) => listed.includes(p));
}

// ---------------------------------------------------------------------------------------------------------------
// The system under test

class FakeClock implements QueueClock {
  #now = T0;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #id = 0;
  now(): number {
    return this.#now;
  }
  /** Wall and monotonic time move together here. */
  monotonic(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): number {
    const id = ++this.#id;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.#timers.delete(h as number);
  }
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.#timers) if (e[1].at <= end && (next === undefined || e[1].at < next[1].at)) next = e;
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].fn();
    }
    this.#now = end;
  }
}

interface Observed {
  maxLogLineBytes: number;
  /** `msg` of the longest log line. */
  maxLogLineMsg: string;
  maxEventMessageBytes: number;
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One store + publisher over the stand-in, as the agent wires them. */
class Node {
  readonly clock = new FakeClock();
  engine: FaultEngine;
  readonly store: NodeStateStore;
  /** What the store's restore reads as the state file. */
  persisted: DurableState | undefined;
  publisher!: DeviceInfoPublisher;
  readonly log: Logger;

  constructor(
    readonly api: KubeApiStandIn,
    readonly core: k8s.CoreV1Api,
    readonly policy: FaultPolicy,
    readonly seen: Observed,
  ) {
    this.engine = this.newEngine();
    // the agent's own logger (its format: level names, ISO time), each line measured as written
    const measure = (text: string): void => {
      const bytes = Buffer.byteLength(text);
      if (bytes > this.seen.maxLogLineBytes) {
        this.seen.maxLogLineBytes = bytes;
        this.seen.maxLogLineMsg = String((JSON.parse(text) as { msg?: unknown }).msg);
      }
    };
    this.log = createLogger({ logLevel: -1, logFile: '', destination: { write: measure } });
    const chips = Array.from({ length: CHIPS }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
    this.store = new NodeStateStore({
      engine: this.engine,
      chips,
      node: { chipKind: 'Ascend910B', boardId: 0x24 },
      clock: this.clock,
      listWatchPeriodMs: 5000,
      loadDurable: () => this.persisted,
      logger: this.log,
    });
    this.store.onChange((_, change) => {
      this.publisher?.noteTransitions(change.transitions);
      this.publisher?.changed();
    });
  }

  newEngine(): FaultEngine {
    return new FaultEngine(this.policy, {
      chips: Array.from({ length: CHIPS }, (_, i) => ({ logicId: i, phyId: i })),
    });
  }

  cycle(events: { logicId: number; code: number; assertion?: 'occur' | 'recover' }[] = []): void {
    const now = this.clock.now();
    if (events.length === 0) this.store.tick();
    else this.store.applyEvents(events.map((e) => ({ assertion: 'occur' as const, severity: 2, timeMs: now, ...e })));
  }

  async startPublisher(confirmedManual: string): Promise<void> {
    const events = {
      record: (e: AgentEvent): void => {
        this.seen.maxEventMessageBytes = Math.max(this.seen.maxEventMessageBytes, Buffer.byteLength(e.message));
      },
    };
    this.publisher = new DeviceInfoPublisher({
      api: this.core,
      watch: this.api.kubeConfig(),
      nodeName: NODE,
      runMode: 'Ascend910',
      view: (now) => deviceInfoViewOf(this.store.snapshot().chips, VIEW, now),
      separation: storeSeparationHost(this.store, 'Ascend910'),
      events,
      confirmedManual,
      clock: this.clock,
      backoff: { initialMs: 500, maxMs: 4000, jitter: 0 },
      random: () => 0.5,
      logger: this.log,
    });
    await this.publisher.start();
    await this.settle();
  }

  /** Lets the HTTP round trips and the queue finish; bounded (a write retrying on the fake clock never would). */
  async settle(): Promise<void> {
    for (let i = 0; i < 4; i++) {
      await tick();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.publisher.whenIdle(), new Promise<void>((r) => (timer = setTimeout(r, SETTLE_MS)))]);
      clearTimeout(timer);
    }
  }

  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await this.settle();
  }

  async live(): Promise<Record<string, string>> {
    return (await this.core.readNamespacedConfigMap({ name: CM, namespace: NS })).data ?? {};
  }
}

interface Outcome {
  crash: boolean;
  wrongRelease: boolean;
  lostSeparation: boolean;
  ms: number;
  note?: string;
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await sleep(2);
  }
  return true;
}

/** One input, from a fresh node with chips 3 and 5 separated and written. */
async function runInput(
  api: KubeApiStandIn,
  core: k8s.CoreV1Api,
  policy: FaultPolicy,
  seen: Observed,
  dir: string,
  input: Input,
  mode: Mode,
): Promise<Outcome> {
  await core.deleteNamespacedConfigMap({ name: CM, namespace: NS }).catch(() => undefined);
  let node = new Node(api, core, policy, seen);
  for (let i = 0; i < 2; i++) {
    node.cycle(SEPARATED.map((logicId) => ({ logicId, code: HBM })));
    node.clock.advance(1000);
  }
  await node.startPublisher('');
  const failuresBefore = (): number => node.publisher.stats.failures + node.publisher.stats.rejected;
  let failed = failuresBefore();
  const started = performance.now();
  let crash = false;
  let note: string | undefined;
  try {
    if (mode === 'running') {
      const edits = node.publisher.stats.foreignEdits;
      await operatorSets(core, input.key, input.value);
      if (!(await until(() => node.publisher.stats.foreignEdits > edits, 5000))) note = 'edit not seen';
      await node.advance(1000);
    } else {
      const persistence = new EngineStatePersistence({ dir, nodeName: NODE, now: () => node.clock.now() });
      const persisted =
        mode === 'start-state-file'
          ? persistence.capture(node.store, node.publisher.confirmedManualSeparation())
          : undefined;
      node.publisher.stop();
      failed = 0;
      await operatorSets(core, input.key, input.value);
      const second = new Node(api, core, policy, seen);
      second.clock.advance(node.clock.now() + 10_000 - second.clock.now());
      const live = await readStartupValues(core, NODE, second.log);
      if (live === undefined) throw new Error('start-up read failed');
      second.persisted = persisted;
      const r = second.store.restore(live); // logs its problems
      node = second;
      await node.startPublisher(r.confirmedManual);
      await node.advance(1000);
    }
    // A new fault must still reach the ConfigMap.
    node.cycle([{ logicId: 6, code: SEP }]);
    await node.advance(1000);
    await node.advance(1000);
  } catch (e) {
    crash = true;
    note = String(e).slice(0, 120);
  }
  const ms = performance.now() - started;
  crash ||= failuresBefore() > failed;
  const stay = mustStay(input, mode);
  const separated = node.engine.manuallySeparated();
  const wrongRelease = stay.some((p) => !separated.includes(p));
  const lostSeparation = await node.live().then(
    (live) => {
      const list = JSON.parse(live.DeviceInfoCfg ?? '{}').DeviceInfo?.DeviceList ?? {};
      const unhealthy = String(list['huawei.com/Ascend910-Unhealthy'] ?? '').split(',');
      return live.ManuallySeparateNPU !== node.engine.manualSeparationValue() || !unhealthy.includes('Ascend910-6');
    },
    () => true,
  );
  node.publisher.stop();
  return { crash, wrongRelease, lostSeparation, ms, ...(note !== undefined ? { note } : {}) };
}

async function operatorSets(core: k8s.CoreV1Api, key: string, value: string): Promise<void> {
  await core.patchNamespacedConfigMap(
    { name: CM, namespace: NS, body: { data: { [key]: value } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

// ---------------------------------------------------------------------------------------------------------------

interface Row {
  inputs: number;
  crashes: number;
  wrongReleases: number;
  lostSeparations: number;
  worstMs: number;
}

async function main(): Promise<void> {
  const read = (f: string): string => fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8');
  const policy = parsePolicy(read('faultCode.json'), read('faultCustomization.json')).policy!;
  const api = await KubeApiStandIn.start();
  const core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-cm-'));
  const seen: Observed = { maxLogLineBytes: 0, maxLogLineMsg: '', maxEventMessageBytes: 0 };
  let uncaught = 0;
  const onUncaught = (e: unknown): void => {
    uncaught++;
    console.error('uncaught:', String(e).slice(0, 200));
  };
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  const rows = new Map<string, Row>();
  const total: Row = { inputs: 0, crashes: 0, wrongReleases: 0, lostSeparations: 0, worstMs: 0 };
  const notes: string[] = [];
  const t0 = performance.now();
  try {
    const list = inputs(INPUTS, rng(SEED));
    for (let i = 0; i < list.length; i++) {
      const input = list[i]!;
      // every kind of input meets every (watch order, mode) pair: one pair per round of the generators
      const pair = Math.floor(i / GENERATORS) % (ORDERS.length * MODES.length);
      const order = ORDERS[pair % ORDERS.length]!;
      const mode = MODES[Math.floor(pair / ORDERS.length)]!;
      api.setWatchOrder(order, 10);
      const before = uncaught;
      const o = await runInput(api, core, policy, seen, dir, input, mode);
      o.crash ||= uncaught > before;
      for (const k of [`${input.kind} (${input.key})`, `  ${mode}`, `  ${order}`]) {
        const row = rows.get(k) ?? { inputs: 0, crashes: 0, wrongReleases: 0, lostSeparations: 0, worstMs: 0 };
        rows.set(k, row);
        for (const r of k === `${input.kind} (${input.key})` ? [row, total] : [row]) {
          r.inputs++;
          r.crashes += o.crash ? 1 : 0;
          r.wrongReleases += o.wrongRelease ? 1 : 0;
          r.lostSeparations += o.lostSeparation ? 1 : 0;
          r.worstMs = Math.max(r.worstMs, o.ms);
        }
      }
      if ((o.crash || o.wrongRelease || o.lostSeparation || o.note) && notes.length < 20) {
        notes.push(`#${i} ${input.kind} ${input.key} ${mode} ${order}: ${JSON.stringify(o)}`);
      }
    }
  } finally {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
    await api.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const name = (k: string): string => k.padEnd(50);
  console.log(`${name('input')} inputs crashes wrongRel lostSep worstMs`);
  const sorted = [...rows.entries()].sort(([a], [b]) =>
    a.startsWith('  ') === b.startsWith('  ') ? 0 : a.startsWith('  ') ? 1 : -1,
  );
  for (const [k, r] of sorted) {
    console.log(
      `${name(k)} ${String(r.inputs).padStart(6)} ${String(r.crashes).padStart(7)} ${String(r.wrongReleases).padStart(8)} ` +
        `${String(r.lostSeparations).padStart(7)} ${r.worstMs.toFixed(0).padStart(7)}`,
    );
  }
  for (const n of notes) console.log(n);
  console.log(
    `max log line ${seen.maxLogLineBytes} B ("${seen.maxLogLineMsg}"), max Event message ${seen.maxEventMessageBytes} B, ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s in all`,
  );
  console.log(
    JSON.stringify({
      campaign: 'configmap',
      inputs: total.inputs,
      crashes: total.crashes,
      wrongReleases: total.wrongReleases,
      lostSeparations: total.lostSeparations,
      maxLogLineBytes: seen.maxLogLineBytes,
      maxEventMessageBytes: seen.maxEventMessageBytes,
      worstMs: Math.round(total.worstMs),
    }),
  );
}

await main();
