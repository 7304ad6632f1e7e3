/**
 * One device-plugin gRPC server per device type on `<kubeletDir>/<deviceType>.sock` (spec A.4, C). It reads the
 * device snapshot only: ListAndWatch streams the full list on connect and whenever what kubelet sees changes
 * (plus the periodic resend of spec C.1), Allocate and GetPreferredAllocation answer from the same snapshot.
 * Registration with kubelet is the manager's job (plugin-manager.ts).
 */
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import path from 'node:path';
import type { AllocateRequest__Output } from '../generated/deviceplugin/v1beta1/AllocateRequest.js';
import type { AllocateResponse } from '../generated/deviceplugin/v1beta1/AllocateResponse.js';
import type { DevicePluginHandlers } from '../generated/deviceplugin/v1beta1/DevicePlugin.js';
import type { DevicePluginOptions } from '../generated/deviceplugin/v1beta1/DevicePluginOptions.js';
import type { Empty__Output } from '../generated/deviceplugin/v1beta1/Empty.js';
import type { ListAndWatchResponse } from '../generated/deviceplugin/v1beta1/ListAndWatchResponse.js';
import type { PreferredAllocationRequest__Output } from '../generated/deviceplugin/v1beta1/PreferredAllocationRequest.js';
import type { PreferredAllocationResponse } from '../generated/deviceplugin/v1beta1/PreferredAllocationResponse.js';
import type { PreStartContainerResponse } from '../generated/deviceplugin/v1beta1/PreStartContainerResponse.js';
import { Allocator, MAX_CONTAINER_REQUESTS, type AllocatorDeps, type AllocatorOptions } from './allocate.js';
import { isVirtualName, resourceName } from '../core/device-names.js';
import { IDENTITY_NAMES, type PublicNames } from '../core/public-names.js';
import type { DeviceSnapshot, DeviceSource, KubeletDevice } from './device-source.js';
import { invalidArgument, KubeletRequestError } from './errors.js';
import { advertise, KubeletRealMap, toWire, wireKey, type AdvertisedDevice } from './list-watch-view.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { preferredAllocation } from './preferred-allocation.js';
import type { DynamicVnpu } from './vnpu-allocate.js';
import { advertiseCores } from './vnpu-core.js';
import { loadDevicePluginProto, type DevicePluginPackage } from './proto.js';
import { checkSocketPath, removeStale, socketIdentity, stopServerOnSocket } from './unix-socket.js';

/** Spec A.4 server options. */
const SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': 4 * 1024 * 1024,
  'grpc.max_concurrent_streams': 64,
  'grpc.keepalive_time_ms': 5 * 60_000,
  'grpc.keepalive_timeout_ms': 5 * 60_000,
};

/** Spec C.1: each send is attempted up to 3 times. */
const SEND_ATTEMPTS = 3;

/** Tunables of one server; defaults are upstream's. */
export interface PluginServerOptions extends AllocatorOptions {
  readonly kubeletDir: string;
  /** Resend when the last notify is this old (spec C.1: 1 h). */
  readonly periodicResendMs?: number;
  /** Resend after a failed send once the last notify is this old (spec C.1: 1 min). */
  readonly failedResendMs?: number;
  /** How long one stream write may take before it counts as failed (default 5 s). */
  readonly sendTimeoutMs?: number;
  /** Monotonic ms of the C.1 periodic resend (default `performance.now`, issue [T] item 1). */
  readonly monotonic?: () => number;
  /**
   * Public-name customisation (spec L.6): the resource registered and the IDs streamed are public, the IDs kubelet
   * sends back (Allocate, GetPreferredAllocation) are mapped to inner names first. Identity by default.
   */
  readonly names?: PublicNames;
}

/** Callbacks from a server to its manager. */
export interface PluginServerEvents {
  /** kubelet ended a ListAndWatch stream (spec A.5 trigger). */
  streamEnded?(server: DevicePluginServer): void;
  /** A report to kubelet failed after all attempts; `consecutive` failed reports so far (spec C.1, A.5). */
  sendFailed?(server: DevicePluginServer, consecutive: number): void;
  /** A report reached every open ListAndWatch stream (for metrics). */
  reportSent?(server: DevicePluginServer): void;
  /** An Allocate finished; `ms` is its duration and `ok` whether it was answered without an error (for metrics). */
  allocated?(server: DevicePluginServer, ms: number, ok: boolean): void;
}

interface Stream {
  readonly call: grpc.ServerWritableStream<Empty__Output, ListAndWatchResponse>;
  readonly seq: number;
}

/** The gRPC server of one device type. */
export class DevicePluginServer {
  readonly deviceType: string;
  readonly socketPath: string;
  readonly kubeletToReal = new KubeletRealMap();
  readonly #opts: PluginServerOptions;
  readonly #source: DeviceSource;
  readonly #allocator: Allocator;
  readonly #dynamic: DynamicVnpu | undefined;
  readonly #logger: Logger;
  readonly #events: PluginServerEvents;
  readonly #mono: () => number;
  readonly #proto: DevicePluginPackage;
  readonly #streams = new Set<Stream>();
  #server: grpc.Server | undefined;
  #identity: string | undefined;
  #streamSeq = 0;
  #closing = false;
  #unsubscribe: (() => void) | undefined;
  #lastKey = '';
  #lastNotify = 0;
  #lastSendFailed = false;
  #consecutiveFailures = 0;

  constructor(
    opts: PluginServerOptions,
    deps: {
      source: DeviceSource;
      logger?: Logger;
      events?: PluginServerEvents;
      /** The loaded proto, shared by the servers of one manager; loaded here when absent. */
      proto?: DevicePluginPackage;
    } & Omit<AllocatorDeps, 'kubeletToReal' | 'logger'>,
  ) {
    this.#opts = opts;
    this.deviceType = opts.deviceType;
    this.socketPath = path.join(opts.kubeletDir, this.endpoint);
    checkSocketPath(this.socketPath);
    this.#source = deps.source;
    this.#logger = deps.logger ?? NOOP_LOGGER;
    this.#events = deps.events ?? {};
    this.#mono = opts.monotonic ?? (() => performance.now());
    this.#proto = deps.proto ?? loadDevicePluginProto();
    this.#dynamic = deps.dynamic;
    this.#allocator = new Allocator(opts, {
      probe: deps.probe,
      defaultNodes: deps.defaultNodes,
      kubeletToReal: this.kubeletToReal,
      logger: this.#logger,
      ...(deps.podCache ? { podCache: deps.podCache } : {}),
      ...(deps.extraEnvs ? { extraEnvs: deps.extraEnvs } : {}),
      ...(deps.dynamic ? { dynamic: deps.dynamic } : {}),
    });
  }

  /** Socket file name sent to kubelet in Register. */
  get endpoint(): string {
    return `${this.deviceType}.sock`;
  }

  /** The resource registered with kubelet (spec B.3; L.6 public type when customised). */
  get resourceName(): string {
    return this.#names.resource(resourceName(this.deviceType));
  }

  get #names(): PublicNames {
    return this.#opts.names ?? IDENTITY_NAMES;
  }

  /** Number of open ListAndWatch streams. */
  get activeStreams(): number {
    return this.#streams.size;
  }

  /** True while the server listens and its socket file is the one it created. */
  socketIntact(): boolean {
    return (
      this.#server !== undefined && this.#identity !== undefined && socketIdentity(this.socketPath) === this.#identity
    );
  }

  /** Starts listening (stale file removed first, socket 0600). */
  async listen(): Promise<void> {
    if (this.#server) await this.shutdown();
    this.#closing = false;
    removeStale(this.socketPath);
    const server = new grpc.Server(SERVER_OPTIONS);
    server.addService(this.#proto.DevicePlugin.service, this.#handlers());
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    fs.chmodSync(this.socketPath, 0o600);
    if (process.getuid?.() === 0) fs.lchownSync(this.socketPath, 0, 0);
    this.#identity = socketIdentity(this.socketPath);
    this.#server = server;
    this.#unsubscribe ??= this.#source.onChange((s) => this.#onSnapshot(s));
    this.#logger.info({ deviceType: this.deviceType, socket: this.socketPath }, 'device-plugin server listening');
  }

  /** Ends the streams, stops the gRPC server and removes its socket file (if it is still ours). */
  async shutdown(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#closing = true;
    this.#server = undefined;
    for (const s of this.#streams) s.call.end();
    this.#streams.clear();
    await stopServerOnSocket(server, this.socketPath, this.#identity);
    this.#identity = undefined;
  }

  /** Final stop: shutdown and stop following the device source. */
  async close(): Promise<void> {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    await this.shutdown();
  }

  /** What ListAndWatch advertises now. */
  advertised(snapshot: DeviceSnapshot = this.#source.snapshot()): AdvertisedDevice[] {
    const devices = snapshot.deviceTypes[this.deviceType] ?? [];
    const dyn = this.#dynamic;
    if (dyn) return advertiseCores(devices, snapshot.deviceTypes[dyn.chipType] ?? [], dyn.used(), dyn.coresPerChip);
    const mapped = this.#opts.volcanoType && !isVirtualName(this.deviceType);
    return advertise(devices, mapped ? this.kubeletToReal : undefined);
  }

  /**
   * Spec C.1 periodic resend, called every `-listWatchPeriod`: resend when the last send failed and the last
   * notify is older than 1 min, or when it is older than 1 h.
   */
  periodicCheck(now = this.#mono()): void {
    const age = now - this.#lastNotify;
    const failedDue = this.#lastSendFailed && age >= (this.#opts.failedResendMs ?? 60_000);
    if (failedDue || age >= (this.#opts.periodicResendMs ?? 3_600_000)) this.#broadcast(this.advertised(), true);
  }

  /** Sends the list again if what kubelet would see changed (dynamic vNPU: a pod's cores were released). */
  refresh(): void {
    this.#broadcast(this.advertised(), false);
  }

  #onSnapshot(snapshot: DeviceSnapshot): void {
    this.#broadcast(this.advertised(snapshot), false);
  }

  /** Sends the list to every stream when it differs from the last one sent (or when `force`). */
  #broadcast(list: AdvertisedDevice[], force: boolean): void {
    const key = wireKey(list);
    if (!force && key === this.#lastKey) return;
    this.#lastKey = key;
    this.#lastNotify = this.#mono();
    if (this.#streams.size === 0) return;
    const message: ListAndWatchResponse = { devices: toWire(list, this.#names.name) };
    void Promise.all([...this.#streams].map((s) => this.#send(s, message))).then((results) =>
      this.#recordReport(results.every(Boolean)),
    );
  }

  #recordReport(ok: boolean): void {
    this.#lastSendFailed = !ok;
    if (ok) {
      this.#consecutiveFailures = 0;
      this.#events.reportSent?.(this);
      return;
    }
    this.#consecutiveFailures++;
    this.#logger.warn(
      { deviceType: this.deviceType, consecutive: this.#consecutiveFailures },
      'ListAndWatch send failed',
    );
    this.#events.sendFailed?.(this, this.#consecutiveFailures);
  }

  /** One report to one stream: up to three writes, each bounded by the send timeout. */
  async #send(stream: Stream, message: ListAndWatchResponse): Promise<boolean> {
    for (let attempt = 1; attempt <= SEND_ATTEMPTS; attempt++) {
      if (!this.#streams.has(stream) || stream.call.cancelled) return false;
      const ok = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), this.#opts.sendTimeoutMs ?? 5000);
        try {
          stream.call.write(message, () => {
            clearTimeout(timer);
            resolve(true);
          });
        } catch {
          clearTimeout(timer);
          resolve(false);
        }
      });
      if (ok) return true;
    }
    return false;
  }

  #handlers(): DevicePluginHandlers {
    return {
      GetDevicePluginOptions: (_call, callback) => {
        const options: DevicePluginOptions = { preStartRequired: false, getPreferredAllocationAvailable: true };
        callback(null, options);
      },
      ListAndWatch: (call) => this.#listAndWatch(call),
      GetPreferredAllocation: (call, callback) => {
        try {
          callback(null, this.#preferred(call.request));
        } catch (err) {
          callback(this.#toStatus(err, 'GetPreferredAllocation'));
        }
      },
      Allocate: (call, callback) => {
        const started = performance.now();
        this.#allocate(call.request).then(
          (res) => {
            this.#events.allocated?.(this, performance.now() - started, true);
            callback(null, res);
          },
          (err: unknown) => {
            this.#events.allocated?.(this, performance.now() - started, false);
            callback(this.#toStatus(err, 'Allocate'));
          },
        );
      },
      PreStartContainer: (_call, callback) => {
        const res: PreStartContainerResponse = {};
        callback(null, res);
      },
    };
  }

  #listAndWatch(call: grpc.ServerWritableStream<Empty__Output, ListAndWatchResponse>): void {
    const stream: Stream = { call, seq: ++this.#streamSeq };
    this.#streams.add(stream);
    this.#logger.info({ deviceType: this.deviceType, stream: stream.seq }, 'ListAndWatch opened');
    call.on('cancelled', () => {
      if (!this.#streams.delete(stream) || this.#closing) return;
      this.#logger.info({ deviceType: this.deviceType, stream: stream.seq }, 'ListAndWatch ended by kubelet');
      this.#events.streamEnded?.(this);
    });
    call.on('error', () => undefined);
    const list = this.advertised();
    this.#lastKey = wireKey(list);
    this.#lastNotify = this.#mono();
    void this.#send(stream, { devices: toWire(list, this.#names.name) }).then((ok) => this.#recordReport(ok));
  }

  #preferred(req: PreferredAllocationRequest__Output): PreferredAllocationResponse {
    if (req.containerRequests.length > MAX_CONTAINER_REQUESTS) {
      throw invalidArgument(
        `${req.containerRequests.length} container requests, the limit is ${MAX_CONTAINER_REQUESTS}`,
      );
    }
    const snapshot = this.#source.snapshot();
    const devices: KubeletDevice[] = this.advertised(snapshot).map(({ id, real }) => ({ ...real, id }));
    const n = this.#names;
    return {
      containerResponses: req.containerRequests.map((c) => ({
        deviceIDs: preferredAllocation(
          {
            available: c.availableDeviceIDs.map(n.inner),
            mustInclude: c.mustIncludeDeviceIDs.map(n.inner),
            size: c.allocationSize,
          },
          devices,
          snapshot.node,
        ).map(n.name),
      })),
    };
  }

  async #allocate(req: AllocateRequest__Output): Promise<AllocateResponse> {
    // spec C.3: the checks apply to the inner names (L.6 public → inner first)
    const requests = req.containerRequests.map((c) => c.devicesIds.map(this.#names.inner));
    const containerResponses = await this.#allocator.allocate(requests, this.#source.snapshot());
    // A volcano pick changes the kubelet→real pairing, hence what ListAndWatch should advertise.
    if (this.#opts.volcanoType) this.#broadcast(this.advertised(), false);
    this.#logger.debug({ deviceType: this.deviceType, requests }, 'Allocate');
    return { containerResponses };
  }

  #toStatus(err: unknown, rpc: string): Partial<grpc.StatusObject> {
    if (err instanceof KubeletRequestError) {
      this.#logger.warn({ deviceType: this.deviceType, rpc, code: err.code }, err.message);
      // kubelet (and the pod's events) see the names it sent: spec L.6 public names, identity by default
      return { code: err.code, details: this.#names.name(this.#names.resource(err.message)) };
    }
    this.#logger.error({ deviceType: this.deviceType, rpc, err }, `${rpc} failed`);
    return { code: grpc.status.INTERNAL, details: `${rpc} failed: ${(err as Error).message}` };
  }
}
