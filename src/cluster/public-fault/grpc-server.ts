/**
 * The `PubFault` gRPC server (spec cluster-faults.md §2.11): `SendPublicFault` hands each request to the collector
 * and answers its `RespStatus` (§2.6). A server-wide token bucket (1000/s, burst 1000, §2.4) answers a gRPC error
 * `UNKNOWN` "qps exceeded, method=/PubFault/SendPublicFault" when exhausted, as Go gRPC does for upstream's
 * interceptor error.
 */
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import type { PubFaultHandlers } from '../../generated/pubfault/PubFault.js';
import type { CollectResult, PublicFaultLogger } from './collector.js';
import type { PublicFaultMetrics } from './metrics.js';
import { loadPubFaultProto, messageFromRequest, SEND_PUBLIC_FAULT_METHOD } from './proto.js';
import { TokenBucket } from './token-bucket.js';
import type { PublicFaultMessage } from './types.js';

/** §2.11 server options (upstream's listener connection limits have no grpc-js equivalent; see the docs). */
export const PUBFAULT_SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': 4 * 1024 * 1024,
  'grpc.max_send_message_length': 8 * 1024 * 1024,
  'grpc.max_concurrent_streams': 64,
  'grpc.keepalive_time_ms': 60_000,
};

export const QPS_EXCEEDED = `qps exceeded, method=${SEND_PUBLIC_FAULT_METHOD}`;

/** Options of the server. */
export interface PublicFaultGrpcServerOptions {
  /** `:8899`, `host:port`, `[::]:port` or `unix:///abs/path` (port 0 picks a free port) */
  address: string;
  collect(msg: PublicFaultMessage | null, source: 'grpc'): CollectResult;
  /** ms */
  now: () => number;
  logger: PublicFaultLogger;
  metrics: PublicFaultMetrics;
  /** global limit (§2.4): default 1000/s, burst 1000 */
  globalRatePerSec?: number;
  globalBurst?: number;
}

/** `:8899` → `0.0.0.0:8899` (Go's "all interfaces"); anything else as given. */
export function grpcBindAddress(address: string): string {
  return address.startsWith(':') ? `0.0.0.0${address}` : address;
}

/** One server; {@link start} binds, {@link stop} shuts down (pending calls finish, then forced after 5 s). */
export class PublicFaultGrpcServer {
  readonly #o: PublicFaultGrpcServerOptions;
  readonly #global: TokenBucket;
  #server: grpc.Server | undefined;
  #port = 0;

  constructor(options: PublicFaultGrpcServerOptions) {
    this.#o = options;
    this.#global = new TokenBucket(options.globalBurst ?? 1000, options.globalRatePerSec ?? 1000, options.now);
  }

  /** The bound TCP port (0 for a Unix socket). */
  get port(): number {
    return this.#port;
  }

  #handlers(): PubFaultHandlers {
    return {
      SendPublicFault: (call, callback) => {
        if (!this.#global.tryTake()) {
          this.#o.metrics.rejection('grpc', 'global-rate-limited');
          this.#o.logger.warn({ source: 'grpc', reason: 'global-rate-limited' }, QPS_EXCEEDED);
          callback({ code: grpc.status.UNKNOWN, details: QPS_EXCEEDED });
          return;
        }
        let result: CollectResult;
        try {
          result = this.#o.collect(call.request === null ? null : messageFromRequest(call.request), 'grpc');
        } catch (e) {
          // the collector never throws by design; keep serving if it ever does
          this.#o.logger.error({ err: e }, 'public fault collector failed');
          callback({ code: grpc.status.INTERNAL, details: 'internal error' });
          return;
        }
        callback(null, { code: result.code, info: result.info });
      },
    };
  }

  /** Binds and serves; resolves with the bound address. */
  async start(): Promise<string> {
    const proto = loadPubFaultProto();
    const server = new grpc.Server(PUBFAULT_SERVER_OPTIONS);
    server.addService(proto.PubFault.service, this.#handlers());
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
