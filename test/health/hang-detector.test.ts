/**
 * Hang detection (spec device-plugin.md D.9) on a manual clock with fake DCMI, hccn_tool counters and /proc.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { UtilizationType, type ChipAddress } from '../../src/dcmi/dcmi.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { parseRoceStats, queryRoceStats } from '../../src/dcmi/hccn.js';
import type { FaultEvent } from '../../src/faults/engine-types.js';
import {
  DEFAULT_HANG_DETECTION_CONFIG,
  MAX_HANG_CONFIG_BYTES,
  loadHangDetectionConfig,
  parseHangDetectionConfig,
  readConfigFile,
  type HangDetectionConfig,
  type HangThresholds,
} from '../../src/health/hang-config.js';
import {
  HANG_FAULT_CODE,
  HangDetector,
  parseProcCpuTicks,
  readClockTicksPerSecond,
  type HangDetectorOptions,
} from '../../src/health/hang-detector.js';
import type { Logger } from '../../src/core/logger.js';
import { loadScenario, openMock } from '../helpers/mock-dcmi.js';
import { FakeClock } from './fake-clock.js';

const TICK = 60_000;
const HZ = 100;

/** What one fake chip reports; counters are cumulative and advanced by the test. */
interface FakeChip {
  pids: number[];
  aiCore: number;
  hbm: number;
  tx: bigint;
  rx: bigint;
  failProcesses?: boolean;
  failUtil?: boolean;
  failRoce?: boolean;
  roceText?: string;
}

class Fakes {
  readonly chips = new Map<number, FakeChip>();
  /** utime + stime per pid, in ticks. */
  readonly cpu = new Map<number, number>();
  readonly calls = { processes: 0, util: [] as number[], roce: 0, proc: 0 };

  chip(logicId: number): FakeChip {
    return this.chips.get(logicId)!;
  }

  readonly dcmi = {
    getProcesses: (cardId: number, deviceId: number): { pid: number }[] => {
      this.calls.processes++;
      const c = this.byAddress(cardId, deviceId);
      if (c.failProcesses) throw Object.assign(new Error('dcmi_get_device_resource_info failed'), { code: -8005 });
      return c.pids.map((pid) => ({ pid }));
    },
    getUtilizationRate: (cardId: number, deviceId: number, type: number): number => {
      this.calls.util.push(type);
      const c = this.byAddress(cardId, deviceId);
      if (c.failUtil) throw new Error('dcmi_get_device_utilization_rate failed');
      return type === UtilizationType.AI_CORE ? c.aiCore : c.hbm;
    },
  };

  readonly roceStats = (phyId: number): Promise<Map<string, bigint>> => {
    this.calls.roce++;
    const c = this.chips.get(phyId)!; // phy id = logic id in these tests
    if (c.failRoce) return Promise.reject(new Error('hccn_tool -i 0 -stat -g: timed out'));
    return Promise.resolve(
      parseRoceStats(c.roceText ?? `packet statistics:\nroce_tx_all_pkt_num:${c.tx}\nroce_rx_all_pkt_num:${c.rx}\n`),
    );
  };

  readonly procStat = (pid: number): Promise<string> => {
    this.calls.proc++;
    const ticks = this.cpu.get(pid);
    if (ticks === undefined) return Promise.reject(new Error(`ENOENT /proc/${pid}/stat`));
    // fields 14/15 = utime/stime; the command name holds a space and a parenthesis, as real ones may
    return Promise.resolve(`${pid} (python3 (worker) x) S 1 ${pid} ${pid} 0 -1 4194560 1 0 0 0 ${ticks} 0 0 0 20 0\n`);
  };

  private byAddress(cardId: number, deviceId: number): FakeChip {
    return this.chips.get(cardId * 2 + deviceId)!;
  }
}

function thresholds(t: Partial<HangThresholds> = {}): HangDetectionConfig {
  return { enabled: true, thresholds: { ...DEFAULT_HANG_DETECTION_CONFIG.thresholds, ...t } };
}

interface Rig {
  clock: FakeClock;
  fakes: Fakes;
  events: FaultEvent[];
  detector: HangDetector;
  logs: { level: string; msg: string; obj?: object }[];
  tick(n?: number): Promise<void>;
}

let current: Rig | undefined;
afterEach(() => {
  current?.detector.stop();
  current = undefined;
});

function recordingLogger(logs: Rig['logs']): Logger {
  const at =
    (level: string) =>
    (a: string | object, b?: string): void => {
      if (typeof a === 'string') logs.push({ level, msg: a });
      else logs.push({ level, msg: b ?? '', obj: a });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Two chips (logic 0 and 1, card 0 devices 0/1), both idle unless the test gives them processes. */
function rig(extra: Partial<HangDetectorOptions> = {}, chipCount = 2): Rig {
  const clock = new FakeClock();
  const fakes = new Fakes();
  const chips: ChipAddress[] = [];
  for (let i = 0; i < chipCount; i++) {
    chips.push({ logicId: i, phyId: i, cardId: Math.floor(i / 2), deviceId: i % 2 });
    fakes.chips.set(i, { pids: [], aiCore: 0, hbm: 30, tx: 1000n, rx: 1000n });
  }
  const events: FaultEvent[] = [];
  const logs: Rig['logs'] = [];
  const detector = new HangDetector({
    dcmi: fakes.dcmi,
    chips,
    config: DEFAULT_HANG_DETECTION_CONFIG,
    sink: (batch) => events.push(...batch),
    clock,
    roceStats: fakes.roceStats,
    procStat: fakes.procStat,
    clockTicksPerSecond: HZ,
    logger: recordingLogger(logs),
    ...extra,
  });
  const r: Rig = {
    clock,
    fakes,
    events,
    detector,
    logs,
    async tick(n = 1) {
      for (let i = 0; i < n; i++) await clock.advance(TICK);
    },
  };
  current = r;
  return r;
}

/** Gives chip 0 one process that does nothing (hung by every criterion). */
function busyChip0(r: Rig, pids = [4242]): void {
  r.fakes.chip(0).pids = pids;
  for (const pid of pids) r.fakes.cpu.set(pid, 1000);
}

const occur = (logicId: number, timeMs: number): FaultEvent => ({
  logicId,
  code: HANG_FAULT_CODE,
  assertion: 'occur',
  severity: 0,
  timeMs,
});

describe('D.9 hang detection: raising and recovering', () => {
  test('DetectDuration hung samples after the baseline raise 0x200001002 once, not one sample earlier', async () => {
    const r = rig();
    busyChip0(r);
    r.detector.start();
    await r.tick(1); // baseline
    await r.tick(4); // hung samples 1..4
    expect(r.events).toEqual([]);
    await r.tick(1); // hung sample 5 = DetectDuration
    expect(r.events).toEqual([occur(0, r.clock.now())]);
    await r.tick(3); // still hung: no repeat
    expect(r.events).toHaveLength(1);
    expect(r.detector.raised()).toEqual([0]);
  });

  test('a configured DetectDuration of 2 raises on the second hung sample', async () => {
    const r = rig({ config: thresholds({ detectDuration: 2 }) });
    busyChip0(r);
    r.detector.start();
    await r.tick(2);
    expect(r.events).toEqual([]);
    await r.tick(1);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur']);
  });

  test('the first non-hung sample recovers, after the D.4 delay of 1 s', async () => {
    const r = rig();
    busyChip0(r);
    r.detector.start();
    await r.tick(6);
    expect(r.events).toHaveLength(1);
    r.fakes.chip(0).aiCore = 80;
    await r.tick(1);
    expect(r.events).toHaveLength(1); // held
    await r.clock.advance(999);
    expect(r.events).toHaveLength(1);
    await r.clock.advance(1);
    expect(r.events[1]).toEqual({ ...occur(0, r.clock.now()), assertion: 'recover' });
    expect(r.detector.raised()).toEqual([]);
  });

  test('a non-hung sample resets the count: DetectDuration consecutive samples are needed', async () => {
    const r = rig();
    busyChip0(r);
    r.detector.start();
    await r.tick(1 + 4);
    r.fakes.chip(0).aiCore = 50;
    await r.tick(1);
    r.fakes.chip(0).aiCore = 0;
    await r.tick(4);
    expect(r.events).toEqual([]);
    await r.tick(1);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur']);
  });

  test('no process any more recovers a raised chip', async () => {
    const r = rig();
    busyChip0(r);
    r.detector.start();
    await r.tick(6);
    r.fakes.chip(0).pids = [];
    await r.tick(1);
    await r.clock.advance(1000);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur', 'recover']);
  });

  test('a failing process query counts as no process (upstream): recovery, and a warning', async () => {
    const r = rig();
    busyChip0(r);
    r.detector.start();
    await r.tick(6);
    r.fakes.chip(0).failProcesses = true;
    await r.tick(2);
    await r.clock.advance(1000);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur', 'recover']);
    expect(r.logs.filter((l) => l.level === 'warn' && l.msg === 'hang detection reading missing')).toHaveLength(1);
  });

  test('the chips are independent; two chips raised in one tick share one batch', async () => {
    const r = rig();
    const batches: number[] = [];
    const r2 = rig({ sink: (b) => batches.push(b.length) });
    for (const x of [r, r2]) {
      busyChip0(x);
      x.fakes.chip(1).pids = [77];
      x.fakes.cpu.set(77, 5);
      x.detector.start();
    }
    r.fakes.chip(1).aiCore = 90; // chip 1 busy in r
    await r.tick(6);
    expect(r.events.map((e) => e.logicId)).toEqual([0]);
    await r2.tick(6);
    expect(batches).toEqual([2]);
    r.detector.stop();
  });

  test('a chip restored with the hang fault is recovered by its first non-hung sample', async () => {
    const r = rig({
      state: { chip: (id) => (id === 1 ? { faultCodes: ['80E18402', '200001002'] } : { faultCodes: [] }) },
    });
    r.detector.start();
    expect(r.detector.raised()).toEqual([1]);
    await r.tick(1); // chip 1 has no process
    await r.clock.advance(1000);
    expect(r.events).toEqual([{ ...occur(1, r.clock.now()), assertion: 'recover' }]);
  });

  test('stop(): no more ticks, and a held recovery is dropped', async () => {
    const r = rig();
    busyChip0(r);
    r.detector.start();
    await r.tick(6);
    r.fakes.chip(0).pids = [];
    await r.tick(1);
    r.detector.stop();
    const calls = r.fakes.calls.processes;
    await r.tick(3);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur']);
    expect(r.fakes.calls.processes).toBe(calls);
    expect(r.clock.pending()).toBe(0);
  });

  test('issue [T] item 1: a step of the wall clock back 1 h during a tick leaves the next tick one period later', async () => {
    const r = rig();
    busyChip0(r);
    let stepped = false;
    const roce = r.fakes.roceStats;
    r.detector = new HangDetector({
      dcmi: r.fakes.dcmi,
      chips: [{ logicId: 0, phyId: 0, cardId: 0, deviceId: 0 }],
      config: DEFAULT_HANG_DETECTION_CONFIG,
      sink: (batch) => r.events.push(...batch),
      clock: r.clock,
      roceStats: (phyId) => {
        if (!stepped) r.clock.stepWall(-3_600_000); // an NTP correction while the tick reads the counters
        stepped = true;
        return roce(phyId);
      },
      procStat: r.fakes.procStat,
      clockTicksPerSecond: HZ,
    });
    current = r;
    r.detector.start();
    await r.tick(1);
    expect([stepped, r.detector.stats().ticks]).toEqual([true, 1]);
    await r.tick(1);
    expect(r.detector.stats().ticks).toBe(2);
  });

  test('a sink that throws is logged, the detector keeps running', async () => {
    const r = rig({
      sink: () => {
        throw new Error('boom');
      },
    });
    busyChip0(r);
    r.detector.start();
    await r.tick(7);
    expect(r.logs.some((l) => l.level === 'error' && l.msg === 'hang event sink threw')).toBe(true);
    expect(r.detector.stats()).toMatchObject({ ticks: 7, raised: 1 });
  });
});

describe('D.9 baseline', () => {
  test('a changed process set resets the baseline: DetectDuration new samples are needed', async () => {
    const r = rig();
    busyChip0(r, [10, 11]);
    r.detector.start();
    await r.tick(1 + 4); // 4 hung samples
    busyChip0(r, [10, 12]);
    await r.tick(1); // new baseline
    await r.tick(4);
    expect(r.events).toEqual([]);
    await r.tick(1);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur']);
    expect(r.logs.some((l) => l.msg === 'process set changed, hang baseline reset')).toBe(true);
  });

  test('a changed process set on a raised chip recovers it (the new baseline is not hung, as upstream)', async () => {
    const r = rig();
    busyChip0(r, [10]);
    r.detector.start();
    await r.tick(6);
    busyChip0(r, [11]);
    await r.tick(1);
    await r.clock.advance(1000);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur', 'recover']);
  });

  test('the same pids in another order are the same process set', async () => {
    const r = rig();
    busyChip0(r, [10, 11]);
    r.detector.start();
    await r.tick(3);
    r.fakes.chip(0).pids = [11, 10];
    await r.tick(3);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur']);
  });
});

describe('D.9 thresholds: each criterion alone keeps a chip from looking hung', () => {
  // per tick: AI-core value, and what grows between two samples
  const rows: { name: string; hung: boolean; ai?: number; hbm?: number; traffic?: bigint; cpu?: number }[] = [
    { name: 'all quiet', hung: true },
    { name: 'AI-core 4 % < 5 %', hung: true, ai: 4 },
    { name: 'AI-core 5 % is not < 5 %', hung: false, ai: 5 },
    { name: 'HBM delta 0 ≤ 0', hung: true, hbm: 0 },
    { name: 'HBM delta -3 ≤ 0 (memory freed)', hung: true, hbm: -3 },
    { name: 'HBM delta +1 > 0', hung: false, hbm: 1 },
    { name: 'traffic delta 99 < 100', hung: true, traffic: 99n },
    { name: 'traffic delta 100 is not < 100', hung: false, traffic: 100n },
    { name: 'CPU delta 4.99 s < 5 s', hung: true, cpu: 499 },
    { name: 'CPU delta 5 s is not < 5 s', hung: false, cpu: 500 },
  ];
  test.each(rows)('$name → hung: $hung', async ({ hung, ai = 0, hbm = 0, traffic = 0n, cpu = 0 }) => {
    const r = rig();
    busyChip0(r, [7]);
    const c = r.fakes.chip(0);
    c.aiCore = ai;
    c.hbm = 50;
    r.detector.start();
    for (let i = 0; i < 6; i++) {
      await r.tick(1);
      c.hbm += hbm;
      c.tx += traffic / 2n;
      c.rx += traffic - traffic / 2n;
      r.fakes.cpu.set(7, r.fakes.cpu.get(7)! + cpu);
    }
    expect(r.events.length).toBe(hung ? 1 : 0);
  });

  test('the CPU time of every process of the chip is summed', async () => {
    const r = rig();
    busyChip0(r, [1, 2]);
    r.detector.start();
    for (let i = 0; i < 6; i++) {
      await r.tick(1);
      r.fakes.cpu.set(1, r.fakes.cpu.get(1)! + 300); // 3 s + 3 s = 6 s ≥ 5 s
      r.fakes.cpu.set(2, r.fakes.cpu.get(2)! + 300);
    }
    expect(r.events).toEqual([]);
  });

  test('the clock tick rate converts /proc ticks to seconds', async () => {
    const r = rig({ clockTicksPerSecond: 1000 });
    busyChip0(r, [1]);
    r.detector.start();
    for (let i = 0; i < 6; i++) {
      await r.tick(1);
      r.fakes.cpu.set(1, r.fakes.cpu.get(1)! + 4000); // 4 s at 1000 Hz
    }
    expect(r.events).toHaveLength(1);
  });

  test('configured thresholds are used', async () => {
    const r = rig({ config: thresholds({ aiCoreUtilization: 60, trafficDelta: 1000 }) });
    busyChip0(r, [1]);
    const c = r.fakes.chip(0);
    c.aiCore = 50;
    r.detector.start();
    for (let i = 0; i < 6; i++) {
      await r.tick(1);
      c.tx += 500n;
    }
    expect(r.events).toHaveLength(1);
  });
});

describe('D.9 missing readings', () => {
  test('hccn_tool failing: inconclusive, no event, one warning, and a raised fault is not recovered', async () => {
    const r = rig();
    busyChip0(r);
    r.detector.start();
    await r.tick(6);
    expect(r.events).toHaveLength(1);
    r.fakes.chip(0).failRoce = true;
    await r.tick(5);
    await r.clock.advance(1000);
    expect(r.events).toHaveLength(1);
    expect(r.detector.raised()).toEqual([0]);
    const warns = r.logs.filter((l) => l.msg === 'hang detection reading missing');
    expect(warns).toHaveLength(1);
    expect(JSON.stringify(warns[0]!.obj)).toContain('RoCE traffic');
    // readable again: the first good sample only rebuilds the baseline's traffic, then samples count again
    r.fakes.chip(0).failRoce = false;
    r.fakes.chip(0).aiCore = 90;
    await r.tick(1); // inconclusive (no traffic baseline)
    await r.tick(1);
    await r.clock.advance(1000);
    expect(r.events.map((e) => e.assertion)).toEqual(['occur', 'recover']);
    expect(r.logs.some((l) => l.msg === 'hang detection readings complete again')).toBe(true);
  });

  test('hccn_tool without the RoCE keys is inconclusive', async () => {
    const r = rig();
    busyChip0(r);
    r.fakes.chip(0).roceText = 'packet statistics:\nroce_tx_all_pkt_num:5\n';
    r.detector.start();
    await r.tick(8);
    expect(r.events).toEqual([]);
    expect(r.detector.stats().inconclusive).toBe(7);
  });

  test('no RoCE reader (no parameter plane): traffic is not measured and does not prevent detection', async () => {
    const r = rig({ roceStats: undefined });
    busyChip0(r);
    r.detector.start();
    await r.tick(6);
    expect(r.events).toHaveLength(1);
    expect(r.fakes.calls.roce).toBe(0);
  });

  test('DCMI utilisation failing is inconclusive', async () => {
    const r = rig();
    busyChip0(r);
    r.fakes.chip(0).failUtil = true;
    r.detector.start();
    await r.tick(8);
    expect(r.events).toEqual([]);
  });

  test('no readable /proc entry is inconclusive; one unreadable pid among several is left out', async () => {
    const r = rig();
    r.fakes.chip(0).pids = [5];
    r.detector.start();
    await r.tick(8);
    expect(r.events).toEqual([]);
    busyChip0(r, [5, 6]);
    r.fakes.cpu.delete(5);
    await r.tick(6);
    expect(r.events).toHaveLength(1);
  });
});

describe('D.9 cost and configuration', () => {
  test('no process on any chip: only the process query of each chip per tick', async () => {
    const r = rig({}, 4);
    r.detector.start();
    await r.tick(3);
    expect(r.fakes.calls).toEqual({ processes: 12, util: [], roce: 0, proc: 0 });
    expect(r.events).toEqual([]);
  });

  test('a busy chip reads AI-core (type 2) and HBM (type 6) utilisation, hccn and /proc once per tick', async () => {
    const r = rig({}, 4);
    busyChip0(r, [1, 2]);
    r.detector.start();
    await r.tick(2);
    expect(r.fakes.calls).toEqual({ processes: 8, util: [2, 6, 2, 6], roce: 2, proc: 4 });
  });

  test('disabled: no DCMI call, no timer', async () => {
    const r = rig({ config: { ...DEFAULT_HANG_DETECTION_CONFIG, enabled: false } });
    busyChip0(r);
    r.detector.start();
    expect(r.clock.pending()).toBe(0);
    await r.tick(10);
    expect(r.fakes.calls.processes).toBe(0);
    expect(r.events).toEqual([]);
  });

  test('disabled: a chip restored with the hang fault is recovered at start', async () => {
    const r = rig({
      config: { ...DEFAULT_HANG_DETECTION_CONFIG, enabled: false },
      state: { chip: (id) => ({ faultCodes: id === 0 ? ['200001002'] : [] }) },
    });
    r.detector.start();
    await r.clock.advance(1000);
    expect(r.events).toEqual([{ ...occur(0, r.clock.now()), assertion: 'recover' }]);
  });

  test('bad options are refused', () => {
    expect(() => rig({ intervalMs: 0 })).toThrow(RangeError);
    expect(() => rig({ intervalMs: 1000, recoveryDelayMs: 1000 })).toThrow(/recoveryDelayMs/);
    expect(() => rig({ clockTicksPerSecond: 0 })).toThrow(/clockTicksPerSecond/);
  });

  test('a slow tick does not overlap the next one', async () => {
    let release: (() => void) | undefined;
    const r: Rig = rig({
      roceStats: (phy) =>
        new Promise((resolve) => {
          release = () => resolve(r.fakes.roceStats(phy));
        }),
    });
    busyChip0(r);
    r.detector.start();
    await r.tick(3);
    expect(r.detector.stats().ticks).toBe(1); // the first tick waits for hccn_tool
    release?.();
    await r.clock.advance(0);
    await r.tick(1);
    expect(r.detector.stats().ticks).toBe(2);
  });
});

describe('D.9 config file (hangDetectionConfig.json)', () => {
  const full = (t: Record<string, unknown>, enabled: unknown = true): string =>
    JSON.stringify({ HangDetection: { Enabled: enabled, Threshold: t } });

  test('upstream shipped file = the defaults', () => {
    const text = full({
      AICoreUtilization: 5,
      HbmMemoryDelta: 0,
      TrafficDelta: 100,
      CPUTimeDelta: 5,
      DetectDuration: 5,
    });
    expect(parseHangDetectionConfig(text)).toEqual({
      config: DEFAULT_HANG_DETECTION_CONFIG,
      problems: [],
      rejected: false,
    });
  });

  test('values are taken; keys match case-insensitively like Go; missing fields take their defaults', () => {
    const r = parseHangDetectionConfig('{"hangdetection":{"enabled":false,"threshold":{"detectduration":3}}}');
    expect(r.rejected).toBe(false);
    expect(r.config).toEqual({
      enabled: false,
      thresholds: { ...DEFAULT_HANG_DETECTION_CONFIG.thresholds, detectDuration: 3 },
    });
    expect(parseHangDetectionConfig('{}').config).toEqual(DEFAULT_HANG_DETECTION_CONFIG);
  });

  test.each([
    ['not JSON', '{"HangDetection": ', /not JSON/],
    ['a string threshold', full({ AICoreUtilization: '5' }), /\$\.HangDetection\.Threshold\.AICoreUtilization: "5"/],
    ['a fraction', full({ TrafficDelta: 1.5 }), /TrafficDelta: 1\.5 is not an integer/],
    ['beyond int32', full({ CPUTimeDelta: 2147483648 }), /CPUTimeDelta: 2147483648 is outside the int32 range/],
    ['Enabled as a string', full({}, 'yes'), /\$\.HangDetection\.Enabled: "yes" is not a boolean/],
    [
      'Threshold as an array',
      '{"HangDetection":{"Threshold":[]}}',
      /\$\.HangDetection\.Threshold: .* is not an object/,
    ],
    ['a top-level array', '[]', /\$: .* is not an object/],
  ])('%s: the whole file is refused, the problem names the field', (_name, text, problem) => {
    const r = parseHangDetectionConfig(text);
    expect(r.rejected).toBe(true);
    expect(r.config).toBe(DEFAULT_HANG_DETECTION_CONFIG);
    expect(r.problems.join('\n')).toMatch(problem);
  });

  test('every bad field is named, not only the first', () => {
    const r = parseHangDetectionConfig(full({ AICoreUtilization: 'x', DetectDuration: 0.5 }, 1));
    expect(r.problems).toHaveLength(3);
  });

  test('negative thresholds and DetectDuration ≤ 0 fall back per field (upstream), other fields are kept', () => {
    const r = parseHangDetectionConfig(
      full({ AICoreUtilization: -1, HbmMemoryDelta: 2, TrafficDelta: -5, CPUTimeDelta: 0, DetectDuration: 0 }),
    );
    expect(r.rejected).toBe(false);
    expect(r.config.thresholds).toEqual({
      aiCoreUtilization: 5,
      hbmMemoryDelta: 2,
      trafficDelta: 100,
      cpuTimeDelta: 0,
      detectDuration: 5,
    });
    expect(r.problems).toEqual([
      '$.HangDetection.Threshold.AICoreUtilization: -1 is below 0, using the default 5 %',
      '$.HangDetection.Threshold.TrafficDelta: -5 is below 0, using the default 100 packets',
      '$.HangDetection.Threshold.DetectDuration: 0 is below 1, using the default 5 samples',
    ]);
  });

  test('unknown keys are reported and ignored; null leaves the default', () => {
    const r = parseHangDetectionConfig('{"HangDetection":{"Enable":false,"Threshold":{"DetectDuration":null}}}');
    expect(r.rejected).toBe(false);
    expect(r.config).toEqual(DEFAULT_HANG_DETECTION_CONFIG);
    expect(r.problems).toEqual(['$.HangDetection.Enable: unknown key, ignored']);
  });

  test('a document over the size limit is refused', () => {
    const r = parseHangDetectionConfig(`{"pad":"${'x'.repeat(MAX_HANG_CONFIG_BYTES)}"}`);
    expect(r.rejected).toBe(true);
    expect(r.problems[0]).toMatch(/larger than/);
  });

  test('load: no file = defaults without a warning; a bad file = defaults and exactly one warning', async () => {
    const logs: Rig['logs'] = [];
    const logger = recordingLogger(logs);
    const none = await loadHangDetectionConfig('/x/hang.json', { logger, read: () => Promise.resolve(undefined) });
    expect(none).toBe(DEFAULT_HANG_DETECTION_CONFIG);
    expect(logs.filter((l) => l.level === 'warn')).toEqual([]);
    const bad = await loadHangDetectionConfig('/x/hang.json', {
      logger,
      read: () => Promise.resolve(full({ DetectDuration: 'five', CPUTimeDelta: [] })),
    });
    expect(bad).toBe(DEFAULT_HANG_DETECTION_CONFIG);
    const warns = logs.filter((l) => l.level === 'warn');
    expect(warns).toHaveLength(1);
    expect((warns[0]!.obj as { problems: string[] }).problems).toHaveLength(2);
    const unreadable = await loadHangDetectionConfig('/x/hang.json', {
      logger,
      read: () => Promise.reject(new Error('EACCES')),
    });
    expect(unreadable).toBe(DEFAULT_HANG_DETECTION_CONFIG);
    expect(logs.filter((l) => l.level === 'warn')).toHaveLength(2);
    expect(logs.filter((l) => l.level === 'info' && l.msg === 'hang detection config')).toHaveLength(3);
  });

  test('load from a real (temporary) file; a folder or an oversized file is refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hang-config-'));
    try {
      const file = path.join(dir, 'hangDetectionConfig.json');
      fs.writeFileSync(file, full({ DetectDuration: 2 }, false));
      expect(await loadHangDetectionConfig(file)).toEqual({
        enabled: false,
        thresholds: { ...DEFAULT_HANG_DETECTION_CONFIG.thresholds, detectDuration: 2 },
      });
      expect(await readConfigFile(path.join(dir, 'missing.json'), 100)).toBeUndefined();
      await expect(readConfigFile(dir, 100)).rejects.toThrow(/not a regular file/);
      await expect(readConfigFile(file, 10)).rejects.toThrow(/over the 10-byte limit/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('D.9 /proc helpers', () => {
  test('utime + stime are read after the last parenthesis of the command name', () => {
    const line = '42 (a) b (c)) R 1 42 42 0 -1 4194304 10 0 0 0 700 45 0 0 20 0 1 0 100';
    expect(parseProcCpuTicks(line)).toBe(745);
    expect(parseProcCpuTicks('42 no-parenthesis R 1')).toBeUndefined();
    expect(parseProcCpuTicks('42 (x) R 1 2')).toBeUndefined();
    expect(parseProcCpuTicks('42 (x) R 1 42 42 0 -1 4194304 10 0 0 0 -7 45')).toBeUndefined();
  });

  test('AT_CLKTCK is read from <procRoot>/self/auxv', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hang-proc-'));
    try {
      fs.mkdirSync(path.join(dir, 'self'));
      const auxv = Buffer.alloc(16 * 3);
      const write = os.endianness() === 'LE' ? 'writeBigUInt64LE' : 'writeBigUInt64BE';
      auxv[write](6n, 0); // AT_PAGESZ
      auxv[write](4096n, 8);
      auxv[write](17n, 16); // AT_CLKTCK
      auxv[write](250n, 24);
      fs.writeFileSync(path.join(dir, 'self', 'auxv'), auxv);
      expect(readClockTicksPerSecond(dir)).toBe(250);
      expect(readClockTicksPerSecond(path.join(dir, 'missing'))).toBeUndefined();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('D.9 on the mock DCMI library and the mock hccn_tool', () => {
  test('real process query, utilisation types and `-stat -g` counters: frozen counters raise, growing ones recover', async () => {
    const scenario = loadScenario('910b-8chip');
    scenario.cards[0]!.chips[0]!.processes = 2;
    const h = await openMock(scenario);
    try {
      const chips = h.dcmi.enumerate();
      const chip0 = chips.find((c) => c.logicId === 0)!;
      const toolPath = fs.realpathSync(path.join(PROJECT_ROOT, 'build/Release/hccn_tool'));
      const clock = new FakeClock();
      const events: FaultEvent[] = [];
      const stats: number[] = [];
      const detector = new HangDetector({
        dcmi: h.dcmi,
        chips,
        config: DEFAULT_HANG_DETECTION_CONFIG,
        sink: (b) => events.push(...b),
        clock,
        roceStats: (phy) => {
          stats.push(phy);
          return queryRoceStats({ toolPath, env: { ASCEND_MOCK_CONTROL: h.controlPath } }, phy);
        },
        procStat: (pid) => Promise.resolve(`${pid} (train) S 1 1 1 0 -1 0 0 0 0 0 10 10 0 0`),
        recoveryDelayMs: 0,
      });
      await h.control.expectOk({ op: 'stat', logicId: 0, tx: 5, rx: 5, growPerQuery: 0 });
      for (let i = 0; i < 6; i++) await detector.runOnce();
      expect(stats).toEqual(Array(6).fill(chip0.phyId)); // only the chip with processes is sampled
      expect(events.map((e) => [e.logicId, e.assertion])).toEqual([[0, 'occur']]);
      await h.control.expectOk({ op: 'stat', logicId: 0, growPerQuery: 1000 });
      await detector.runOnce();
      expect(events.map((e) => [e.logicId, e.assertion])).toEqual([
        [0, 'occur'],
        [0, 'recover'],
      ]);
      detector.stop();
    } finally {
      h.close();
    }
  });
});
