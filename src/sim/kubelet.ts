/**
 * A kubelet stand-in for tests and `simulate`, speaking real gRPC over Unix sockets:
 * - serves `Registration` on `<dir>/kubelet.sock`; on Register it dials the plugin's endpoint and asks
 *   GetDevicePluginOptions before it answers (as kubelet 1.37 does: a plugin that cannot answer is not registered),
 *   then opens ListAndWatch and records every update (a newer registration of a resource replaces the older
 *   endpoint; the same endpoint again while its stream is open is refused, as kubelet refuses it). Refusals carry
 *   kubelet's gRPC code (Unknown) and messages;
 * - calls Allocate, GetPreferredAllocation, GetDevicePluginOptions and PreStartContainer like kubelet does;
 * - `stop()` removes kubelet.sock and drops the plugin connections; `restart()` also wipes the directory as a
 *   starting kubelet does, then serves kubelet.sock again;
 * - serves pod-resources v1 (`List`, `GetAllocatableResources`, `Get`) from its own allocations, shaped as kubelet
 *   answers: one `ContainerDevices` per device ID, allocatable devices only while their plugin's stream is open.
 * The differences from the real kubelet that remain are listed in docs/testing.md ("A real cluster").
 */
import { KubeletPodsServer, type KubeletPodsOptions } from './kubelet-pods.js';
import * as grpc from '@grpc/grpc-js';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { AllocateResponse__Output } from '../generated/deviceplugin/v1beta1/AllocateResponse.js';
import type { Device__Output } from '../generated/deviceplugin/v1beta1/Device.js';
import type { DevicePluginClient } from '../generated/deviceplugin/v1beta1/DevicePlugin.js';
import type { DevicePluginOptions__Output } from '../generated/deviceplugin/v1beta1/DevicePluginOptions.js';
import type { ListAndWatchResponse__Output } from '../generated/deviceplugin/v1beta1/ListAndWatchResponse.js';
import type { PreferredAllocationResponse__Output } from '../generated/deviceplugin/v1beta1/PreferredAllocationResponse.js';
import type { RegisterRequest__Output } from '../generated/deviceplugin/v1beta1/RegisterRequest.js';
import type { RegistrationHandlers } from '../generated/deviceplugin/v1beta1/Registration.js';
import type { ContainerDevices } from '../generated/podresources/v1/ContainerDevices.js';
import type { PodResources } from '../generated/podresources/v1/PodResources.js';
import type { PodResourcesListerHandlers } from '../generated/podresources/v1/PodResourcesLister.js';
import {
  DEVICE_PLUGIN_VERSION,
  loadDevicePluginProto,
  loadPodResourcesProto,
  type DevicePluginPackage,
  type PodResourcesPackage,
} from '../kubelet/proto.js';
import { checkSocketPath } from '../kubelet/unix-socket.js';

/** File kubelet keeps in the device-plugin directory across restarts. */
const CHECKPOINT = 'kubelet_internal_checkpoint';
const RESOURCE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Options of the simulator. */
export interface KubeletSimulatorOptions {
  /** Device-plugin directory (kubelet.sock and the plugins' sockets). */
  readonly dir: string;
  /** Where to serve pod-resources v1; not served when absent. */
  readonly podResourcesSocket?: string;
  /** Remove the directory's other files on (re)start, as kubelet does (default true). */
  readonly wipeOnStart?: boolean;
  /** Deadline of the simulator's calls to the plugin (default 5 s). */
  readonly callTimeoutMs?: number;
}

/** One Register the simulator accepted. */
export interface RegistrationRecord {
  readonly resourceName: string;
  readonly endpoint: string;
  readonly version: string;
  readonly getPreferredAllocationAvailable: boolean;
  readonly preStartRequired: boolean;
  /** The plugin's answer to GetDevicePluginOptions during Register (kubelet acts on these, not on the request's). */
  readonly pluginOptions: DevicePluginOptions__Output;
  readonly at: number;
  /** Running number of this registration (1, 2, …, over all resources). */
  readonly seq: number;
}

/** One ListAndWatch message received. */
export interface UpdateRecord {
  readonly resourceName: string;
  /** `seq` of the registration whose stream carried it. */
  readonly registration: number;
  readonly devices: readonly Device__Output[];
  readonly at: number;
}

interface Endpoint {
  readonly registration: RegistrationRecord;
  readonly client: DevicePluginClient;
  readonly stream: grpc.ClientReadableStream<ListAndWatchResponse__Output>;
  devices: readonly Device__Output[] | undefined;
  open: boolean;
}

/** A pod's container as recorded by {@link KubeletSimulator.allocate}. */
export interface SimPodRef {
  readonly namespace: string;
  readonly name: string;
  /** Container names, one per container request (default `c0`, `c1`, …). */
  readonly containers?: readonly string[];
}

/**
 * The kubelet simulator; emits `change` after every registration, update, or stream end, and `listening` each
 * time kubelet.sock starts being served.
 */
export class KubeletSimulator extends EventEmitter {
  readonly #podsServers: KubeletPodsServer[] = [];
  readonly dir: string;
  readonly socketPath: string;
  readonly registrations: RegistrationRecord[] = [];
  readonly updates: UpdateRecord[] = [];
  readonly #opts: KubeletSimulatorOptions;
  readonly #dp: DevicePluginPackage;
  readonly #pr: PodResourcesPackage;
  readonly #endpoints = new Map<string, Endpoint>();
  /** pod key → container name → resource → device IDs. */
  readonly #pods = new Map<
    string,
    { namespace: string; name: string; containers: Map<string, Map<string, string[]>> }
  >();
  #registration: grpc.Server | undefined;
  #podResources: grpc.Server | undefined;
  #seq = 0;

  private constructor(opts: KubeletSimulatorOptions) {
    super();
    this.setMaxListeners(0);
    this.#opts = opts;
    this.dir = opts.dir;
    this.socketPath = path.join(opts.dir, 'kubelet.sock');
    checkSocketPath(this.socketPath);
    this.#dp = loadDevicePluginProto();
    this.#pr = loadPodResourcesProto();
  }

  /** Creates the directory if needed and starts serving. */
  static async start(opts: KubeletSimulatorOptions): Promise<KubeletSimulator> {
    const sim = new KubeletSimulator(opts);
    fs.mkdirSync(opts.dir, { recursive: true });
    await sim.#startRegistration();
    if (opts.podResourcesSocket) await sim.#startPodResources(opts.podResourcesSocket);
    return sim;
  }

  /** True while kubelet.sock is served. */
  get running(): boolean {
    return this.#registration !== undefined;
  }

  /** Latest device list of the resource's current endpoint (undefined before the first update). */
  devices(resourceName: string): readonly Device__Output[] | undefined {
    return this.#endpoints.get(resourceName)?.devices;
  }

  /** The registration currently connected for `resourceName`. */
  currentRegistration(resourceName: string): RegistrationRecord | undefined {
    return this.#endpoints.get(resourceName)?.registration;
  }

  /** Whether the current endpoint's ListAndWatch stream is open. */
  streamOpen(resourceName: string): boolean {
    return this.#endpoints.get(resourceName)?.open ?? false;
  }

  registrationsOf(resourceName: string): RegistrationRecord[] {
    return this.registrations.filter((r) => r.resourceName === resourceName);
  }

  /**
   * Resolves with the first truthy value of `check`, evaluated now and after every change; rejects after
   * `timeoutMs` naming `what`.
   */
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
        reject(new Error(`kubelet simulator: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.off('change', onChange);
      };
      this.on('change', onChange);
      evaluate();
    });
  }

  /** Waits for a registration of `resourceName` newer than `afterSeq` whose stream delivered a list. */
  waitForRegistration(resourceName: string, afterSeq = 0, timeoutMs = 10_000): Promise<RegistrationRecord> {
    return this.waitFor(
      () => {
        const e = this.#endpoints.get(resourceName);
        return e && e.registration.seq > afterSeq && e.devices !== undefined ? e.registration : undefined;
      },
      `a registration of ${resourceName} after #${afterSeq} with a device list`,
      timeoutMs,
    );
  }

  /** Waits until the current device list of `resourceName` satisfies `pred`. */
  waitForDevices(
    resourceName: string,
    pred: (devices: readonly Device__Output[]) => boolean,
    what: string,
    timeoutMs = 10_000,
  ): Promise<readonly Device__Output[]> {
    return this.waitFor(
      () => {
        const d = this.devices(resourceName);
        return d && pred(d) ? d : undefined;
      },
      `${resourceName} devices: ${what}`,
      timeoutMs,
    );
  }

  /** Calls Allocate; with `pod`, records the allocation for pod-resources. */
  async allocate(resourceName: string, requests: string[][], pod?: SimPodRef): Promise<AllocateResponse__Output> {
    const res = await this.#unary<AllocateResponse__Output>(resourceName, (c, o, cb) =>
      c.Allocate({ containerRequests: requests.map((devicesIds) => ({ devicesIds })) }, o, cb),
    );
    if (pod) this.#recordPod(resourceName, requests, pod);
    return res;
  }

  getPreferredAllocation(
    resourceName: string,
    requests: { available: string[]; mustInclude?: string[]; size: number }[],
  ): Promise<PreferredAllocationResponse__Output> {
    const containerRequests = requests.map((r) => ({
      availableDeviceIDs: r.available,
      mustIncludeDeviceIDs: r.mustInclude ?? [],
      allocationSize: r.size,
    }));
    return this.#unary(resourceName, (c, o, cb) => c.GetPreferredAllocation({ containerRequests }, o, cb));
  }

  getDevicePluginOptions(resourceName: string): Promise<DevicePluginOptions__Output> {
    return this.#unary(resourceName, (c, o, cb) => c.GetDevicePluginOptions({}, o, cb));
  }

  preStartContainer(resourceName: string, ids: string[]): Promise<object> {
    return this.#unary(resourceName, (c, o, cb) => c.PreStartContainer({ devicesIds: ids }, o, cb));
  }

  /** Forgets a pod (it no longer appears in pod-resources). */
  removePod(namespace: string, name: string): void {
    this.#pods.delete(`${namespace}/${name}`);
  }

  /** Ends the ListAndWatch stream of `resourceName` without re-registration (as a kubelet endpoint failure). */
  endStream(resourceName: string): void {
    const e = this.#endpoints.get(resourceName);
    if (!e) return;
    e.stream.cancel();
    e.client.close();
  }

  /** Kubelet goes down: kubelet.sock removed, every plugin connection dropped. */
  async stop(): Promise<void> {
    const server = this.#registration;
    this.#registration = undefined;
    if (server) await shutdown(server);
    fs.rmSync(this.socketPath, { force: true });
    for (const e of this.#endpoints.values()) {
      e.stream.cancel();
      e.client.close();
    }
    this.#endpoints.clear();
    this.emit('change');
  }

  /** Kubelet restarts: stop, wipe the directory (unless disabled), serve kubelet.sock again. */
  async restart(): Promise<void> {
    await this.stop();
    await this.#startRegistration();
  }

  /** Serves the kubelet's HTTPS `GET /pods` (spec I.6, `-getPodFromKubelet`); closed with the simulator. */
  async servePods(o: KubeletPodsOptions): Promise<KubeletPodsServer> {
    const server = await KubeletPodsServer.start(o);
    this.#podsServers.push(server);
    return server;
  }

  /** Stops everything, including pod-resources and `/pods`. */
  async close(): Promise<void> {
    await this.stop();
    for (const p of this.#podsServers.splice(0)) await p.close();
    const pr = this.#podResources;
    this.#podResources = undefined;
    if (pr) await shutdown(pr);
    if (this.#opts.podResourcesSocket) fs.rmSync(this.#opts.podResourcesSocket, { force: true });
  }

  async #startRegistration(): Promise<void> {
    if (this.#opts.wipeOnStart ?? true) {
      for (const f of fs.readdirSync(this.dir)) {
        if (f !== CHECKPOINT) fs.rmSync(path.join(this.dir, f), { force: true, recursive: true });
      }
    }
    fs.rmSync(this.socketPath, { force: true });
    const server = new grpc.Server();
    const handlers: RegistrationHandlers = {
      // kubelet answers every refusal with a plain Go error: gRPC code Unknown (devicemanager plugin/v1beta1).
      Register: (call, callback) => {
        const problem = this.#validate(call.request);
        if (problem) {
          callback({ code: grpc.status.UNKNOWN, details: problem });
          return;
        }
        this.#connect(call.request).then(
          () => callback(null, {}),
          (err: Error) => callback({ code: grpc.status.UNKNOWN, details: err.message }),
        );
      },
    };
    server.addService(this.#dp.Registration.service, handlers);
    await bind(server, this.socketPath);
    this.#registration = server;
    this.emit('listening');
  }

  /** kubelet's checks and messages (errUnsupportedVersion, errInvalidResourceName); kubelet would fail to dial a path. */
  #validate(req: RegisterRequest__Output): string | undefined {
    if (req.version !== DEVICE_PLUGIN_VERSION) {
      return `requested API version "${req.version}" is not supported by kubelet. Supported version is ["${DEVICE_PLUGIN_VERSION}"]`;
    }
    if (!RESOURCE_NAME.test(req.resourceName)) return `the ResourceName "${req.resourceName}" is invalid`;
    if (!req.endpoint || req.endpoint.includes('/')) {
      return `failed to dial device plugin: endpoint "${req.endpoint}" is not a socket in ${this.dir}`;
    }
    return undefined;
  }

  /** Dials the plugin and asks its options (kubelet's PluginConnected); rejects with kubelet's message. */
  async #connect(req: RegisterRequest__Output): Promise<void> {
    const socket = path.join(this.dir, req.endpoint);
    const current = this.#endpoints.get(req.resourceName);
    if (current?.open && current.registration.endpoint === req.endpoint) {
      throw new Error(`device plugin already connected: ${socket}`);
    }
    const client = new this.#dp.DevicePlugin(`unix://${socket}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': 16 * 1024 * 1024,
    });
    let pluginOptions: DevicePluginOptions__Output;
    try {
      pluginOptions = await new Promise<DevicePluginOptions__Output>((resolve, reject) =>
        client.GetDevicePluginOptions(
          {},
          { deadline: Date.now() + (this.#opts.callTimeoutMs ?? 5000) },
          (err, value) => (err ? reject(err) : resolve(value!)),
        ),
      );
    } catch (err) {
      client.close();
      const e = err as grpc.ServiceError;
      if (e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.DEADLINE_EXCEEDED) {
        throw new Error(`failed to dial device plugin: ${e.details}`, { cause: err });
      }
      throw new Error(`failed to get device plugin options: ${goRpcError(e)}`, { cause: err });
    }
    const registration: RegistrationRecord = {
      resourceName: req.resourceName,
      endpoint: req.endpoint,
      version: req.version,
      getPreferredAllocationAvailable: req.options?.getPreferredAllocationAvailable ?? false,
      preStartRequired: req.options?.preStartRequired ?? false,
      pluginOptions,
      at: Date.now(),
      seq: ++this.#seq,
    };
    this.registrations.push(registration);
    const stream = client.ListAndWatch({});
    const endpoint: Endpoint = { registration, client, stream, devices: undefined, open: true };
    const old = this.#endpoints.get(req.resourceName);
    this.#endpoints.set(req.resourceName, endpoint);
    if (old) {
      old.stream.cancel();
      old.client.close();
    }
    stream.on('data', (msg: ListAndWatchResponse__Output) => {
      endpoint.devices = msg.devices;
      this.updates.push({
        resourceName: req.resourceName,
        registration: registration.seq,
        devices: msg.devices,
        at: Date.now(),
      });
      this.emit('change');
    });
    const closed = (): void => {
      if (!endpoint.open) return;
      endpoint.open = false;
      this.emit('change');
    };
    stream.on('error', closed);
    stream.on('end', closed);
    stream.on('close', closed);
    this.emit('change');
  }

  #unary<T>(
    resourceName: string,
    invoke: (client: DevicePluginClient, opts: grpc.CallOptions, cb: grpc.requestCallback<T>) => void,
  ): Promise<T> {
    const e = this.#endpoints.get(resourceName);
    if (!e) return Promise.reject(new Error(`kubelet simulator: ${resourceName} is not registered`));
    const deadline = Date.now() + (this.#opts.callTimeoutMs ?? 5000);
    return new Promise<T>((resolve, reject) =>
      invoke(e.client, { deadline }, (err, value) => (err ? reject(err) : resolve(value!))),
    );
  }

  #recordPod(resourceName: string, requests: string[][], pod: SimPodRef): void {
    const key = `${pod.namespace}/${pod.name}`;
    const entry = this.#pods.get(key) ?? {
      namespace: pod.namespace,
      name: pod.name,
      containers: new Map<string, Map<string, string[]>>(),
    };
    requests.forEach((ids, i) => {
      const cname = pod.containers?.[i] ?? `c${i}`;
      const byResource = entry.containers.get(cname) ?? new Map<string, string[]>();
      byResource.set(resourceName, [...ids]);
      entry.containers.set(cname, byResource);
    });
    this.#pods.set(key, entry);
  }

  #podResourcesOf(key: string): PodResources | undefined {
    const p = this.#pods.get(key);
    if (!p) return undefined;
    return {
      namespace: p.namespace,
      name: p.name,
      containers: [...p.containers].map(([name, byResource]) => ({
        name,
        // kubelet lists one ContainerDevices per device ID
        devices: [...byResource].flatMap(([resourceName, deviceIds]) =>
          deviceIds.map((id) => ({ resourceName, deviceIds: [id] })),
        ),
      })),
    };
  }

  async #startPodResources(socketPath: string): Promise<void> {
    checkSocketPath(socketPath);
    fs.mkdirSync(path.dirname(socketPath), { recursive: true });
    fs.rmSync(socketPath, { force: true });
    const server = new grpc.Server();
    const handlers: PodResourcesListerHandlers = {
      List: (_call, callback) => {
        callback(null, { podResources: [...this.#pods.keys()].map((k) => this.#podResourcesOf(k)!) });
      },
      GetAllocatableResources: (_call, callback) => {
        const devices: ContainerDevices[] = [];
        for (const [resourceName, e] of this.#endpoints) {
          // kubelet marks every device of a plugin whose stream ended unhealthy (markResourceUnhealthy)
          if (!e.open) continue;
          for (const d of e.devices ?? []) {
            if (d.health !== 'Healthy') continue;
            devices.push({ resourceName, deviceIds: [d.ID], ...(d.topology ? { topology: d.topology } : {}) });
          }
        }
        callback(null, { devices, cpuIds: [], memory: [] });
      },
      Get: (call, callback) => {
        const { podNamespace, podName } = call.request;
        const pod = this.#podResourcesOf(`${podNamespace}/${podName}`);
        // kubelet: a plain Go error (code Unknown)
        if (!pod)
          callback({ code: grpc.status.UNKNOWN, details: `pod ${podName} in namespace ${podNamespace} not found` });
        else callback(null, { podResources: pod });
      },
    };
    server.addService(this.#pr.PodResourcesLister.service, handlers);
    await bind(server, socketPath);
    this.#podResources = server;
  }
}

/** A gRPC error as Go's grpc-go prints it (`rpc error: code = Unknown desc = …`), which kubelet wraps. */
function goRpcError(e: grpc.ServiceError): string {
  const name = (grpc.status[e.code] ?? 'UNKNOWN')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_, _sep: string, c: string) => c.toUpperCase());
  return `rpc error: code = ${name} desc = ${e.details}`;
}

function bind(server: grpc.Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
}

function shutdown(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 500);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
