/**
 * The online, task-aware reset engine of `-hotReset=1` (hot-reset.md §3): per cycle it refreshes its view of the
 * node's tasks and chips (§3.1, `UpdateFreeTask`), selects the tasks whose policy is `restart_request`, `restart` or
 * `reset` (§3.2), writes the first `unrecovered` state (§3.3) and runs the L2 / L3 / L5 flow of §3.5 – §3.7 in the
 * background on the injected clock, with the shared procedures of §3.4 (`online-procedures.ts`). It also computes
 * the §3.10 health filter and writes the cross-node isolation of §3.8.
 *
 * Every episode is an explicit state machine ({@link TaskState}), persisted on every change through the optional
 * {@link EpisodeStore} so that an agent restart resumes it (§ "agent restart" below). Decisions against upstream
 * defects (hot-reset.md §7): D1 (reset the faulty chips), D2 (`recovered` only without any chip at level ≥ 2), D3
 * (levels re-read by logic id), D4 (the ring is held in the {@link ResetCoordinator} for the whole episode, owner
 * `task:<name>`), D5 (handshake and final writes tried 3 times, an episode always ends and always releases its ring),
 * D6 (one `isolate` write per failure).
 *
 * Agent restart: records found in the store are taken back (ring re-acquired at construction); at the first cycle an
 * episode whose task is gone ends `failed`; one whose chips are fault-free (levels < 2) writes `recovered` once its
 * rings report boot status 16 (waited for as in §3.4.5 when still booting); any other runs the reset stage again (process wait, one reset, verify) and ends `recovered` or
 * `failed/isolate`. An episode that was writing its failure writes it (unless the ConfigMap already isolates); one
 * saved before its first write finished starts over (first write, then its flow).
 */
import { errorMessage } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { sleep, type TimerHandle } from '../core/clock.js';
import {
  MAX_RESET_COUNT,
  execResetDevice,
  isRingResetComplete,
  processWaitChips,
  waitProcessesToZero,
  BOOT_FINISHED,
  type ProcedureContext,
  type ResetLimits,
} from './online-procedures.js';
import {
  EPISODE_STATES,
  parseEpisodeRecord,
  type ChipState,
  type EpisodeRecord,
  type FlowPolicy,
  type HealthOverrides,
  type OnlineChipStatus,
  type OnlineResetEngineOptions,
  type OnlineStatus,
  type OnlineTaskStatus,
  type TaskState,
} from './online-types.js';
import { POLICY_LEVEL, needsReset, policyOfLevel, taskPolicy } from './policy.js';
import {
  ResetConfigMapError,
  hasIsolateDecision,
  isTaskInResetByOthers,
  parseResetJson,
  ranksOf,
  resetConfigMapName,
  selectRanks,
  type RankSource,
  type RankStatus,
  type ResetRank,
} from './reset-configmap.js';
import { a3Group, arithmeticRing } from './rings.js';
import type { ResetTask } from './tasks.js';
import type { ChipResetView, ConfigMapObject, OnlineTimings, ResetEvent, ResetPod } from './types.js';

export type { OnlineResetEngineOptions } from './online-types.js';

/** D5: tries of the main-cycle handshake and of each ConfigMap write of an episode. */
export const ONLINE_TRIES = 3;
/** D4: coordinator owner of a task's episode. */
export const onlineOwner = (task: string): string => `task:${task}`;

/** The episode's task left the node (or its chips changed): the flow ends at its next step. */
class EpisodeAbandoned extends Error {
  override readonly name = 'EpisodeAbandoned';
}

/** The engine was stopped (agent shutdown): flows end without writing, persisted episodes stay for the restart. */
class EngineStopped extends Error {
  override readonly name = 'EngineStopped';
}

/** A flow step failed; the message is the reason written in the Event. */
class FlowFailure extends Error {
  override readonly name = 'FlowFailure';
}

interface Episode {
  readonly task: string;
  readonly namespace: string;
  pod: ResetPod | undefined;
  podUid: string;
  distributed: boolean;
  readonly taskChips: readonly number[];
  readonly initialPolicy: FlowPolicy;
  policy: FlowPolicy;
  state: TaskState;
  since: number;
  readonly startedAt: number;
  readonly snapshot: readonly RankSource[];
  /** The list as of the last re-read (§3.4.1). */
  list: RankSource[];
  readonly rankChips: readonly number[];
  readonly ringChips: readonly number[];
  outcome: 'recovered' | 'failed' | undefined;
  abandoned: string | undefined;
  isolateWritten: boolean;
  held: boolean;
  readonly resumed: boolean;
  readonly marks: Map<number, ChipState>;
  /** Ends the current pause early (abandonment). */
  wake: (() => void) | undefined;
}

interface Ended {
  readonly outcome: 'recovered' | 'failed';
  readonly at: number;
  readonly namespace: string;
  readonly taskChips: readonly number[];
  readonly rankChips: readonly number[];
}

type Outcome = 'recovered' | 'failed' | 'not-started';

const sameIds = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);
const policyLevelOf = (policy: string): number => POLICY_LEVEL[policy as keyof typeof POLICY_LEVEL] ?? 6;

/** The online reset engine; see the file comment. One per agent, only when `-hotReset=1` and the ring size is > 0. */
export class OnlineResetEngine {
  readonly #o: OnlineResetEngineOptions;
  readonly #log: Logger;
  #tasks: ReadonlyMap<string, ResetTask> = new Map();
  #chips = new Map<number, ChipResetView>();
  readonly #episodes = new Map<string, Episode>();
  readonly #ended = new Map<string, Ended>();
  /** §3.8 cross-node isolation writes in flight. */
  readonly #crossNode = new Set<string>();
  /** Last problem reported per task (log + Event once per distinct problem). */
  readonly #problems = new Map<string, string>();
  /** `reset.json` texts this node wrote, per task (the last few): the cache may still show them. */
  readonly #ownTexts = new Map<string, string[]>();
  /** §4.3 reset counter, on the faulty chip (D1). */
  readonly #resetCount = new Map<number, number>();
  readonly #listeners = new Set<() => void>();
  #overridesKey = '';
  #resumePending = true;
  #stopped = false;

  /** Validates the options, loads persisted episodes and takes their rings back in the coordinator. */
  constructor(options: OnlineResetEngineOptions) {
    checkOptions(options);
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#loadEpisodes();
  }

  /**
   * One engine cycle (§3.1), after every state snapshot and every listWatchPeriod tick: `tasks` from task discovery
   * (§1.3), `chips` the engine's own view (before the reset filter). Starts flows in the background; returns at once.
   */
  cycle(tasks: ReadonlyMap<string, ResetTask>, chips: readonly ChipResetView[]): void {
    if (this.#stopped) return;
    this.#tasks = tasks;
    this.#chips = new Map(chips.map((c) => [c.logicId, c]));
    this.#clearCounters();
    this.#updateFreeTasks();
    if (this.#resumePending) {
      this.#resumePending = false;
      for (const ep of this.#episodes.values()) void this.#run(ep);
    }
    for (const task of tasks.values()) {
      if (!this.#episodes.has(task.name) && !this.#crossNode.has(task.name)) this.#consider(task);
    }
    this.#notifyIfOverridesChanged();
  }

  /**
   * §3.10 `filterDevStatus`: chips of a running episode (after its first write) that are not Healthy are reported
   * Healthy, and the arithmetic ring (910A3: 4-chip group) of each of them NetworkHealthy, unless the task's
   * ConfigMap in the informer cache decides isolation (absent, unreadable, empty RankList or an `isolate` rank) or
   * the episode is failing or abandoned.
   */
  healthOverrides(): HealthOverrides {
    const healthy = new Set<number>();
    const networkHealthy = new Set<number>();
    // Agent restart: until the first cycle (which waits for the pod and ConfigMap lists) the engine has no chip view
    // and the ConfigMap cache may be empty; a resumed episode past its first write is trusted as saved, so the task's
    // chips are not reported Unhealthy for the time the lists take (the task was told to stop, not to leave).
    const beforeFirstCycle = this.#resumePending;
    const chips = beforeFirstCycle ? new Map(this.#o.hooks.chips().map((c) => [c.logicId, c])) : this.#chips;
    for (const ep of this.#episodes.values()) {
      if (ep.abandoned !== undefined || ep.state === 'starting' || ep.outcome === 'failed') continue;
      const trusted = beforeFirstCycle && ep.resumed;
      if (!trusted && hasIsolateDecision(this.#o.configMaps.get(ep.namespace, resetConfigMapName(ep.task)))) continue;
      for (const id of ep.rankChips) {
        const view = chips.get(id);
        if (view === undefined || view.healthy) continue;
        healthy.add(id);
        for (const n of this.#networkGroup(id)) networkHealthy.add(n);
      }
    }
    return { healthy, networkHealthy };
  }

  /**
   * Agent shutdown: running flows stop at their next step without writing or releasing anything visible, and the
   * persisted episodes are left as they are, for the next start to resume. Later cycles do nothing.
   */
  stop(): void {
    this.#stopped = true;
    for (const ep of this.#episodes.values()) ep.wake?.();
  }

  /** Calls `listener` after every state change and whenever the health overrides change; returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** JSON-friendly state of every known task and chip. */
  status(): OnlineStatus {
    const tasks: OnlineTaskStatus[] = [];
    const seen = new Set<string>();
    for (const ep of this.#episodes.values()) {
      seen.add(ep.task);
      tasks.push({
        task: ep.task,
        namespace: ep.namespace,
        state: ep.state,
        since: ep.since,
        policy: ep.policy,
        initialPolicy: ep.initialPolicy,
        rankChips: [...ep.rankChips],
        ...(ep.abandoned !== undefined && { abandoned: ep.abandoned }),
      });
    }
    for (const name of this.#crossNode) {
      seen.add(name);
      const t = this.#tasks.get(name);
      const now = this.#o.clock.now();
      tasks.push({
        task: name,
        namespace: t?.namespace ?? '',
        state: 'writingResult',
        since: now,
        crossNodeIsolation: true,
      });
    }
    for (const [name, e] of this.#ended) {
      if (seen.has(name)) continue;
      seen.add(name);
      tasks.push({ task: name, namespace: e.namespace, state: e.outcome, since: e.at, rankChips: [...e.rankChips] });
    }
    for (const t of this.#tasks.values()) {
      if (!seen.has(t.name)) tasks.push({ task: t.name, namespace: t.namespace, state: 'idle', since: 0 });
    }
    tasks.sort((a, b) => (a.task < b.task ? -1 : a.task > b.task ? 1 : 0));
    const chips: OnlineChipStatus[] = [...this.#chips.keys()]
      .sort((a, b) => a - b)
      .map((logicId) => {
        const count = this.#resetCount.get(logicId);
        return { logicId, ...this.#chipState(logicId), ...(count !== undefined && { resetCount: count }) };
      });
    const o = this.healthOverrides();
    const asc = (s: ReadonlySet<number>): number[] => [...s].sort((a, b) => a - b);
    return { tasks, chips, healthOverrides: { healthy: asc(o.healthy), networkHealthy: asc(o.networkHealthy) } };
  }

  // -------------------------------------------------------------------------------------------------------------
  // §3.1 caches

  /** §4.3: a chip's counter returns to 0 in any cycle in which it is Healthy (and no episode holds it). */
  #clearCounters(): void {
    if (this.#resetCount.size === 0) return;
    for (const id of [...this.#resetCount.keys()]) {
      const view = this.#chips.get(id);
      if (view?.healthy === true && this.#o.coordinator.owner(id) === undefined) this.#resetCount.delete(id);
    }
  }

  /** §1.6 `UpdateFreeTask`: an episode whose task left the node or whose chips changed is abandoned. */
  #updateFreeTasks(): void {
    for (const ep of this.#episodes.values()) {
      if (ep.abandoned !== undefined) continue;
      const t = this.#tasks.get(ep.task);
      if (t === undefined) this.#abandon(ep, `no pod of task ${ep.task} is on this node any more`);
      else if (!sameIds(t.logicIds, ep.taskChips)) {
        this.#abandon(
          ep,
          `the chips of task ${ep.task} changed from [${ep.taskChips.join(',')}] to [${t.logicIds.join(',')}]`,
        );
      } else {
        ep.pod = t.pod;
        ep.podUid = t.pod.uid;
        ep.distributed = t.distributed;
      }
    }
    for (const [name, e] of this.#ended) {
      const t = this.#tasks.get(name);
      if (t === undefined || !sameIds(t.logicIds, e.taskChips)) this.#ended.delete(name);
    }
    for (const map of [this.#problems, this.#ownTexts]) {
      for (const name of [...map.keys()]) if (!this.#tasks.has(name) && !this.#episodes.has(name)) map.delete(name);
    }
  }

  #abandon(ep: Episode, why: string): void {
    ep.abandoned = why;
    this.#log.warn({ task: ep.task, state: ep.state }, `reset episode abandoned: ${why}`);
    ep.wake?.();
    this.#changed();
  }

  // -------------------------------------------------------------------------------------------------------------
  // §3.2 task selection

  #consider(task: ResetTask): void {
    const list = this.#listOf(task);
    if (typeof list === 'string') return this.#problem(task, list);
    let tp: ReturnType<typeof taskPolicy>;
    try {
      tp = taskPolicy(list);
    } catch (e) {
      return this.#problem(task, errorMessage(e)); // HR-18: skipped this cycle
    }
    if (tp.level !== 2 && tp.level !== 3 && tp.level !== 5) return; // §3.2 policyLevelHandle (level 6: HR-17)
    const policy = tp.policy as FlowPolicy;
    const cmName = resetConfigMapName(task.name);
    const cm = this.#o.configMaps.get(task.namespace, cmName);
    const ended = this.#ended.get(task.name);
    if (ended?.outcome === 'failed' && !clearedSince(cm, ended.at)) return; // D5: isolated until cleared (§2.6)
    let inReset: boolean;
    let ranks: readonly ResetRank[];
    try {
      inReset = isTaskInResetByOthers(cm);
      ranks = ranksOf(cm!);
    } catch (e) {
      const what = e instanceof ResetConfigMapError ? e.message : `${task.namespace}/${cmName}: ${errorMessage(e)}`;
      return this.#problem(task, `reset ConfigMap unusable, task not handled online: ${what}`);
    }
    // D5 / D8: a ConfigMap that holds an isolation decision is not written again until it is cleared (§2.6)
    if (ranks.some((r) => r.Policy === 'isolate')) return;
    if (inReset) {
      // our own `unrecovered` write still in the cache (it was replaced since): wait for the informer
      if (this.#ownTexts.get(task.name)?.includes(cm!.data['reset.json'] ?? '')) return;
      return this.#crossNodeIsolate(task, list, policy); // §3.8
    }
    let chips: { rankChips: number[]; ringChips: number[] };
    try {
      chips = this.#episodeChips(task, list, policy);
    } catch (e) {
      return this.#problem(task, `no reset ring: ${errorMessage(e)}`);
    }
    if (!this.#o.coordinator.tryAcquire(chips.ringChips, onlineOwner(task.name))) {
      this.#log.debug({ task: task.name, chips: chips.ringChips }, 'ring held by another reset; retried next cycle');
      return;
    }
    this.#problems.delete(task.name);
    this.#ended.delete(task.name);
    const now = this.#o.clock.now();
    const ep: Episode = {
      task: task.name,
      namespace: task.namespace,
      pod: task.pod,
      podUid: task.pod.uid,
      distributed: task.distributed,
      taskChips: [...task.logicIds],
      initialPolicy: policy,
      policy,
      state: 'starting',
      since: now,
      startedAt: now,
      snapshot: list,
      list,
      rankChips: chips.rankChips,
      ringChips: chips.ringChips,
      outcome: undefined,
      abandoned: undefined,
      isolateWritten: false,
      held: true,
      resumed: false,
      marks: new Map(),
      wake: undefined,
    };
    this.#episodes.set(task.name, ep);
    this.#changed();
    void this.#run(ep);
  }

  /** The task's ranks with each chip's policy and codes from this cycle's snapshot; a string names a problem. */
  #listOf(task: ResetTask): RankSource[] | string {
    const list: RankSource[] = [];
    for (const r of task.ranks) {
      const view = this.#chips.get(r.logicId);
      if (view === undefined) return `chip ${r.logicId} of task ${task.name} is not in the chip snapshot`;
      list.push({ logicId: r.logicId, rankId: r.rankId, policy: policyOfLevel(view.level), codes: [...view.codes] });
    }
    return list;
  }

  /**
   * RankList chips (§2.4: the faulty rings) and the chips held for the episode (D4): the RankList, the arithmetic
   * ring of every faulty chip (boot polls, §3.4.5) and, on 910A3, the 4-chip group of every task chip (process wait).
   */
  #episodeChips(task: ResetTask, list: RankSource[], policy: FlowPolicy): { rankChips: number[]; ringChips: number[] } {
    const { facts, ringSize } = this.#o;
    const rankChips = selectRanks(list, ringSize, policy, policy, 'unrecovered').map((r) => r.LogicId);
    const ring = new Set(rankChips);
    for (const r of list)
      if (needsReset(r.policy)) for (const id of arithmeticRing(r.logicId, ringSize, facts)) ring.add(id);
    if (facts.kind === 'Ascend910A3') {
      for (const id of task.logicIds) {
        try {
          for (const g of a3Group(facts, id)) ring.add(g);
        } catch {
          // §3.4.2: the association is unknown, the arithmetic ring (the whole node) covers it
        }
      }
    }
    return { rankChips, ringChips: [...ring].sort((a, b) => a - b) };
  }

  /** Log and Warning Event, once per distinct problem of a task. */
  #problem(task: ResetTask, text: string): void {
    if (this.#problems.get(task.name) === text) return;
    this.#problems.set(task.name, text);
    this.#log.warn({ task: task.name, namespace: task.namespace }, text);
    this.#event(task.pod, { type: 'Warning', reason: 'ResetTaskSkipped', message: `task ${task.name}: ${text}` });
  }

  /**
   * §3.4.7 `tryWriteIsolationInfo` (§3.8): another node resets the task (all ranks `unrecovered`) while this node has
   * a faulty chip in it: write this node's ranks `failed/isolate/<task policy>`, then WaitProcessReadCMTime. The task
   * then counts as failed here (not started until the ConfigMap is cleared).
   */
  #crossNodeIsolate(task: ResetTask, list: RankSource[], policy: FlowPolicy): void {
    this.#crossNode.add(task.name);
    this.#changed();
    void (async () => {
      try {
        const ranks = selectRanks(list, this.#o.ringSize, 'isolate', policy, 'failed');
        await this.#write(task.name, task.namespace, ranks, false);
        this.#event(task.pod, {
          type: 'Warning',
          reason: 'ResetIsolated',
          message: `task ${task.name} is being reset by another node while chips of this node are faulty: ranks ${ranks.map((r) => r.RankId).join(',')} written failed/isolate (§3.8)`,
        });
        await sleep(this.#o.clock, this.#o.timings.waitProcessReadCm);
      } catch (e) {
        this.#log.warn({ task: task.name }, `cross-node isolation write failed: ${errorMessage(e)}`);
        this.#event(task.pod, {
          type: 'Warning',
          reason: 'ResetFailed',
          message: `task ${task.name}: cross-node isolation write failed: ${errorMessage(e)}`,
        });
      } finally {
        this.#crossNode.delete(task.name);
        const t = this.#tasks.get(task.name);
        if (t !== undefined) {
          this.#ended.set(task.name, {
            outcome: 'failed',
            at: this.#o.clock.now(),
            namespace: task.namespace,
            taskChips: [...t.logicIds],
            rankChips: [],
          });
        }
        this.#changed();
      }
    })();
  }

  // -------------------------------------------------------------------------------------------------------------
  // Episodes

  async #run(ep: Episode): Promise<void> {
    let outcome: Outcome = 'failed';
    try {
      if (ep.resumed) this.#reacquire(ep);
      if (ep.resumed && ep.state === 'starting' && this.#firstWriteSeen(ep)) {
        // the agent died after its first write reached the API but before it learned so: writing it again would
        // add a second restart round (RetryTime + 1) the training side never had
        this.#log.info({ task: ep.task }, 'resumed reset episode: its first write is already in the ConfigMap');
        this.#enter(ep, flowStart(ep.initialPolicy));
      }
      if (ep.resumed && ep.state !== 'starting') outcome = await this.#resume(ep);
      else if (!(await this.#preProcess(ep))) outcome = 'not-started';
      else if (ep.initialPolicy === 'restart_request') outcome = await this.#l2(ep);
      else if (ep.initialPolicy === 'restart') outcome = await this.#l3(ep);
      else outcome = await this.#l5(ep);
    } catch (e) {
      if (this.#stopped) return;
      outcome = 'failed';
      await this.#fail(ep, e);
    } finally {
      if (!this.#stopped) this.#finish(ep, outcome);
    }
  }

  /** §3.3 preProcess: the first write (`unrecovered`, RetryTime + 1, restartType hotReset) and fault-config. */
  async #preProcess(ep: Episode): Promise<boolean> {
    const ranks = selectRanks(ep.list, this.#o.ringSize, ep.policy, ep.policy, 'unrecovered');
    try {
      await this.#write(ep.task, ep.namespace, ranks, true, 1);
    } catch (e) {
      const task = this.#tasks.get(ep.task);
      if (task !== undefined) this.#problem(task, `first reset ConfigMap write failed: ${errorMessage(e)}`);
      return false;
    }
    // saved at once past `starting`: a restart from here must not write the first state (RetryTime + 1) again
    this.#enter(ep, flowStart(ep.initialPolicy));
    this.#log.info(
      { task: ep.task, policy: ep.policy, chips: ep.rankChips },
      `reset episode started (${ep.policy}, ranks ${ranks.map((r) => r.RankId).join(',')})`,
    );
    this.#event(ep.pod, {
      type: 'Normal',
      reason: 'ResetStarted',
      message: `task ${ep.task}: ${ep.policy} recovery of chips ${ep.rankChips.join(',')} started`,
    });
    try {
      await this.#o.writer.writeFaultConfig(
        ep.task,
        ep.namespace,
        ranks.map((r) => r.RankId),
      ); // §2.5: NotFound is silently skipped by the writer
    } catch (e) {
      this.#log.warn({ task: ep.task }, `fault-config write failed: ${errorMessage(e)}`);
    }
    this.#checkpoint(ep);
    return true;
  }

  /** §3.5 L2 flow. */
  async #l2(ep: Episode): Promise<Outcome> {
    this.#enter(ep, 'selfHealing');
    const deadline = this.#o.clock.monotonic() + this.#o.timings.waitErrorCodeClean;
    while (this.#o.clock.monotonic() < deadline) {
      await this.#refresh(ep);
      if (this.#atLeast(ep.list, 2).length === 0) return this.#recover(ep, 'restart_request', true);
      await this.#pause(ep, this.#o.timings.pollInterval);
    }
    await this.#upgrade(ep);
    await this.#resetStage(ep, true);
    return this.#recover(ep, 'reset', true);
  }

  /** §3.6 L3 flow (D2: healed means no chip at level ≥ 2, else upgraded to a reset). */
  async #l3(ep: Episode): Promise<Outcome> {
    await this.#waitProcesses(ep);
    this.#enter(ep, 'healingSleep');
    await this.#pause(ep, this.#o.timings.waitFaultSelfHealing);
    this.#enter(ep, 'refreshing');
    await this.#refresh(ep);
    if (this.#atLeast(ep.list, 2).length === 0) return this.#recover(ep, 'restart', false);
    await this.#upgrade(ep);
    await this.#resetStage(ep, false);
    return this.#recover(ep, 'reset', false);
  }

  /** §3.7 L5 flow. */
  async #l5(ep: Episode): Promise<Outcome> {
    await this.#resetStage(ep, true);
    return this.#recover(ep, 'reset', false);
  }

  /** Agent restart: see the file comment. */
  async #resume(ep: Episode): Promise<Outcome> {
    const cm = this.#o.configMaps.get(ep.namespace, resetConfigMapName(ep.task));
    if (ep.outcome === 'failed') {
      ep.isolateWritten = hasIsolateRank(cm);
      throw new FlowFailure('the agent restarted while the episode was failing');
    }
    const views = new Map(this.#o.hooks.chips().map((c) => [c.logicId, c]));
    ep.list = relist(ep.list, views);
    if (this.#atLeast(ep.list, 2).length === 0) {
      if (!(await this.#ringBooted(ep))) await this.#waitBoot(ep);
      this.#log.info({ task: ep.task }, 'resumed reset episode: chips fault-free and booted');
      return this.#recover(ep, ep.policy, true);
    }
    this.#log.info({ task: ep.task, state: ep.state }, 'resumed reset episode: running the reset stage again');
    if (ep.policy !== 'reset') await this.#upgrade(ep);
    await this.#resetStage(ep, true);
    return this.#recover(ep, 'reset', true);
  }

  /**
   * Agent restart: whether the listed ConfigMap already holds the first write of an episode saved as `starting`: every
   * rank of its RankList (by rank and logic id) `unrecovered` with the episode's policy, written since it started.
   */
  #firstWriteSeen(ep: Episode): boolean {
    const cm = this.#o.configMaps.get(ep.namespace, resetConfigMapName(ep.task));
    try {
      const doc = parseResetJson(cm?.data['reset.json'] ?? '');
      if (doc.UpdateTime * 1000 < ep.startedAt - 1000) return false;
      const rankOf = new Map(ep.snapshot.map((r) => [r.logicId, r.rankId]));
      return ep.rankChips.every((id) =>
        doc.RankList.some(
          (r) =>
            r.LogicId === id && r.RankId === rankOf.get(id) && r.Status === 'unrecovered' && r.Policy === ep.policy,
        ),
      );
    } catch {
      return false;
    }
  }

  /** A resumed episode whose ring could not be taken back at construction tries once more (D4). */
  #reacquire(ep: Episode): void {
    this.#checkpoint(ep);
    if (ep.held) return;
    if (!this.#o.coordinator.tryAcquire(ep.ringChips, onlineOwner(ep.task))) {
      throw new FlowFailure(`after an agent restart the ring [${ep.ringChips.join(',')}] is held by another reset`);
    }
    ep.held = true;
  }

  /** Resume of a fault-free ring that is still booting: §3.4.5 over the rings of the episode's first faulty chips. */
  async #waitBoot(ep: Episode): Promise<void> {
    this.#enter(ep, 'waitingBoot');
    const starts = new Set<number>();
    for (const r of ep.snapshot) if (needsReset(r.policy)) starts.add(Math.floor(r.logicId / this.#o.ringSize));
    for (const ring of starts) {
      const chip = ep.rankChips.find((id) => Math.floor(id / this.#o.ringSize) === ring) ?? ring * this.#o.ringSize;
      try {
        await isRingResetComplete(this.#context(ep), chip, ep.distributed);
      } catch (e) {
        if (e instanceof EpisodeAbandoned || e instanceof EngineStopped) throw e;
        throw new FlowFailure(`after an agent restart the ring did not finish booting: ${errorMessage(e)}`);
      }
    }
  }

  async #ringBooted(ep: Episode): Promise<boolean> {
    for (const id of ep.ringChips) {
      try {
        if ((await this.#o.dcmi.getBootStatus(id)) !== BOOT_FINISHED) return false;
      } catch {
        return false;
      } finally {
        this.#checkpoint(ep);
      }
    }
    return true;
  }

  /** §3.5 phase 2 / §3.6: `updateResetCMStatusWithoutWait(reset, initial, unrecovered)`. */
  async #upgrade(ep: Episode): Promise<void> {
    await this.#writeEpisode(ep, ep.list, 'reset', 'unrecovered');
    ep.policy = 'reset';
    this.#changed();
  }

  /** Process wait (optional), `resetDeviceOnce`, then D2: no chip of the task at level ≥ 2. */
  async #resetStage(ep: Episode, waitProcesses: boolean): Promise<void> {
    if (waitProcesses) await this.#waitProcesses(ep);
    await this.#resetOnce(ep);
    const left = this.#atLeast(ep.list, 2);
    if (left.length > 0) {
      throw new FlowFailure(
        `after the reset ${left.map((r) => `chip ${r.logicId} is ${r.policy}`).join(', ')} (a chip at level ≥ 2 left, D2)`,
      );
    }
  }

  /** §3.4.2; a timeout fails the episode (its one isolate write happens in the failure path, D6). */
  async #waitProcesses(ep: Episode): Promise<void> {
    this.#enter(ep, 'waitingProcesses');
    const faulty = ep.list.filter((r) => needsReset(r.policy)).map((r) => r.logicId);
    const chips = processWaitChips(this.#o.facts, this.#o.ringSize, ep.taskChips, faulty);
    if (!(await waitProcessesToZero(this.#context(ep), chips))) {
      throw new FlowFailure(
        `processes on chips ${chips.join(',')} did not stop within ${this.#o.timings.waitProcessesToZero / 1000} s (§3.4.2)`,
      );
    }
  }

  /** §3.4.3 `resetDeviceOnce` with D1 targets (the faulty chips the episode holds), re-sync and re-read. */
  async #resetOnce(ep: Episode): Promise<void> {
    const held = new Set(ep.ringChips);
    const targets = ep.list.filter((r) => needsReset(r.policy) && held.has(r.logicId)).map((r) => r.logicId);
    this.#enter(ep, 'resetting');
    try {
      await execResetDevice(this.#context(ep), targets, ep.distributed, this.#limits);
    } catch (e) {
      if (e instanceof EpisodeAbandoned) throw e;
      throw new FlowFailure(`reset failed: ${errorMessage(e)}`);
    }
    this.#o.hooks.markNeedsResync(ep.taskChips);
    this.#enter(ep, 'refreshing');
    await this.#refresh(ep);
  }

  /**
   * §3.4.1 `refreshDevFaultInfo`: wait for a main cycle (D5: 3 handshakes), then re-read every chip of the list by
   * logic id (D3).
   */
  async #refresh(ep: Episode): Promise<void> {
    for (let i = 1; ; i++) {
      const ok = await this.#o.hooks.waitForCycle(this.#o.timings.cycleHandshake);
      this.#checkpoint(ep);
      if (ok) break;
      if (i >= ONLINE_TRIES) {
        throw new FlowFailure(
          `the main cycle did not answer ${ONLINE_TRIES} handshakes of ${this.#o.timings.cycleHandshake} ms (§3.4.1, D5)`,
        );
      }
      this.#log.warn({ task: ep.task, attempt: i }, 'main-cycle handshake timed out; retrying');
    }
    ep.list = relist(ep.list, new Map(this.#o.hooks.chips().map((c) => [c.logicId, c])));
  }

  /**
   * Success: optional re-sync mark (L2), WaitNpuReadyTime before a `recovered/reset` write, the write of the
   * episode-start snapshot (§3.5), WaitProcessReadCMTime. A final write that fails 3 times fails the episode (D5).
   */
  async #recover(ep: Episode, policy: FlowPolicy, resync: boolean): Promise<Outcome> {
    if (resync) this.#o.hooks.markNeedsResync(ep.taskChips);
    if (policy === 'reset') {
      this.#enter(ep, 'readyWait');
      await this.#pause(ep, this.#o.timings.waitNpuReady);
      this.#checkpoint(ep);
    }
    ep.outcome = 'recovered';
    this.#enter(ep, 'writingResult');
    try {
      await this.#writeEpisode(ep, ep.snapshot, policy, 'recovered');
    } catch (e) {
      throw new FlowFailure(`the recovered write failed: ${errorMessage(e)} (D5)`);
    }
    this.#log.info({ task: ep.task, policy }, 'reset episode recovered');
    this.#event(ep.pod, {
      type: 'Normal',
      reason: 'ResetRecovered',
      message: `task ${ep.task}: chips ${ep.rankChips.join(',')} recovered (${policy}/${ep.initialPolicy})`,
    });
    await this.#pause(ep, this.#o.timings.waitProcessReadCm); // ends early when the task leaves; no checkpoint
    return 'recovered';
  }

  /** Failure path: one `failed/isolate/<initial>` write (D6; 3 tries, D5), a Warning Event, WaitProcessReadCMTime. */
  async #fail(ep: Episode, cause: unknown): Promise<void> {
    const reason =
      cause instanceof EpisodeAbandoned || cause instanceof FlowFailure
        ? cause.message
        : `error: ${errorMessage(cause)}`;
    ep.outcome = 'failed';
    this.#enter(ep, 'writingResult');
    let written = false;
    let writeError = '';
    if (!ep.isolateWritten) {
      try {
        await this.#writeEpisode(ep, ep.list, 'isolate', 'failed');
        written = true;
      } catch (e) {
        writeError = `; the failed/isolate write failed too: ${errorMessage(e)}`;
      }
    }
    this.#log.warn({ task: ep.task }, `reset episode failed: ${reason}${writeError}`);
    this.#event(ep.pod, {
      type: 'Warning',
      reason: 'ResetFailed',
      message: `task ${ep.task}: recovery of chips ${ep.rankChips.join(',')} failed: ${reason}${writeError}`,
    });
    if (written && ep.abandoned === undefined) await this.#pause(ep, this.#o.timings.waitProcessReadCm);
  }

  /** `postProcess`: the ring leaves the coordinator and the filter; the outcome is remembered for the task. */
  #finish(ep: Episode, outcome: Outcome): void {
    this.#episodes.delete(ep.task);
    if (ep.held) {
      try {
        this.#o.coordinator.release(ep.ringChips, onlineOwner(ep.task));
      } catch (e) {
        this.#log.error({ task: ep.task }, `coordinator release failed: ${errorMessage(e)}`);
      }
    }
    if (outcome !== 'not-started') {
      this.#ended.set(ep.task, {
        outcome,
        at: this.#o.clock.now(),
        namespace: ep.namespace,
        taskChips: ep.taskChips,
        rankChips: ep.rankChips,
      });
    }
    this.#changed();
  }

  // -------------------------------------------------------------------------------------------------------------
  // Writes

  /** An episode write with its fixed RankList (the rings chosen at the start), codes from `list`. */
  async #writeEpisode(ep: Episode, list: readonly RankSource[], policy: string, status: RankStatus): Promise<void> {
    await this.#write(ep.task, ep.namespace, this.#episodeRanks(ep, list, policy, status), false);
    if (policy === 'isolate') ep.isolateWritten = true;
  }

  /**
   * §2.4 `GetTaskResetInfo` over the episode's rings: every write of an episode names the ranks of the first write,
   * even when the faults have moved or cleared since (upstream recomputes the rings and can write an empty list, which
   * readers take for "cleared").
   */
  #episodeRanks(ep: Episode, list: readonly RankSource[], policy: string, status: RankStatus): ResetRank[] {
    const inRing = new Set(ep.rankChips);
    const marked = list.filter((r) => inRing.has(r.logicId)).map((r) => ({ ...r, policy: 'reset' }));
    return selectRanks(marked, this.#o.ringSize, policy, ep.initialPolicy, status);
  }

  /** `write()` with D5's tries (an `isolated` refusal is final); remembers the text written. */
  async #write(
    task: string,
    namespace: string,
    ranks: readonly ResetRank[],
    addRetry: boolean,
    tries = ONLINE_TRIES,
  ): Promise<void> {
    for (let i = 1; ; i++) {
      try {
        const text = await this.#o.writer.write(task, namespace, ranks, addRetry);
        const own = this.#ownTexts.get(task) ?? [];
        own.push(text);
        this.#ownTexts.set(task, own.slice(-4));
        return;
      } catch (e) {
        if (i >= tries || (e instanceof ResetConfigMapError && e.reason !== 'not-found')) throw e;
        this.#log.warn({ task, attempt: i }, `reset ConfigMap write failed, retrying: ${errorMessage(e)}`);
        await sleep(this.#o.clock, this.#o.timings.pollInterval);
      }
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Helpers

  readonly #limits: ResetLimits = {
    mayReset: (id) => (this.#resetCount.get(id) ?? 0) <= MAX_RESET_COUNT,
    count: (id) => void this.#resetCount.set(id, (this.#resetCount.get(id) ?? 0) + 1),
  };

  #context(ep: Episode): ProcedureContext {
    return {
      clock: this.#o.clock,
      timings: this.#o.timings,
      dcmi: this.#o.dcmi,
      facts: this.#o.facts,
      ringSize: this.#o.ringSize,
      logger: this.#log,
      checkpoint: () => this.#checkpoint(ep),
      sleep: (ms) => this.#pause(ep, ms),
      enter: (state) => this.#enter(ep, state),
      mark: (ids, state) => {
        for (const id of ids) {
          if (state === undefined) ep.marks.delete(id);
          else ep.marks.set(id, state);
        }
        this.#changed();
      },
      event: (e) => this.#event(ep.pod, e),
    };
  }

  /** Chips of `list` whose policy level is ≥ `level`. */
  #atLeast(list: readonly RankSource[], level: number): RankSource[] {
    return list.filter((r) => policyLevelOf(r.policy) >= level);
  }

  #checkpoint(ep: Episode): void {
    if (this.#stopped) throw new EngineStopped('the reset engine was stopped');
    if (ep.abandoned !== undefined) throw new EpisodeAbandoned(ep.abandoned);
  }

  /** A pause that an abandonment ends early. */
  #pause(ep: Episode, ms: number): Promise<void> {
    if (ep.abandoned !== undefined || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      let handle: TimerHandle | undefined = undefined;
      const done = (): void => {
        if (ep.wake === done) ep.wake = undefined;
        if (handle !== undefined) this.#o.clock.clearTimeout(handle);
        resolve();
      };
      ep.wake = done;
      handle = this.#o.clock.setTimeout(done, ms);
    });
  }

  #enter(ep: Episode, state: TaskState): void {
    if (ep.state === state) return;
    ep.state = state;
    ep.since = this.#o.clock.now();
    this.#changed();
  }

  #networkGroup(id: number): number[] {
    try {
      return this.#o.facts.kind === 'Ascend910A3'
        ? a3Group(this.#o.facts, id)
        : arithmeticRing(id, this.#o.ringSize, this.#o.facts);
    } catch {
      return [id];
    }
  }

  #chipState(id: number): { state: ChipState; task?: string } {
    for (const ep of this.#episodes.values()) {
      const mark = ep.marks.get(id);
      if (mark !== undefined) return { state: mark, task: ep.task };
      if (ep.ringChips.includes(id)) return { state: 'inReset', task: ep.task };
    }
    for (const [name, e] of this.#ended) {
      if (e.outcome === 'failed' && e.rankChips.includes(id)) return { state: 'isolated', task: name };
    }
    return { state: 'normal' };
  }

  #event(pod: ResetPod | undefined, e: Omit<ResetEvent, 'pod'>): void {
    try {
      this.#o.events?.record(pod === undefined ? e : { ...e, pod: { namespace: pod.namespace, name: pod.name } });
    } catch (err) {
      this.#log.warn(`reset event not recorded: ${errorMessage(err)}`);
    }
  }

  /** State change: persist the running episodes and tell the listeners. */
  #changed(): void {
    this.#persist();
    this.#overridesKey = overridesKey(this.healthOverrides());
    for (const l of this.#listeners) {
      try {
        l();
      } catch (e) {
        this.#log.warn(`reset onChange listener failed: ${errorMessage(e)}`);
      }
    }
  }

  #notifyIfOverridesChanged(): void {
    if (overridesKey(this.healthOverrides()) !== this.#overridesKey) this.#changed();
  }

  #persist(): void {
    if (this.#o.store === undefined) return;
    const records: EpisodeRecord[] = [...this.#episodes.values()].map((ep) => ({
      task: ep.task,
      namespace: ep.namespace,
      podUid: ep.podUid,
      initialPolicy: ep.initialPolicy,
      policy: ep.policy,
      state: EPISODE_STATES.includes(ep.state) ? ep.state : 'writingResult',
      startedAt: ep.startedAt,
      snapshot: ep.snapshot,
      rankChips: ep.rankChips,
      ringChips: ep.ringChips,
      ...(ep.outcome !== undefined && { outcome: ep.outcome }),
    }));
    try {
      this.#o.store.save(records);
    } catch (e) {
      this.#log.warn(`reset episodes not persisted: ${errorMessage(e)}`);
    }
  }

  /** Agent restart: validates the saved records and takes their rings back (D4) before any cycle runs. */
  #loadEpisodes(): void {
    let raw: unknown[] | undefined;
    try {
      raw = this.#o.store?.load();
    } catch (e) {
      this.#log.error(`persisted reset episodes not readable, ignored: ${errorMessage(e)}`);
      return;
    }
    if (raw === undefined) return;
    if (!Array.isArray(raw)) {
      this.#log.error('persisted reset episodes are not an array, ignored');
      return;
    }
    raw.forEach((item, i) => {
      let r: EpisodeRecord;
      try {
        r = parseEpisodeRecord(item, i);
      } catch (e) {
        this.#log.error(`${errorMessage(e)}; ignored`);
        this.#event(undefined, { type: 'Warning', reason: 'ResetTaskSkipped', message: `${errorMessage(e)}; ignored` });
        return;
      }
      if (this.#episodes.has(r.task)) {
        this.#log.error({ task: r.task }, `persisted reset episode #${i} duplicates task ${r.task}; ignored`);
        return;
      }
      const held = this.#o.coordinator.tryAcquire(r.ringChips, onlineOwner(r.task));
      this.#episodes.set(r.task, {
        task: r.task,
        namespace: r.namespace,
        pod: undefined,
        podUid: r.podUid,
        distributed: false,
        taskChips: r.snapshot.map((s) => s.logicId),
        initialPolicy: r.initialPolicy,
        policy: r.policy,
        state: r.state,
        since: this.#o.clock.now(),
        startedAt: r.startedAt,
        snapshot: r.snapshot,
        list: [...r.snapshot],
        rankChips: r.rankChips,
        ringChips: r.ringChips,
        outcome: r.outcome,
        abandoned: undefined,
        isolateWritten: false,
        held,
        resumed: true,
        marks: new Map(),
        wake: undefined,
      });
      this.#log.info({ task: r.task, state: r.state }, 'persisted reset episode found; resumed at the first cycle');
    });
  }
}

/** The first state of a flow after its first write: L2 polls for self-healing (§3.5), L3 and L5 wait for processes. */
function flowStart(policy: FlowPolicy): TaskState {
  return policy === 'restart_request' ? 'selfHealing' : 'waitingProcesses';
}

/** Each chip of `list` with the policy and codes of `views` (by logic id, D3); a chip not in `views` is kept. */
function relist(list: readonly RankSource[], views: ReadonlyMap<number, ChipResetView>): RankSource[] {
  return list.map((r) => {
    const v = views.get(r.logicId);
    return v === undefined ? r : { ...r, policy: policyOfLevel(v.level), codes: [...v.codes] };
  });
}

function hasIsolateRank(cm: ConfigMapObject | undefined): boolean {
  try {
    return cm !== undefined && ranksOf(cm).some((r) => r.Policy === 'isolate');
  } catch {
    return false;
  }
}

/** D5: the ConfigMap was rewritten without `isolate` (§2.6 clearing) at or after `atMs`. */
function clearedSince(cm: ConfigMapObject | undefined, atMs: number): boolean {
  if (cm === undefined) return false;
  try {
    const doc = parseResetJson(cm.data['reset.json'] ?? '');
    return doc.UpdateTime * 1000 >= atMs - 1000 && !doc.RankList.some((r) => r.Policy === 'isolate');
  } catch {
    return false;
  }
}

function overridesKey(o: HealthOverrides): string {
  const asc = (s: ReadonlySet<number>): string => [...s].sort((a, b) => a - b).join(',');
  return `${asc(o.healthy)}|${asc(o.networkHealthy)}`;
}

function checkOptions(o: OnlineResetEngineOptions): void {
  if (!Number.isSafeInteger(o.ringSize) || o.ringSize <= 0) {
    throw new RangeError(`online reset engine: ring size ${o.ringSize} is not a positive integer (0 = no engine)`);
  }
  const t: OnlineTimings = o.timings;
  for (const key of [
    'waitProcessReadCm',
    'waitDeviceReset',
    'waitFaultSelfHealing',
    'maxResetWaitPolls',
    'waitErrorCodeClean',
    'waitProcessesToZero',
    'pollInterval',
    'waitNpuReady',
    'cycleHandshake',
  ] as const) {
    if (!Number.isFinite(t[key]) || t[key] < 0) {
      throw new RangeError(`online reset engine: timings.${key} ${String(t[key])} is not a non-negative number`);
    }
  }
  if (t.pollInterval <= 0) throw new RangeError('online reset engine: timings.pollInterval must be > 0');
  if (!Array.isArray(t.resetBackoff) || t.resetBackoff.some((x) => !Number.isFinite(x) || x < 0)) {
    throw new RangeError('online reset engine: timings.resetBackoff must be an array of non-negative numbers');
  }
}

/** §5 defaults in ms (GraceTolerance 30/150/15, listWatchPeriod 5 s). */
export function defaultOnlineTimings(listWatchPeriodMs = 5_000): OnlineTimings {
  return {
    waitProcessReadCm: 30_000,
    waitDeviceReset: 150_000,
    waitFaultSelfHealing: 15_000,
    maxResetWaitPolls: 150,
    waitErrorCodeClean: 30_000,
    waitProcessesToZero: 60_000,
    pollInterval: 1_000,
    waitNpuReady: 30_000,
    cycleHandshake: 3 * listWatchPeriodMs,
    resetBackoff: [5_000, 10_000, 15_000],
  };
}
