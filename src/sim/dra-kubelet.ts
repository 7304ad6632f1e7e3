/**
 * A kubelet stand-in for DRA plugins (issue [DRA] item 6), for fast tests: real gRPC over Unix sockets, doing what
 * kubelet 1.37's plugin manager and DRA manager do with a plugin:
 * - watches the plugin registry folder (fs events plus a poll), and for every socket there, like kubelet's plugin
 *   watcher: `GetInfo`, validation (type `DRAPlugin`, a DRA service it knows among `supported_versions`), then
 *   `NotifyRegistrationStatus` (true, or false with an error when told to refuse); a socket made again is a new
 *   attempt; `restart()` forgets everything and walks the folder again, as a starting kubelet does;
 * - dials the plugin's endpoint; calls NodePrepareResources / NodeUnprepareResources with a deadline;
 * - opens `NodeWatchResources` when the plugin lists `v1.DRAResourceHealth` and records every message, keeping the
 *   latest health per `pool/device` (the cache kubelet builds for pod status, KEP-4680).
 */
import * as grpc from '@grpc/grpc-js';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { Claim } from '../generated/dra/k8s/io/kubelet/pkg/apis/dra/v1/Claim.js';
import type { DRAPluginClient } from '../generated/dra/k8s/io/kubelet/pkg/apis/dra/v1/DRAPlugin.js';
import type { NodePrepareResourcesResponse__Output } from '../generated/dra/k8s/io/kubelet/pkg/apis/dra/v1/NodePrepareResourcesResponse.js';
import type { NodeUnprepareResourcesResponse__Output } from '../generated/dra/k8s/io/kubelet/pkg/apis/dra/v1/NodeUnprepareResourcesResponse.js';
import type { DRAResourceHealthClient } from '../generated/drahealth/v1/DRAResourceHealth.js';
import type { DeviceHealth__Output } from '../generated/drahealth/v1/DeviceHealth.js';
import type { NodeWatchResourcesResponse__Output } from '../generated/drahealth/v1/NodeWatchResourcesResponse.js';
import type { PluginInfo__Output } from '../generated/pluginregistration/pluginregistration/PluginInfo.js';
import type { RegistrationClient } from '../generated/pluginregistration/pluginregistration/Registration.js';
import {
  DRA_HEALTH_SERVICE,
  DRA_PLUGIN_SERVICE,
  DRA_PLUGIN_TYPE,
  loadDraProtos,
  type DraProtos,
} from '../dra/proto.js';

/** Options of the simulator. */
export interface DraKubeletSimulatorOptions {
  /** The plugin registry folder (kubelet's `<root-dir>/plugins_registry`). */
  readonly registryDir: string;
  /** Period of the folder walk besides fs events (default 200 ms). */
  readonly pollMs?: number;
  /** Deadline of every call to a plugin (default 10 s; kubelet's is 45 s). */
  readonly callTimeoutMs?: number;
}

/** One registration attempt and its outcome. */
export interface DraRegistrationRecord {
  readonly socket: string;
  readonly info: PluginInfo__Output;
  readonly accepted: boolean;
  readonly error?: string;
  readonly seq: number;
  readonly at: number;
}

/** A registered plugin. */
interface Plugin {
  readonly record: DraRegistrationRecord;
  readonly dra: DRAPluginClient;
  readonly health: DRAResourceHealthClient | undefined;
  stream: grpc.ClientReadableStream<NodeWatchResourcesResponse__Output> | undefined;
}

/** A socket seen in the folder: its identity (a socket made again is a new plugin). */
function identityOf(p: string): string | undefined {
  try {
    const st = fs.lstatSync(p);
    return st.isSocket() ? `${st.dev}:${st.ino}:${st.birthtimeMs}` : undefined;
  } catch {
    return undefined;
  }
}

/** The simulator; emits `change` after every registration, health message and stream end. */
export class DraKubeletSimulator extends EventEmitter {
  readonly registrations: DraRegistrationRecord[] = [];
  /** Every health message, in arrival order. */
  readonly healthMessages: {
    readonly driver: string;
    readonly devices: readonly DeviceHealth__Output[];
    readonly at: number;
  }[] = [];
  readonly #o: DraKubeletSimulatorOptions;
  readonly #protos: DraProtos;
  /** Socket path → identity of the socket last handled. */
  readonly #seen = new Map<string, string>();
  /** Driver name → its plugin. */
  readonly #plugins = new Map<string, Plugin>();
  /** Driver → `pool/device` → latest health. */
  readonly #health = new Map<string, Map<string, DeviceHealth__Output>>();
  #refusals: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #watcher: fs.FSWatcher | undefined;
  #seq = 0;
  #scanning: Promise<void> = Promise.resolve();
  #running = false;

  private constructor(options: DraKubeletSimulatorOptions) {
    super();
    this.setMaxListeners(0);
    this.#o = options;
    this.#protos = loadDraProtos();
  }

  /** Makes the registry folder (as kubelet does) and starts watching it. */
  static start(options: DraKubeletSimulatorOptions): DraKubeletSimulator {
    const sim = new DraKubeletSimulator(options);
    sim.#begin();
    return sim;
  }

  #begin(): void {
    fs.mkdirSync(this.#o.registryDir, { recursive: true, mode: 0o755 });
    this.#running = true;
    try {
      this.#watcher = fs.watch(this.#o.registryDir, () => this.#scan());
      this.#watcher.on('error', () => undefined);
    } catch {
      // polling only
    }
    this.#timer = setInterval(() => this.#scan(), this.#o.pollMs ?? 200);
    this.#timer.unref();
    this.#scan();
  }

  /** The next `n` registration attempts are refused with `error` (kubelet's validation failing). */
  refuseNext(error: string, n = 1): void {
    for (let i = 0; i < n; i++) this.#refusals.push(error);
  }

  /** The registered plugin of `driver`, if any. */
  registered(driver: string): DraRegistrationRecord | undefined {
    return this.#plugins.get(driver)?.record;
  }

  /** Whether the health stream of `driver` is open. */
  healthStreamOpen(driver: string): boolean {
    return this.#plugins.get(driver)?.stream !== undefined;
  }

  /** The latest health of `pool/device` of `driver`. */
  health(driver: string, pool: string, device: string): DeviceHealth__Output | undefined {
    return this.#health.get(driver)?.get(`${pool}/${device}`);
  }

  /** Resolves with the first truthy value of `check`, now or after a change; rejects after `timeoutMs`. */
  waitFor<T>(check: () => T | undefined | null | false, what: string, timeoutMs = 10_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const evaluate = (): boolean => {
        const v = check();
        if (!v) return false;
        cleanup();
        resolve(v);
        return true;
      };
      const onChange = (): void => void evaluate();
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`DRA kubelet simulator: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.off('change', onChange);
      };
      this.on('change', onChange);
      evaluate();
    });
  }

  /** Waits for an accepted registration of `driver` newer than `afterSeq`. */
  waitForRegistration(driver: string, afterSeq = 0, timeoutMs = 10_000): Promise<DraRegistrationRecord> {
    return this.waitFor(
      () => {
        const r = this.#plugins.get(driver)?.record;
        return r && r.seq > afterSeq ? r : undefined;
      },
      `a registration of ${driver} after #${afterSeq}`,
      timeoutMs,
    );
  }

  /** NodePrepareResources to `driver`'s plugin. */
  prepare(driver: string, claims: readonly Claim[]): Promise<NodePrepareResourcesResponse__Output> {
    const p = this.#plugin(driver);
    return new Promise((resolve, reject) =>
      p.dra.NodePrepareResources({ claims: [...claims] }, { deadline: this.#deadline() }, (err, res) =>
        err || !res ? reject(err ?? new Error('no answer')) : resolve(res),
      ),
    );
  }

  /** NodeUnprepareResources to `driver`'s plugin. */
  unprepare(driver: string, claims: readonly Claim[]): Promise<NodeUnprepareResourcesResponse__Output> {
    const p = this.#plugin(driver);
    return new Promise((resolve, reject) =>
      p.dra.NodeUnprepareResources({ claims: [...claims] }, { deadline: this.#deadline() }, (err, res) =>
        err || !res ? reject(err ?? new Error('no answer')) : resolve(res),
      ),
    );
  }

  /** A kubelet restart: every plugin connection dropped, then the folder walked again (re-registration). */
  async restart(): Promise<void> {
    this.#end();
    await this.#scanning;
    this.#seen.clear();
    this.#health.clear();
    this.#begin();
    this.emit('change');
  }

  /** Stops watching and drops every connection. */
  async close(): Promise<void> {
    this.#end();
    await this.#scanning;
  }

  #end(): void {
    this.#running = false;
    clearInterval(this.#timer);
    this.#watcher?.close();
    this.#watcher = undefined;
    for (const p of this.#plugins.values()) this.#drop(p);
    this.#plugins.clear();
  }

  #drop(p: Plugin): void {
    p.stream?.cancel();
    p.stream = undefined;
    p.dra.close();
    p.health?.close();
  }

  #deadline(): number {
    return Date.now() + (this.#o.callTimeoutMs ?? 10_000);
  }

  #plugin(driver: string): Plugin {
    const p = this.#plugins.get(driver);
    if (!p) throw new Error(`DRA kubelet simulator: no plugin of ${driver} registered`);
    return p;
  }

  /** One walk of the folder at a time (kubelet's reconciler). */
  #scan(): void {
    this.#scanning = this.#scanning.then(() => this.#scanOnce()).catch(() => undefined);
  }

  async #scanOnce(): Promise<void> {
    if (!this.#running) return;
    let names: string[];
    try {
      names = fs.readdirSync(this.#o.registryDir);
    } catch {
      return;
    }
    const present = new Set<string>();
    for (const name of names) {
      if (name.startsWith('.')) continue; // kubelet's watcher ignores hidden files
      const socket = path.join(this.#o.registryDir, name);
      const id = identityOf(socket);
      if (id === undefined) continue;
      present.add(socket);
      if (this.#seen.get(socket) === id) continue;
      this.#seen.set(socket, id);
      await this.#register(socket);
    }
    // a socket gone: kubelet deregisters its plugin
    for (const [socket] of this.#seen) {
      if (present.has(socket)) continue;
      this.#seen.delete(socket);
      for (const [driver, p] of this.#plugins) {
        if (p.record.socket !== socket) continue;
        this.#drop(p);
        this.#plugins.delete(driver);
        this.emit('change');
      }
    }
  }

  async #register(socket: string): Promise<void> {
    const client: RegistrationClient = new this.#protos.registration.Registration(
      `unix://${socket}`,
      grpc.credentials.createInsecure(),
    );
    try {
      const info = await new Promise<PluginInfo__Output>((resolve, reject) =>
        client.GetInfo({}, { deadline: Date.now() + 1000 }, (err, res) =>
          err || !res ? reject(err ?? new Error('no answer')) : resolve(res),
        ),
      );
      const refusal = this.#validate(info) ?? this.#refusals.shift();
      await new Promise<void>((resolve, reject) =>
        client.NotifyRegistrationStatus(
          { pluginRegistered: refusal === undefined, error: refusal ?? '' },
          { deadline: Date.now() + 5000 },
          (err) => (err ? reject(err) : resolve()),
        ),
      );
      const record: DraRegistrationRecord = {
        socket,
        info,
        accepted: refusal === undefined,
        ...(refusal !== undefined ? { error: refusal } : {}),
        seq: ++this.#seq,
        at: Date.now(),
      };
      this.registrations.push(record);
      if (refusal === undefined) this.#connect(record);
      this.emit('change');
    } catch {
      this.#seen.delete(socket); // tried again at the next walk, like kubelet's retry
    } finally {
      client.close();
    }
  }

  /** kubelet's ValidatePlugin for the DRA type. */
  #validate(info: PluginInfo__Output): string | undefined {
    if (info.type !== DRA_PLUGIN_TYPE) return `no handler registered for plugin type: ${info.type}`;
    if (info.supportedVersions.length === 0) return 'empty list of supported gRPC services (aka supported versions)';
    if (!info.supportedVersions.includes(DRA_PLUGIN_SERVICE)) {
      return `none of services supported by the plugin (${JSON.stringify(info.supportedVersions)}) are supported by the kubelet`;
    }
    return undefined;
  }

  #connect(record: DraRegistrationRecord): void {
    const target = `unix://${record.info.endpoint}`;
    const old = this.#plugins.get(record.info.name);
    if (old) this.#drop(old);
    const withHealth = record.info.supportedVersions.includes(DRA_HEALTH_SERVICE);
    const plugin: Plugin = {
      record,
      dra: new this.#protos.dra.DRAPlugin(target, grpc.credentials.createInsecure()),
      health: withHealth
        ? new this.#protos.health.DRAResourceHealth(target, grpc.credentials.createInsecure())
        : undefined,
      stream: undefined,
    };
    this.#plugins.set(record.info.name, plugin);
    if (plugin.health) this.#watchHealth(record.info.name, plugin);
  }

  #watchHealth(driver: string, plugin: Plugin): void {
    const stream = plugin.health!.NodeWatchResources({});
    plugin.stream = stream;
    stream.on('data', (m: NodeWatchResourcesResponse__Output) => {
      const byDevice = this.#health.get(driver) ?? new Map<string, DeviceHealth__Output>();
      this.#health.set(driver, byDevice);
      for (const d of m.devices) byDevice.set(`${d.device?.poolName ?? ''}/${d.device?.deviceName ?? ''}`, d);
      this.healthMessages.push({ driver, devices: m.devices, at: Date.now() });
      this.emit('change');
    });
    const ended = (): void => {
      if (plugin.stream !== stream) return;
      plugin.stream = undefined;
      this.emit('change');
      // kubelet retries the stream every 5 s while the plugin stays registered
      const retry = setTimeout(() => {
        if (this.#running && this.#plugins.get(driver) === plugin && plugin.stream === undefined)
          this.#watchHealth(driver, plugin);
      }, 500);
      retry.unref();
    };
    stream.on('error', ended);
    stream.on('end', ended);
  }
}
