/**
 * Test harness of the kube layer: a fake clock, a state store over an engine of 8 chips with the shipped policy, the
 * device-info publisher wired to the Kubernetes API stand-in and to the store as the agent's wiring does it.
 */
import * as k8s from '@kubernetes/client-node';
import { FaultEngine, type FaultEvent, type Transition } from '../../src/faults/index.js';
import { DeviceInfoPublisher, storeSeparationHost } from '../../src/kube/device-info-publisher.js';
import { deviceInfoViewOf } from '../../src/kube/device-info-view.js';
import type { DurableState } from '../../src/state/restore.js';
import { NodeStateStore } from '../../src/state/store.js';
import type { AgentEvent, EventSink } from '../../src/kube/event-recorder.js';
import type { QueueClock } from '../../src/kube/write-queue.js';
import type { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { shippedPolicy, T0 } from '../faults/helpers.js';

export { T0 };
export const HBM = 0x80e01801; // shipped: frequency 2 in 24 h → ManuallySeparateNPU
export const SEP = 0x80e18402; // SeparateNPU
export const NODE = 'node-a';
export const CM = 'mindx-dl-deviceinfo-node-a';

/**
 * A manual clock whose timers fire on {@link FakeClock.advance}. Wall and monotonic time move together until a test
 * steps or freezes the wall clock ({@link stepWall}, {@link freezeWall}: issue [T] item 1); timers are due on
 * monotonic time.
 */
export class FakeClock implements QueueClock {
  #now: number;
  #wallOffset = 0;
  #frozenWall: number | undefined;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #id = 0;

  constructor(start = T0) {
    this.#now = start;
  }

  now(): number {
    return this.#frozenWall ?? this.#now + this.#wallOffset;
  }
  monotonic(): number {
    return this.#now;
  }

  /** Steps the wall clock alone by `ms` (negative: back), as an NTP correction or a resumed VM does. */
  stepWall(ms: number): void {
    if (this.#frozenWall !== undefined) this.#frozenWall += ms;
    else this.#wallOffset += ms;
  }

  /** Stops the wall clock where it is (true) or lets it run on from there (false); monotonic time goes on. */
  freezeWall(frozen = true): void {
    if (frozen) {
      this.#frozenWall ??= this.now();
    } else if (this.#frozenWall !== undefined) {
      this.#wallOffset = this.#frozenWall - this.#now;
      this.#frozenWall = undefined;
    }
  }

  setTimeout(fn: () => void, ms: number): number {
    const id = ++this.#id;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(h: unknown): void {
    this.#timers.delete(h as number);
  }

  /** Moves time forward, firing due timers in time order. */
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

/** Collects Events. */
export class EventList implements EventSink {
  readonly events: AgentEvent[] = [];
  record(e: AgentEvent): void {
    this.events.push(e);
  }
  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}

export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Polls (real time) until `cond` holds; throws after `deadlineMs`. */
export async function until(cond: () => boolean, deadlineMs = 15_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!cond()) {
    // a failing test ends here instead of polling on after jest's timeout (and holding up the whole file)
    if (Date.now() > end)
      throw new Error(`condition not met within ${deadlineMs} ms: ${cond.toString().slice(0, 200)}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The store's view options of the harness's node. */
export const VIEW = {
  runMode: 'Ascend910',
  resourceName: 'huawei.com/Ascend910',
  superPodId: -2,
  serverIndex: -2,
} as const;

/** The engine (read by the tests' assertions only), the store over it and the publisher as the agent wires them. */
export class KubeHarness {
  readonly clock = new FakeClock();
  readonly engine: FaultEngine;
  readonly store: NodeStateStore;
  readonly events = new EventList();
  readonly transitions: Transition[] = [];
  readonly core: k8s.CoreV1Api;
  /** What the store's restore reads as the state file (`restore` with a state file). */
  persisted: DurableState | undefined;
  publisher!: DeviceInfoPublisher;

  constructor(
    readonly api: KubeApiStandIn,
    opts: { chips?: number; engine?: FaultEngine } = {},
  ) {
    this.core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    const chips = Array.from({ length: opts.chips ?? 8 }, (_, i) => ({ logicId: i, phyId: i }));
    this.engine = opts.engine ?? new FaultEngine(shippedPolicy(), { chips });
    this.store = new NodeStateStore({
      engine: this.engine,
      chips: this.engine
        .snapshot()
        .map((v) => ({ logicId: v.logicId, phyId: v.phyId, cardId: v.logicId, deviceId: 0 })),
      node: { chipKind: 'Ascend910B', boardId: 0x24 },
      clock: this.clock,
      listWatchPeriodMs: 5000,
      loadDurable: () => this.persisted,
    });
    // as the agent's kube wiring: every snapshot's transitions and the change go to the publisher
    this.store.onChange((_, change) => {
      this.transitions.push(...change.transitions);
      this.publisher?.noteTransitions(change.transitions);
      this.publisher?.changed();
    });
  }

  /** Builds the publisher (not started). */
  makePublisher(o: { confirmedManual?: string; watch?: boolean; api?: k8s.CoreV1Api } = {}): DeviceInfoPublisher {
    const host = storeSeparationHost(this.store, 'Ascend910');
    this.publisher = new DeviceInfoPublisher({
      api: o.api ?? this.core,
      ...(o.watch === false ? {} : { watch: this.api.kubeConfig() }),
      nodeName: NODE,
      runMode: 'Ascend910',
      view: (now) => deviceInfoViewOf(this.store.snapshot().chips, VIEW, now),
      separation: host,
      events: this.events,
      confirmedManual: o.confirmedManual ?? '',
      clock: this.clock,
      backoff: { initialMs: 500, maxMs: 4000, jitter: 0 },
      random: () => 0.5,
    });
    return this.publisher;
  }

  /** One store cycle at the clock's time (the events, or an idle cycle); returns the transitions it published. */
  cycle(events: Partial<FaultEvent>[] = []): Transition[] {
    const now = this.clock.now();
    const seen = this.transitions.length;
    if (events.length === 0) this.store.tick();
    else
      this.store.applyEvents(
        events.map((e) => ({ logicId: 0, code: 0, assertion: 'occur' as const, severity: 2, timeMs: now, ...e })),
      );
    return this.transitions.slice(seen);
  }

  /** Lets microtasks, HTTP round trips and the queue finish. */
  async settle(): Promise<void> {
    for (let i = 0; i < 4; i++) {
      await tick();
      await this.publisher.whenIdle();
    }
  }

  /** Advances the fake clock and settles. */
  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await this.settle();
  }

  /** Advances the fake clock and lets pending I/O run, without waiting for the queue (it may be backing off). */
  async step(ms: number): Promise<void> {
    this.clock.advance(ms);
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 2));
  }

  async live(): Promise<Record<string, string>> {
    const cm = await this.core.readNamespacedConfigMap({ name: CM, namespace: 'kube-system' });
    return cm.data ?? {};
  }

  /** An operator edit of one key (a merge patch, like `kubectl patch`/`edit`). */
  async operatorSets(key: string, value: string): Promise<void> {
    await this.core.patchNamespacedConfigMap(
      { name: CM, namespace: 'kube-system', body: { data: { [key]: value } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }

  separated(): number[] {
    return this.engine.manuallySeparated();
  }

  /** The durable state as the state file would hold it now (see `EngineStatePersistence.capture`). */
  durable(): DurableState {
    return { confirmedManual: this.store.confirmedManual() ?? null, engine: this.store.exportDurableState() };
  }
}
