/**
 * Plugin registration through kubelet's plugin watcher (issue [DRA] item 1): a `pluginregistration` `Registration`
 * server on `<-kubeletRegistryDir>/npu.huawei.com-reg.sock`. kubelet finds the socket (fsnotify on the folder, and a
 * walk of it when kubelet starts), calls `GetInfo` — type `DRAPlugin`, name `npu.huawei.com`, the endpoint of
 * dra.sock, the services served as "supported versions" (`v1.DRAPlugin`, `v1.DRAResourceHealth`) — and reports the
 * outcome with `NotifyRegistrationStatus`. Both answers are always OK: a refusal is the plugin's to act on (see
 * {@link RegistrationServerEvents.refused}), and an error from a successful notify would make kubelet drop the
 * registration again.
 */
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import { DRA_DRIVER } from '../core/dra-devices.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { PluginInfo } from '../generated/pluginregistration/pluginregistration/PluginInfo.js';
import type { RegistrationHandlers } from '../generated/pluginregistration/pluginregistration/Registration.js';
import { checkSocketPath, removeStale, socketIdentity, stopServerOnSocket } from '../kubelet/unix-socket.js';
import { DRA_HEALTH_SERVICE, DRA_PLUGIN_SERVICE, DRA_PLUGIN_TYPE, type RegistrationPackage } from './proto.js';

/** Longest error text of kubelet's kept for the log. */
const MAX_ERROR_TEXT = 2048;

/** What the registration server tells its owner. */
export interface RegistrationServerEvents {
  /** kubelet called GetInfo (a registration attempt began). */
  info?(): void;
  /** kubelet registered the plugin. */
  registered?(): void;
  /** kubelet refused the plugin (validation failed, endpoint taken, …); `error` is kubelet's text. */
  refused?(error: string): void;
}

/** Options of {@link RegistrationServer}. */
export interface RegistrationServerOptions {
  readonly socketPath: string;
  /** The endpoint kubelet dials for the DRA services (the absolute path of dra.sock). */
  readonly endpoint: string;
  readonly proto: RegistrationPackage;
  readonly events?: RegistrationServerEvents;
  readonly logger?: Logger;
}

/** The registration socket's server. */
export class RegistrationServer {
  readonly #o: RegistrationServerOptions;
  readonly #log: Logger;
  #server: grpc.Server | undefined;
  #identity: string | undefined;

  constructor(options: RegistrationServerOptions) {
    checkSocketPath(options.socketPath);
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** What GetInfo answers. */
  get info(): PluginInfo {
    return {
      type: DRA_PLUGIN_TYPE,
      name: DRA_DRIVER,
      endpoint: this.#o.endpoint,
      supportedVersions: [DRA_PLUGIN_SERVICE, DRA_HEALTH_SERVICE],
    };
  }

  /** Whether the server listens on the socket it made. */
  socketIntact(): boolean {
    return (
      this.#server !== undefined &&
      this.#identity !== undefined &&
      socketIdentity(this.#o.socketPath) === this.#identity
    );
  }

  /**
   * (Re)creates the socket: a stale file removed, a new server bound, 0600. A new socket is a new plugin to
   * kubelet's watcher (a fresh registration attempt at once, whatever its backoff).
   */
  async listen(): Promise<void> {
    await this.shutdown();
    removeStale(this.#o.socketPath);
    const server = new grpc.Server({ 'grpc.max_receive_message_length': 64 * 1024 });
    server.addService(this.#o.proto.Registration.service, this.#handlers());
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.#o.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    fs.chmodSync(this.#o.socketPath, 0o600);
    if (process.getuid?.() === 0) fs.lchownSync(this.#o.socketPath, 0, 0);
    this.#identity = socketIdentity(this.#o.socketPath);
    this.#server = server;
    this.#log.info({ socket: this.#o.socketPath }, 'DRA registration socket listening');
  }

  /** Stops the server and removes its socket if it is still ours (kubelet then deregisters the plugin). */
  async shutdown(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    await stopServerOnSocket(server, this.#o.socketPath, this.#identity);
    this.#identity = undefined;
  }

  #handlers(): RegistrationHandlers {
    return {
      GetInfo: (_call, callback) => {
        this.#o.events?.info?.();
        callback(null, this.info);
      },
      NotifyRegistrationStatus: (call, callback) => {
        const { pluginRegistered, error } = call.request;
        if (pluginRegistered) {
          this.#log.info({ driver: DRA_DRIVER, endpoint: this.#o.endpoint }, 'registered with kubelet (DRA)');
          this.#o.events?.registered?.();
        } else {
          const text = error.slice(0, MAX_ERROR_TEXT);
          this.#log.warn({ driver: DRA_DRIVER, error: text }, 'kubelet refused the DRA plugin registration');
          this.#o.events?.refused?.(text);
        }
        callback(null, {});
      },
    };
  }
}
