/**
 * Issue [T] item 1: the built `ascend-fault-center` (`dist/cli/fault-center.js`, run `npm run build` first) under
 * libfaketime, its wall clock stepped back one hour, forward one hour and frozen while faults flow; CLOCK_MONOTONIC
 * is left alone (test/helpers/faketime.ts). The cluster-info-device-0 ConfigMap keeps §0.3's cadence (a change
 * published within the spacing, one chunk write a second while faults flow, the forced rewrite when nothing changed)
 * and a sender's token bucket (§2.4) refills at 1/s. Before the change the center published nothing for an hour
 * after the step back (`#requestPublish` armed a timer of `lastPublish + 200 − now`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { loadPubFaultProto } from '../../src/cluster/public-fault/proto.js';
import type { PubFaultClient } from '../../src/generated/pubfault/PubFault.js';
import type { PublicFaultRequest } from '../../src/generated/pubfault/PublicFaultRequest.js';
import type { RespStatus__Output } from '../../src/generated/pubfault/RespStatus.js';
import { CONFIGMAPS, KubeApiStandIn, VOLCANO_PODGROUPS } from '../../src/sim/kube-api.js';
import { deviceInfoCm, faultObject } from '../cluster/helpers.js';
import { FakeTime } from '../helpers/faketime.js';

const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');
const HOUR = 3_600_000;
const CHUNK = 'cluster-info-device-0';

let api: KubeApiStandIn;
let dir: string;
let time: FakeTime;
let child: ChildProcess;
let stdout = '';
let stderr = '';
let client: PubFaultClient | undefined;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => T | undefined | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (child.exitCode !== null) throw new Error(`the fault center exited (${child.exitCode}): ${stderr}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function published(): string {
  const cm = api.store.get(CONFIGMAPS, 'mindx-dl', CHUNK) as { data?: Record<string, string> } | undefined;
  return cm?.data?.[CHUNK] ?? '';
}

function chunkWrites(): number {
  return api.writeCount({ resource: 'configmaps', namespace: 'mindx-dl', name: CHUNK });
}

let faultSeq = 0;
/** A new fault code on node-1's Ascend910-3 (a new value); returns the code. */
function putFault(): string {
  const code = `80E0${String(1000 + ++faultSeq).padStart(4, '0')}`;
  const cm = deviceInfoCm('node-1', [faultObject('Ascend910-3', code, 'RestartNPU')]);
  api.store.update(CONFIGMAPS, 'kube-system', cm.metadata.name, cm);
  return code;
}

/** Changes node-1's faults every 200 ms for `forMs`; resolves with the chunk's writes meanwhile. */
async function flow(forMs: number): Promise<number> {
  const before = chunkWrites();
  const end = Date.now() + forMs;
  while (Date.now() < end) {
    putFault();
    await sleep(200);
  }
  return chunkWrites() - before;
}

/** A fault sent after the step shows in cluster-info within the spacing (5 s bound; nominal ≈ 1 s). */
async function faultVisible(): Promise<void> {
  const code = putFault();
  await until(() => published().includes(code), `fault ${code} in cluster-info`, 5000);
}

function request(version = '1.0'): PublicFaultRequest {
  const t = String(time.now());
  return {
    id: `msg.clock-${++faultSeq}`,
    timestamp: t,
    version,
    resource: 'pingmesh',
    faults: [
      {
        faultId: 'pm-link-42',
        faultType: 'Network',
        faultCode: '220001001',
        faultTime: t,
        assertion: 'occur',
        influence: [{ nodeName: 'node-1', deviceIds: [3] }],
      },
    ],
  };
}

function send(req: PublicFaultRequest): Promise<RespStatus__Output> {
  return new Promise((resolve, reject) => client!.SendPublicFault(req, (e, r) => (e ? reject(e) : resolve(r!))));
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afc-clock-'));
  time = new FakeTime(dir);
  api = await KubeApiStandIn.start({ extraResources: [VOLCANO_PODGROUPS] });
  api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
  const kubeconfig = path.join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  child = spawn(
    process.execPath,
    [
      FAULT_CENTER_JS,
      `-kubeconfig=${kubeconfig}`,
      '-metricsAddress=127.0.0.1:0',
      '-grpcAddress=127.0.0.1:0',
      '-identity=clock',
      `-stateDir=${dir}`,
      '-leaseDurationSeconds=2',
      '-leaseRenewDeadlineMs=1500',
      '-leaseRetryPeriodMs=200',
    ],
    { env: { PATH: process.env.PATH, ...time.env() }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await until(() => published().includes('mindx-dl-deviceinfo-node-1'), 'the first publish', 20_000);
  const address = await until(() => {
    const line = stdout.split('\n').find((l) => l.includes('"public fault interface serving"'));
    return line === undefined ? undefined : (JSON.parse(line) as { grpcAddress: string }).grpcAddress;
  }, 'the gRPC address');
  client = new (loadPubFaultProto().PubFault)(address, grpc.credentials.createInsecure());
}, 40_000);

afterAll(async () => {
  client?.close();
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await api.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('issue [T] item 1: ascend-fault-center under libfaketime', () => {
  test('0.3 wall clock back 1 h while faults flow: a fault is published within the spacing, one write a second', async () => {
    await flow(1000);
    time.step(-HOUR);
    await faultVisible();
    const writes = await flow(5000);
    expect(writes).toBeGreaterThanOrEqual(3);
    expect(writes).toBeLessThanOrEqual(6);
  }, 30_000);

  test('0.3 after the step back, nothing changing: the forced rewrite still comes every 5 s', async () => {
    await sleep(1500);
    const before = chunkWrites();
    // three 5 s periods and a second: at least two rewrites even when a loaded machine runs the timers late (the wall
    // clock's timer gave none for the hour of the step)
    await sleep(16_000);
    expect(chunkWrites() - before).toBeGreaterThanOrEqual(2);
  }, 30_000);

  test('2.4 after the step back: an emptied sender bucket has a token again one second later', async () => {
    // refused as invalid, each takes a token; 100 of them and the few refilled meanwhile (1/s) empty the bucket
    let code = 0;
    for (let i = 0; i < 200 && code !== 410; i++) code = (await send(request('x'))).code;
    expect(code).toBe(410);
    await sleep(1100);
    expect((await send(request())).code).toBe(0);
  }, 30_000);

  test('0.3 wall clock forward 1 h while faults flow: a fault is published within the spacing, no burst', async () => {
    time.step(HOUR);
    await faultVisible();
    const writes = await flow(5000);
    expect(writes).toBeGreaterThanOrEqual(3);
    expect(writes).toBeLessThanOrEqual(6);
  }, 30_000);

  test('0.3 wall clock frozen while faults flow: changes are still written, one write a second', async () => {
    time.freeze();
    try {
      await faultVisible();
      const writes = await flow(5000);
      expect(writes).toBeGreaterThanOrEqual(3);
      expect(writes).toBeLessThanOrEqual(6);
    } finally {
      time.thaw();
    }
  }, 30_000);
});
