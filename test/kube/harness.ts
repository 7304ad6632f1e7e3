/**
 * Test harness of the kube layer: a fake clock, an engine over 8 chips with the shipped policy, the device-info
 * publisher wired to the Kubernetes API stand-in as the composition root would wire it.
 */
import * as k8s from '@kubernetes/client-node';
import { FaultEngine, type FaultEvent, type Transition } from '../../src/faults/index.js';
import { DeviceInfoPublisher, engineSeparationHost } from '../../src/kube/device-info-publisher.js';
import { deviceInfoViewOf } from '../../src/kube/engine-view.js';
import type { AgentEvent, EventSink } from '../../src/kube/event-recorder.js';
import type { QueueClock } from '../../src/kube/write-queue.js';
import type { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { shippedPolicy, T0 } from '../faults/helpers.js';

export { T0 };
export const HBM = 0x80e01801; // shipped: frequency 2 in 24 h → ManuallySeparateNPU
export const SEP = 0x80e18402; // SeparateNPU
export const NODE = 'node-a';
export const CM = 'mindx-dl-deviceinfo-node-a';

/** A manual clock whose timers fire on {@link FakeClock.advance}. */
export class FakeClock implements QueueClock {
  #now: number;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #id = 0;

  constructor(start = T0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
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

/** The engine + publisher as [E] wires them. */
export class KubeHarness {
  readonly clock = new FakeClock();
  readonly engine: FaultEngine;
  readonly events = new EventList();
  readonly transitions: Transition[] = [];
  readonly core: k8s.CoreV1Api;
  publisher!: DeviceInfoPublisher;

  constructor(
    readonly api: KubeApiStandIn,
    opts: { chips?: number; engine?: FaultEngine } = {},
  ) {
    this.core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    this.engine =
      opts.engine ??
      new FaultEngine(shippedPolicy(), {
        chips: Array.from({ length: opts.chips ?? 8 }, (_, i) => ({ logicId: i, phyId: i })),
      });
  }

  /** Builds the publisher (not started). */
  makePublisher(o: { confirmedManual?: string; watch?: boolean; api?: k8s.CoreV1Api } = {}): DeviceInfoPublisher {
    const host = engineSeparationHost(this.engine, 'Ascend910', () => this.cycle());
    this.publisher = new DeviceInfoPublisher({
      api: o.api ?? this.core,
      ...(o.watch === false ? {} : { watch: this.api.kubeConfig() }),
      nodeName: NODE,
      runMode: 'Ascend910',
      view: (now) =>
        deviceInfoViewOf(
          this.engine.snapshot(),
          this.engine,
          { runMode: 'Ascend910', resourceName: 'huawei.com/Ascend910', superPodId: -2, serverIndex: -2 },
          now,
        ),
      separation: host,
      events: this.events,
      confirmedManual: o.confirmedManual ?? '',
      clock: this.clock,
      backoff: { initialMs: 500, maxMs: 4000, jitter: 0 },
      random: () => 0.5,
    });
    return this.publisher;
  }

  /** One engine cycle at the clock's time, published like [E] would. */
  cycle(events: Partial<FaultEvent>[] = []): Transition[] {
    const now = this.clock.now();
    const r = this.engine.cycle({
      now,
      events: events.map((e) => ({ logicId: 0, code: 0, assertion: 'occur' as const, severity: 2, timeMs: now, ...e })),
    });
    this.transitions.push(...r.transitions);
    this.publisher?.noteTransitions(r.transitions);
    this.publisher?.changed();
    return r.transitions;
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
}
