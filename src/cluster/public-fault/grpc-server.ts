/**
 * The `PubFault` gRPC server (spec cluster-faults.md §2.11): `SendPublicFault` hands each request to the collector
 * and answers its `RespStatus` (§2.6). A server-wide token bucket (1000/s, burst 1000, §2.4) answers a gRPC error
 * `UNKNOWN` "qps exceeded, method=/PubFault/SendPublicFault" when exhausted, as Go gRPC does for upstream's
 * interceptor error.
 *
 * Requests are bounded before they are decoded (issue [K] item 2): grpc-js refuses a message over 4 MiB from its
 * length prefix (`RESOURCE_EXHAUSTED`), the service's own deserializer decodes within the §2.5 limits
 * (`request-decode.ts`) and never throws, a malformed message is answered `INVALID_ARGUMENT` naming the problem,
 * and at most {@link DEFAULT_RECEIVE_SLOTS} requests are received at once (`receive-gate.ts`; the others wait,
 * held back by HTTP/2 flow control), so what the transport buffers is bounded too. A call whose request has not
 * arrived within {@link DEFAULT_RECEIVE_TIMEOUT_MS} of its headers is ended (`DEADLINE_EXCEEDED`): a client cannot
 * hold a slot or a stream open.
 */
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import type { RespStatus } from '../../generated/pubfault/RespStatus.js';
import type { CollectResult } from './collector.js';
import type { PublicFaultMetrics } from './metrics.js';
import { loadPubFaultProto, SEND_PUBLIC_FAULT_METHOD } from './proto.js';
import { decodePublicFaultRequest, WireFormatError, type WireCounts } from './request-decode.js';
import { ReceiveGate } from './receive-gate.js';
import { TokenBucket } from './token-bucket.js';
import type { PublicFaultMessage } from './types.js';

/** Largest request accepted (bytes): upstream's `MaxGRPCRecvMsgSize` (§2.11); see docs/public-faults.md "Limits". */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/**
 * §2.11 server options: upstream's message sizes, 64 streams per connection, keepalive 1 min with upstream's 5 s
 * ping timeout; plus an idle limit (upstream has none) so that idle connections do not accumulate. Upstream's
 * listener connection limits have no grpc-js equivalent (see the docs).
 */
export const PUBFAULT_SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
  'grpc.max_send_message_length': 8 * 1024 * 1024,
  'grpc.max_concurrent_streams': 64,
  'grpc.keepalive_time_ms': 60_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.max_connection_idle_ms': 5 * 60_000,
};

/**
 * Default of {@link PublicFaultGrpcServerOptions.receiveTimeoutMs}: a 4 MiB request at 300 KB/s, plus waiting for
 * a slot.
 */
export const DEFAULT_RECEIVE_TIMEOUT_MS = 15_000;
/** Default of {@link PublicFaultGrpcServerOptions.receiveSlots}: 4 × 2 × 4 MiB = 32 MiB buffered at most. */
export const DEFAULT_RECEIVE_SLOTS = 4;
/** Default of {@link PublicFaultGrpcServerOptions.maxWaiting}: 128 × 64 KiB windows = 8 MiB at most. */
export const DEFAULT_MAX_WAITING = 128;

export const QPS_EXCEEDED = `qps exceeded, method=${SEND_PUBLIC_FAULT_METHOD}`;

/** What the service's deserializer hands to the handler: a decoded message, or why the bytes were refused. */
export type GrpcRequest =
  { ok: true; message: PublicFaultMessage; counts: WireCounts } | { ok: false; problem: string; unexpected: boolean };

/** The `requestDeserialize` of the service: decodes within limits; never throws (grpc-js would answer INTERNAL). */
export function deserializeRequest(bytes: Buffer): GrpcRequest {
  try {
    const { message, counts } = decodePublicFaultRequest(bytes);
    return { ok: true, message, counts };
  } catch (e) {
    if (e instanceof WireFormatError) return { ok: false, problem: e.message, unexpected: false };
    return { ok: false, problem: String(e).slice(0, 200), unexpected: true };
  }
}

/** Options of the server. */
export interface PublicFaultGrpcServerOptions {
  /** `:8899`, `host:port`, `[::]:port` or `unix:///abs/path` (port 0 picks a free port) */
  address: string;
  collect(msg: PublicFaultMessage | null, source: 'grpc'): CollectResult;
  /** monotonic: the global bucket */
  clock: Pick<Clock, 'monotonic'>;
  logger: Logger;
  metrics: PublicFaultMetrics;
  /** global limit (§2.4): default 1000/s, burst 1000 */
  globalRatePerSec?: number;
  globalBurst?: number;
  /** ms from the call's headers to its complete request; default {@link DEFAULT_RECEIVE_TIMEOUT_MS} */
  receiveTimeoutMs?: number;
  /** requests received at once; default {@link DEFAULT_RECEIVE_SLOTS} */
  receiveSlots?: number;
  /** calls waiting for a slot before new ones are refused; default {@link DEFAULT_MAX_WAITING} */
  maxWaiting?: number;
}

/** `:8899` → `0.0.0.0:8899` (Go's "all interfaces"); anything else as given. */
export function grpcBindAddress(address: string): string {
  return address.startsWith(':') ? `0.0.0.0${address}` : address;
}

/** One server; {@link start} binds, {@link stop} shuts down (pending calls finish, then forced after 5 s). */
export class PublicFaultGrpcServer {
  readonly #o: PublicFaultGrpcServerOptions;
  readonly #global: TokenBucket;
  readonly #gate: ReceiveGate;
  #server: grpc.Server | undefined;
  #port = 0;

  constructor(options: PublicFaultGrpcServerOptions) {
    this.#o = options;
    this.#global = new TokenBucket(options.globalBurst ?? 1000, options.globalRatePerSec ?? 1000, () =>
      options.clock.monotonic(),
    );
    this.#gate = new ReceiveGate(
      options.receiveSlots ?? DEFAULT_RECEIVE_SLOTS,
      options.maxWaiting ?? DEFAULT_MAX_WAITING,
    );
  }

  /** Calls reading their request now, and calls waiting for a receive slot. */
  get receiving(): { holding: number; waiting: number } {
    return { holding: this.#gate.holding, waiting: this.#gate.waiting };
  }

  /** The bound TCP port (0 for a Unix socket). */
  get port(): number {
    return this.#port;
  }

  #handlers(): grpc.UntypedServiceImplementation {
    const sendPublicFault: grpc.handleUnaryCall<GrpcRequest, RespStatus> = (call, callback) => {
      const req = call.request;
      if (!req.ok && req.unexpected) {
        // a bug of the decoder, not the client's bytes
        this.#o.metrics.rejection('grpc', 'internal');
        this.#o.logger.error({ err: req.problem }, 'public fault request decoder failed');
        callback({ code: grpc.status.INTERNAL, details: 'internal error' });
        return;
      }
      if (!req.ok) {
        // upstream: Go's decoder error reaches the client as INTERNAL; the client's bytes are at fault, so we say so
        this.#o.metrics.rejection('grpc', 'malformed');
        this.#o.logger.warn({ source: 'grpc', reason: 'malformed', problem: req.problem }, 'malformed request');
        callback({ code: grpc.status.INVALID_ARGUMENT, details: `malformed PublicFaultRequest: ${req.problem}` });
        return;
      }
      if (!this.#global.tryTake()) {
        this.#o.metrics.rejection('grpc', 'global-rate-limited');
        this.#o.logger.warn({ source: 'grpc', reason: 'global-rate-limited' }, QPS_EXCEEDED);
        callback({ code: grpc.status.UNKNOWN, details: QPS_EXCEEDED });
        return;
      }
      let result: CollectResult;
      try {
        result = this.#o.collect(req.message, 'grpc');
      } catch (e) {
        // the collector never throws by design; keep serving if it ever does
        this.#o.logger.error({ err: e }, 'public fault collector failed');
        callback({ code: grpc.status.INTERNAL, details: 'internal error' });
        return;
      }
      callback(null, { code: result.code, info: result.info });
    };
    return { SendPublicFault: sendPublicFault };
  }

  /**
   * Per call: waits for a receive slot before the request is read (the gate), and ends the call if its request is
   * not complete `receiveTimeoutMs` after its headers (a stream held open with a partial message would keep its slot
   * and up to 4 MiB buffered for as long as the client likes).
   */
  #receiveInterceptor(): grpc.ServerInterceptor {
    const ms = this.#o.receiveTimeoutMs ?? DEFAULT_RECEIVE_TIMEOUT_MS;
    const gate = this.#gate;
    const { logger, metrics } = this.#o;
    return (_method, call) => {
      let timer: NodeJS.Timeout | undefined;
      let release: (() => void) | undefined;
      const finish = (): void => {
        clearTimeout(timer);
        timer = undefined;
        release?.();
        release = undefined;
      };
      const refuse = (reason: string, code: grpc.status, details: string): void => {
        finish();
        metrics.rejection('grpc', reason);
        logger.warn({ source: 'grpc', reason, peer: call.getPeer() }, `request refused: ${details}`);
        call.sendStatus({ code, details });
      };
      return new grpc.ServerInterceptingCall(call, {
        start: (next) =>
          next({
            onReceiveMetadata: (metadata, nextMetadata) => {
              timer = setTimeout(
                () => refuse('receive-timeout', grpc.status.DEADLINE_EXCEEDED, `request not received within ${ms} ms`),
                ms,
              );
              timer.unref();
              release = gate.enter(() => {
                try {
                  nextMetadata(metadata);
                } catch (e) {
                  logger.error({ err: String(e) }, 'gRPC call could not start');
                  refuse('internal', grpc.status.INTERNAL, 'internal error');
                }
              });
              if (release === undefined) {
                refuse(
                  'busy',
                  grpc.status.RESOURCE_EXHAUSTED,
                  `server busy: ${gate.slots} requests being received and ${gate.maxWaiting} waiting`,
                );
              }
            },
            onReceiveMessage: (message, nextMessage) => {
              finish();
              nextMessage(message);
            },
            // every call ends with onCancel (grpc-js notifies it after any status, its own ones included)
            onCancel: finish,
          }),
      });
    };
  }

  /** Binds and serves; resolves with the bound address. */
  async start(): Promise<string> {
    const method = loadPubFaultProto().PubFault.service.SendPublicFault;
    // the proto-loader definition with our bounded decoder in place of protobufjs's
    const service: grpc.ServiceDefinition = {
      SendPublicFault: { ...method, requestDeserialize: deserializeRequest },
    };
    const server = new grpc.Server({ ...PUBFAULT_SERVER_OPTIONS, interceptors: [this.#receiveInterceptor()] });
    server.addService(service, this.#handlers());
    const address = grpcBindAddress(this.#o.address);
    if (address.startsWith('unix://')) fs.rmSync(address.slice('unix://'.length), { force: true });
    this.#port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      ),
    );
    this.#server = server;
    return address.startsWith('unix://') ? address : address.replace(/:\d+$/, `:${this.#port}`);
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 5000);
      force.unref();
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }
}
