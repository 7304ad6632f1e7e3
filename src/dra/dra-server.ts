/**
 * The driver's service socket `<-kubeletPluginsDir>/npu.huawei.com/dra.sock` (issue [DRA] item 1): gRPC `DRAPlugin`
 * v1 (NodePrepareResources / NodeUnprepareResources, answered by the {@link ClaimPreparer}) and `DRAResourceHealth`
 * v1 (NodeWatchResources). The health stream sends the whole report when kubelet opens it, then again whenever it
 * changes — in the same synchronous pass of the store's listeners as the device plugin's ListAndWatch, so both see a
 * fault in the same cycle — and, unchanged, every `keepAliveMs`: kubelet turns a device it has not heard of within
 * its health timeout into "Unknown" (KEP-4680), so silence would be read as a lost device. The timeout sent is
 * {@link HEALTH_TIMEOUT_SECONDS}, three keep-alives.
 */
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import type { Clock, TimerHandle } from '../core/clock.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { DRAPluginHandlers } from '../generated/dra/k8s/io/kubelet/pkg/apis/dra/v1/DRAPlugin.js';
import type { NodePrepareResourcesResponse } from '../generated/dra/k8s/io/kubelet/pkg/apis/dra/v1/NodePrepareResourcesResponse.js';
import type { NodeUnprepareResourcesResponse } from '../generated/dra/k8s/io/kubelet/pkg/apis/dra/v1/NodeUnprepareResourcesResponse.js';
import type { DRAResourceHealthHandlers } from '../generated/drahealth/v1/DRAResourceHealth.js';
import type { NodeWatchResourcesRequest__Output } from '../generated/drahealth/v1/NodeWatchResourcesRequest.js';
import type { NodeWatchResourcesResponse } from '../generated/drahealth/v1/NodeWatchResourcesResponse.js';
import type { NodeState } from '../state/store.js';
import { checkSocketPath, removeStale, socketIdentity, stopServerOnSocket } from '../kubelet/unix-socket.js';
import { MAX_CLAIMS_PER_REQUEST, type ClaimPreparer } from './claim-preparer.js';
import type { ClaimRef } from './claims.js';
import { healthReport, reportKey, type DeviceHealthReport } from './health-report.js';
import type { DraProtos } from './proto.js';

/** The device plugin's server limits (spec A.4). */
const SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': 4 * 1024 * 1024,
  'grpc.max_concurrent_streams': 64,
  'grpc.keepalive_time_ms': 5 * 60_000,
  'grpc.keepalive_timeout_ms': 5 * 60_000,
};

/** Health timeout sent with every device (kubelet's default is 30 s). */
export const HEALTH_TIMEOUT_SECONDS = 90;
/** Default period of the unchanged report. */
export const HEALTH_KEEPALIVE_MS = 30_000;
/** Health streams served at once (kubelet opens one; more means something else is connected too). */
const MAX_HEALTH_STREAMS = 8;

/** Options of {@link DraServer}. */
export interface DraServerOptions {
  readonly socketPath: string;
  readonly poolName: string;
  readonly protos: DraProtos;
  readonly preparer: ClaimPreparer;
  /** The store (its snapshot and change notification). */
  readonly store: { snapshot(): NodeState; onChange(l: (s: NodeState) => void): () => void };
  readonly clock: Clock;
  readonly keepAliveMs?: number;
  readonly logger?: Logger;
  /** A prepare or unprepare finished: its duration, and the claims that failed (for metrics). */
  readonly observed?: (call: 'prepare' | 'unprepare', ms: number, failedClaims: number) => void;
}

type HealthCall = grpc.ServerWritableStream<NodeWatchResourcesRequest__Output, NodeWatchResourcesResponse>;

/** The gRPC server of dra.sock. */
export class DraServer {
  readonly #o: DraServerOptions;
  readonly #log: Logger;
  readonly #streams = new Set<HealthCall>();
  #server: grpc.Server | undefined;
  #identity: string | undefined;
  #unsubscribe: (() => void) | undefined;
  #keepAlive: TimerHandle | undefined;
  #lastKey = '';
  #report: DeviceHealthReport[] = [];
  #sends = 0;

  constructor(options: DraServerOptions) {
    checkSocketPath(options.socketPath);
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** Open health streams. */
  get healthStreams(): number {
    return this.#streams.size;
  }

  /** Health messages sent so far (to every stream), for tests and metrics. */
  get healthSends(): number {
    return this.#sends;
  }

  /** Whether the server listens on the socket it made. */
  socketIntact(): boolean {
    return (
      this.#server !== undefined &&
      this.#identity !== undefined &&
      socketIdentity(this.#o.socketPath) === this.#identity
    );
  }

  /** Listens (a stale file removed first, socket 0600) and follows the store. */
  async listen(): Promise<void> {
    if (this.#server) await this.shutdown();
    removeStale(this.#o.socketPath);
    const server = new grpc.Server(SERVER_OPTIONS);
    server.addService(this.#o.protos.dra.DRAPlugin.service, this.#draHandlers());
    server.addService(this.#o.protos.health.DRAResourceHealth.service, this.#healthHandlers());
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.#o.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    fs.chmodSync(this.#o.socketPath, 0o600);
    if (process.getuid?.() === 0) fs.lchownSync(this.#o.socketPath, 0, 0);
    this.#identity = socketIdentity(this.#o.socketPath);
    this.#server = server;
    this.#report = healthReport(this.#o.store.snapshot(), this.#o.poolName);
    this.#lastKey = reportKey(this.#report);
    this.#unsubscribe ??= this.#o.store.onChange((s) => this.#onState(s));
    this.#scheduleKeepAlive();
    this.#log.info({ socket: this.#o.socketPath }, 'DRA plugin server listening');
  }

  /** Ends the health streams, stops the server, removes its socket (if still ours). */
  async shutdown(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    for (const s of this.#streams) s.end();
    this.#streams.clear();
    await stopServerOnSocket(server, this.#o.socketPath, this.#identity);
    this.#identity = undefined;
  }

  /** Final stop. */
  async close(): Promise<void> {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    if (this.#keepAlive !== undefined) this.#o.clock.clearTimeout(this.#keepAlive);
    this.#keepAlive = undefined;
    await this.shutdown();
  }

  #onState(state: NodeState): void {
    const report = healthReport(state, this.#o.poolName);
    const key = reportKey(report);
    if (key === this.#lastKey) return; // on change only
    this.#report = report;
    this.#lastKey = key;
    this.#broadcast();
  }

  #scheduleKeepAlive(): void {
    if (this.#keepAlive !== undefined) return;
    this.#keepAlive = this.#o.clock.setTimeout(() => {
      this.#keepAlive = undefined;
      if (this.#server === undefined) return;
      this.#broadcast();
      this.#scheduleKeepAlive();
    }, this.#o.keepAliveMs ?? HEALTH_KEEPALIVE_MS);
  }

  #message(): NodeWatchResourcesResponse {
    const now = Math.floor(this.#o.clock.now() / 1000);
    return {
      devices: this.#report.map((r) => ({
        device: { poolName: r.poolName, deviceName: r.deviceName },
        health: r.health,
        lastUpdatedTime: String(now),
        healthCheckTimeoutSeconds: String(HEALTH_TIMEOUT_SECONDS),
        message: r.message,
      })),
    };
  }

  #broadcast(): void {
    if (this.#streams.size === 0) return;
    const m = this.#message();
    for (const s of this.#streams) this.#send(s, m);
  }

  #send(call: HealthCall, m: NodeWatchResourcesResponse): void {
    try {
      call.write(m);
      this.#sends++;
    } catch (err) {
      this.#log.warn({ err }, 'health stream write failed');
      this.#streams.delete(call);
    }
  }

  #healthHandlers(): DRAResourceHealthHandlers {
    return {
      NodeWatchResources: (call) => {
        if (this.#streams.size >= MAX_HEALTH_STREAMS) {
          call.emit('error', {
            code: grpc.status.RESOURCE_EXHAUSTED,
            details: `more than ${MAX_HEALTH_STREAMS} health streams`,
          });
          return;
        }
        this.#streams.add(call);
        this.#log.info({ streams: this.#streams.size }, 'NodeWatchResources opened');
        const drop = (): void => {
          if (this.#streams.delete(call)) this.#log.info({ streams: this.#streams.size }, 'NodeWatchResources ended');
        };
        call.on('cancelled', drop);
        call.on('close', drop);
        call.on('error', drop);
        this.#send(call, this.#message());
      },
    };
  }

  #draHandlers(): DRAPluginHandlers {
    const refsOf = (claims: readonly { namespace: string; uid: string; name: string }[]): ClaimRef[] =>
      claims.map((c) => ({ namespace: c.namespace, uid: c.uid, name: c.name }));
    const tooMany = (n: number): grpc.ServiceError | undefined =>
      n > MAX_CLAIMS_PER_REQUEST
        ? Object.assign(new Error(`${n} claims in one request, the limit is ${MAX_CLAIMS_PER_REQUEST}`), {
            code: grpc.status.INVALID_ARGUMENT,
            details: `${n} claims in one request, the limit is ${MAX_CLAIMS_PER_REQUEST}`,
            metadata: new grpc.Metadata(),
          })
        : undefined;
    return {
      NodePrepareResources: (call, callback) => {
        const refused = tooMany(call.request.claims.length);
        if (refused) return callback(refused);
        const started = performance.now();
        this.#o.preparer.prepare(refsOf(call.request.claims)).then(
          (outcomes) => {
            const res: NodePrepareResourcesResponse = { claims: {} };
            let failed = 0;
            for (const [uid, o] of outcomes) {
              if ('error' in o) failed++;
              res.claims![uid] =
                'error' in o
                  ? { error: o.error.slice(0, 4096) }
                  : {
                      devices: o.devices.map((d) => ({
                        requestNames: [...d.requestNames],
                        poolName: d.poolName,
                        deviceName: d.deviceName,
                        cdiDeviceIds: [...d.cdiDeviceIds],
                        ...(d.shareId !== undefined ? { shareId: d.shareId } : {}),
                      })),
                    };
            }
            this.#o.observed?.('prepare', performance.now() - started, failed);
            callback(null, res);
          },
          (err: unknown) => callback({ code: grpc.status.INTERNAL, details: String(err) }),
        );
      },
      NodeUnprepareResources: (call, callback) => {
        const refused = tooMany(call.request.claims.length);
        if (refused) return callback(refused);
        const started = performance.now();
        this.#o.preparer.unprepare(refsOf(call.request.claims)).then(
          (outcomes) => {
            const res: NodeUnprepareResourcesResponse = { claims: {} };
            let failed = 0;
            for (const [uid, error] of outcomes) {
              if (error !== undefined) failed++;
              res.claims![uid] = error === undefined ? {} : { error: error.slice(0, 4096) };
            }
            this.#o.observed?.('unprepare', performance.now() - started, failed);
            callback(null, res);
          },
          (err: unknown) => callback({ code: grpc.status.INTERNAL, details: String(err) }),
        );
      },
    };
  }
}
