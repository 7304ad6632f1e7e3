/**
 * `PubFaultProcessor` (spec cluster-faults.md §2.9): the first step of the device chain (§0.2). For every node that
 * has both a device view and cached public faults, each record's NPUs get a `PublicFault` object through "add fault
 * and fix" (§0.3); the node's `UpdateTime` becomes now when anything was added.
 */
import { addFaultAndFix, type DeviceFault, type DeviceViewProcessor, type NodeDeviceView } from '../device-view.js';
import type { PublicFaultCache } from './cache.js';
import type { PublicFaultRecord } from './types.js';

/** The injected fault of one record on one NPU (§2.9). */
export function publicDeviceFault(deviceType: string, id: number, r: PublicFaultRecord): DeviceFault {
  return {
    code: r.faultCode,
    level: r.level,
    faultTime: r.faultTime,
    // §1.10: public faults carry receive time 0
    receivedTime: 0,
    object: {
      fault_type: 'PublicFault',
      npu_name: `${deviceType}-${id}`,
      large_model_fault_level: r.level,
      fault_level: r.level,
      fault_handling: r.level,
      fault_code: r.faultCode,
      fault_time_and_level_map: { [r.faultCode]: { fault_time: r.faultTime, fault_level: r.level } },
    },
  };
}

/** Merges the cache into the per-cycle views. */
export class PubFaultProcessor implements DeviceViewProcessor {
  readonly name = 'PubFaultProcessor';
  readonly #cache: PublicFaultCache;

  constructor(cache: PublicFaultCache) {
    this.#cache = cache;
  }

  process(views: Map<string, NodeDeviceView>, nowMs: number): void {
    if (this.#cache.size === 0) return;
    for (const node of this.#cache.nodes()) {
      const view = views.get(node);
      // §2.8: faults of nodes without a device view are stored but not shown
      if (view === undefined) continue;
      let added = false;
      for (const record of this.#cache.byNode(node).values()) {
        for (const id of record.devIds) {
          const fault = publicDeviceFault(view.deviceType, id, record);
          if (addFaultAndFix(view, fault.object.npu_name, fault)) added = true;
        }
      }
      if (added) view.updateTime = Math.floor(nowMs / 1000);
    }
  }
}
