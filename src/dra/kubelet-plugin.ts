/**
 * The DRA kubelet plugin of the agent (issue [DRA] item 1): the two sockets and what keeps them there.
 *
 * Start: the folders are checked (not a symbolic link, owned by root or the agent's own user: spec A.4's rule for
 * kubelet's folders) and the driver's own folder `<-kubeletPluginsDir>/npu.huawei.com/` made 0750; the checkpoint is
 * recovered (before kubelet can call); dra.sock is served, then the registration socket, so kubelet never finds a
 * registration whose endpoint does not answer yet.
 *
 * Keeping registered: kubelet's plugin watcher re-reads the registry folder when kubelet restarts, so a kubelet
 * restart needs nothing but the socket still being there. A socket that disappears or is replaced (a wiped folder, a
 * second agent) is made again at the next poll or folder event, and a refusal (NotifyRegistrationStatus false) is
 * logged and answered by re-creating the registration socket after a backoff (1 s doubling to 60 s): a new socket is
 * a fresh attempt for kubelet.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { Clock, TimerHandle } from '../core/clock.js';
import { DRA_DRIVER } from '../core/dra-devices.js';
import { errorMessage } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { Backoff } from '../kubelet/backoff.js';
import { checkKubeletPathOwner } from '../kubelet/unix-socket.js';
import type { NodeState } from '../state/store.js';
import type { ClaimPreparer, RecoveryReport } from './claim-preparer.js';
import { DraServer } from './dra-server.js';
import { DRA_SOCKET, REGISTRATION_SOCKET, type DraProtos } from './proto.js';
import { RegistrationServer } from './registration-server.js';

/** Mode of the driver's own socket folder. */
const PLUGIN_DIR_MODE = 0o750;

/** Options of {@link DraKubeletPlugin}. */
export interface DraKubeletPluginOptions {
  /** `-kubeletPluginsDir`: the driver's folder is `<dir>/npu.huawei.com`. */
  readonly pluginsDir: string;
  /** `-kubeletRegistryDir`. */
  readonly registryDir: string;
  readonly poolName: string;
  readonly protos: DraProtos;
  readonly preparer: ClaimPreparer;
  readonly store: { snapshot(): NodeState; onChange(l: (s: NodeState) => void): () => void };
  readonly clock: Clock;
  readonly logger?: Logger;
  /** The agent's uid (default `process.getuid()`), accepted as an owner besides root. */
  readonly ownUid?: number;
  /** Period of the socket check (default 5 s). */
  readonly pollMs?: number;
  /** Backoff of re-registration after a refusal (default 1 s → 60 s). */
  readonly refusalBackoff?: { readonly initialMs: number; readonly maxMs: number };
  readonly keepAliveMs?: number;
  readonly observed?: (call: 'prepare' | 'unprepare', ms: number, failedClaims: number) => void;
}

/** The registration state for readiness. */
export interface DraRegistrationStatus {
  readonly resourceName: string;
  readonly registered: boolean;
  readonly activeStreams: number;
}

/** The plugin (see the module comment). Events: `registered`, `refused` ({error}), `socketRecreated` ({which}). */
export class DraKubeletPlugin extends EventEmitter {
  readonly pluginDir: string;
  readonly draSocket: string;
  readonly registrationSocket: string;
  readonly server: DraServer;
  readonly registration: RegistrationServer;
  readonly #o: DraKubeletPluginOptions;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  #registered = false;
  #refusals = 0;
  #started = false;
  #stopped = false;
  #pollTimer: TimerHandle | undefined;
  #retryTimer: TimerHandle | undefined;
  #watcher: fs.FSWatcher | undefined;
  #checking: Promise<void> | undefined;
  /** A check is queued and has not begun (folder events come in bursts: one check serves them all). */
  #checkQueued = false;

  constructor(options: DraKubeletPluginOptions) {
    super();
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.pluginDir = path.join(options.pluginsDir, DRA_DRIVER);
    this.draSocket = path.join(this.pluginDir, DRA_SOCKET);
    this.registrationSocket = path.join(options.registryDir, REGISTRATION_SOCKET);
    const b = options.refusalBackoff ?? { initialMs: 1000, maxMs: 60_000 };
    this.#backoff = new Backoff(b.initialMs, b.maxMs);
    this.server = new DraServer({
      socketPath: this.draSocket,
      poolName: options.poolName,
      protos: options.protos,
      preparer: options.preparer,
      store: options.store,
      clock: options.clock,
      ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
      ...(options.observed ? { observed: options.observed } : {}),
      logger: this.#log,
    });
    this.registration = new RegistrationServer({
      socketPath: this.registrationSocket,
      endpoint: this.draSocket,
      proto: options.protos.registration,
      logger: this.#log,
      events: {
        info: () => {
          this.#registered = false;
        },
        registered: () => {
          this.#registered = true;
          this.#backoff.reset();
          this.emit('registered');
        },
        refused: (error) => this.#onRefused(error),
      },
    });
  }

  /** Registration refusals so far. */
  get refusals(): number {
    return this.#refusals;
  }

  /** For readiness and metrics: registered, and streaming (kubelet's health stream, or registered at all). */
  status(): DraRegistrationStatus {
    // a kubelet without the ResourceHealthStatus gate opens no health stream: registered is then enough
    const streams = this.#registered ? Math.max(1, this.server.healthStreams) : 0;
    return { resourceName: `${DRA_DRIVER} (DRA)`, registered: this.#registered, activeStreams: streams };
  }

  /** Folders, recovery, both sockets, the watch (see the module comment). Rejects with the reason it cannot. */
  async start(): Promise<RecoveryReport> {
    if (this.#started) throw new Error('already started');
    this.#started = true;
    this.#prepareFolders();
    const report = this.#o.preparer.recover();
    await this.server.listen();
    await this.registration.listen();
    this.#watch();
    this.#schedulePoll();
    return report;
  }

  /** Stops both servers (sockets removed: kubelet deregisters the plugin) and the timers. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#pollTimer !== undefined) this.#o.clock.clearTimeout(this.#pollTimer);
    if (this.#retryTimer !== undefined) this.#o.clock.clearTimeout(this.#retryTimer);
    this.#watcher?.close();
    this.#watcher = undefined;
    await this.#checking;
    await this.registration.shutdown();
    await this.server.close();
  }

  #prepareFolders(): void {
    const own = this.#o.ownUid ?? process.getuid?.() ?? 0;
    for (const dir of [this.#o.registryDir, this.#o.pluginsDir]) {
      checkKubeletPathOwner(dir, own);
      // kubelet makes them at its start (0755); an agent started first makes them the same way
      fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    }
    checkKubeletPathOwner(this.pluginDir, own);
    fs.mkdirSync(this.pluginDir, { recursive: true, mode: PLUGIN_DIR_MODE });
    fs.chmodSync(this.pluginDir, PLUGIN_DIR_MODE);
    if (process.getuid?.() === 0) fs.chownSync(this.pluginDir, 0, 0);
  }

  #onRefused(error: string): void {
    this.#registered = false;
    this.#refusals++;
    this.emit('refused', { error });
    if (this.#stopped || this.#retryTimer !== undefined) return;
    const delay = this.#backoff.next();
    this.#log.warn({ retryInMs: delay }, 'the DRA registration socket is made again after the backoff');
    this.#retryTimer = this.#o.clock.setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#serial(() => this.#recreate('registration', 'refused by kubelet'));
    }, delay);
  }

  async #recreate(which: 'registration' | 'dra', reason: string): Promise<void> {
    if (this.#stopped) return;
    try {
      if (which === 'registration') await this.registration.listen();
      else await this.server.listen();
      this.#log.info({ which, reason }, 'DRA socket made again');
      this.emit('socketRecreated', { which, reason });
    } catch (err) {
      this.#log.error(
        { which, reason, error: errorMessage(err) },
        'DRA socket cannot be made again; next poll retries',
      );
    }
  }

  #watch(): void {
    try {
      this.#watcher = fs.watch(this.#o.registryDir, () => this.#check());
      this.#watcher.on('error', () => {
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch (err) {
      this.#log.warn({ error: errorMessage(err) }, 'cannot watch the plugin registry folder; polling only');
    }
  }

  #schedulePoll(): void {
    if (this.#stopped) return;
    this.#pollTimer = this.#o.clock.setTimeout(() => {
      this.#pollTimer = undefined;
      this.#check();
      this.#schedulePoll();
    }, this.#o.pollMs ?? 5000);
  }

  /** Runs `fn` after every socket change queued before it: one at a time, never two `listen()`s at once. */
  #serial(fn: () => Promise<void>): Promise<void> {
    const run = (this.#checking ?? Promise.resolve()).then(fn);
    this.#checking = run.catch(() => undefined);
    return this.#checking;
  }

  /** Makes again whichever socket is gone or replaced. */
  #check(): void {
    if (this.#stopped || this.#checkQueued) return;
    this.#checkQueued = true;
    void this.#serial(async () => {
      this.#checkQueued = false;
      if (this.#stopped) return;
      if (!this.server.socketIntact()) await this.#recreate('dra', `${this.draSocket} gone or replaced`);
      if (!this.registration.socketIntact() && this.#retryTimer === undefined) {
        await this.#recreate('registration', `${this.registrationSocket} gone or replaced`);
      }
      if (this.#watcher === undefined && !this.#stopped) this.#watch();
    });
  }
}
