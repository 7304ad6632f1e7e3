/**
 * Allocate (spec C.3, C.4): validate the request, map kubelet IDs to real devices (the `-volcanoType` pick),
 * refuse unhealthy or separated chips (our deliberate change), and build each container's response in the
 * configured mounting mode. Reads only the device snapshot, the pod cache (volcano pick) and the device probe.
 */
import type { ContainerAllocateResponse } from '../generated/deviceplugin/v1beta1/ContainerAllocateResponse.js';
import type { DeviceSpec } from '../generated/deviceplugin/v1beta1/DeviceSpec.js';
import { isVirtualName, resourceName } from '../core/device-names.js';
import { ubNodes, type DeviceNodeProbe, type DeviceNodeSpec } from './device-nodes.js';
import { chipCount, type DeviceSnapshot, type KubeletDevice } from './device-source.js';
import { failedPrecondition, invalidArgument } from './errors.js';
import type { KubeletRealMap } from './list-watch-view.js';
import type { Logger } from '../core/logger.js';
import type { PodCache } from '../core/pods.js';
import { pickFromPodAnnotation, type PickOptions } from './volcano-pick.js';
import { allocateSoftShare, type SoftShareAllocator } from './soft-share.js';
import type { DynamicVnpu } from './vnpu-allocate.js';
import { dynamicVnpuEnvs } from './vnpu-core.js';
import { qualifiedName } from '../cdi/spec.js';
import { cdiNodeName } from './cdi-spec.js';

/** Spec C.3 input limits. */
export const MAX_CONTAINER_REQUESTS = 300_000;
export const MAX_IDS_PER_CONTAINER = 800;
/** Longest device ID Allocate accepts (spec C.3). */
export const MAX_DEVICE_ID_LENGTH = 50;

/** How the allocator behaves; taken from the flags by the CLI. */
export interface AllocatorOptions {
  readonly deviceType: string;
  /** `-volcanoType`. */
  readonly volcanoType: boolean;
  /** Ascend-docker mode (spec A.2 step 8): environment variables only, no device specs. */
  readonly useAscendDocker: boolean;
  readonly pick?: PickOptions;
  /** Soft share (spec L.7): set, every request goes through the pod's annotations and {@link SoftShareAllocator}. */
  readonly softShare?: SoftShareAllocator;
  /**
   * `-cdiDevicePlugin` (issue [DRA] item 6, ours): native mode answers with CDI devices of the node's spec
   * (`ascend.com/npu=davinci<N>`, `…=vdavinci<N>`; kubelet/cdi-spec.ts) instead of device specs, so that containerd ≥
   * 1.7 and CRI-O inject the nodes (management nodes and driver mounts included) without Ascend's runtime hook.
   */
  readonly cdi?: boolean;
}

/** What the allocator reads besides the snapshot. */
export interface AllocatorDeps {
  readonly probe: DeviceNodeProbe;
  /** Default device nodes collected at start (spec C.4 item 1); mounted in native mode. */
  readonly defaultNodes: readonly DeviceNodeSpec[];
  /** Needed only with `-volcanoType`. */
  readonly podCache?: PodCache;
  /** The server's kubelet→real map (spec C.3 step 5); written by the volcano pick. */
  readonly kubeletToReal: KubeletRealMap;
  readonly logger: Logger;
  /** Spec C.4 `-enableSlowNode`: variables added in both modes (`PERF_DUMP_PATH`, `PERF_DUMP_CONFIG`). */
  readonly extraEnvs?: () => Readonly<Record<string, string>>;
  /** Dynamic vNPU (`npu-core` server, spec C.3 dynamic mode): replaces the volcano pick. */
  readonly dynamic?: DynamicVnpu;
}

function describeRefusal(d: KubeletDevice): string | undefined {
  if (d.heldBy !== undefined) return `${d.id} is held by ${d.heldBy} (-deviceApi=both)`;
  if (d.manuallySeparated) return `${d.id} is manually separated (level ${d.level})`;
  if (d.health !== 'Healthy') return `${d.id} is Unhealthy (level ${d.level})`;
  return undefined;
}

/** Allocate for one device type. Calls are serialised (spec C.3: the pick holds a per-server lock). */
export class Allocator {
  #virtualRuntime = false;
  #queue: Promise<unknown> = Promise.resolve();
  /** ID → device of the last device list seen (snapshots are immutable: 400 IDs in share mode, spec B.3). */
  #index: { list: readonly KubeletDevice[]; byId: ReadonlyMap<string, KubeletDevice> } | undefined;

  constructor(
    readonly options: AllocatorOptions,
    private readonly deps: AllocatorDeps,
  ) {}

  /** True once a virtual device was allocated (spec C.3: the `VIRTUAL` runtime option is sticky per server). */
  get virtualRuntime(): boolean {
    return this.#virtualRuntime;
  }

  /** Answers an Allocate request; rejects with a {@link KubeletRequestError} naming the problem. */
  allocate(requests: readonly (readonly string[])[], snapshot: DeviceSnapshot): Promise<ContainerAllocateResponse[]> {
    const run = this.#queue.then(() => this.#allocate(requests, snapshot));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Spec C.3 input checks plus ours (empty, duplicate, more than exist). Returns the device records. */
  validate(requests: readonly (readonly string[])[], devices: ReadonlyMap<string, KubeletDevice>): void {
    if (requests.length === 0) throw invalidArgument('the request has no container requests');
    if (requests.length > MAX_CONTAINER_REQUESTS) {
      throw invalidArgument(`${requests.length} container requests, the limit is ${MAX_CONTAINER_REQUESTS}`);
    }
    const seen = new Set<string>();
    requests.forEach((ids, i) => {
      if (ids.length === 0) throw invalidArgument(`container request ${i} has no device IDs`);
      if (ids.length > MAX_IDS_PER_CONTAINER) {
        throw invalidArgument(
          `container request ${i} has ${ids.length} device IDs, the limit is ${MAX_IDS_PER_CONTAINER}`,
        );
      }
      if (ids.length > devices.size) {
        throw invalidArgument(
          `container request ${i} asks for ${ids.length} devices, ${this.options.deviceType} has ${devices.size}`,
        );
      }
      for (const id of ids) {
        if (id.length > MAX_DEVICE_ID_LENGTH) {
          throw invalidArgument(`device ID ${JSON.stringify(id.slice(0, 60))}… is longer than ${MAX_DEVICE_ID_LENGTH}`);
        }
        if (!devices.has(id)) {
          throw invalidArgument(`unknown device ID ${JSON.stringify(id)} for ${resourceName(this.options.deviceType)}`);
        }
        if (seen.has(id)) throw invalidArgument(`duplicate device ID ${id}`);
        seen.add(id);
      }
      if (ids.some(isVirtualName) && ids.length !== 1) {
        throw invalidArgument(`a request for a virtual device may name only one device, got ${ids.length}`);
      }
    });
  }

  async #allocate(
    requests: readonly (readonly string[])[],
    snapshot: DeviceSnapshot,
  ): Promise<ContainerAllocateResponse[]> {
    const { deviceType, volcanoType } = this.options;
    const list = snapshot.deviceTypes[deviceType] ?? [];
    if (this.#index?.list !== list) this.#index = { list, byId: new Map(list.map((d) => [d.id, d])) };
    const devices = this.#index.byId;
    this.validate(requests, devices);
    if (requests.some((ids) => ids.some(isVirtualName))) this.#virtualRuntime = true;

    if (this.options.softShare) {
      const { softShare, pick } = this.options;
      const respond = (chip: KubeletDevice) => this.#response([chip], snapshot, this.#virtualRuntime);
      return [await allocateSoftShare({ ...this.deps, hook: softShare, deviceType, requests, devices, respond, pick })];
    }
    const virtualType = isVirtualName(deviceType);
    const chips = volcanoType ? chipCount(snapshot) : 0; // a walk of every device (400 in share mode): only if needed
    const out: ContainerAllocateResponse[] = [];
    for (const ids of requests) {
      let real: KubeletDevice[] = ids.map((id) => devices.get(id)!);
      let virtual = this.#virtualRuntime;
      if (this.deps.dynamic) {
        // spec C.3: dynamic vNPU always picks; the runtime option follows what was mounted (not sticky)
        const a = await this.deps.dynamic.allocate(ids, snapshot);
        [real, virtual] = [[...a.real], a.virtual];
      } else if (volcanoType && !virtualType && ids.length !== chips) real = await this.#pick(ids, devices);
      for (const d of real) {
        const refusal = describeRefusal(d);
        if (refusal) throw failedPrecondition(`refusing to allocate: ${refusal}`);
      }
      out.push(this.#response(real, snapshot, virtual));
    }
    return out;
  }

  async #pick(ids: readonly string[], devices: ReadonlyMap<string, KubeletDevice>): Promise<KubeletDevice[]> {
    const { podCache, kubeletToReal, logger } = this.deps;
    const resource = resourceName(this.options.deviceType);
    if (!podCache) throw failedPrecondition('-volcanoType is set but no pod cache is available');
    const { pod, devices: names } = await pickFromPodAnnotation(podCache, resource, ids.length, this.options.pick);
    const real = names.map((name) => {
      const d = devices.get(name);
      if (!d) {
        throw failedPrecondition(
          `pod ${pod.namespace}/${pod.name} annotation ${resource} names unknown device ${name}`,
        );
      }
      return d;
    });
    ids.forEach((id, i) => kubeletToReal.record(id, real[i]!.id));
    logger.info({ pod: `${pod.namespace}/${pod.name}`, kubelet: ids, real: names }, 'volcano pick');
    return real;
  }

  #response(real: readonly KubeletDevice[], snapshot: DeviceSnapshot, virtual: boolean): ContainerAllocateResponse {
    const visible: number[] = [];
    for (const d of real) {
      const v = virtual ? (d.vdevId ?? d.phyId) : d.phyId;
      if (!visible.includes(v)) visible.push(v);
    }
    if (this.options.useAscendDocker) {
      const envs: Record<string, string> = {
        ASCEND_VISIBLE_DEVICES: visible.join(','),
        ASCEND_RUNTIME_OPTIONS: virtual ? 'VIRTUAL' : '',
      };
      if (snapshot.node.chipKind === 'Ascend310B') envs.ASCEND_ALLOW_LINK = 'True';
      if (this.deps.dynamic) Object.assign(envs, dynamicVnpuEnvs(visible.length)); // spec C.4
      return { envs: { ...envs, ...this.deps.extraEnvs?.() } };
    }
    const extra = this.deps.extraEnvs?.() ?? {};
    const envs = Object.keys(extra).length > 0 ? { envs: { ...extra } } : {};
    if (this.options.cdi) {
      const cdiDevices = visible.map((v) => ({ name: qualifiedName(cdiNodeName(v, virtual)) }));
      return { cdiDevices, ...envs };
    }
    const { probe, defaultNodes } = this.deps;
    const spec = (n: DeviceNodeSpec): DeviceSpec => ({ ...n, permissions: 'rw' });
    const devs: DeviceSpec[] = defaultNodes.map(spec);
    for (const v of visible) {
      devs.push({
        containerPath: `/dev/davinci${v}`,
        hostPath: probe.hostPath(virtual ? `vdavinci${v}` : `davinci${v}`),
        permissions: 'rw',
      });
    }
    if (visible.length > 0) devs.push(...ubNodes(probe).map(spec));
    return { devices: devs, ...envs };
  }
}
