/**
 * Hang detection (spec device-plugin.md D.9): a chip whose processes look stuck — little AI-core work, no HBM
 * growth, almost no RoCE traffic, almost no host CPU time — for `DetectDuration` consecutive samples gets the
 * synthetic fault 0x200001002; the first sample that does not look hung (or no process, or detection disabled)
 * recovers it.
 *
 * Every tick (60 s) each chip is asked for its processes; only a chip that has some is sampled further (AI-core and
 * HBM utilisation from DCMI, `hccn_tool -stat -g` packet counters, `/proc/<pid>/stat` CPU time), so an idle node
 * costs one DCMI call per chip per tick. A sample is compared with the chip's previous one (its baseline); a changed
 * process set, no process, or a failed process query drops the baseline, and a sample without a baseline counts as
 * not hung (upstream rule). A sample that misses a reading (a DCMI error, `hccn_tool` failing or lacking the keys,
 * no readable `/proc` entry) is inconclusive: it neither counts nor recovers, and its reason is logged when it changes.
 *
 * Events go to `sink` as the other health events do (severity 0, time now); a recovery is held `recoveryDelayMs`
 * first, as D.4 holds every recovery. Upstream stamps these events in seconds, not ms: we do not copy that.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../core/errors.js';
import { UtilizationType, type ChipAddress } from '../dcmi/dcmi.js';
import { parseHexCode, type FaultCode } from '../faults/codes.js';
import type { FaultEvent } from '../faults/engine-types.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { HangDetectionConfig } from './hang-config.js';

/** The synthetic hang fault (spec D.9; `NotHandleFaultCodes` in the shipped faultCode.json). */
export const HANG_FAULT_CODE: FaultCode = 0x200001002;
/** `hccn_tool -stat -g` keys summed into the traffic of a sample (spec D.9). */
export const ROCE_PACKET_KEYS = ['roce_tx_all_pkt_num', 'roce_rx_all_pkt_num'] as const;
/** Linux USER_HZ, the unit of `/proc/<pid>/stat` times on every architecture Node runs on. */
export const DEFAULT_CLOCK_TICKS = 100;

/** The DCMI calls the detector makes (a subset of `Dcmi`). */
export interface HangDcmi {
  getProcesses(cardId: number, deviceId: number): readonly { pid: number }[];
  getUtilizationRate(cardId: number, deviceId: number, inputType: number): number;
}

/** `hccn_tool -i <phyId> -stat -g`, parsed (`queryRoceStats` of `src/dcmi/hccn.ts` fits). */
export type RoceStatsReader = (phyId: number) => Promise<ReadonlyMap<string, bigint>>;
/** The text of `/proc/<pid>/stat`. */
export type ProcStatReader = (pid: number) => Promise<string>;

/** Where chips that already carry the hang fault are found at start (the store's `chip(logicId)` fits). */
export interface HangStateReader {
  chip(logicId: number): { readonly faultCodes: readonly string[] } | undefined;
}

/** Construction options of {@link HangDetector}. */
export interface HangDetectorOptions {
  readonly dcmi: HangDcmi;
  readonly chips: readonly ChipAddress[];
  readonly config: HangDetectionConfig;
  /** Receives the events (the agent's `onEvents`). Must not throw. */
  readonly sink: (events: readonly FaultEvent[]) => void;
  readonly clock: Clock;
  /** RoCE counters; absent (no RoCE plane): traffic is not measured and never keeps a chip from looking hung. */
  readonly roceStats?: RoceStatsReader;
  /** Default: {@link procStatReader} of `/proc`. */
  readonly procStat?: ProcStatReader;
  /** AT_CLKTCK; default {@link DEFAULT_CLOCK_TICKS}. */
  readonly clockTicksPerSecond?: number;
  /** Tick; default 60 000 (the thresholds are per 60 s, spec D.9). */
  readonly intervalMs?: number;
  /** D.4 recovery delay; default 1000; must be shorter than the tick. */
  readonly recoveryDelayMs?: number;
  /** Chips sampled at once (each may run `hccn_tool`); default 4. */
  readonly concurrency?: number;
  /** Chips that already carry 0x200001002 (restored state): the first non-hung sample recovers them. */
  readonly state?: HangStateReader;
  readonly logger?: Logger;
}

/** One sample of one chip. `undefined` readings could not be taken. */
interface Sample {
  readonly aiCore: number | undefined;
  readonly hbm: number | undefined;
  /** tx + rx packets; 0 when traffic is not measured. */
  readonly traffic: bigint | undefined;
  /** Clock ticks (utime + stime) per readable pid. */
  readonly cpuTicks: ReadonlyMap<number, number>;
  /** Why readings are missing. */
  readonly missing: readonly string[];
}

interface ChipHang {
  /** Sorted pids of the baseline's process set. */
  pids: string | undefined;
  baseline: Sample | undefined;
  /** Consecutive hung samples. */
  count: number;
  raised: boolean;
  /** Reason of the last inconclusive sample (logged once until it changes). */
  problem: string | undefined;
}

type Verdict =
  | { kind: 'baseline' }
  | { kind: 'inconclusive'; reason: string }
  | { kind: 'judged'; hung: boolean; aiCore: number; hbmDelta: number; trafficDelta: bigint; cpuSeconds: number };

/** Counters for tests and metrics. */
export interface HangStats {
  ticks: number;
  samples: number;
  inconclusive: number;
  raised: number;
  recovered: number;
}

/** Reads `<procRoot>/<pid>/stat`. */
export function procStatReader(procRoot = '/proc'): ProcStatReader {
  return (pid) => {
    if (!Number.isSafeInteger(pid) || pid <= 0) return Promise.reject(new RangeError(`invalid pid ${pid}`));
    return fs.promises.readFile(path.join(procRoot, String(pid), 'stat'), 'utf8');
  };
}

/**
 * utime + stime (clock ticks) of a `/proc/<pid>/stat` text: fields 14 and 15 of proc(5), counted after the
 * command name, which ends at the last `)` and may itself hold spaces or parentheses. Undefined when malformed.
 */
export function parseProcCpuTicks(text: string): number | undefined {
  const end = text.lastIndexOf(')');
  if (end < 0) return undefined;
  const rest = text
    .slice(end + 1)
    .trim()
    .split(/\s+/); // rest[0] is field 3 (state)
  const utime = rest[11];
  const stime = rest[12];
  if (utime === undefined || stime === undefined || !/^\d+$/.test(utime) || !/^\d+$/.test(stime)) return undefined;
  return Number(utime) + Number(stime);
}

/** AT_CLKTCK from `<procRoot>/self/auxv` (64-bit entries); undefined when it cannot be read. */
export function readClockTicksPerSecond(procRoot = '/proc'): number | undefined {
  const AT_NULL = 0n;
  const AT_CLKTCK = 17n;
  let buf: Buffer;
  try {
    buf = fs.readFileSync(path.join(procRoot, 'self', 'auxv'));
  } catch {
    return undefined;
  }
  const le = os.endianness() === 'LE';
  for (let off = 0; off + 16 <= buf.length; off += 16) {
    const type = le ? buf.readBigUInt64LE(off) : buf.readBigUInt64BE(off);
    if (type === AT_NULL) break;
    if (type === AT_CLKTCK) {
      const v = Number(le ? buf.readBigUInt64LE(off + 8) : buf.readBigUInt64BE(off + 8));
      return v > 0 ? v : undefined;
    }
  }
  return undefined;
}

/** The hang detector of one node. */
export class HangDetector {
  readonly #o: HangDetectorOptions;
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #recoveryDelayMs: number;
  readonly #ticksPerSecond: number;
  readonly #procStat: ProcStatReader;
  readonly #chips = new Map<number, ChipHang>();
  readonly #timers = new Set<TimerHandle>();
  #tickTimer: TimerHandle | undefined;
  #running: Promise<void> | null = null;
  #started = false;
  #stopped = false;
  readonly #stats: HangStats = { ticks: 0, samples: 0, inconclusive: 0, raised: 0, recovered: 0 };

  constructor(options: HangDetectorOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#recoveryDelayMs = options.recoveryDelayMs ?? 1000;
    this.#ticksPerSecond = options.clockTicksPerSecond ?? DEFAULT_CLOCK_TICKS;
    this.#procStat = options.procStat ?? procStatReader();
    if (!(this.#intervalMs > 0)) throw new RangeError(`intervalMs must be > 0, got ${this.#intervalMs}`);
    if (!(this.#recoveryDelayMs >= 0 && this.#recoveryDelayMs < this.#intervalMs)) {
      throw new RangeError(`recoveryDelayMs must be in [0, intervalMs), got ${this.#recoveryDelayMs}`);
    }
    if (!(this.#ticksPerSecond > 0)) throw new RangeError(`clockTicksPerSecond must be > 0`);
    for (const c of options.chips) {
      this.#chips.set(c.logicId, { pids: undefined, baseline: undefined, count: 0, raised: false, problem: undefined });
    }
  }

  /**
   * Starts the ticker. Chips that already carry the hang fault (`state`) are taken as raised; with detection
   * disabled they are recovered at once and no tick ever runs.
   */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    const state = this.#o.state;
    if (state) {
      for (const [id, st] of this.#chips) {
        const codes = state.chip(id)?.faultCodes ?? [];
        st.raised = codes.some((t) => {
          const p = parseHexCode(t);
          return p.ok && p.value === HANG_FAULT_CODE;
        });
      }
    }
    const { enabled, thresholds } = this.#o.config;
    if (!enabled) {
      this.#log.info('hang detection disabled (spec D.9)');
      const recover: number[] = [];
      for (const [id, st] of this.#chips) if (this.#reset(st)) recover.push(id);
      this.#emit([], recover);
      return;
    }
    this.#log.info(
      { intervalMs: this.#intervalMs, ...thresholds, traffic: this.#o.roceStats ? 'RoCE' : 'not measured' },
      'hang detection started',
    );
    this.#schedule(this.#intervalMs);
  }

  /** Stops the ticker; held recoveries are dropped (the process is ending). A tick in progress emits nothing. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#tickTimer !== undefined) this.#o.clock.clearTimeout(this.#tickTimer);
    for (const t of this.#timers) this.#o.clock.clearTimeout(t);
    this.#timers.clear();
  }

  /** Samples every chip once (what a tick does); joins a tick already in progress. */
  runOnce(): Promise<void> {
    this.#running ??= this.#tick().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  /** Resolves when no tick is in progress. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Logic ids whose hang fault is raised. */
  raised(): number[] {
    return [...this.#chips].filter(([, st]) => st.raised).map(([id]) => id);
  }

  /** Counters for tests and metrics. */
  stats(): HangStats {
    return { ...this.#stats };
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#tickTimer = this.#o.clock.setTimeout(() => {
      this.#tickTimer = undefined;
      const begin = this.#o.clock.monotonic(); // the tick's period, not a domain time
      void this.runOnce()
        .catch((err: unknown) => this.#log.error({ err }, 'hang detection tick failed'))
        .then(() => this.#schedule(Math.max(0, this.#intervalMs - (this.#o.clock.monotonic() - begin))));
    }, ms);
  }

  async #tick(): Promise<void> {
    this.#stats.ticks++;
    const occur: number[] = [];
    const recover: number[] = [];
    const queue = [...this.#o.chips];
    const worker = async (): Promise<void> => {
      for (let chip = queue.shift(); chip; chip = queue.shift()) {
        const change = await this.#sampleChip(chip);
        if (change === 'occur') occur.push(chip.logicId);
        else if (change === 'recover') recover.push(chip.logicId);
      }
    };
    const n = Math.max(1, Math.min(this.#o.concurrency ?? 4, queue.length));
    await Promise.all(Array.from({ length: n }, worker));
    if (!this.#stopped) this.#emit(occur, recover);
  }

  /** One chip's sample; returns the fault change it caused. */
  async #sampleChip(chip: ChipAddress): Promise<'occur' | 'recover' | undefined> {
    const st = this.#chips.get(chip.logicId)!;
    let procs: readonly { pid: number }[];
    try {
      procs = this.#o.dcmi.getProcesses(chip.cardId, chip.deviceId);
    } catch (err) {
      this.#inconclusiveLog(chip, st, `process query: ${errorMessage(err)}`);
      return this.#reset(st) ? 'recover' : undefined; // upstream: as if no process
    }
    if (st.problem === 'process query') this.#problemGone(chip, st);
    if (procs.length === 0) return this.#reset(st) ? 'recover' : undefined;
    const pids = [...new Set(procs.map((p) => p.pid))].sort((a, b) => a - b);
    const key = pids.join(',');
    if (st.pids !== undefined && st.pids !== key) {
      this.#log.info({ logicId: chip.logicId, from: st.pids, to: key }, 'process set changed, hang baseline reset');
      st.baseline = undefined;
    }
    st.pids = key;
    const sample = await this.#collect(chip, pids);
    this.#stats.samples++;
    const verdict = this.#judge(st.baseline, sample);
    st.baseline = sample;
    if (verdict.kind === 'inconclusive') {
      this.#stats.inconclusive++;
      this.#inconclusiveLog(chip, st, verdict.reason);
      return undefined;
    }
    if (st.problem !== undefined && sample.missing.length === 0) this.#problemGone(chip, st);
    if (verdict.kind === 'judged') {
      const { hung, aiCore, hbmDelta, trafficDelta, cpuSeconds } = verdict;
      this.#log.debug(
        { logicId: chip.logicId, hung, aiCore, hbmDelta, trafficDelta: String(trafficDelta), cpuSeconds },
        'hang sample',
      );
      if (hung) {
        st.count++;
        if (st.count >= this.#o.config.thresholds.detectDuration && !st.raised) {
          st.raised = true;
          this.#log.warn({ logicId: chip.logicId, samples: st.count, pids: key }, 'NPU looks hung (spec D.9)');
          return 'occur';
        }
        return undefined;
      }
    }
    st.count = 0;
    if (!st.raised) return undefined;
    st.raised = false;
    this.#log.info({ logicId: chip.logicId }, 'NPU no longer looks hung');
    return 'recover';
  }

  /** Drops the chip's baseline and count; true when its raised fault must be recovered. */
  #reset(st: ChipHang): boolean {
    st.pids = undefined;
    st.baseline = undefined;
    st.count = 0;
    const was = st.raised;
    st.raised = false;
    return was;
  }

  /** Logs a missing reading once per kind of problem (error texts such as timeouts vary from tick to tick). */
  #inconclusiveLog(chip: ChipAddress, st: ChipHang, reason: string): void {
    const kind = reason
      .split('; ')
      .map((r) => r.split(':')[0])
      .join(' + ');
    if (st.problem === kind) return;
    st.problem = kind;
    this.#log.warn({ logicId: chip.logicId, phyId: chip.phyId, reason }, 'hang detection reading missing');
  }

  #problemGone(chip: ChipAddress, st: ChipHang): void {
    this.#log.info({ logicId: chip.logicId, was: st.problem }, 'hang detection readings complete again');
    st.problem = undefined;
  }

  async #collect(chip: ChipAddress, pids: readonly number[]): Promise<Sample> {
    const missing: string[] = [];
    const util = (type: number, what: string): number | undefined => {
      try {
        return this.#o.dcmi.getUtilizationRate(chip.cardId, chip.deviceId, type);
      } catch (err) {
        missing.push(`${what} utilisation: ${errorMessage(err)}`);
        return undefined;
      }
    };
    const aiCore = util(UtilizationType.AI_CORE, 'AI-core');
    const hbm = util(UtilizationType.HBM, 'HBM');
    let traffic: bigint | undefined = 0n;
    if (this.#o.roceStats) {
      try {
        const stats = await this.#o.roceStats(chip.phyId);
        const values = ROCE_PACKET_KEYS.map((k) => stats.get(k));
        if (values.every((v) => v !== undefined)) traffic = values.reduce((a, b) => a + b, 0n);
        else {
          traffic = undefined;
          missing.push(`RoCE traffic: hccn_tool -stat -g lacks ${ROCE_PACKET_KEYS.join(' or ')}`);
        }
      } catch (err) {
        traffic = undefined;
        missing.push(`RoCE traffic: ${errorMessage(err)}`);
      }
    }
    const cpuTicks = new Map<number, number>();
    for (const pid of pids) {
      try {
        const ticks = parseProcCpuTicks(await this.#procStat(pid));
        if (ticks !== undefined) cpuTicks.set(pid, ticks);
      } catch {
        // an exited process, or a pid of another pid namespace: judged by the others (below)
      }
    }
    if (cpuTicks.size === 0) missing.push(`CPU time: no /proc/<pid>/stat readable for pids ${pids.join(',')}`);
    return { aiCore, hbm, traffic, cpuTicks, missing };
  }

  /** Spec D.9: hung ⇔ AI-core < threshold ∧ HBM delta ≤ threshold ∧ traffic delta < threshold ∧ CPU delta < threshold. */
  #judge(prev: Sample | undefined, cur: Sample): Verdict {
    if (!prev) return { kind: 'baseline' };
    const missing = [...cur.missing];
    if (cur.hbm !== undefined && prev.hbm === undefined) missing.push('HBM utilisation: no baseline');
    if (cur.traffic !== undefined && prev.traffic === undefined) missing.push('RoCE traffic: no baseline');
    if (cur.traffic !== undefined && prev.traffic !== undefined && cur.traffic < prev.traffic) {
      missing.push('RoCE traffic: counters went backwards');
    }
    let cpuTicks = 0;
    let common = 0;
    for (const [pid, ticks] of cur.cpuTicks) {
      const before = prev.cpuTicks.get(pid);
      if (before === undefined || ticks < before) continue;
      cpuTicks += ticks - before;
      common++;
    }
    if (cur.cpuTicks.size > 0 && common === 0) missing.push('CPU time: no pid readable in both samples');
    if (missing.length > 0) return { kind: 'inconclusive', reason: missing.join('; ') };
    const th = this.#o.config.thresholds;
    const aiCore = cur.aiCore!;
    const hbmDelta = cur.hbm! - prev.hbm!;
    const trafficDelta = cur.traffic! - prev.traffic!;
    const cpuSeconds = cpuTicks / this.#ticksPerSecond;
    const hung =
      aiCore < th.aiCoreUtilization &&
      hbmDelta <= th.hbmMemoryDelta &&
      trafficDelta < BigInt(th.trafficDelta) &&
      cpuSeconds < th.cpuTimeDelta;
    return { kind: 'judged', hung, aiCore, hbmDelta, trafficDelta, cpuSeconds };
  }

  /** Occurrences now; recoveries after the D.4 delay. */
  #emit(occur: readonly number[], recover: readonly number[]): void {
    this.#stats.raised += occur.length;
    this.#stats.recovered += recover.length;
    if (occur.length > 0) this.#send(occur, 'occur');
    if (recover.length === 0) return;
    if (this.#recoveryDelayMs === 0) {
      this.#send(recover, 'recover');
      return;
    }
    const t = this.#o.clock.setTimeout(() => {
      this.#timers.delete(t);
      this.#send(recover, 'recover');
    }, this.#recoveryDelayMs);
    this.#timers.add(t);
  }

  #send(ids: readonly number[], assertion: 'occur' | 'recover'): void {
    if (this.#stopped) return;
    const timeMs = this.#o.clock.now();
    const events = ids.map((logicId) => ({ logicId, code: HANG_FAULT_CODE, assertion, severity: 0, timeMs }));
    try {
      this.#o.sink(events);
    } catch (err) {
      this.#log.error({ err, assertion, logicIds: ids }, 'hang event sink threw');
    }
  }
}
