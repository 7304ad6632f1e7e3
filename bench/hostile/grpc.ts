/**
 * bench/hostile/grpc: hostile `SendPublicFault` messages against the real fault center (issue [K] item 2).
 *
 * Starts the API stand-in (`src/sim/kube-api.ts`) and `dist/cli/fault-center.js` as a child process (heap limited
 * to 512 MiB, as a small pod would be), then sends, round after round, 32 messages of each hostile kind in parallel
 * (32 connections) and waits for every answer. Meanwhile it samples the child's RSS (`/proc/<pid>/status` VmRSS)
 * every 50 ms and times `GET /healthz` back to back. A child that dies is counted as a crash and restarted.
 *
 * The baseline (`rssBeforeMiB`) is taken after a warm-up of legitimate traffic (a fresh process grows its heap
 * spaces and transport buffers with its first requests, whatever they are); `rssIdleMiB` is the RSS before it.
 * Prints a table per kind (answers, peak RSS, heap, /healthz p99) and one JSON line:
 * `{"campaign":"grpc","inputs":N,"crashes":N,"rssIdleMiB":..,"rssBeforeMiB":..,"rssPeakMiB":..,"rssDeltaMiB":..,
 * "healthzP99Ms":..}`.
 *
 * `npx tsx bench/hostile/grpc.ts` (after `npm run build`). `BENCH_HOSTILE_ROUNDS` (default 3) rounds;
 * `BENCH_HOSTILE_KINDS=a,b` runs only those kinds. `max-legal` (the largest message §2.5 accepts: not hostile,
 * but what a valid sender may cost) runs only when named.
 */
import * as grpc from '@grpc/grpc-js';
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { loadPubFaultProto } from '../../src/cluster/public-fault/proto.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import type { RespStatus__Output } from '../../src/generated/pubfault/RespStatus.js';
import { freePort } from '../sandbox.js';
import { fmt, percentile, stopChild } from '../stats.js';

const ROUNDS = Number(process.env.BENCH_HOSTILE_ROUNDS ?? 3);
const ONLY = process.env.BENCH_HOSTILE_KINDS?.split(',').filter((k) => k !== '');
/** kinds that are not run unless named in BENCH_HOSTILE_KINDS */
const OPT_IN = new Set(['max-legal']);
const PARALLEL = 32;
const HEAP_MIB = 512;
const WARM_UP_ROUNDS = 5;
const MIB = 1024 * 1024;
/** a little under the 4 MiB receive limit (the 5-byte gRPC frame header is not counted in it) */
const NEAR_MAX = 4 * MIB - 1024;
const T0 = 1_772_330_400_000;

const method = loadPubFaultProto().PubFault.service.SendPublicFault;

// ---- protobuf bytes by hand (the hostile parts cannot be built with a serializer) ----

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

function field(num: number, content: Buffer): Buffer {
  return Buffer.concat([varint((num << 3) | 2), varint(content.length), content]);
}

/** `n` copies of `unit` after `head`. */
function repeat(head: Buffer, unit: Buffer, n: number): Buffer {
  const out = Buffer.alloc(head.length + unit.length * n);
  head.copy(out);
  for (let i = 0; i < n; i++) unit.copy(out, head.length + i * unit.length);
  return out;
}

/** A valid header (sender CCAE) with `faults` serialized normally. */
function header(faults: object[] = []): Buffer {
  return method.requestSerialize({
    id: 'hostile.msg-0001',
    timestamp: String(T0),
    version: '1.0',
    resource: 'CCAE',
    faults,
  });
}

function validFault(i: number): object {
  return {
    faultId: `fault-${String(i).padStart(4, '0')}`,
    faultType: 'Storage',
    faultCode: '010001001',
    faultTime: String(T0 - 1000),
    assertion: 'once',
    influence: [{ nodeName: 'node-1', deviceIds: [0] }],
  };
}

/** The field bytes of one fault (field 5) whose body is `body`. */
function faultField(body: Buffer): Buffer {
  return field(5, body);
}

interface Kind {
  name: string;
  what: string;
  bytes: () => Buffer;
  gzip?: boolean;
}

const KINDS: Kind[] = [
  {
    name: 'empty-faults',
    what: '1.3 M empty faults (2.6 MB), the issue message',
    bytes: () => repeat(header(), Buffer.from([0x2a, 0x00]), 1_300_000),
  },
  {
    name: 'gzip-empty-faults',
    what: 'the same, gzip-compressed on the wire (a few KB)',
    bytes: () => repeat(header(), Buffer.from([0x2a, 0x00]), 1_300_000),
    gzip: true,
  },
  {
    name: 'empty-influences',
    what: 'one fault with 1.3 M empty influences',
    bytes: () => {
      const body = repeat(Buffer.alloc(0), Buffer.from([0x3a, 0x00]), 1_300_000);
      return Buffer.concat([header(), faultField(body)]);
    },
  },
  {
    name: 'device-ids',
    what: 'one influence with 4 M packed device ids',
    bytes: () => {
      const h = header();
      const ids = Buffer.alloc(NEAR_MAX - h.length - 32, 1);
      const inf = Buffer.concat([field(1, Buffer.from('node-1')), field(3, ids)]);
      return Buffer.concat([h, faultField(field(7, inf))]);
    },
  },
  {
    name: 'huge-map',
    what: 'one faultLocation with ~300 k distinct keys',
    bytes: () => {
      const h = header();
      const entries: Buffer[] = [];
      let size = h.length + 16;
      for (let i = 0; size < NEAR_MAX - 64; i++) {
        const e = field(6, Buffer.concat([field(1, Buffer.from(`k${i}`)), field(2, Buffer.from('v'))]));
        entries.push(e);
        size += e.length;
      }
      return Buffer.concat([h, faultField(Buffer.concat(entries))]);
    },
  },
  {
    name: 'max-strings',
    what: 'one fault whose strings fill 4 MiB (multi-byte description)',
    bytes: () => {
      const h = header();
      const quarter = Math.floor((NEAR_MAX - h.length - 64) / 4);
      const body = Buffer.concat([
        field(1, Buffer.alloc(quarter, 'f')),
        field(2, Buffer.alloc(quarter, 't')),
        field(8, Buffer.from('é'.repeat(quarter / 2))),
        field(7, field(1, Buffer.alloc(quarter - 16, 'n'))),
      ]);
      return Buffer.concat([h, faultField(body)]);
    },
  },
  {
    name: 'deep-groups',
    what: '1 M nested unknown groups',
    bytes: () => Buffer.alloc(MIB, 0x0b),
  },
  {
    name: 'random',
    what: 'random bytes, 1-4 MiB',
    bytes: () => crypto.randomBytes(MIB + crypto.randomInt(3 * MIB - 1024)),
  },
  {
    name: 'max-legal',
    what: 'the largest valid message: 100 faults × 1,000 influences × 32 device ids (3.9 MB)',
    bytes: () => {
      const ids = Array.from({ length: 32 }, (_, i) => i);
      const influence = Array.from({ length: 1000 }, () => ({ nodeName: 'n', deviceIds: ids }));
      return header(Array.from({ length: 100 }, (_, i) => ({ ...validFault(i), influence })));
    },
  },
  {
    name: 'over-limit',
    what: '101 valid faults',
    bytes: () => header(Array.from({ length: 101 }, (_, i) => validFault(i))),
  },
];

// ---- the fault center child ----

interface Center {
  child: ChildProcess;
  /** resolves when the child exits */
  exited: Promise<void>;
  grpcPort: number;
  metricsPort: number;
  stderr: string[];
}

async function startCenter(dir: string, kubeconfig: string): Promise<Center> {
  const grpcPort = await freePort();
  const metricsPort = await freePort();
  const stderr: string[] = [];
  const child = spawn(
    process.execPath,
    [
      `--max-old-space-size=${HEAP_MIB}`,
      path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js'),
      `-kubeconfig=${kubeconfig}`,
      `-metricsAddress=127.0.0.1:${metricsPort}`,
      `-grpcAddress=127.0.0.1:${grpcPort}`,
      '-identity=bench',
      `-stateDir=${dir}`,
      '-leaseRetryPeriodMs=100',
      '-logLevel=error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr.on('data', (d: Buffer) => {
    stderr.push(d.toString());
    if (stderr.length > 20) stderr.shift();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, grpcPort, metricsPort, stderr };
}

// ---- clients ----

type RawClient = grpc.Client & {
  SendPublicFault(req: Buffer, opts: grpc.CallOptions, cb: grpc.requestCallback<RespStatus__Output>): void;
};

const RawClientCtor = grpc.makeGenericClientConstructor(
  {
    SendPublicFault: {
      path: method.path,
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: method.responseSerialize,
      responseDeserialize: method.responseDeserialize,
    },
  },
  'PubFault',
) as unknown as new (address: string, creds: grpc.ChannelCredentials, options: grpc.ClientOptions) => RawClient;

function clients(port: number, gzip: boolean): RawClient[] {
  return Array.from(
    { length: PARALLEL },
    () =>
      new RawClientCtor(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
        // one connection per client
        'grpc.use_local_subchannel_pool': 1,
        ...(gzip ? { 'grpc.default_compression_algorithm': 2 } : {}),
      }),
  );
}

/** One answer as a short label: `0`, `409 invalid faults length`, `INVALID_ARGUMENT`, ... */
function send(c: RawClient, bytes: Buffer): Promise<string> {
  return new Promise((resolve) =>
    c.SendPublicFault(bytes, { deadline: Date.now() + 60_000 }, (err, res) => {
      if (err) resolve(grpc.status[err.code] ?? String(err.code));
      else resolve(`${res!.code}${res!.code === 0 ? '' : ` ${res!.info.replace(/^.*error: /, '')}`}`);
    }),
  );
}

// ---- sampling ----

function rssMiB(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function healthz(port: number): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/healthz', timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - t0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(performance.now() - t0));
  });
}

/** The child's V8 heap and external memory (MiB) from its `/metrics`. */
function memoryMetrics(port: number): Promise<{ heap: number; external: number }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/metrics', timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(body)?.[1] ?? NaN) / MIB;
        resolve({ heap: value('nodejs_heap_size_total_bytes'), external: value('nodejs_external_memory_bytes') });
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ heap: Number.NaN, external: Number.NaN }));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitReady(c: Center): Promise<void> {
  const probe = clients(c.grpcPort, false).slice(0, 1);
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      if (c.child.exitCode !== null) throw new Error(`fault center exited: ${c.stderr.join('').slice(-2000)}`);
      if ((await send(probe[0]!, header([validFault(9999)]))) === '0') return;
      if (Date.now() > deadline) throw new Error('fault center not serving after 60 s');
      await sleep(200);
    }
  } finally {
    probe[0]!.close();
  }
}

/**
 * Legitimate traffic before the baseline is taken (the first requests also grow a fresh process: code, heap
 * spaces, transport buffers): rounds of 32 valid messages in parallel, then 32 valid messages of 1,000 faults'
 * worth of influences (~1 MB).
 */
async function warmUp(c: Center): Promise<void> {
  const pool = clients(c.grpcPort, false);
  const big = header([
    {
      ...validFault(0),
      influence: Array.from({ length: 1000 }, (_, i) => ({
        nodeName: `node-${i}`,
        deviceIds: [0, 1, 2, 3, 4, 5, 6, 7],
      })),
    },
  ]);
  try {
    for (let round = 0; round < WARM_UP_ROUNDS; round++) {
      await Promise.all(pool.map((cl, i) => send(cl, header([validFault(round * PARALLEL + i)]))));
      await Promise.all(pool.map((cl) => send(cl, big)));
    }
  } finally {
    for (const cl of pool) cl.close();
  }
}

interface KindStats {
  sent: number;
  answers: Map<string, number>;
  rssPeak: number;
  healthz: number[];
  crashes: number;
  /** V8 heap and external memory after the kind's last batch */
  heap: number;
  external: number;
}

async function main(): Promise<void> {
  const kinds = KINDS.filter((k) => (ONLY === undefined ? !OPT_IN.has(k.name) : ONLY.includes(k.name)));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-grpc-'));
  const api = await KubeApiStandIn.start();
  const kubeconfig = path.join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  let center = await startCenter(dir, kubeconfig);
  const started = Date.now();
  try {
    await waitReady(center);
    const rssIdle = rssMiB(center.child.pid!) ?? Number.NaN;
    await warmUp(center);
    await sleep(1000);
    const rssBefore = rssMiB(center.child.pid!) ?? Number.NaN;
    let rssPeak = rssBefore;
    let current: KindStats | undefined;
    const allHealthz: number[] = [];
    let running = true;
    const sampler = setInterval(() => {
      const r = rssMiB(center.child.pid!);
      if (r === undefined) return;
      rssPeak = Math.max(rssPeak, r);
      if (current) current.rssPeak = Math.max(current.rssPeak, r);
    }, 50);
    const prober = (async () => {
      while (running) {
        const ms = await healthz(center.metricsPort);
        allHealthz.push(ms);
        current?.healthz.push(ms);
        await sleep(50);
      }
    })();

    const stats = new Map<string, KindStats>();
    let crashes = 0;
    let inputs = 0;
    const pools = { plain: clients(center.grpcPort, false), gzip: clients(center.grpcPort, true) };
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of kinds) {
        const s =
          stats.get(kind.name) ??
          ({
            sent: 0,
            answers: new Map(),
            rssPeak: 0,
            healthz: [],
            crashes: 0,
            heap: 0,
            external: 0,
          } satisfies KindStats);
        stats.set(kind.name, s);
        current = s;
        const pool = kind.gzip === true ? pools.gzip : pools.plain;
        const bytes = kind.bytes();
        const answers = await Promise.all(pool.map((c) => send(c, bytes)));
        inputs += answers.length;
        s.sent += answers.length;
        for (const a of answers) s.answers.set(a, (s.answers.get(a) ?? 0) + 1);
        ({ heap: s.heap, external: s.external } = await memoryMetrics(center.metricsPort));
        // a dead child answers UNAVAILABLE before its exit is seen: give the exit a moment to arrive
        const died =
          answers.includes('UNAVAILABLE') &&
          (await Promise.race([center.exited.then(() => true), sleep(5000).then(() => false)]));
        if (died || center.child.exitCode !== null || center.child.signalCode !== null) {
          crashes++;
          s.crashes++;
          process.stderr.write(`crash during ${kind.name}: ${center.stderr.join('').slice(-600)}\n`);
          for (const c of [...pools.plain, ...pools.gzip]) c.close();
          center = await startCenter(dir, kubeconfig);
          await waitReady(center);
          pools.plain = clients(center.grpcPort, false);
          pools.gzip = clients(center.grpcPort, true);
        }
        current = undefined;
      }
    }
    running = false;
    clearInterval(sampler);
    await prober;
    for (const c of [...pools.plain, ...pools.gzip]) c.close();

    const rows = [...stats.entries()].map(([name, s]) => [
      name,
      String(s.sent),
      [...s.answers.entries()].map(([a, n]) => `${n}× ${a}`).join('; '),
      fmt(s.rssPeak, 1),
      `${fmt(s.heap, 1)} / ${fmt(s.external, 1)}`,
      s.healthz.length === 0 ? '-' : fmt(percentile(s.healthz, 99), 1),
      String(s.crashes),
    ]);
    const head = ['kind', 'sent', 'answers', 'RSS peak MiB', 'heap / external MiB', '/healthz p99 ms', 'crashes'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join(' | ');
    console.log(`hostile gRPC campaign: ${ROUNDS} rounds × ${kinds.length} kinds × ${PARALLEL} in parallel`);
    for (const k of kinds) console.log(`  ${k.name}: ${k.what}`);
    console.log(line(head));
    console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
    for (const r of rows) console.log(line(r));
    console.log(
      `RSS idle ${fmt(rssIdle, 1)} MiB, after the warm-up ${fmt(rssBefore, 1)} MiB, peak ${fmt(rssPeak, 1)} MiB; ${allHealthz.length} /healthz probes; ` +
        `${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    console.log(
      JSON.stringify({
        campaign: 'grpc',
        inputs,
        crashes,
        rssIdleMiB: Number(rssIdle.toFixed(1)),
        rssBeforeMiB: Number(rssBefore.toFixed(1)),
        rssPeakMiB: Number(rssPeak.toFixed(1)),
        rssDeltaMiB: Number((rssPeak - rssBefore).toFixed(1)),
        healthzP99Ms: Number(percentile(allHealthz, 99).toFixed(1)),
      }),
    );
  } finally {
    await stopChild(center.child);
    await api.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
