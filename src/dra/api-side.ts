/**
 * The API side of the DRA driver assembled (docs/dra.md), for the agent's wiring (`src/agent/wire-dra.ts`) to
 * construct in one call: the slice writer fed by the store's changes, the claim-status writer, the binding-condition
 * watch of a reset, and — when the pod cache and a pod annotator are given — the DRA pod annotations and device IPs.
 * Inputs other than the store (the chips the device plugin holds in `both` mode, the pods) say when they change.
 */
import type { ChipKind } from '../core/chips.js';
import { SYSTEM_CLOCK, type Clock } from '../core/clock.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { PodCache } from '../core/pods.js';
import type { WatchFn } from '../kube/list-watch.js';
import type { PodAnnotator } from '../kube/pod-annotator.js';
import type { BackoffOptions } from '../kube/write-queue.js';
import type { NodeStateStore } from '../state/store.js';
import { ClaimAnnotator } from './claim-annotator.js';
import { ClaimBindingWatcher } from './claim-binding.js';
import type { ChipStatusFacts } from './claim-devices.js';
import { ClaimStatusWriter } from './claim-status.js';
import { isResetting } from './device-taints.js';
import { draApiOf, type JsonRequester } from './dra-api.js';
import { poolOf, slicesOf, type DraInventory } from './resource-slices.js';
import { ResourceSliceWriter } from './slice-writer.js';

/** What {@link createDraApiSide} is built from. */
export interface DraApiSideOptions {
  readonly store: Pick<NodeStateStore, 'snapshot' | 'onChange'>;
  /** The agent's client (`KubeClient`: `requestJson` and `watch`). */
  readonly client: JsonRequester & { readonly watch: WatchFn };
  readonly nodeName: string;
  readonly inventory: DraInventory;
  /** Spec B.3 device type of the node (`Ascend910`, A5 `npu`): names in the pod annotations. */
  readonly deviceType: string;
  /** Publish the vNPU templates as partitions (issue [DRA] item 5). */
  readonly partitions?: boolean;
  /** `-deviceApi=both`: phy ids of the chips kubelet has allocated through the device plugin (withdrawn). */
  readonly withdrawn?: () => ReadonlySet<number>;
  /** C.5 device IP of a chip (claim device status); undefined: not known. */
  readonly ipOf?: (phyId: number) => string | undefined;
  /** The node's pods and the spec I.3 annotator (built without `-volcanoType`); absent: no DRA pod annotations. */
  readonly pods?: Pick<PodCache, 'pods'>;
  readonly annotator?: Pick<PodAnnotator, 'annotate'>;
  readonly clock?: Clock;
  readonly backoff?: BackoffOptions;
  readonly logger?: Logger;
}

/** The assembled API side. */
export interface DraApiSide {
  readonly writer: ResourceSliceWriter;
  readonly status: ClaimStatusWriter;
  readonly binding: ClaimBindingWatcher;
  readonly claims: ClaimAnnotator | undefined;
  /** Lists the node's slices and writes what differs; starts following the store. */
  start(): Promise<void>;
  /**
   * A DRA annotation pass: call it on every pod-cache change and every `-listWatchPeriod` (as the device plugin's
   * passes, src/agent/wire-annotate.ts), so what a pass could not do (a claim not readable yet, a patch refused) is
   * tried again.
   */
  podsChanged(): void;
  /** The chips held through the device plugin changed (`both`): the pool is built again. */
  withdrawnChanged(): void;
  stop(): void;
}

/** Builds the API side (see the module comment). */
export function createDraApiSide(o: DraApiSideOptions): DraApiSide {
  const clock = o.clock ?? SYSTEM_CLOCK;
  const logger = o.logger ?? NOOP_LOGGER;
  const api = draApiOf(o.client);
  const kind: ChipKind = o.inventory.kind;
  const writer = new ResourceSliceWriter({
    api,
    watch: o.client.watch,
    nodeName: o.nodeName,
    build: (times) =>
      slicesOf(
        poolOf(o.store.snapshot(), o.inventory, times, {
          partitions: o.partitions === true,
          ...(o.withdrawn ? { withdrawn: o.withdrawn() } : {}),
        }),
        o.nodeName,
      ),
    clock,
    ...(o.backoff ? { backoff: o.backoff } : {}),
    logger,
  });
  const facts = (phyId: number): ChipStatusFacts => {
    const chip = o.store.snapshot().chips.find((c) => c.phyId === phyId);
    const ip = o.ipOf?.(phyId);
    return { ...(chip ? { chip } : {}), ...(ip !== undefined ? { ip } : {}) };
  };
  const status = new ClaimStatusWriter({
    api,
    nodeName: o.nodeName,
    kind,
    facts,
    clock,
    ...(o.backoff ? { backoff: o.backoff } : {}),
    logger,
  });
  const binding = new ClaimBindingWatcher({
    api,
    watch: o.client.watch,
    nodeName: o.nodeName,
    kind,
    status,
    resetting: () => o.store.snapshot().chips.some(isResetting),
    clock,
    ...(o.backoff ? { backoff: o.backoff } : {}),
    logger,
  });
  const claims =
    o.pods && o.annotator
      ? new ClaimAnnotator({
          api,
          pods: o.pods,
          nodeName: o.nodeName,
          kind,
          deviceType: o.deviceType,
          annotator: o.annotator,
          status,
          facts,
          logger,
        })
      : undefined;
  let unsubscribe: (() => void) | undefined;
  return {
    writer,
    status,
    binding,
    claims,
    async start() {
      unsubscribe = o.store.onChange(() => {
        writer.changed();
        binding.changed();
      });
      await writer.start();
      binding.changed();
      void claims?.request();
    },
    podsChanged: () => void claims?.request(),
    withdrawnChanged: () => writer.changed(),
    stop() {
      unsubscribe?.();
      claims?.stop();
      binding.stop();
      status.stop();
      writer.stop();
    },
  };
}
