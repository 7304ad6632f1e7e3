/**
 * Client of kubelet's pod-resources API v1 (`-podResourcesSocket`): which devices each pod holds (spec I.5).
 * Each query opens its own connection, as upstream does, so a restarted kubelet (new socket inode) is picked up
 * without reconnect logic; every call has a deadline.
 */
import * as grpc from '@grpc/grpc-js';
import type { PodDevices } from '../core/pods.js';
import type { AllocatableResourcesResponse__Output } from '../generated/podresources/v1/AllocatableResourcesResponse.js';
import type { ListPodResourcesResponse__Output } from '../generated/podresources/v1/ListPodResourcesResponse.js';
import type { PodResourcesListerClient } from '../generated/podresources/v1/PodResourcesLister.js';
import { loadPodResourcesProto, type PodResourcesPackage } from './proto.js';
import { checkSocketPath } from './unix-socket.js';

/** Spec I.5 limits. */
export const MAX_PODS = 10_000;
export const MAX_IDS_PER_CONTAINER = 3600;

/** Options of the client; defaults are upstream's (spec A.4). */
export interface PodResourcesClientOptions {
  /** Per-call deadline (default 2 s). */
  readonly timeoutMs?: number;
  /** Largest response accepted (default 16 MiB). */
  readonly maxReceiveBytes?: number;
}

/** Pod-resources v1 client. */
export class PodResourcesClient {
  readonly #proto: PodResourcesPackage;
  readonly #timeoutMs: number;
  readonly #maxReceive: number;

  constructor(
    readonly socketPath: string,
    opts: PodResourcesClientOptions = {},
  ) {
    checkSocketPath(socketPath);
    this.#proto = loadPodResourcesProto();
    this.#timeoutMs = opts.timeoutMs ?? 2000;
    this.#maxReceive = opts.maxReceiveBytes ?? 16 * 1024 * 1024;
  }

  /** `List`: every pod with its containers' resources. */
  list(): Promise<ListPodResourcesResponse__Output> {
    return this.#call((c, deadline, cb) => c.List({}, { deadline }, cb));
  }

  /** `GetAllocatableResources`: every device kubelet can hand out. */
  getAllocatableResources(): Promise<AllocatableResourcesResponse__Output> {
    return this.#call((c, deadline, cb) => c.GetAllocatableResources({}, { deadline }, cb));
  }

  /**
   * Devices held by pods, for the given resource names (spec I.5): containers' devices of other resources are
   * skipped, at most {@link MAX_PODS} pods and {@link MAX_IDS_PER_CONTAINER} IDs per container are accepted.
   */
  async devicesInUse(resourceNames: ReadonlySet<string>): Promise<PodDevices[]> {
    const res = await this.list();
    if (res.podResources.length > MAX_PODS) {
      throw new RangeError(`kubelet reported ${res.podResources.length} pods, the limit is ${MAX_PODS}`);
    }
    const out: PodDevices[] = [];
    for (const pod of res.podResources) {
      const byResource = new Map<string, string[]>();
      for (const c of pod.containers) {
        for (const d of c.devices) {
          if (!resourceNames.has(d.resourceName)) continue;
          if (d.deviceIds.length > MAX_IDS_PER_CONTAINER) {
            throw new RangeError(
              `pod ${pod.namespace}/${pod.name} container ${c.name} holds ${d.deviceIds.length} IDs, the limit is ${MAX_IDS_PER_CONTAINER}`,
            );
          }
          const ids = byResource.get(d.resourceName) ?? [];
          ids.push(...d.deviceIds);
          byResource.set(d.resourceName, ids);
        }
      }
      for (const [resourceName, deviceIds] of byResource) {
        out.push({ namespace: pod.namespace, name: pod.name, resourceName, deviceIds });
      }
    }
    return out;
  }

  #call<T>(
    invoke: (client: PodResourcesListerClient, deadline: number, cb: grpc.requestCallback<T>) => void,
  ): Promise<T> {
    const client = new this.#proto.PodResourcesLister(`unix://${this.socketPath}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': this.#maxReceive,
    });
    return new Promise<T>((resolve, reject) => {
      // a wall-clock deadline (grpc-js's form), turned into a timer as the call starts at once (issue [T] item 1)
      invoke(client, Date.now() + this.#timeoutMs, (err, value) => {
        client.close();
        if (err) reject(err);
        else resolve(value!);
      });
    });
  }
}
