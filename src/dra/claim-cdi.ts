/**
 * One CDI spec per prepared claim (issue [DRA] item 6): `<cdiDir>/ascend.com-npu_<claim uid>.json` (the file name
 * Huawei's driver gives a claim's spec: the CDI library's transient-spec name), one CDI device per allocated device
 * named `<claim uid>-<device>` (unique across claims and beside the device plugin's spec, as the kubeletplugin
 * helper advises, so a runtime's CDI cache never sees two specs define one name), with the device's own node:
 * `/dev/davinci<phy>` for a chip, `/dev/vdavinci<vdev>` at `/dev/davinci<vdev>` for a vNPU (spec C.4 item 2). The
 * management nodes by chip kind (C.4 items 1 and 3, what the device plugin mounts) and the driver mounts are the
 * spec's shared edits.
 */
import path from 'node:path';
import { buildSpec, type CdiMount, type HostNode } from '../cdi/spec.js';
import type { CdiSpecDir } from '../cdi/spec-dir.js';
import type { CheckpointDevice } from './checkpoint.js';

/** Prefix of a claim's spec stem. */
export const CLAIM_SPEC_PREFIX = 'ascend.com-npu_';
/** A claim uid this driver accepts (Kubernetes uids are UUIDs; the uid goes into file and CDI names). */
export const CLAIM_UID = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
/** Spec stems of claims (what the start-up clean-up may remove; the device plugin's `ascend.com-npu` is not one). */
export const CLAIM_SPEC_STEM = /^ascend\.com-npu_[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

/** What the claim specs are made of besides the devices. */
export interface ClaimCdiOptions {
  readonly dir: CdiSpecDir;
  /** `-devDir`: where the host's device nodes are. */
  readonly devDir: string;
  /** Management nodes of the chip kind, collected at start (spec C.4 items 1 and 3). */
  readonly shared: readonly HostNode[];
  readonly mounts: readonly CdiMount[];
}

/** The per-claim spec files. */
export class ClaimCdi {
  constructor(readonly options: ClaimCdiOptions) {}

  /** The spec stem of claim `uid`. */
  stemOf(uid: string): string {
    if (!CLAIM_UID.test(uid)) throw new Error(`claim uid ${JSON.stringify(uid.slice(0, 70))} is not usable in a name`);
    return `${CLAIM_SPEC_PREFIX}${uid}`;
  }

  /** The path of the spec of claim `uid`. */
  pathOf(uid: string): string {
    return this.options.dir.pathOf(this.stemOf(uid));
  }

  /** The node a device brings: its chip's (by phy id) or its vNPU's. */
  nodeOf(d: CheckpointDevice, phyOf: (logicId: number) => number | undefined): HostNode {
    const { devDir } = this.options;
    if (d.template !== undefined) {
      if (d.vdevId === undefined) throw new Error(`vNPU ${d.device} has no vdev id yet`);
      return { hostPath: path.join(devDir, `vdavinci${d.vdevId}`), containerPath: `/dev/davinci${d.vdevId}` };
    }
    const phy = phyOf(d.logicId);
    if (phy === undefined) throw new Error(`device ${d.device}: no chip with logic id ${d.logicId} on this node`);
    return { hostPath: path.join(devDir, `davinci${phy}`), containerPath: `/dev/davinci${phy}` };
  }

  /**
   * Writes the spec of claim `uid` (every node read from the host now). Throws when a node is missing or not a
   * character device, or a name is not a CDI name: nothing is written then.
   */
  write(uid: string, devices: readonly CheckpointDevice[], phyOf: (logicId: number) => number | undefined): void {
    const spec = buildSpec({
      devices: devices.map((d) => ({ name: d.cdiName, nodes: [this.nodeOf(d, phyOf)] })),
      shared: this.options.shared,
      mounts: this.options.mounts,
    });
    // not fsynced: /var/run/cdi is a tmpfs on most hosts, and a spec lost with the power is written again at start
    // from the (durable) checkpoint of its prepared claim
    this.options.dir.write(this.stemOf(uid), spec, { durable: false });
  }

  /** Removes the spec of claim `uid` (none there is fine). */
  remove(uid: string): void {
    this.options.dir.remove(this.stemOf(uid));
  }

  /** Whether the spec of claim `uid` is on disk. */
  has(uid: string): boolean {
    return this.options.dir.has(this.stemOf(uid));
  }

  /** Uids of the claim specs in the folder (and temporary files a killed write left are removed). */
  onDisk(): string[] {
    this.options.dir.removeLeftovers(CLAIM_SPEC_STEM);
    return this.options.dir.list(CLAIM_SPEC_STEM).map((stem) => stem.slice(CLAIM_SPEC_PREFIX.length));
  }
}

/** The CDI device name of `device` in claim `uid`. */
export function claimCdiName(uid: string, device: string): string {
  return `${uid}-${device}`;
}
