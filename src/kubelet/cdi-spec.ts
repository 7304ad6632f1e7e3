/**
 * The device plugin's CDI spec (`-cdiDevicePlugin`, issue [DRA] item 6; ours): one spec for the node,
 * `<-cdiDir>/ascend.com-npu.json`, written at start, with one CDI device per device node Allocate can hand out —
 * `davinci<phy>` for a chip, `vdavinci<vdev>` for a static vNPU (exposed at `/dev/davinci<vdev>`, spec C.4 item 2) —
 * and the management nodes (C.4 items 1 and 3) and the driver mounts as the spec's shared edits. Allocate then answers
 * `ascend.com/npu=davinci3` instead of device specs. Named by the node, not by the claim, so it never collides with
 * a DRA claim's spec (those are `<claim uid>-<device>`).
 */
import path from 'node:path';
import { buildSpec, type CdiMount, type CdiSpec, type HostNode } from '../cdi/spec.js';
import type { CdiSpecDir } from '../cdi/spec-dir.js';
import type { DeviceSnapshot } from './device-source.js';

/** Stem of the device plugin's spec file. */
export const DEVICE_PLUGIN_SPEC_STEM = 'ascend.com-npu';

/** The CDI device name of visible id `v` (a phy id, or a vdev id when `virtual`). */
export function cdiNodeName(v: number, virtual: boolean): string {
  return `${virtual ? 'vdavinci' : 'davinci'}${v}`;
}

/** The spec of every device node of `snapshot` (each read from `devDir` now; throws `CdiNodeError`). */
export function devicePluginCdiSpec(
  snapshot: DeviceSnapshot,
  devDir: string,
  shared: readonly HostNode[],
  mounts: readonly CdiMount[],
): CdiSpec {
  const nodes = new Map<string, HostNode>();
  for (const devices of Object.values(snapshot.deviceTypes)) {
    for (const d of devices) {
      const virtual = d.vdevId !== undefined;
      const v = d.vdevId ?? d.phyId;
      const name = cdiNodeName(v, virtual);
      nodes.set(name, { hostPath: path.join(devDir, name), containerPath: `/dev/davinci${v}` });
    }
  }
  const devices = [...nodes].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));
  return buildSpec({ devices: devices.map(([name, node]) => ({ name, nodes: [node] })), shared, mounts });
}

/** Writes the device plugin's spec (atomically); returns its path. */
export function writeDevicePluginCdiSpec(dir: CdiSpecDir, spec: CdiSpec): string {
  dir.write(DEVICE_PLUGIN_SPEC_STEM, spec);
  return dir.pathOf(DEVICE_PLUGIN_SPEC_STEM);
}
