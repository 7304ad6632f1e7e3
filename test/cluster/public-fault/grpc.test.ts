import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PubFaultClient } from '../../../src/generated/pubfault/PubFault.js';
import type { PublicFaultRequest } from '../../../src/generated/pubfault/PublicFaultRequest.js';
import type { RespStatus__Output } from '../../../src/generated/pubfault/RespStatus.js';
import { PublicFaultCache } from '../../../src/cluster/public-fault/cache.js';
import { PublicFaultCollector } from '../../../src/cluster/public-fault/collector.js';
import { PublicFaultGrpcServer, QPS_EXCEEDED } from '../../../src/cluster/public-fault/grpc-server.js';
import { noopPublicFaultMetrics } from '../../../src/cluster/public-fault/metrics.js';
import { loadPubFaultProto } from '../../../src/cluster/public-fault/proto.js';
import { manualClock, recordingLogger, shippedConfig, T0_MS } from './fixtures.js';

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
        assertion: 'once',
        influence: [{ nodeName: 'node-2', deviceIds: [3] }],
      },
    ],
    ...over,
  };
}

interface Harness {
  server: PublicFaultGrpcServer;
  client: PubFaultClient;
  cache: PublicFaultCache;
  clock: ReturnType<typeof manualClock>;
}

let h: Harness;
let dir: string;

async function start(address: string, globalBurst = 1000): Promise<Harness> {
  const clock = manualClock();
  const cache = new PublicFaultCache();
  const logger = recordingLogger();
  const collector = new PublicFaultCollector({
    cache,
    now: clock.now,
    logger,
    metrics: noopPublicFaultMetrics,
    nodeBySerial: () => undefined,
    config: shippedConfig(),
  });
  const server = new PublicFaultGrpcServer({
    address,
    collect: (m, s) => collector.collect(m, s),
    now: clock.now,
    logger,
    metrics: noopPublicFaultMetrics,
    globalBurst,
  });
  const bound = await server.start();
  const client = new proto.PubFault(bound, grpc.credentials.createInsecure());
  return { server, client, cache, clock };
}

function send(client: PubFaultClient, req: PublicFaultRequest): Promise<RespStatus__Output> {
  return new Promise((resolve, reject) =>
    client.SendPublicFault(req, (err, res) => (err ? reject(err) : resolve(res!))),
  );
}

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-grpc-'));
  h = await start('127.0.0.1:0');
});

afterEach(async () => {
  h.client.close();
  await h.server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('§2.6 return codes over gRPC', () => {
  test('§2.6 accepted: code 0 "public fault send successfully"', async () => {
    expect(await send(h.client, request())).toEqual({ code: 0, info: 'public fault send successfully' });
  });

  test('§2.6 an accepted request is stored (the §3 example: node-2 device 3)', async () => {
    await send(h.client, request());
    expect(h.cache.get('node-2', 'pingmeshpm-link-42')).toMatchObject({ devIds: [3], level: 'SeparateNPU' });
  });

  test('§2.6 an unknown sender gets 410 (not 409, §2.12 item 2)', async () => {
    expect(await send(h.client, request({ resource: 'nobody' }))).toEqual({
      code: 410,
      info: 'limiter work by resource failed',
    });
  });

  test('§2.6 an invalid message gets 409 with the check detail', async () => {
    expect(await send(h.client, request({ version: '2.0' }))).toEqual({
      code: 409,
      info: 'check public fault info failed, error: invalid version',
    });
  });

  test('§2.6 an empty request gets 409 "invalid id" (proto3 defaults)', async () => {
    expect(await send(h.client, { resource: 'pingmesh' })).toEqual({
      code: 409,
      info: 'check public fault info failed, error: invalid id',
    });
  });

  test('§2.6 a message whose only fault is invalid gets 409 "there is no valid fault"', async () => {
    const req = request();
    req.faults![0]!.faultType = 'Disk';
    expect((await send(h.client, req)).info).toBe('check public fault info failed, error: there is no valid fault');
  });

  test('§2.6 a partly invalid message is accepted with 0 (§2.12 item 3)', async () => {
    const req = request();
    req.faults!.push({ ...req.faults![0]!, faultId: 'bad' });
    expect((await send(h.client, req)).code).toBe(0);
  });

  test('§2.4 the 101st request of a sender in the same instant gets 410', async () => {
    for (let i = 0; i < 100; i++) await send(h.client, request({ version: 'x' }));
    expect((await send(h.client, request())).code).toBe(410);
  });

  test('§2.4 invalid requests consume tokens too (limiter before validation)', async () => {
    for (let i = 0; i < 100; i++) expect((await send(h.client, request({ version: 'x' }))).code).toBe(409);
    expect((await send(h.client, request())).info).toBe('limiter work by resource failed');
  });

  test('§2.4 one second later the sender has one token again', async () => {
    for (let i = 0; i < 101; i++) await send(h.client, request());
    h.clock.advance(1000);
    expect((await send(h.client, request())).code).toBe(0);
  });

  test('§2.4 the global limit answers a gRPC UNKNOWN error "qps exceeded"', async () => {
    h.client.close();
    await h.server.stop();
    h = await start('127.0.0.1:0', 2);
    await send(h.client, request());
    await send(h.client, request());
    await expect(send(h.client, request())).rejects.toMatchObject({ code: grpc.status.UNKNOWN, details: QPS_EXCEEDED });
  });

  test('§2.11 the service also serves on a Unix socket', async () => {
    h.client.close();
    await h.server.stop();
    h = await start(`unix://${path.join(dir, 'pf.sock')}`);
    expect((await send(h.client, request())).code).toBe(0);
  });
});
