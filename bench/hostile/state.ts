/**
 * Hostile campaign "state" (issue 12 items 5 and 8): what the engine state and the agent's memory do under the
 * largest legal fault configuration, whether a revert gives the memory back, what an over-limit configuration
 * does, and whether kill -9 right after a fault loses an escalation count.
 *
 * Run: `npm run build && npx tsx bench/hostile/state.ts` (≈ 2 minutes). Prints a table, then one JSON line
 * `{"campaign":"state",...}`. Environment: BENCH_KILL_TRIALS (default 4), BENCH_STORM_SECONDS (default 5).
 *
 * Part 1 runs the pure engine in this process (16 chips). Part 2 runs the built agent (`dist/cli/agent.js`) as a
 * child process on the mock library with the kubelet simulator and the API stand-in, swaps its fault files on
 * disk (it watches them), samples its RSS (`/proc/<pid>/status`) every 50 ms, kills it with SIGKILL and restarts
 * it on the same `-stateDir`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import {
  FaultEngine,
  MAX_CONFIG_BYTES,
  exportEngineState,
  importEngineState,
  parseFaultCodeJson,
  parsePolicy,
  type FaultPolicy,
} from '../../src/faults/index.js';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName, KEY_MANUALLY_SEPARATE } from '../../src/kube/device-info.js';
import { ENGINE_STATE_FILE, EngineStatePersistence, MAX_STATE_BYTES } from '../../src/kube/engine-state-persistence.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { KubeletSimulator } from '../../src/sim/kubelet.js';
import { MockControlClient } from '../../src/sim/mock-control.js';
import { makeDeviceNodes, sandboxFlags } from '../../src/sim/simulate.js';
import { fmt, percentile, stopChild } from '../stats.js';

const NODE = 'bench-state-node';
const RESOURCE = 'huawei.com/Ascend910';
const FREQ = '80B78000'; // shipped FaultFrequency: 2 in 24 h -> ManuallySeparateNPU
const SEP = '80E3A201'; // SeparateNPU, no escalation rule
const DAEMONSET_LIMIT_MIB = 256;
const KILL_TRIALS = Number(process.env.BENCH_KILL_TRIALS ?? 4);
const STORM_SECONDS = Number(process.env.BENCH_STORM_SECONDS ?? 5);

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const shippedFc = fs.readFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), 'utf8');
const shippedCu = fs.readFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), 'utf8');

// ---------------------------------------------------------------------------------------------------------------
// Hostile documents

/** Distinct hex codes from `from` up whose JSON list (`"c",` each) fits in `budget` bytes. */
function fillCodes(from: number, budget: number): { codes: string[]; next: number } {
  const codes: string[] = [];
  let len = 0;
  let n = from;
  for (; ; n++) {
    const s = n.toString(16);
    if (len + s.length + 3 > budget) break;
    codes.push(s);
    len += s.length + 3;
  }
  return { codes, next: n };
}

/** The shipped faultCode.json plus as many extra NotHandleFault codes as fit in `bytes`. */
function hugeFaultCode(bytes: number, from: number): { text: string; next: number } {
  const doc = JSON.parse(shippedFc) as Record<string, string[]>;
  const base = JSON.stringify(doc).length;
  const { codes, next } = fillCodes(from, bytes - base - 4);
  doc.NotHandleFaultCodes = [...(doc.NotHandleFaultCodes ?? []), ...codes];
  return { text: JSON.stringify(doc), next };
}

/** The shipped faultCustomization.json plus one FaultFrequency entry naming as many extra codes as fit. */
function hugeCustomization(bytes: number, from: number): string {
  const doc = JSON.parse(shippedCu) as { FaultFrequency: unknown[] };
  const entry = { EventId: [] as string[], TimeWindow: 86400, Times: 2, FaultHandling: 'ManuallySeparateNPU' };
  const base = JSON.stringify({ ...doc, FaultFrequency: [...doc.FaultFrequency, entry] }).length;
  entry.EventId = fillCodes(from, bytes - base - 4).codes;
  doc.FaultFrequency.push(entry);
  return JSON.stringify(doc);
}

// ---------------------------------------------------------------------------------------------------------------
// Part 1: the engine in this process

interface EngineRow {
  input: string;
  bytes: number;
  accepted: boolean;
  spellings: number;
  stateBytes: number;
  afterRevert?: { spellings: number; stateBytes: number };
  note: string;
}

function engineCampaign(
  fc: string,
  cu: string,
): { rows: EngineRow[]; baseline: { spellings: number; stateBytes: number } } {
  const shipped = parsePolicy(shippedFc, shippedCu).policy!;
  const engine = new FaultEngine(shipped, { chips: Array.from({ length: 16 }, (_, i) => ({ logicId: i, phyId: i })) });
  const T = 1_767_225_600_000;
  const freq = Number.parseInt(FREQ, 16);
  engine.cycle({ now: T, events: [{ logicId: 1, code: freq, assertion: 'occur', severity: 2, timeMs: T }] });
  const measure = (): { spellings: number; stateBytes: number } => ({
    spellings: engine.formatCount,
    stateBytes: JSON.stringify(exportEngineState(engine)).length,
  });
  const baseline = measure();
  const rows: EngineRow[] = [];
  const swap = (input: string, p: FaultPolicy, bytes: number): void => {
    engine.setPolicy(p);
    engine.cycle({ now: T + 1000 });
    const loaded = measure();
    engine.setPolicy(shipped);
    engine.cycle({ now: T + 2000 });
    rows.push({ input, bytes, accepted: true, ...loaded, afterRevert: measure(), note: 'loaded, then reverted' });
  };
  const pc = parsePolicy(fc, shippedCu);
  swap('faultCode.json at the limit', pc.policy!, fc.length);
  const pu = parsePolicy(shippedFc, cu);
  swap('faultCustomization.json at the limit', pu.policy!, cu.length);
  const both = parsePolicy(fc, cu).policy!;
  engine.setPolicy(both);
  engine.cycle({ now: T + 3000 });
  const doc = exportEngineState(engine);
  const again = new FaultEngine(both, { chips: Array.from({ length: 16 }, (_, i) => ({ logicId: i, phyId: i })) });
  const imported = importEngineState(again, JSON.parse(JSON.stringify(doc)));
  rows.push({
    input: 'both files at the limit',
    bytes: fc.length + cu.length,
    accepted: true,
    spellings: engine.formatCount,
    stateBytes: JSON.stringify(doc).length,
    note: `state ≤ limit ${MAX_STATE_BYTES}: ${JSON.stringify(doc).length <= MAX_STATE_BYTES}; re-import ${imported.ok ? 'ok' : 'failed'}`,
  });
  engine.setPolicy(shipped);
  const issue = hugeFaultCode(9.9e6, 0x10000000).text;
  const r = parseFaultCodeJson(issue);
  rows.push({
    input: 'issue figure: 9.9 MB faultCode.json',
    bytes: issue.length,
    accepted: r.ok,
    spellings: NaN,
    stateBytes: NaN,
    note: r.ok ? 'accepted' : r.fatal.join('; '),
  });
  return { rows, baseline };
}

/**
 * The durability window in this process: how long the synchronous phase of a save (serialise, write, rename;
 * from then on the state survives kill -9) and an fsync pass (from then on a power loss) take, 16 chips.
 */
async function saveTiming(): Promise<{
  samples: number;
  writeP50Ms: number;
  writeP99Ms: number;
  fsyncP50Ms: number;
  fsyncP99Ms: number;
}> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-hostile-save-'));
  try {
    const engine = new FaultEngine(parsePolicy(shippedFc, shippedCu).policy!, {
      chips: Array.from({ length: 16 }, (_, i) => ({ logicId: i, phyId: i })),
    });
    const p = new EngineStatePersistence({ dir, nodeName: NODE });
    // the engine as the durable source (in the agent: the state store that owns it)
    const source = {
      get durableRevision() {
        return engine.durableRevision;
      },
      exportDurableState: () => exportEngineState(engine),
    };
    const writes: number[] = [];
    const syncs: number[] = [];
    const T = 1_767_225_600_000;
    for (let i = 0; i < 200; i++) {
      engine.cycle({
        now: T + i * 1000,
        events: [
          { logicId: i % 16, code: Number.parseInt(FREQ, 16), assertion: i % 2 ? 'recover' : 'occur', severity: 2 },
        ],
      });
      const t0 = performance.now();
      const done = p.save(p.capture(source, ''));
      const t1 = performance.now();
      await done;
      writes.push(t1 - t0);
      syncs.push(performance.now() - t1);
    }
    return {
      samples: writes.length,
      writeP50Ms: percentile(writes, 50),
      writeP99Ms: percentile(writes, 99),
      fsyncP50Ms: percentile(syncs, 50),
      fsyncP99Ms: percentile(syncs, 99),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Part 2: the agent as a child process

class Rig {
  child: ChildProcess | undefined;
  out = '';
  #control: MockControlClient | undefined;
  #rssMax = 0;
  #sampler: NodeJS.Timeout | undefined;

  private constructor(
    readonly dir: string,
    readonly api: KubeApiStandIn,
    readonly kubelet: KubeletSimulator,
    readonly kubeconfig: string,
    readonly scenario: string,
  ) {}

  static async create(scenario: string): Promise<Rig> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-hostile-state-'));
    makeDeviceNodes(path.join(dir, 'dev'));
    for (const sub of ['sys', 'host', 'state']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
    fs.writeFileSync(path.join(dir, 'faultCode.json'), shippedFc);
    fs.writeFileSync(path.join(dir, 'faultCustomization.json'), shippedCu);
    const api = await KubeApiStandIn.start();
    api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: NODE } });
    const kubeconfig = path.join(dir, 'kubeconfig');
    await api.writeKubeconfig(kubeconfig);
    const kubelet = await KubeletSimulator.start({ dir: path.join(dir, 'kubelet') });
    return new Rig(dir, api, kubelet, kubeconfig, scenario);
  }

  get pid(): number {
    return this.child!.pid!;
  }

  /** Starts the agent and waits for its registration; RSS is sampled every 50 ms from the spawn on. */
  async start(): Promise<void> {
    const after = this.kubelet.registrations.at(-1)?.seq ?? 0;
    this.#control?.close();
    this.#control = undefined;
    this.out = '';
    this.#rssMax = 0;
    this.child = spawn(
      process.execPath,
      [
        path.join(PROJECT_ROOT, 'dist', 'cli', 'agent.js'),
        ...sandboxFlags(this.dir, { kubeconfig: this.kubeconfig, listWatchPeriod: 5 }),
      ],
      {
        env: {
          PATH: process.env.PATH,
          NODE_NAME: NODE,
          ASCEND_MOCK_SCENARIO: this.scenario,
          ASCEND_MOCK_CONTROL: this.controlPath,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    this.child.stdout!.on('data', (b: Buffer) => {
      this.out += b.toString();
      if (this.out.length > 4e6) this.out = this.out.slice(-2e6);
    });
    clearInterval(this.#sampler);
    this.#sampler = setInterval(() => {
      const r = this.rss();
      if (Number.isFinite(r)) this.#rssMax = Math.max(this.#rssMax, r);
    }, 50);
    await this.kubelet.waitForRegistration(RESOURCE, after, 60_000);
  }

  get controlPath(): string {
    return path.join(this.dir, 'mock.sock');
  }

  /** Highest RSS sample since the last start or reset. */
  rssPeak(reset = false): number {
    const r = this.#rssMax;
    if (reset) this.#rssMax = this.rss();
    return r;
  }

  rss(): number {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : NaN;
    } catch {
      return NaN;
    }
  }

  cpuTicks(): number {
    const f = fs.readFileSync(`/proc/${this.pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  }

  async mock(req: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.#control ??= await MockControlClient.connect(this.controlPath);
    return this.#control.expectOk(req);
  }

  async kill9(): Promise<void> {
    const c = this.child!;
    if (c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  }

  alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  manual(): string {
    const cm = this.api.store.get(
      this.api.resourceType('', 'configmaps'),
      DEVICE_INFO_NAMESPACE,
      deviceInfoConfigMapName(NODE),
    ) as { data?: Record<string, string> } | undefined;
    return cm?.data?.[KEY_MANUALLY_SEPARATE] ?? '';
  }

  health(id: string): string | undefined {
    return this.kubelet.devices(RESOURCE)?.find((d) => d.ID === id)?.health;
  }

  stateBytes(): number {
    try {
      return fs.statSync(path.join(this.dir, 'state', ENGINE_STATE_FILE)).size;
    } catch {
      return NaN;
    }
  }

  /** Counts log lines of the current run matching `re`. */
  count(re: RegExp): number {
    return this.out.split('\n').filter((l) => re.test(l)).length;
  }

  async until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) {
        log(`  (timed out waiting for ${what})`);
        return false;
      }
      await sleep(20);
    }
    return true;
  }

  /** Writes a fault file the agent watches and waits for its verdict in the log. */
  async swap(
    file: 'faultCode.json' | 'faultCustomization.json',
    text: string,
  ): Promise<'loaded' | 'rejected' | 'none'> {
    const before = { loaded: this.count(/: loaded"/), rejected: this.count(/keeping the last good version/) };
    const tmp = path.join(this.dir, `${file}.new`);
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, path.join(this.dir, file));
    let verdict: 'loaded' | 'rejected' | 'none' = 'none';
    await this.until(() => {
      if (this.count(/: loaded"/) > before.loaded) verdict = 'loaded';
      else if (this.count(/keeping the last good version/) > before.rejected) verdict = 'rejected';
      return verdict !== 'none';
    }, `the verdict on ${file}`);
    return verdict;
  }

  async close(): Promise<void> {
    clearInterval(this.#sampler);
    this.#control?.close();
    if (this.child) await stopChild(this.child);
    await this.kubelet.close();
    await this.api.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

interface AgentRow {
  step: string;
  rssMiB: number;
  rssPeakMiB: number;
  stateBytes: number;
  note: string;
}

async function agentCampaign(
  fc: string,
  cu: string,
): Promise<{ rows: AgentRow[]; crashes: number; inputs: number; lostCounts: number; killTrials: number }> {
  const rows: AgentRow[] = [];
  let crashes = 0;
  let inputs = 0;
  let lostCounts = 0;
  const rig = await Rig.create(path.join(PROJECT_ROOT, 'scenarios', '910a3-16chip.json'));
  const row = (step: string, note: string): void => {
    rows.push({ step, rssMiB: rig.rss(), rssPeakMiB: rig.rssPeak(true), stateBytes: rig.stateBytes(), note });
    log(
      `  ${step}: RSS ${fmt(rows.at(-1)!.rssMiB, 1)} MiB (peak ${fmt(rows.at(-1)!.rssPeakMiB, 1)}), state ${rows.at(-1)!.stateBytes} B; ${note}`,
    );
  };
  /** A store change, so that the agent saves: a plain fault and its recovery on chip 15. */
  const nudge = async (): Promise<void> => {
    await rig.mock({ op: 'fault', logicId: 15, eventId: SEP, assertion: 'occur' });
    await rig.until(() => rig.health('Ascend910-15') === 'Unhealthy', 'chip 15 Unhealthy');
    await rig.mock({ op: 'fault', logicId: 15, eventId: SEP, assertion: 'recover' });
    await rig.until(() => rig.health('Ascend910-15') === 'Healthy', 'chip 15 Healthy');
    await sleep(1500); // the debounced save of a change without escalation state
  };
  try {
    await rig.start();
    await sleep(2000);
    // One occurrence on chip 1: a FaultFrequency count that must survive everything below.
    await rig.mock({ op: 'fault', logicId: 1, eventId: FREQ, assertion: 'occur' });
    await rig.until(() => rig.health('Ascend910-1') === 'Unhealthy', 'chip 1 Unhealthy');
    await rig.mock({ op: 'fault', logicId: 1, eventId: FREQ, assertion: 'recover' });
    await rig.until(() => rig.health('Ascend910-1') === 'Healthy', 'chip 1 Healthy');
    await nudge();
    row('shipped configuration, idle', 'chip 1 holds one FaultFrequency occurrence');
    inputs++;
    const v1 = await rig.swap('faultCode.json', fc);
    await nudge();
    row('faultCode.json at the 1 MiB limit', `${v1} (${fc.length} B)`);
    inputs++;
    const v2 = await rig.swap('faultCustomization.json', cu);
    await nudge();
    row('+ faultCustomization.json at the limit', `${v2} (${cu.length} B)`);
    inputs++;
    await rig.swap('faultCode.json', shippedFc);
    await rig.swap('faultCustomization.json', shippedCu);
    await nudge();
    await sleep(3000);
    row('reverted to the shipped files', 'memory and state back?');
    for (const [what, text] of [
      ['issue figure: 9.9 MB faultCode.json', hugeFaultCode(9.9e6, 0x10000000).text],
      ['faultCode.json 1 byte over the limit', `${' '.repeat(MAX_CONFIG_BYTES + 1 - shippedFc.length)}${shippedFc}`],
    ] as const) {
      inputs++;
      const v = await rig.swap('faultCode.json', text);
      row(what, v);
    }
    fs.writeFileSync(path.join(rig.dir, 'faultCode.json'), shippedFc); // the version in use: no verdict logged
    await sleep(500);
    if (!rig.alive()) crashes++;
    // Start-up with both hostile files in place: the parse at start is the other memory peak.
    fs.writeFileSync(path.join(rig.dir, 'faultCode.json'), fc);
    fs.writeFileSync(path.join(rig.dir, 'faultCustomization.json'), cu);
    await rig.kill9();
    await rig.start();
    await sleep(3000);
    row('kill -9, start with both files at the limit', 'restored from the state file');
    // The count from the very beginning: the second occurrence must separate chip 1.
    await rig.mock({ op: 'fault', logicId: 1, eventId: FREQ, assertion: 'occur' });
    const kept = await rig.until(() => rig.manual().split(',').includes('Ascend910-1'), 'chip 1 separated', 15_000);
    if (!kept) lostCounts++;
    row('second occurrence on chip 1', kept ? 'ManuallySeparateNPU: the count survived' : 'COUNT LOST');
    fs.writeFileSync(path.join(rig.dir, 'faultCode.json'), shippedFc);
    fs.writeFileSync(path.join(rig.dir, 'faultCustomization.json'), shippedCu);
    // kill -9 the moment kubelet shows a FaultFrequency fault, restart, second occurrence.
    for (let t = 0; t < KILL_TRIALS; t++) {
      const chip = 2 + t;
      const id = `Ascend910-${chip}`;
      await rig.mock({ op: 'fault', logicId: chip, eventId: FREQ, assertion: 'occur' });
      await rig.kubelet.waitForDevices(RESOURCE, (d) => d.some((x) => x.ID === id && x.health === 'Unhealthy'), id);
      await rig.kill9();
      await rig.start();
      await rig.mock({ op: 'fault', logicId: chip, eventId: FREQ, assertion: 'occur' });
      const ok = await rig.until(() => rig.manual().split(',').includes(id), `${id} separated`, 15_000);
      if (!ok) lostCounts++;
      log(`  kill -9 trial ${t + 1}: ${ok ? 'count survived' : 'COUNT LOST'}`);
    }
    if (!rig.alive()) crashes++;
  } finally {
    await rig.close();
  }
  return { rows, crashes, inputs, lostCounts, killTrials: KILL_TRIALS };
}

/** State writes and agent CPU during a storm of one code on all 16 chips (occurrences and recoveries). */
async function stormCampaign(
  code: string,
): Promise<{ code: string; events: number; writesPerSec: number; cpuPercent: number }> {
  const rig = await Rig.create(path.join(PROJECT_ROOT, 'scenarios', '910a3-16chip.json'));
  try {
    await rig.start();
    await sleep(2000);
    let writes = 0;
    const w = fs.watch(path.join(rig.dir, 'state'), (_e, name) => {
      if (name === ENGINE_STATE_FILE) writes++;
    });
    const clients: MockControlClient[] = [];
    const rate = 5000;
    const perBurst = rate / 32;
    const count = Math.round(perBurst * STORM_SECONDS);
    for (let i = 0; i < 32; i++) clients.push(await MockControlClient.connect(rig.controlPath));
    const c0 = rig.cpuTicks();
    const t0 = performance.now();
    const bursts: Promise<Record<string, unknown>>[] = [];
    for (const assertion of ['occur', 'recover'] as const) {
      if (assertion === 'recover') await sleep(20);
      for (let chip = 0; chip < 16; chip++) {
        const c = clients[chip * 2 + (assertion === 'occur' ? 0 : 1)]!;
        bursts.push(c.expectOk({ op: 'burst', logicId: chip, eventId: code, assertion, count, ratePerSec: perBurst }));
      }
    }
    const replies = await Promise.all(bursts);
    const seconds = (performance.now() - t0) / 1000;
    const cpuPercent = ((rig.cpuTicks() - c0) / 100 / seconds) * 100;
    w.close();
    for (const c of clients) c.close();
    const events = replies.reduce((a, r) => a + Number(r.fired), 0);
    return { code, events, writesPerSec: writes / 2 / seconds, cpuPercent }; // a rename shows as two events
  } finally {
    await rig.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------

log(`hostile campaign "state": config limit ${MAX_CONFIG_BYTES} B, state limit ${MAX_STATE_BYTES} B`);
const fcHuge = hugeFaultCode(MAX_CONFIG_BYTES, 0x10000000);
const cuHuge = hugeCustomization(MAX_CONFIG_BYTES, fcHuge.next);
log('part 1: the engine (16 chips) in this process');
const eng = engineCampaign(fcHuge.text, cuHuge);
log(`  baseline: ${eng.baseline.spellings} spellings, ${eng.baseline.stateBytes} B exported`);
log('  | input | bytes | accepted | spellings held | exported state B | after revert | note |');
log('  | --- | ---: | --- | ---: | ---: | --- | --- |');
for (const r of eng.rows) {
  const rev = r.afterRevert ? `${r.afterRevert.spellings} / ${r.afterRevert.stateBytes} B` : '';
  log(`  | ${r.input} | ${r.bytes} | ${r.accepted} | ${r.spellings} | ${r.stateBytes} | ${rev} | ${r.note} |`);
}
const timing = await saveTiming();
log(
  `  save of a 16-chip state (${timing.samples} saves): synchronous phase (survives kill -9) p50 ${fmt(timing.writeP50Ms, 2)} / ` +
    `p99 ${fmt(timing.writeP99Ms, 2)} ms; fsync pass (survives a power loss) p50 ${fmt(timing.fsyncP50Ms, 2)} / p99 ${fmt(timing.fsyncP99Ms, 2)} ms`,
);
log('part 2: the agent (16 chips) as a child process');
const agent = await agentCampaign(fcHuge.text, cuHuge);
log('  | step | RSS MiB | RSS peak MiB | state file B | note |');
log('  | --- | ---: | ---: | ---: | --- |');
for (const r of agent.rows)
  log(`  | ${r.step} | ${fmt(r.rssMiB, 1)} | ${fmt(r.rssPeakMiB, 1)} | ${r.stateBytes} | ${r.note} |`);
log(`part 3: state writes during a ${STORM_SECONDS} s storm of 5,000 events/s (16 chips, occurrences + recoveries)`);
const storms = [await stormCampaign(SEP), await stormCampaign(FREQ)];
for (const s of storms)
  log(`  ${s.code}: ${s.events} events, ${fmt(s.writesPerSec, 1)} state writes/s, agent CPU ${fmt(s.cpuPercent, 0)} %`);
const rssPeak = Math.max(...agent.rows.map((r) => r.rssPeakMiB));
log(
  `highest agent RSS ${fmt(rssPeak, 1)} MiB (DaemonSet limit ${DAEMONSET_LIMIT_MIB} MiB); crashes ${agent.crashes}; lost counts ${agent.lostCounts}`,
);
log(
  JSON.stringify({
    campaign: 'state',
    configLimitBytes: MAX_CONFIG_BYTES,
    stateLimitBytes: MAX_STATE_BYTES,
    inputsTried: eng.rows.length + agent.inputs + agent.killTrials + 1,
    crashes: agent.crashes,
    lostCounts: agent.lostCounts,
    killTrials: agent.killTrials,
    engine: { baseline: eng.baseline, rows: eng.rows },
    agent: agent.rows,
    saveTiming: timing,
    rssPeakMiB: rssPeak,
    daemonSetLimitMiB: DAEMONSET_LIMIT_MIB,
    storms,
  }),
);
