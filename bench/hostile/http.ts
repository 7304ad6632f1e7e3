/**
 * Hostile-HTTP campaign (issue 12 item 7): idle and slowloris connections against the agent's metrics server (the
 * built `dist/cli/agent.js` in the bench sandbox) and the fault center's (`dist/cli/fault-center.js` on the same API
 * stand-in), both child processes with their descriptors limited to 1,024 by `prlimit` (the limit of the report).
 *
 * For `BENCH_HTTP_SECONDS` (default 15 s, longer than the 10 s header timeout) each target gets `BENCH_HTTP_IDLE`
 * idle sockets (default 1,000: connect, send nothing) and `BENCH_HTTP_SLOW` slowloris sockets (default 300: half a
 * header block, then nothing); a socket the server closes is opened again after `BENCH_HTTP_RECONNECT_MS` (default
 * 1,000). Meanwhile `/healthz` is probed every 500 ms on a fresh connection from 127.0.0.2 (the attackers use
 * 127.0.0.1: kubelet probes from the node's address, an attacking pod has its own; 2 s timeout), the kubelet simulator is
 * restarted once (the agent must register again), and the connections each server holds are counted from
 * `/proc/net/tcp*` and the process's descriptors every 100 ms. After the attack every hostile socket is closed and
 * both servers must answer `/healthz` again.
 *
 * Prints a table and one JSON line:
 * `{"campaign":"http","inputs":N,"crashes":N,"maxOpenConnections":N,"healthzOkDuringAttack":bool,"fdPeak":N,...}`
 * (`inputs` = hostile connections opened against both targets, `crashes` = targets that died, `maxOpenConnections` =
 * most connections one server held, sampled from `/proc`: the cap 64, or 65 when a sample falls in the instant a new
 * connection is being placed, `fdPeak` = most descriptors the agent had open).
 *
 * Run: `npm run build && npx tsx bench/hostile/http.ts` (well under 60 s with the defaults). `BENCH_AGENT_JS` runs
 * another agent build.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { RESOURCE } from '../../test/helpers/agent-process.js';
import { freePort, startBenchAgent } from '../sandbox.js';
import { stopChild } from '../stats.js';

const num = (name: string, dflt: number): number => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${v}"`);
  return n;
};

const SECONDS = num('BENCH_HTTP_SECONDS', 15);
const IDLE = num('BENCH_HTTP_IDLE', 1_000);
const SLOW = num('BENCH_HTTP_SLOW', 300);
const RECONNECT_MS = num('BENCH_HTTP_RECONNECT_MS', 1_000);
const FD_LIMIT = num('BENCH_HTTP_FD_LIMIT', 1_024);
const PROBE_MS = 500;
const PROBE_FROM = '127.0.0.2';
const SAMPLE_MS = 100;

/** One target server under attack. */
class Target {
  opened = 0;
  clientErrors = 0;
  maxHeld = 0;
  probes = 0;
  probesOk = 0;
  probeFailures: string[] = [];
  readonly #live = new Set<net.Socket>();
  #stopped = false;

  constructor(
    readonly name: string,
    readonly port: number,
    /** Pid of the process that owns the server's sockets. */
    readonly pid: number,
  ) {}

  get live(): number {
    return this.#live.size;
  }

  /** Opens one hostile socket; reopens it after the server closes it while the attack runs. */
  open(kind: 'idle' | 'slowloris'): void {
    if (this.#stopped) return;
    this.opened += 1;
    const s = net.connect(this.port, '127.0.0.1');
    this.#live.add(s);
    let done = false;
    const gone = (): void => {
      if (done) return;
      done = true;
      this.#live.delete(s);
      s.destroy();
      if (!this.#stopped) setTimeout(() => this.open(kind), RECONNECT_MS).unref();
    };
    s.on('connect', () => {
      if (kind === 'slowloris') s.write('GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    });
    s.on('data', () => undefined);
    s.on('error', () => {
      this.clientErrors += 1;
      gone();
    });
    s.on('end', gone);
    s.on('close', gone);
  }

  stop(): void {
    this.#stopped = true;
    for (const s of this.#live) s.destroy();
    this.#live.clear();
  }

  async probe(): Promise<boolean> {
    this.probes += 1;
    const r = await get(this.port, '/healthz', 2_000);
    if (r === 'ok\n') this.probesOk += 1;
    else if (this.probeFailures.length < 5) this.probeFailures.push(r);
    return r === 'ok\n';
  }

  sample(tcp: readonly TcpEntry[]): number {
    const n = serverConnections(tcp, this.pid, this.port);
    this.maxHeld = Math.max(this.maxHeld, n);
    return n;
  }
}

/**
 * GET on a fresh connection from `PROBE_FROM`, another address than the attackers' (kubelet probes from the node's
 * address, an attacking pod has its own); the body, or what went wrong.
 */
function get(port: number, urlPath: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const options = { host: '127.0.0.1', localAddress: PROBE_FROM, port, path: urlPath, agent: false };
    const req = http.get({ ...options, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? body : `HTTP ${res.statusCode}`));
      res.on('error', (e) => resolve(e.message));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => resolve(e.message));
  });
}

/** Socket inodes of a process. */
function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  let names: string[];
  try {
    names = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const n of names) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${n}`));
      if (m) out.add(m[1]!);
    } catch {
      /* closed meanwhile */
    }
  }
  return out;
}

/** One line of `/proc/net/tcp*`: local port, state (hex), inode. */
interface TcpEntry {
  readonly port: number;
  readonly state: string;
  readonly inode: string;
}

function readTcp(): TcpEntry[] {
  const out: TcpEntry[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const local = f[1]!;
      out.push({ port: parseInt(local.slice(local.lastIndexOf(':') + 1), 16), state: f[3]!, inode: f[9]! });
    }
  }
  return out;
}

/** Accepted TCP connections on `port` that process `pid` holds (not the listening socket, state 0A). */
function serverConnections(tcp: readonly TcpEntry[], pid: number, port: number): number {
  const inodes = socketInodes(pid);
  // /proc/net/tcp is read in chunks while sockets come and go: the same socket may be listed twice
  const held = new Set<string>();
  for (const e of tcp) if (e.port === port && e.state !== '0A' && inodes.has(e.inode)) held.add(e.inode);
  return held.size;
}

function fdCount(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

async function main(): Promise<void> {
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-http-'));
  const logFile = path.join(logDir, 'agent.log');
  const logFd = fs.openSync(logFile, 'w');
  const sb = await startBenchAgent({
    prefix: 'hostile-http-',
    scenario: path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'),
    stdout: logFd,
    ...(process.env.BENCH_AGENT_JS ? { agentJs: process.env.BENCH_AGENT_JS } : {}),
  });
  const agentPid = sb.child.pid!;
  let agentExit: string | undefined;
  sb.child.once('exit', (code, signal) => (agentExit = `code ${code} signal ${signal}`));
  let fdLimit = FD_LIMIT > 0 ? String(FD_LIMIT) : 'unchanged';
  const limitFds = (pid: number): void => {
    if (FD_LIMIT === 0) return;
    try {
      execFileSync('prlimit', ['--pid', String(pid), `--nofile=${FD_LIMIT}:${FD_LIMIT}`]);
    } catch (e) {
      fdLimit = `unchanged (prlimit: ${(e as Error).message.split('\n')[0]})`;
    }
  };
  const fcPort = await freePort();
  const fc = spawn(
    process.execPath,
    [
      path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js'),
      `-kubeconfig=${sb.sandbox.kubeconfig}`,
      `-grpcAddress=127.0.0.1:${await freePort()}`,
      `-metricsAddress=127.0.0.1:${fcPort}`,
      `-stateDir=${path.join(logDir, 'fault-center')}`,
      '-identity=bench',
      '-logLevel=warn',
    ],
    { env: { PATH: process.env.PATH }, stdio: ['ignore', logFd, 'inherit'] },
  );
  let fcExit: string | undefined;
  fc.once('exit', (code, signal) => (fcExit = `code ${code} signal ${signal}`));
  const fcReady = Date.now();
  while ((await get(fcPort, '/healthz', 1_000)) !== 'ok\n') {
    if (fcExit !== undefined || Date.now() - fcReady > 20_000) throw new Error(`fault center not up (${fcExit})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const pid of [agentPid, fc.pid!]) limitFds(pid);
  const targets = [new Target('agent', sb.metricsPort, agentPid), new Target('fault center', fcPort, fc.pid!)];
  const fdBase = fdCount(agentPid);
  let fdPeak = fdBase;

  // the attack
  const t0 = Date.now();
  for (const t of targets) {
    for (let i = 0; i < IDLE; i++) t.open('idle');
    for (let i = 0; i < SLOW; i++) t.open('slowloris');
  }
  const sampler = setInterval(() => {
    const tcp = readTcp();
    for (const t of targets) t.sample(tcp);
    fdPeak = Math.max(fdPeak, fdCount(agentPid));
  }, SAMPLE_MS);
  const prober = setInterval(() => {
    for (const t of targets) void t.probe();
  }, PROBE_MS);
  // a kubelet restart in the middle: the agent must register again while it is under attack
  await new Promise((r) => setTimeout(r, Math.min(3_000, (SECONDS * 1000) / 3)));
  const seq = sb.sandbox.kubelet.registrations.at(-1)?.seq ?? 0;
  const restartAt = Date.now();
  await sb.sandbox.kubelet.restart();
  let reregisterMs: number | undefined;
  try {
    await sb.sandbox.kubelet.waitForRegistration(RESOURCE, seq, 20_000);
    reregisterMs = Date.now() - restartAt;
  } catch {
    reregisterMs = undefined;
  }
  const left = t0 + SECONDS * 1000 - Date.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
  clearInterval(prober);
  await new Promise((r) => setTimeout(r, 2_100)); // the last probes settle
  const healthzOkDuringAttack = targets.every((t) => t.probes > 0 && t.probesOk === t.probes);

  // after the attack: the servers let go of everything and answer again
  for (const t of targets) t.stop();
  const drainStart = Date.now();
  let drainedMs: number | undefined;
  while (Date.now() - drainStart < 20_000) {
    const tcp = readTcp();
    if (targets.map((t) => t.sample(tcp)).every((n) => n === 0)) {
      drainedMs = Date.now() - drainStart;
      break;
    }
    await new Promise((r) => setTimeout(r, SAMPLE_MS));
  }
  clearInterval(sampler);
  const after = await Promise.all(targets.map((t) => get(t.port, '/healthz', 5_000)));
  const emfile = fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('EMFILE')).length;
  const died = [agentExit && `AGENT EXITED: ${agentExit}`, fcExit && `FAULT CENTER EXITED: ${fcExit}`].filter(
    (x): x is string => typeof x === 'string',
  );
  const crashes = died.length;
  await stopChild(fc);
  await sb.close();
  fs.closeSync(logFd);
  fs.rmSync(logDir, { recursive: true, force: true });

  const rows = targets.map((t, i) => ({
    target: t.name,
    opened: t.opened,
    maxHeld: t.maxHeld,
    healthz: `${t.probesOk}/${t.probes}`,
    afterAttack: after[i] === 'ok\n' ? 'ok' : after[i]!.trim(),
    clientErrors: t.clientErrors,
  }));
  const inputs = targets.reduce((a, t) => a + t.opened, 0);
  const maxOpenConnections = Math.max(...targets.map((t) => t.maxHeld));
  console.log(
    `hostile HTTP: ${IDLE} idle + ${SLOW} slowloris sockets per target for ${SECONDS} s, reconnect after ` +
      `${RECONNECT_MS} ms; agent fd limit ${fdLimit}`,
  );
  console.table(rows);
  console.log(
    `agent fds: ${fdBase} before, peak ${fdPeak}; EMFILE log lines: ${emfile}; kubelet restart followed in ` +
      `${reregisterMs === undefined ? 'no (20 s)' : `${reregisterMs} ms`}; every server connection closed ` +
      `${drainedMs === undefined ? 'not within 20 s' : `${drainedMs} ms`} after the attack` +
      died.map((d) => `; ${d}`).join(''),
  );
  for (const t of targets) {
    if (t.probeFailures.length > 0) console.log(`${t.name} probe failures (first 5): ${t.probeFailures.join(' | ')}`);
  }
  console.log(
    JSON.stringify({
      campaign: 'http',
      inputs,
      crashes,
      maxOpenConnections,
      healthzOkDuringAttack,
      fdPeak,
      healthzAfterAttack: after.every((a) => a === 'ok\n'),
      kubeletReregisterMs: reregisterMs ?? null,
      emfileLogLines: emfile,
      drainedMs: drainedMs ?? null,
    }),
  );
}

await main();
