import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import type { PubFaultClient } from '../../../src/generated/pubfault/PubFault.js';
import type { PublicFaultRequest } from '../../../src/generated/pubfault/PublicFaultRequest.js';
import type { RespStatus__Output } from '../../../src/generated/pubfault/RespStatus.js';
import { PublicFaultCache } from '../../../src/cluster/public-fault/cache.js';
import { PublicFaultCollector } from '../../../src/cluster/public-fault/collector.js';
import {
  MAX_REQUEST_BYTES,
  PublicFaultGrpcServer,
  QPS_EXCEEDED,
  type PublicFaultGrpcServerOptions,
} from '../../../src/cluster/public-fault/grpc-server.js';
import { noopPublicFaultMetrics } from '../../../src/cluster/public-fault/metrics.js';
import { loadPubFaultProto } from '../../../src/cluster/public-fault/proto.js';
import type { PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';
import { manualClock, recordingLogger, shippedConfig, T0_MS } from './fixtures.js';
import { until } from './helpers.js';
import { faultBody, header, influence, lenField, repeated, tag, varint } from './wire-bytes.js';

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
  raw: RawClient;
  address: string;
  cache: PublicFaultCache;
  clock: ReturnType<typeof manualClock>;
  /** every message the collector was given */
  seen: PublicFaultMessage[];
}

type RawClient = grpc.Client & {
  SendPublicFault(req: Buffer, cb: grpc.requestCallback<RespStatus__Output>): void;
};

const method = proto.PubFault.service.SendPublicFault;
/** A client that sends the given bytes as the request (no serializer). */
const RawClientCtor = grpc.makeGenericClientConstructor(
  {
    SendPublicFault: {
      ...method,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
    },
  },
  'PubFault',
) as unknown as new (address: string, creds: grpc.ChannelCredentials) => RawClient;

type ServerTuning = Partial<
  Pick<PublicFaultGrpcServerOptions, 'globalBurst' | 'receiveSlots' | 'maxWaiting' | 'receiveTimeoutMs'>
>;

let h: Harness;
let dir: string;

async function start(address: string, tuning: ServerTuning = {}): Promise<Harness> {
  const clock = manualClock();
  const cache = new PublicFaultCache();
  const logger = recordingLogger();
  const collector = new PublicFaultCollector({
    cache,
    clock: { monotonic: clock.now },
    logger,
    metrics: noopPublicFaultMetrics,
    nodeBySerial: () => undefined,
    config: shippedConfig(),
  });
  const seen: PublicFaultMessage[] = [];
  const server = new PublicFaultGrpcServer({
    address,
    collect: (m, s) => {
      if (m !== null) seen.push(m);
      return collector.collect(m, s);
    },
    clock: { monotonic: clock.now },
    logger,
    metrics: noopPublicFaultMetrics,
    ...tuning,
  });
  const bound = await server.start();
  const client = new proto.PubFault(bound, grpc.credentials.createInsecure());
  const raw = new RawClientCtor(bound, grpc.credentials.createInsecure());
  return { server, client, raw, address: bound, cache, clock, seen };
}

function sendRaw(client: RawClient, bytes: Buffer): Promise<RespStatus__Output> {
  return new Promise((resolve, reject) =>
    client.SendPublicFault(bytes, (err, res) => (err ? reject(err) : resolve(res!))),
  );
}

/**
 * A call over plain HTTP/2 that sends its headers and the first `sent` bytes of a request declared `declared`
 * bytes long, then stalls; `finish` sends the rest. `status` resolves with the call's grpc-status and message.
 */
function stalledCall(address: string, declared: number, sent: Buffer) {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  const stream = session.request({
    ':method': 'POST',
    ':path': '/PubFault/SendPublicFault',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => undefined);
  stream.resume();
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(declared, 1);
  stream.write(Buffer.concat([prefix, sent]));
  const status = new Promise<{ code: number; message: string }>((resolve) => {
    const done = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) {
        resolve({ code: Number(h['grpc-status']), message: decodeURIComponent(String(h['grpc-message'] ?? '')) });
      }
    };
    stream.on('response', done);
    stream.on('trailers', done);
  });
  return {
    status,
    finish: (rest: Buffer) => stream.end(rest),
    close: () => session.destroy(),
  };
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
  h.raw.close();
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
    h.raw.close();
    await h.server.stop();
    h = await start('127.0.0.1:0', { globalBurst: 2 });
    await send(h.client, request());
    await send(h.client, request());
    await expect(send(h.client, request())).rejects.toMatchObject({ code: grpc.status.UNKNOWN, details: QPS_EXCEEDED });
  });

  test('§2.11 the service also serves on a Unix socket', async () => {
    h.client.close();
    h.raw.close();
    await h.server.stop();
    h = await start(`unix://${path.join(dir, 'pf.sock')}`);
    expect((await send(h.client, request())).code).toBe(0);
  });
});

describe('[K] item 2 every request bounded before it is decoded', () => {
  test('[K] item 2 the 1.3 M-empty-faults request gets 409 "invalid faults length" and its faults are never decoded', async () => {
    const bytes = repeated(header(), Buffer.from([0x2a, 0x00]), 1_300_000);
    expect(await sendRaw(h.raw, bytes)).toEqual({
      code: 409,
      info: 'check public fault info failed, error: invalid faults length',
    });
    expect(h.seen.map((m) => [m.faults.length, m.faultsSent])).toEqual([[0, 1_300_000]]);
  });

  test('[K] item 2 §2.5 rule 5: 100 faults are accepted, 101 refused', async () => {
    const faults = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ ...request().faults![0]!, faultId: `pm-link-${i}00` }));
    expect((await send(h.client, request({ faults: faults(100) }))).code).toBe(0);
    expect(await send(h.client, request({ faults: faults(101) }))).toEqual({
      code: 409,
      info: 'check public fault info failed, error: invalid faults length',
    });
  });

  test('[K] item 2 §2.5 an influence with 100,000 device ids reaches validation with 33 and its fault is dropped', async () => {
    const bytes = Buffer.concat([header(), lenField(5, faultBody([influence(lenField(3, Buffer.alloc(100_000, 1)))]))]);
    expect((await sendRaw(h.raw, bytes)).info).toBe('check public fault info failed, error: there is no valid fault');
    expect(h.seen[0]!.faults[0]!.influence[0]!.deviceIds).toHaveLength(33);
  });

  const malformed: [string, Buffer, string][] = [
    ['a truncated varint', Buffer.concat([header(), Buffer.from([0x10, 0x96])]), 'truncated varint'],
    ['a length past the end', Buffer.concat([header(), Buffer.from([0x2a, 0x10])]), 'length 16 past the end'],
    ['a huge length prefix', Buffer.concat([header(), tag(5, 2), varint(0xffffffff)]), 'length 4294967295 past'],
    ['deep group nesting', Buffer.alloc(1_000_000, 0x0b), 'groups nested deeper than 32'],
  ];
  test.each(malformed)('[K] item 2 %s is answered INVALID_ARGUMENT naming the problem', async (_n, bytes, problem) => {
    const err = await sendRaw(h.raw, bytes).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err?.details).toContain(`malformed PublicFaultRequest: ${problem}`);
    expect(h.seen).toEqual([]);
  });

  test('[K] item 2 the server keeps serving after malformed requests', async () => {
    await sendRaw(h.raw, Buffer.alloc(100_000, 0x0b)).catch(() => undefined);
    await sendRaw(h.raw, Buffer.from([0xff])).catch(() => undefined);
    expect((await send(h.client, request())).code).toBe(0);
  });

  test('§2.11 a request over 4 MiB is refused from its length prefix (RESOURCE_EXHAUSTED)', async () => {
    const bytes = Buffer.concat([header(), lenField(15, Buffer.alloc(MAX_REQUEST_BYTES))]);
    await expect(sendRaw(h.raw, bytes)).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    expect(h.seen).toEqual([]);
  });

  test('[K] item 2 a request not complete within the receive timeout is ended with DEADLINE_EXCEEDED', async () => {
    h.client.close();
    h.raw.close();
    await h.server.stop();
    h = await start('127.0.0.1:0', { receiveTimeoutMs: 300 });
    const call = stalledCall(h.address, 1000, Buffer.alloc(10));
    try {
      expect(await call.status).toEqual({
        code: grpc.status.DEADLINE_EXCEEDED,
        message: 'request not received within 300 ms',
      });
      expect(h.server.receiving).toEqual({ holding: 0, waiting: 0 });
    } finally {
      call.close();
    }
  });

  test('[K] item 2 requests beyond the receive slots wait for a slot (not refused) and are answered after it frees', async () => {
    h.client.close();
    h.raw.close();
    await h.server.stop();
    h = await start('127.0.0.1:0', { receiveSlots: 1 });
    const body = header();
    const stalled = stalledCall(h.address, body.length, body.subarray(0, 4));
    try {
      await until(() => h.server.receiving.holding === 1, 10_000, 'the stalled call holds the slot');
      const order: string[] = [];
      const valid = send(h.client, request()).then((r) => {
        order.push('valid answered');
        return r;
      });
      await until(() => h.server.receiving.waiting === 1, 10_000, 'the valid call waits');
      order.push('stalled completes');
      stalled.finish(body.subarray(4));
      expect((await stalled.status).code).toBe(grpc.status.OK);
      expect((await valid).code).toBe(0);
      expect(order).toEqual(['stalled completes', 'valid answered']);
    } finally {
      stalled.close();
    }
  });

  test('[K] item 2 when the slots are taken and the queue is full, a call is refused RESOURCE_EXHAUSTED "server busy"', async () => {
    h.client.close();
    h.raw.close();
    await h.server.stop();
    h = await start('127.0.0.1:0', { receiveSlots: 1, maxWaiting: 0 });
    const stalled = stalledCall(h.address, 100, Buffer.alloc(1));
    try {
      await until(() => h.server.receiving.holding === 1, 10_000, 'the stalled call holds the slot');
      await expect(send(h.client, request())).rejects.toMatchObject({
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: 'server busy: 1 requests being received and 0 waiting',
      });
    } finally {
      stalled.close();
    }
    await until(() => h.server.receiving.holding === 0, 10_000, 'the slot is given back when the client goes away');
  });
});
