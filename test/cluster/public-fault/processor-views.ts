/**
 * Helpers of the PubFaultProcessor cache tests: device views, a dump that keeps every order (view map, fault map,
 * fault lists, `DeviceList` keys, object keys), and running the cached processor and the uncached reference on
 * separate copies of the same input.
 */
import { publishedNodeJson } from '../../../src/cluster/cluster-info.js';
import { cloneView, type DeviceFault, type NodeDeviceView } from '../../../src/cluster/device-view.js';
import type { PublicFaultCache } from '../../../src/cluster/public-fault/cache.js';
import { pubFaultPassUncached, type PubFaultProcessor } from '../../../src/cluster/public-fault/processor.js';

export function npuView(node: string, deviceType = 'Ascend910', faults: [string, DeviceFault][] = []): NodeDeviceView {
  const m = new Map<string, DeviceFault[]>();
  for (const [d, f] of faults) m.set(d, [...(m.get(d) ?? []), f]);
  return {
    node,
    deviceType,
    deviceList: {
      [`huawei.com/${deviceType}`]: Array.from({ length: 8 }, (_, i) => `${deviceType}-${i}`).join(','),
      [`huawei.com/${deviceType}-Unhealthy`]: '',
      [`huawei.com/${deviceType}-NetworkUnhealthy`]: '',
    },
    updateTime: 1,
    superPodId: -2,
    serverIndex: -2,
    rackId: -2,
    faults: m,
  };
}

/** A device-plugin fault (one code). */
export function pluginFault(
  device: string,
  code: string,
  level = 'RestartNPU',
  type = 'CardUnhealthy',
  time = 1,
): DeviceFault {
  return {
    code,
    level,
    faultTime: time,
    receivedTime: 1,
    object: {
      fault_type: type,
      npu_name: device,
      large_model_fault_level: level,
      fault_level: level,
      fault_handling: level,
      fault_code: code,
      fault_time_and_level_map: { [code]: { fault_time: time, fault_level: level } },
    },
  };
}

/** Everything of the views, in every order, as one string; plus the published JSON of each node. */
export function dump(views: ReadonlyMap<string, NodeDeviceView>): string {
  return JSON.stringify(
    [...views].map(([n, v]) => [
      n,
      v.node,
      v.deviceType,
      Object.entries(v.deviceList),
      v.updateTime,
      v.superPodId,
      v.serverIndex,
      v.rackId,
      [...v.faults].map(([d, list]) => [
        d,
        list.map((f) => [f.code, f.level, f.faultTime, f.receivedTime, Object.entries(f.object)]),
      ]),
      publishedNodeJson(v),
    ]),
  );
}

export function copies(base: ReadonlyMap<string, NodeDeviceView>): Map<string, NodeDeviceView> {
  return new Map([...base].map(([n, v]) => [n, cloneView(v)]));
}

/** One cycle as the processing centre runs it: the cached processor on fresh copies, and the reference on others. */
export function cycle(
  processor: PubFaultProcessor,
  cache: PublicFaultCache,
  base: ReadonlyMap<string, NodeDeviceView>,
  nowMs: number,
): { cached: Map<string, NodeDeviceView>; reference: Map<string, NodeDeviceView> } {
  const cached = copies(base);
  processor.process(cached, nowMs);
  const reference = copies(base);
  pubFaultPassUncached(cache, reference, nowMs);
  return { cached, reference };
}

/** The injected objects of a view (public ones), by device. */
export function injected(v: NodeDeviceView | undefined): DeviceFault[] {
  return [...(v?.faults.values() ?? [])].flat().filter((f) => f.object.fault_type === 'PublicFault');
}
