/**
 * Runs the device-plugin servers and keeps them registered with kubelet (spec A.4, A.5, our extension).
 *
 * Re-registration triggers, all funnelled into one coalescing reconcile pass with exponential backoff:
 * `kubelet.sock` created (or replaced: its inode changed), one of our sockets removed or replaced, a
 * ListAndWatch stream ended by kubelet with no other stream open, too many failed sends (spec C.1), and
 * {@link DevicePluginManager.triggerReregister} (the CLI wires SIGHUP to it). fs.watch on the kubelet directory
 * makes reactions immediate; a slow poll catches any missed file-system event.
 */
import * as grpc from '@grpc/grpc-js';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { Backoff } from './backoff.js';
import { collectDefaultDeviceNodes, type DeviceNodeProbe } from './device-nodes.js';
import type { DeviceSource } from './device-source.js';
import { KubeletWaitTimeoutError } from './errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { PodCache } from '../core/pods.js';
import type { PublicNames } from '../core/public-names.js';
import { DevicePluginServer } from './plugin-server.js';
import { DEVICE_PLUGIN_VERSION, loadDevicePluginProto, type DevicePluginPackage } from './proto.js';
import { checkKubeletPathOwner, checkSocketPath, socketIdentity } from './unix-socket.js';
import type { SoftShareAllocator } from './soft-share.js';
import type { PickOptions } from './volcano-pick.js';
import type { DynamicVnpu } from './vnpu-allocate.js';

/** Name of kubelet's registration socket inside the device-plugin directory. */
export const KUBELET_SOCKET = 'kubelet.sock';

/** Spec A.5: ≥ 5 consecutive failed reports re-register the server; ≥ 15 are fatal. */
const SEND_FAILURES_REREGISTER = 5;
const SEND_FAILURES_FATAL = 15;

/** Options of the manager; the CLI builds them from the flags (architecture §4, spec A.1). */
export interface DevicePluginManagerOptions {
  /** `-kubeletDir`: directory of kubelet.sock and our sockets. */
  readonly kubeletDir: string;
  readonly source: DeviceSource;
  /** Device types to serve; default: those in the first snapshot. */
  readonly deviceTypes?: readonly string[];
  /** `-volcanoType`. */
  readonly volcanoType: boolean;
  /** Ascend-docker mounting mode (spec A.2 step 8). */
  readonly useAscendDocker: boolean;
  /** `-fdFlag` (extra default device nodes). */
  readonly fdFlag?: boolean;
  /** `-listWatchPeriod` in seconds (period of the spec C.1 resend check; default 5). */
  readonly listWatchPeriodSec?: number;
  /** Device nodes under `-devDir`. */
  readonly probe: DeviceNodeProbe;
  /** Pods of this node; required with `-volcanoType`. */
  readonly podCache?: PodCache;
  /** Spec C.4 `-enableSlowNode`: variables every Allocate adds. */
  readonly extraEnvs?: () => Readonly<Record<string, string>>;
  readonly pick?: PickOptions;
  /** Soft share (spec L.7): Allocate writes and mounts the pod's vNPU files. */
  readonly softShare?: SoftShareAllocator;
  readonly logger?: Logger;
  /** Start-up wait for the kubelet directory, then for the first registration (default 300 s, spec A.4). */
  readonly waitTimeoutMs?: number;
  /** Poll period while the kubelet directory is absent (default 1 s, spec A.4). */
  readonly dirPollMs?: number;
  /** Deadline of one Register call (default 5 s). */
  readonly registerTimeoutMs?: number;
  /** Retry backoff after a failed pass (default 50 ms doubling to 5 s). */
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** How long a server may stay without a stream after kubelet ended one before it re-registers (default 1 s). */
  readonly streamEndGraceMs?: number;
  /** Safety poll of the sockets in case a file-system event is missed (default 5 s). */
  readonly pollIntervalMs?: number;
  /** Spec C.1 resend intervals (defaults 1 h and 1 min). */
  readonly periodicResendMs?: number;
  readonly failedResendMs?: number;
  /** Called when the failed sends reach the fatal threshold (upstream sends itself SIGTERM). */
  readonly onFatal?: (reason: string) => void;
  /**
   * Monotonic ms of the kubelet wait, the time since the last registration and the C.1 resends (default
   * `performance.now`; a wall-clock step must not end a wait nor delay a resend, issue [T] item 1).
   */
  readonly monotonic?: () => number;
  /** Owner accepted besides root for the kubelet directory and kubelet.sock (default: this process's uid). */
  readonly ownUid?: number;
  /** Public-name customisation (spec L.6) of every server; identity by default. */
  readonly names?: PublicNames;
  /** Dynamic vNPU: the allocator of the single `npu-core` server (spec B.3, C.3). */
  readonly dynamic?: DynamicVnpu;
  /** `-cdiDevicePlugin`: Allocate answers CDI devices (the node's spec is written by the caller). */
  readonly cdi?: boolean;
}

/** {@link DevicePluginManager.start} ended by its abort signal (the agent is stopping); not a wait timeout. */
export class KubeletStartAbortedError extends Error {
  override readonly name = 'KubeletStartAbortedError';
  constructor(readonly waitedFor: string) {
    super(`stopped while waiting for ${waitedFor}`);
  }
}

/** Emitted after each successful Register. */
export interface RegisteredEvent {
  readonly deviceType: string;
  readonly resourceName: string;
  readonly at: number;
  readonly reasons: readonly string[];
}

/** Per-server status for readiness and metrics. */
export interface ServerStatus {
  readonly deviceType: string;
  readonly resourceName: string;
  readonly registered: boolean;
  readonly activeStreams: number;
}

/**
 * Owns the servers and the registration loop. Events: `registered` ({@link RegisteredEvent}),
 * `reportSent` ({ deviceType, resourceName }), `allocated` ({ deviceType, resourceName, ms, ok }),
 * `registerFailed` ({ deviceType, error }), `waiting` ({ what }), `sendFailed` ({ deviceType, resourceName,
 * consecutive }: a ListAndWatch report failed after all its attempts).
 */
export class DevicePluginManager extends EventEmitter {
  readonly servers: readonly DevicePluginServer[];
  readonly kubeletSocket: string;
  readonly #opts: DevicePluginManagerOptions;
  readonly #logger: Logger;
  readonly #mono: () => number;
  readonly #backoff: Backoff;
  readonly #proto: DevicePluginPackage;
  readonly #needsRegister = new Set<DevicePluginServer>();
  readonly #needsRestart = new Set<DevicePluginServer>();
  readonly #reasons: string[] = [];
  readonly #graceTimers = new Map<DevicePluginServer, NodeJS.Timeout>();
  #kubeletIdentity: string | undefined;
  #lastRegistration: number | undefined;
  #watcher: fs.FSWatcher | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #periodTimer: NodeJS.Timeout | undefined;
  #running = false;
  #again = false;
  #started = false;
  #stopped = false;
  #waitingLogged = false;
  #passDone: (() => void) | undefined;

  constructor(opts: DevicePluginManagerOptions) {
    super();
    this.#opts = opts;
    this.#logger = opts.logger ?? NOOP_LOGGER;
    this.#mono = opts.monotonic ?? (() => performance.now());
    this.#backoff = new Backoff(opts.backoffInitialMs ?? 50, opts.backoffMaxMs ?? 5000);
    this.kubeletSocket = path.join(opts.kubeletDir, KUBELET_SOCKET);
    checkSocketPath(this.kubeletSocket);
    const snapshot = opts.source.snapshot();
    const types = opts.deviceTypes ?? Object.keys(snapshot.deviceTypes);
    if (types.length === 0) throw new Error('no device types to serve');
    if (opts.volcanoType && !opts.podCache) throw new Error('-volcanoType needs a pod cache');
    const defaultNodes = collectDefaultDeviceNodes(opts.probe, {
      chipKind: snapshot.node.chipKind,
      ...(opts.fdFlag === undefined ? {} : { fdFlag: opts.fdFlag }),
      ...(snapshot.node.productTypes ? { productTypes: snapshot.node.productTypes } : {}),
    });
    this.#proto = loadDevicePluginProto();
    this.servers = types.map(
      (deviceType) =>
        new DevicePluginServer(
          {
            deviceType,
            kubeletDir: opts.kubeletDir,
            volcanoType: opts.volcanoType,
            useAscendDocker: opts.useAscendDocker,
            ...(opts.pick ? { pick: opts.pick } : {}),
            ...(opts.softShare ? { softShare: opts.softShare } : {}),
            ...(opts.names ? { names: opts.names } : {}),
            ...(opts.cdi ? { cdi: true } : {}),
            ...(opts.periodicResendMs === undefined ? {} : { periodicResendMs: opts.periodicResendMs }),
            ...(opts.failedResendMs === undefined ? {} : { failedResendMs: opts.failedResendMs }),
            monotonic: this.#mono,
          },
          {
            source: opts.source,
            logger: this.#logger,
            proto: this.#proto,
            probe: opts.probe,
            defaultNodes,
            ...(opts.podCache ? { podCache: opts.podCache } : {}),
            ...(opts.extraEnvs ? { extraEnvs: opts.extraEnvs } : {}),
            ...(opts.dynamic ? { dynamic: opts.dynamic } : {}),
            events: {
              streamEnded: (s) => this.#onStreamEnded(s),
              sendFailed: (s, n) => this.#onSendFailed(s, n),
              reportSent: (s) => this.emit('reportSent', { deviceType: s.deviceType, resourceName: s.resourceName }),
              allocated: (s, ms, ok) =>
                this.emit('allocated', { deviceType: s.deviceType, resourceName: s.resourceName, ms, ok }),
            },
          },
        ),
    );
  }

  /** Time of the last successful Register (any server), or undefined. */
  get lastRegistration(): number | undefined {
    return this.#lastRegistration;
  }

  /** Milliseconds since the last successful Register, or undefined when there was none (metrics, readiness). */
  sinceLastRegistrationMs(now = this.#mono()): number | undefined {
    return this.#lastRegistration === undefined ? undefined : now - this.#lastRegistration;
  }

  /** Per-server registration state. */
  status(): ServerStatus[] {
    return this.servers.map((s) => ({
      deviceType: s.deviceType,
      resourceName: s.resourceName,
      registered: !this.#needsRegister.has(s),
      activeStreams: s.activeStreams,
    }));
  }

  /**
   * Waits for the kubelet directory, starts every server and registers it. Resolves after the first successful
   * registration of every server; rejects with {@link KubeletWaitTimeoutError} when the directory or kubelet does
   * not appear within `waitTimeoutMs`. When `signal` is aborted (SIGTERM, issue [K] item 8) both waits end at once
   * and the promise rejects with {@link KubeletStartAbortedError}; {@link stop} then closes what was started.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#started) throw new Error('already started');
    this.#started = true;
    const timeoutMs = this.#opts.waitTimeoutMs ?? 300_000;
    const deadline = this.#mono() + timeoutMs;
    await this.#waitForDirectory(deadline, timeoutMs, signal);
    checkKubeletPathOwner(this.#opts.kubeletDir, this.#ownUid());
    for (const s of this.servers) {
      await s.listen();
      this.#needsRegister.add(s);
    }
    this.#watch();
    this.#pollTimer = setInterval(() => this.#poll(), this.#opts.pollIntervalMs ?? 5000).unref();
    this.#periodTimer = setInterval(
      () => this.servers.forEach((s) => s.periodicCheck()),
      (this.#opts.listWatchPeriodSec ?? 5) * 1000,
    ).unref();
    this.#reasons.push('start');
    await this.#waitFirstRegistration(deadline, timeoutMs, signal);
  }

  /** Stops the servers (streams ended, sockets removed) and every timer and watcher. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#pollTimer);
    clearInterval(this.#periodTimer);
    for (const t of this.#graceTimers.values()) clearTimeout(t);
    this.#graceTimers.clear();
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#passDone?.();
    await Promise.all(this.servers.map((s) => s.close()));
  }

  /** Restarts and re-registers every server (SIGHUP, spec A.5). */
  triggerReregister(reason: string): void {
    for (const s of this.servers) {
      this.#needsRestart.add(s);
      this.#needsRegister.add(s);
    }
    this.#kick(reason);
  }

  async #waitForDirectory(deadline: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    const dir = this.#opts.kubeletDir;
    const what = `kubelet directory ${dir}`;
    while (!isDirectory(dir)) {
      if (signal?.aborted) throw new KubeletStartAbortedError(what);
      if (this.#stopped) throw new Error('stopped while waiting for the kubelet directory');
      if (this.#mono() >= deadline) throw new KubeletWaitTimeoutError(what, timeoutMs);
      this.#reportWaiting(what);
      await pause(this.#opts.dirPollMs ?? 1000, signal);
    }
    if (signal?.aborted) throw new KubeletStartAbortedError(what);
    this.#waitingLogged = false;
  }

  #waitFirstRegistration(deadline: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    const what = `registration with kubelet at ${this.kubeletSocket}`;
    return new Promise<void>((resolve, reject) => {
      const finish = (err?: Error): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#passDone = undefined;
        if (err) reject(err);
        else resolve();
      };
      const onAbort = (): void => finish(new KubeletStartAbortedError(what));
      const timer = setTimeout(
        () => finish(new KubeletWaitTimeoutError(what, timeoutMs)),
        Math.max(0, deadline - this.#mono()),
      );
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#passDone = () => {
        if (this.#needsRegister.size > 0 && !this.#stopped) return;
        finish(this.#stopped ? new Error('stopped before the first registration') : undefined);
      };
      this.#kick('start');
    });
  }

  #reportWaiting(what: string): void {
    if (this.#waitingLogged) return;
    this.#waitingLogged = true;
    this.#logger.warn({ waitingFor: what }, `waiting for ${what}`);
    this.emit('waiting', { what });
  }

  #watch(): void {
    try {
      this.#watcher = fs.watch(this.#opts.kubeletDir, (_event, filename) => this.#onFsEvent(filename));
      this.#watcher.on('error', (err) => {
        this.#logger.warn({ err }, 'kubelet directory watch failed; relying on polling');
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch (err) {
      this.#logger.warn({ err }, 'cannot watch the kubelet directory; relying on polling');
    }
  }

  #onFsEvent(filename: string | Buffer | null): void {
    if (this.#stopped) return;
    const name = filename?.toString();
    if (name === KUBELET_SOCKET) {
      if (socketIdentity(this.kubeletSocket) !== undefined) this.#kick('kubelet.sock created');
      return;
    }
    if (name === undefined || this.servers.some((s) => s.endpoint === name)) this.#kick(`${name ?? '?'} changed`);
  }

  #poll(): void {
    if (this.#stopped) return;
    if (!this.#watcher && isDirectory(this.#opts.kubeletDir)) this.#watch();
    const ino = socketIdentity(this.kubeletSocket);
    const changed = ino !== undefined && ino !== this.#kubeletIdentity;
    if (changed || this.servers.some((s) => !s.socketIntact())) this.#kick('poll');
  }

  #onStreamEnded(server: DevicePluginServer): void {
    if (this.#stopped || server.activeStreams > 0) return;
    clearTimeout(this.#graceTimers.get(server));
    const timer = setTimeout(() => {
      this.#graceTimers.delete(server);
      if (this.#stopped || server.activeStreams > 0) return;
      this.#needsRegister.add(server);
      this.#kick(`${server.deviceType} ListAndWatch ended`);
    }, this.#opts.streamEndGraceMs ?? 1000);
    this.#graceTimers.set(server, timer);
  }

  #onSendFailed(server: DevicePluginServer, consecutive: number): void {
    this.emit('sendFailed', { deviceType: server.deviceType, resourceName: server.resourceName, consecutive });
    if (consecutive >= SEND_FAILURES_FATAL) {
      const reason = `${consecutive} consecutive ListAndWatch send failures on ${server.deviceType}`;
      this.#logger.error({ deviceType: server.deviceType }, reason);
      this.#opts.onFatal?.(reason);
    }
    if (consecutive >= SEND_FAILURES_REREGISTER) {
      this.#needsRestart.add(server);
      this.#needsRegister.add(server);
      this.#kick(`${server.deviceType} send failures`);
    }
  }

  /** Schedules a reconcile pass now: a new trigger does not wait out the backoff of an earlier failure. */
  #kick(reason: string): void {
    if (this.#stopped || !this.#started) return;
    this.#reasons.push(reason);
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => void this.#pass(), 0);
  }

  /** One coalesced reconcile: restart what lost its socket, then register what needs it. */
  async #pass(): Promise<void> {
    this.#retryTimer = undefined;
    if (this.#running || this.#stopped) return;
    this.#running = true;
    let failed: boolean;
    do {
      this.#again = false;
      try {
        failed = await this.#reconcile();
      } catch (err) {
        // e.g. listen() failing on a full disk or a permission change: retried with backoff like a failed Register.
        this.#logger.error({ err }, 'device-plugin reconcile failed');
        failed = true;
      }
    } while (this.#again && !this.#stopped);
    this.#running = false;
    if (this.#stopped) return;
    if (failed) {
      this.#retryTimer = setTimeout(() => void this.#pass(), this.#backoff.next());
    } else {
      this.#backoff.reset();
    }
    this.#passDone?.();
  }

  /** Returns true when something still needs registering. */
  async #reconcile(): Promise<boolean> {
    const reasons = this.#reasons.splice(0);
    const ino = socketIdentity(this.kubeletSocket);
    if (ino !== undefined && ino !== this.#kubeletIdentity) {
      // A new kubelet.sock means a new kubelet: it knows none of our servers.
      for (const s of this.servers) this.#needsRegister.add(s);
    }
    for (const s of this.servers) {
      if (this.#stopped) return false;
      if (!this.#needsRestart.has(s) && s.socketIntact()) continue;
      this.#needsRestart.delete(s);
      this.#logger.info({ deviceType: s.deviceType, reasons }, 'restarting device-plugin server');
      await s.listen();
      this.#needsRegister.add(s);
    }
    if (this.#needsRegister.size === 0) return false;
    if (ino === undefined) {
      try {
        checkKubeletPathOwner(this.kubeletSocket, this.#ownUid());
      } catch (err) {
        // something that is not kubelet's socket sits there (spec A.4): say so instead of just waiting
        this.#logger.error({ err }, 'refusing to register through an unsafe kubelet.sock');
        for (const s of this.#needsRegister) this.emit('registerFailed', { deviceType: s.deviceType, error: err });
      }
      this.#reportWaiting(`kubelet registration socket ${this.kubeletSocket}`);
      return true;
    }
    this.#waitingLogged = false;
    for (const s of [...this.#needsRegister]) {
      if (this.#stopped) return false;
      try {
        await this.#register(s);
        this.#needsRegister.delete(s);
        this.#lastRegistration = this.#mono();
        this.#logger.info({ deviceType: s.deviceType, resource: s.resourceName, reasons }, 'registered with kubelet');
        const ev: RegisteredEvent = {
          deviceType: s.deviceType,
          resourceName: s.resourceName,
          at: this.#lastRegistration,
          reasons,
        };
        this.emit('registered', ev);
      } catch (err) {
        this.#logger.warn({ deviceType: s.deviceType, err: (err as Error).message }, 'could not register with kubelet');
        this.emit('registerFailed', { deviceType: s.deviceType, error: err });
      }
    }
    if (this.#needsRegister.size === 0) this.#kubeletIdentity = ino;
    return this.#needsRegister.size > 0;
  }

  #ownUid(): number {
    return this.#opts.ownUid ?? process.getuid?.() ?? 0;
  }

  #register(server: DevicePluginServer): Promise<void> {
    try {
      checkKubeletPathOwner(this.kubeletSocket, this.#ownUid());
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    const client = new this.#proto.Registration(`unix://${this.kubeletSocket}`, grpc.credentials.createInsecure());
    // grpc-js takes a wall-clock deadline and turns it into a timer at once: a step later does not move it
    const deadline = Date.now() + (this.#opts.registerTimeoutMs ?? 5000);
    return new Promise<void>((resolve, reject) => {
      client.Register(
        {
          version: DEVICE_PLUGIN_VERSION,
          endpoint: server.endpoint,
          resourceName: server.resourceName,
          options: { preStartRequired: false, getPreferredAllocationAvailable: true },
        },
        { deadline },
        (err) => {
          client.close();
          if (err) reject(err);
          else resolve();
        },
      );
    });
  }
}

/** `ms` milliseconds, or less when `signal` is aborted meanwhile. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
