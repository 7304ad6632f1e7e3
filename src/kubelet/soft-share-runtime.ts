/**
 * Soft share in the running agent (spec L.7): the {@link SoftShareAllocator} Allocate calls, over the files of
 * soft-share.ts, plus what the rest of the agent asks of it — the copies of full chips (off the device-info
 * schedulable list, H.3), the clean-up when pods go (and at start, for whatever a crash left), an Event on every pod
 * whose Allocate was refused.
 */
import type { Mount } from '../generated/deviceplugin/v1beta1/Mount.js';
import { shareName } from '../core/device-names.js';
import type { PodView } from '../core/pods.js';
import type { AgentEvent } from '../core/agent-event.js';
import {
  jobOf,
  parseSoftShareRequest,
  SOFT_SHARE_COPIES,
  SoftShareFiles,
  type SoftShareAllocator,
  type SoftShareFilesOptions,
  type SoftSharePod,
} from './soft-share.js';

/** Longest Event message (bounded text). */
const MAX_EVENT_CHARS = 512;

/** What the runtime reads from the node. */
export interface SoftShareRuntimeOptions extends SoftShareFilesOptions {
  /** Device type whose copies are advertised (`Ascend310P`). */
  readonly deviceType: string;
  /** The node's chips (the full-chip copies are named from them; their memory is read at start). */
  readonly chips: readonly { readonly phyId: number; readonly cardId: number; readonly deviceId: number }[];
  /** `dcmi_get_device_die_v2` VDIE, text form (throws on failure). */
  readonly dieIdOf: (cardId: number, deviceId: number) => string;
  /** Chip memory in MiB (`dcmi_get_device_hbm_info`), undefined when unknown; read once per chip. */
  readonly memoryOf: (cardId: number, deviceId: number) => number | undefined;
  /** Where Events go (absent without an API server). */
  readonly events?: { record(event: AgentEvent): void };
}

/** The pods the clean-up compares with: only a cache that has listed once counts. */
export interface SoftSharePods {
  readonly synced: boolean;
  pods(): readonly PodView[];
}

/** Soft share of one agent. */
export class SoftShareRuntime implements SoftShareAllocator {
  readonly files: SoftShareFiles;
  readonly #o: SoftShareRuntimeOptions;
  readonly #die = new Map<number, string>();
  readonly #memory = new Map<number, number | undefined>();
  readonly #listeners = new Set<() => void>();

  constructor(o: SoftShareRuntimeOptions) {
    this.#o = o;
    this.files = new SoftShareFiles(o);
    for (const c of o.chips) this.#memory.set(c.phyId, this.#readMemory(c));
  }

  /** Chip memory of a phy id as last read (undefined before its first Allocate or when unknown). */
  memoryOfPhy(phyId: number): number | undefined {
    return this.#memory.get(phyId);
  }

  allocate(
    pod: SoftSharePod,
    chip: { readonly phyId: number; readonly cardId: number; readonly deviceId: number },
    copies: number,
  ): Mount[] {
    if (!this.#memory.has(chip.phyId)) this.#memory.set(chip.phyId, this.#readMemory(chip));
    const memoryMiB = this.#memory.get(chip.phyId);
    const req = parseSoftShareRequest(pod, copies, memoryMiB);
    const job = jobOf(pod);
    let dieId = this.#die.get(chip.phyId);
    if (dieId === undefined) {
      dieId = this.#o.dieIdOf(chip.cardId, chip.deviceId); // a failure refuses the Allocate (no shm-id, no config)
      this.#die.set(chip.phyId, dieId);
    }
    const mounts = this.files.allocate(pod, job, req, { phyId: chip.phyId, dieId, memoryMiB });
    this.#changed();
    return mounts;
  }

  refused(pod: SoftSharePod, message: string): void {
    const text = message.length > MAX_EVENT_CHARS ? `${message.slice(0, MAX_EVENT_CHARS)}…` : message;
    this.#o.events?.record({
      type: 'Warning',
      reason: 'SoftShareAllocateFailed',
      message: text,
      brief: `SoftShareAllocateFailed ${pod.namespace}/${pod.name}`,
      involvedPod: { namespace: pod.namespace, name: pod.name, ...(pod.uid ? { uid: pod.uid } : {}) },
    });
  }

  /**
   * Copy names of the chips without room (spec L.7, H.3): used AI-core quota 100, or used memory quota at the chip
   * memory. Every copy of such a chip leaves the schedulable list; a chip with room keeps all 100.
   */
  fullCopyNames(): Set<string> {
    const out = new Set<string>();
    for (const { phyId: phy } of this.#o.chips) {
      if (!this.files.full(phy, this.#memory.get(phy))) continue;
      for (let i = 0; i < SOFT_SHARE_COPIES; i++) out.add(shareName(this.#o.deviceType, phy, i));
    }
    return out;
  }

  /** Calls `listener` whenever the quotas in use change (an Allocate, a clean-up). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /**
   * Removes the vNPUs of pods that are gone and the folders of jobs without pods (spec L.7), once the pod cache has
   * listed; at start this also removes what a crash between write and response left behind.
   */
  podsChanged(cache: SoftSharePods | undefined): void {
    if (!cache?.synced) return;
    try {
      const removed = this.files.reconcile(new Set(cache.pods().map((p) => p.uid)));
      if (removed.length > 0) this.#changed();
    } catch (err) {
      this.#o.logger.error({ error: (err as Error).message }, 'soft share: clean-up failed');
    }
  }

  #readMemory(chip: {
    readonly phyId: number;
    readonly cardId: number;
    readonly deviceId: number;
  }): number | undefined {
    try {
      const mib = this.#o.memoryOf(chip.cardId, chip.deviceId);
      return mib !== undefined && mib > 0 ? mib : undefined;
    } catch (err) {
      this.#o.logger.warn(
        { phyId: chip.phyId, error: (err as Error).message },
        'soft share: chip memory unreadable; only the AI-core quota bounds the chip',
      );
      return undefined;
    }
  }

  #changed(): void {
    for (const l of [...this.#listeners]) l();
  }
}
