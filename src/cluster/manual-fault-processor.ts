/**
 * `ManualFaultProcessor` (cluster-faults §1.8): every cycle, while enabled, each separated device of a node present
 * in the view gets a `ManuallySeparateNPU` `CardUnhealthy` fault through "add fault and fix" (§0.3).
 */
import { addFaultAndFix, type DeviceFault, type DeviceViewProcessor, type NodeDeviceView } from './device-view.js';
import type { ManualSeparation } from './manual-separation.js';

/** The injected marker of one device (§1.8). */
export function manualMarker(dev: string): DeviceFault {
  return {
    code: 'ManuallySeparateNPU',
    level: 'ManuallySeparateNPU',
    faultTime: -1,
    receivedTime: -1,
    object: {
      fault_type: 'CardUnhealthy',
      npu_name: dev,
      large_model_fault_level: 'ManuallySeparateNPU',
      fault_level: 'ManuallySeparateNPU',
      fault_handling: 'ManuallySeparateNPU',
      fault_code: '',
      fault_time_and_level_map: {},
    },
  };
}

/** The processor. */
export class ManualFaultProcessor implements DeviceViewProcessor {
  readonly name = 'ManualFaultProcessor';

  constructor(private readonly manual: ManualSeparation) {}

  process(views: Map<string, NodeDeviceView>): void {
    if (!this.manual.enabled) return;
    // §1.8: nodes without a device-info ConfigMap (no view) are not surfaced
    for (const [node, view] of views) {
      const devs = this.manual.cache.totalOf(node);
      if (devs !== undefined) for (const dev of devs) addFaultAndFix(view, dev, manualMarker(dev));
      // the markers now match the cache: a change of it earlier in this cycle is published with this view
      this.manual.cacheChangeSeen(node);
    }
  }

  /** The nodes whose separations changed (their markers change). */
  changedNodes(): Iterable<string> {
    return this.manual.drainCacheChanges();
  }
}
