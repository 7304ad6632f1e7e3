/**
 * Issue [T] item 1, the fault center: the wall clock stepped back one hour, forward one hour, or frozen while faults
 * flow — cluster-info-device-* publication (the §0.3 spacing, each chunk's one write a second, the forced rewrite),
 * the manual info, the gRPC and per-sender token buckets, the §2.7 delete queue: all keep their nominal intervals.
 * The center runs in-process against the API stand-in on a real-time clock whose wall the test steps
 * (test/helpers/stepped-clock.ts); the buckets on the manual FakeClock. The same for the built program under
 * libfaketime: test/integration/clock-steps-fault-center.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FaultCenter, type FaultCenterTimings } from '../../src/cluster/fault-center.js';
import { PublicFaultCache } from '../../src/cluster/public-fault/cache.js';
import { PublicFaultCollector } from '../../src/cluster/public-fault/collector.js';
import { PublicFaultGrpcServer, QPS_EXCEEDED } from '../../src/cluster/public-fault/grpc-server.js';
import { createPublicFaultService, type PublicFaultService } from '../../src/cluster/public-fault/index.js';
import { noopPublicFaultMetrics } from '../../src/cluster/public-fault/metrics.js';
import { loadPubFaultProto } from '../../src/cluster/public-fault/proto.js';
import type { PubFaultClient } from '../../src/generated/pubfault/PubFault.js';
import type { PublicFaultRequest } from '../../src/generated/pubfault/PublicFaultRequest.js';
import type { RespStatus__Output } from '../../src/generated/pubfault/RespStatus.js';
import { CONFIGMAPS, KubeApiStandIn, PODS, VOLCANO_PODGROUPS } from '../../src/sim/kube-api.js';
import { FakeClock } from '../health/fake-clock.js';
import { SteppedClock } from '../helpers/stepped-clock.js';
import { centerKube, deviceInfoCm, faultObject, jobPod, podGroup, policyText } from './helpers.js';
import { message, recordingLogger, SHIPPED_CONFIG_FILE, shippedConfig, T0_MS } from './public-fault/fixtures.js';

const HOUR = 3_600_000;
const CHUNK = 'cluster-info-device-0';

let api: KubeApiStandIn;
let clock: SteppedClock;
const centers: FaultCenter[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => T | undefined | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function center(timings: Partial<FaultCenterTimings> = {}): FaultCenter {
  const c = new FaultCenter({
    kube: centerKube(api),
    identity: 'a',
    leaseName: 'ascend-fault-center',
    leaseNamespace: 'cluster-system',
    countJoblessFaults: false,
    logger: pino({ level: process.env.AFC_LOG ?? 'silent' }),
    registry: new Registry(),
    // nominal spacing (§0.3: 200 ms between publishes, one write a second per chunk); a short Lease for the test
    timings: { leaseDurationSec: 1, leaseRenewDeadlineMs: 500, leaseRetryPeriodMs: 100, ...timings },
    clock,
  });
  centers.push(c);
  c.start();
  return c;
}

function published(): string {
  const cm = api.store.get(CONFIGMAPS, 'mindx-dl', CHUNK) as { data?: Record<string, string> } | undefined;
  return cm?.data?.[CHUNK] ?? '';
}

function chunkWrites(): number {
  return api.writeCount({ resource: 'configmaps', namespace: 'mindx-dl', name: CHUNK });
}

/** The device-info ConfigMap of node-1 with one fault of `code` on Ascend910-3 (a new code: a new value). */
function putFault(code: string): void {
  const cm = deviceInfoCm('node-1', [faultObject('Ascend910-3', code, 'RestartNPU')]);
  api.store.update(CONFIGMAPS, 'kube-system', cm.metadata.name, cm);
}

/** Changes node-1's faults every `everyMs` for `forMs`; resolves with the chunk's writes meanwhile. */
async function flow(forMs: number, everyMs = 200): Promise<number> {
  const before = chunkWrites();
  const end = Date.now() + forMs;
  for (let i = 0; Date.now() < end; i++) {
    putFault(`80E0${String(1000 + i).padStart(4, '0')}`);
    await sleep(everyMs);
  }
  return chunkWrites() - before;
}

async function startPublishing(timings: Partial<FaultCenterTimings> = {}): Promise<FaultCenter> {
  api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
  const c = center(timings);
  await until(() => published().includes('mindx-dl-deviceinfo-node-1'), 'the first publish');
  return c;
}

describe('issue [T] item 1: cluster-info publication under wall-clock steps', () => {
  beforeEach(async () => {
    clock = new SteppedClock();
    api = await KubeApiStandIn.start({ extraResources: [VOLCANO_PODGROUPS] });
  });

  afterEach(async () => {
    await Promise.all(centers.splice(0).map((c) => c.stop()));
    await api.stop();
  });

  test('0.3 wall clock back 1 h: a fault arriving after the step is published within the spacing, not an hour later', async () => {
    await startPublishing();
    await sleep(1100); // the chunk's one write a second has passed
    clock.stepWall(-HOUR);
    putFault('80E01801');
    await until(() => published().includes('80E01801'), 'the fault in cluster-info', 5000);
  });

  test('0.3 wall clock back 1 h while faults flow: one chunk write a second goes on', async () => {
    await startPublishing();
    void flow(1000);
    await sleep(500);
    clock.stepWall(-HOUR);
    const writes = await flow(5000);
    expect(writes).toBeGreaterThanOrEqual(3);
    expect(writes).toBeLessThanOrEqual(6);
  });

  test('0.3 wall clock forward 1 h while faults flow: still one chunk write a second, no burst', async () => {
    await startPublishing();
    void flow(1000);
    await sleep(500);
    clock.stepWall(HOUR);
    const writes = await flow(5000);
    expect(writes).toBeGreaterThanOrEqual(3);
    expect(writes).toBeLessThanOrEqual(6);
  });

  test('0.3 wall clock frozen while faults flow: changes are written, one chunk write a second', async () => {
    await startPublishing();
    clock.freezeWall();
    const writes = await flow(5000);
    expect(writes).toBeGreaterThanOrEqual(3);
    expect(writes).toBeLessThanOrEqual(6);
    putFault('80E01801');
    await until(() => published().includes('80E01801'), 'the last fault in cluster-info', 5000);
  });

  test('0.3 forced rewrite: after a step back of 1 h the chunk is still rewritten when nothing changed', async () => {
    await startPublishing({ publishForceMs: 1000 });
    clock.stepWall(-HOUR);
    const before = chunkWrites();
    await sleep(4500);
    expect(chunkWrites() - before).toBeGreaterThanOrEqual(2);
  });

  test('1.8 manual info: a separation after a step back of 1 h is written to clusterd-manual-info-cm and published', async () => {
    api.store.create(CONFIGMAPS, 'cluster-system', {
      metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' },
      data: { 'manually_separate_policy.conf': policyText({ threshold: '1' }) },
    });
    api.store.create(PODS, 'default', jobPod('p0', 'node-1', 'uid-J', [3, 5]));
    api.store.create(VOLCANO_PODGROUPS, 'default', podGroup('pg', 'uid-J'));
    const c = await startPublishing({ releaseTickMs: 1000, cycleMs: 200 });
    clock.stepWall(-HOUR);
    putFault('80E01801');
    await until(() => c.core?.manual.jobs.faultsOf('uid-J').length === 1, 'the job fault queued');
    // §1.4: a job fault counts once its 30 s window on the wall clock (a domain time) has passed
    clock.stepWall(31_000);
    await until(() => {
      const cm = api.store.get(CONFIGMAPS, 'cluster-system', 'clusterd-manual-info-cm') as
        { data?: Record<string, string> } | undefined;
      return cm?.data?.['node-1']?.includes('Ascend910-3');
    }, 'the separation in clusterd-manual-info-cm');
    await until(() => published().includes('ManuallySeparateNPU'), 'the separation in cluster-info', 5000);
  });
});

const proto = loadPubFaultProto();

function request(over: Partial<PublicFaultRequest> = {}): PublicFaultRequest {
  return {
    id: 'msg.20260301-0002',
    timestamp: String(T0_MS),
    version: '1.0',
    resource: 'pingmesh',
    faults: [
      {
        faultId: 'pm-link-42',
        faultType: 'Network',
        faultCode: '220001001',
        faultTime: String(T0_MS - 1000),
        assertion: 'occur',
        influence: [{ nodeName: 'node-2', deviceIds: [3] }],
      },
    ],
    ...over,
  };
}

function send(client: PubFaultClient, req: PublicFaultRequest): Promise<RespStatus__Output> {
  return new Promise((resolve, reject) => client.SendPublicFault(req, (e, r) => (e ? reject(e) : resolve(r!))));
}

describe('issue [T] item 1: public-fault token buckets under wall-clock steps (FakeClock)', () => {
  let fake: FakeClock;
  let server: PublicFaultGrpcServer | undefined;
  let client: PubFaultClient | undefined;

  function collector(): PublicFaultCollector {
    return new PublicFaultCollector({
      cache: new PublicFaultCache(),
      clock: fake,
      logger: recordingLogger(),
      metrics: noopPublicFaultMetrics,
      nodeBySerial: () => undefined,
      config: shippedConfig(),
    });
  }

  beforeEach(() => {
    fake = new FakeClock();
  });

  afterEach(async () => {
    client?.close();
    client = undefined;
    await server?.stop();
    server = undefined;
  });

  test('2.4 a sender emptied, wall clock back 1 h: one token is back one second later', async () => {
    const c = collector();
    for (let i = 0; i < 100; i++) c.collect(message({ resource: 'CCAE', version: 'x' }), 'grpc');
    expect(c.collect(message(), 'grpc').code).toBe(410);
    fake.stepWall(-HOUR);
    await fake.advance(1000);
    expect(c.collect(message(), 'grpc').code).toBe(0);
  });

  test('2.4 a sender emptied, wall clock forward 1 h: no token is given for the step', () => {
    const c = collector();
    for (let i = 0; i < 100; i++) c.collect(message({ version: 'x' }), 'grpc');
    fake.stepWall(HOUR);
    expect(c.collect(message(), 'grpc').code).toBe(410);
  });

  test('2.4 a sender emptied, wall clock frozen: tokens come back at 1/s', async () => {
    const c = collector();
    for (let i = 0; i < 100; i++) c.collect(message({ version: 'x' }), 'grpc');
    fake.freezeWall();
    await fake.advance(1000);
    expect(c.collect(message(), 'grpc').code).toBe(0);
  });

  test('2.4 the global gRPC limit: emptied, wall clock back 1 h, a request passes one second later', async () => {
    const c = collector();
    server = new PublicFaultGrpcServer({
      address: '127.0.0.1:0',
      collect: (m, s) => c.collect(m, s),
      clock: fake,
      logger: recordingLogger(),
      metrics: noopPublicFaultMetrics,
      globalBurst: 2,
      globalRatePerSec: 1,
    });
    client = new proto.PubFault(await server.start(), grpc.credentials.createInsecure());
    await send(client, request());
    await send(client, request());
    await expect(send(client, request())).rejects.toMatchObject({ details: QPS_EXCEEDED });
    fake.stepWall(-HOUR);
    await fake.advance(1000);
    await expect(send(client, request())).resolves.toMatchObject({ code: 0 });
  });
});

describe('issue [T] item 1: the public-fault delete queue under a wall-clock step', () => {
  let service: PublicFaultService | undefined;
  let client: PubFaultClient | undefined;

  beforeEach(async () => {
    clock = new SteppedClock();
    api = await KubeApiStandIn.start();
  });

  afterEach(async () => {
    client?.close();
    await service?.stop();
    await api.stop();
  });

  test('2.7 a recovered fault leaves the store after its 5 s, wall clock stepped back 1 h meanwhile', async () => {
    service = createPublicFaultService({
      kube: centerKube(api),
      grpcAddress: '127.0.0.1:0',
      configFile: SHIPPED_CONFIG_FILE,
      stateNamespace: 'cluster-system',
      logger: recordingLogger(),
      registry: new Registry(),
      statisticsIntervalMs: 1,
      clock,
    });
    await service.start();
    client = new proto.PubFault(service.grpcAddress!, grpc.credentials.createInsecure());
    const occur = request();
    expect((await send(client, occur)).code).toBe(0);
    expect(
      (
        await send(client, {
          ...occur,
          id: 'msg.20260301-0003',
          faults: [{ ...occur.faults![0]!, assertion: 'recover' }],
        })
      ).code,
    ).toBe(0);
    expect(service.size).toBe(1);
    clock.stepWall(-HOUR);
    const s = service;
    await until(() => s.size === 0, 'the recovered fault removed', 9000);
  });
});
