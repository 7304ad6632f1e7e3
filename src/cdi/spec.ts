/**
 * Container Device Interface specs for Ascend devices (issue [DRA] item 6): kind `ascend.com/npu` (Huawei's, so
 * containers and tools that name Ascend CDI devices keep working), one CDI device per allocated device with its own
 * `/dev/davinci<N>` node, and the management nodes and driver mounts as spec-wide edits (a runtime applies them
 * once whichever device of the spec it injects). Each device node carries the major and minor numbers read from the
 * host (`stat`), because they differ between hosts and a runtime creates the node inside the container from them.
 *
 * Version: `0.5.0`, the lowest that allows what these specs use (a `hostPath` on a device node, device names that
 * start with a digit) and so the widest accepted: podman 4.x, containerd ≥ 1.7 and CRI-O read 0.5.0, newer runtimes
 * read every version from 0.3.0 on. Nothing here needs 0.6.0 (annotations) or later. Pure but for {@link readCharDevice}.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChipKind } from '../core/chips.js';

/** The CDI kind of every Ascend device (vendor `ascend.com`, class `npu`). */
export const CDI_KIND = 'ascend.com/npu';
/** `cdiVersion` of the specs written (see the module comment). */
export const CDI_VERSION = '0.5.0';
/** CDI device-name rule (spec ≥ 0.5.0: a letter or digit first, then letters, digits, `_`, `-`, `.`, `:`). */
const DEVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
/** Longest CDI device name written (a claim uid, `-`, a 63-character device name, with room to spare). */
export const MAX_CDI_NAME_LENGTH = 128;

/** A host node to expose and its path in the container (the device plugin's `DeviceNodeSpec` has this shape). */
export interface HostNode {
  readonly hostPath: string;
  readonly containerPath: string;
}

/** A CDI `deviceNodes` entry. */
export interface CdiDeviceNode {
  readonly path: string;
  readonly hostPath: string;
  readonly type: 'c';
  readonly major: number;
  readonly minor: number;
  /** Permission bits the runtime gives the node it creates (the host node's). */
  readonly fileMode: number;
  /** Device cgroup access (the device plugin's `rw`, spec C.4). */
  readonly permissions: 'rw';
}

/** A CDI `mounts` entry (read-only bind mounts of the driver's files). */
export interface CdiMount {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly options: readonly string[];
}

/** CDI `containerEdits`. */
export interface CdiContainerEdits {
  readonly deviceNodes?: readonly CdiDeviceNode[];
  readonly mounts?: readonly CdiMount[];
}

/** One CDI device. */
export interface CdiDevice {
  readonly name: string;
  readonly containerEdits: CdiContainerEdits;
}

/** A CDI spec as written to the spec folder. */
export interface CdiSpec {
  readonly cdiVersion: string;
  readonly kind: string;
  readonly devices: readonly CdiDevice[];
  readonly containerEdits: CdiContainerEdits;
}

/** A node that cannot go into a spec (missing, or not a character device). */
export class CdiNodeError extends Error {
  override readonly name = 'CdiNodeError';
  constructor(
    readonly hostPath: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${hostPath}: ${reason}`, options);
  }
}

/** A device name CDI does not accept. */
export class CdiNameError extends Error {
  override readonly name = 'CdiNameError';
}

/** glibc's `gnu_dev_major` / `gnu_dev_minor` over a 64-bit `st_rdev`. */
function splitRdev(rdev: bigint): { major: number; minor: number } {
  const major = ((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn);
  const minor = (rdev & 0xffn) | ((rdev >> 12n) & ~0xffn);
  return { major: Number(major), minor: Number(minor & 0xffffffffn) };
}

/**
 * The CDI node for `node`: `stat` of its host path (symbolic links followed, as a runtime does) must find a
 * character device; its major, minor and permission bits are copied. Throws {@link CdiNodeError}.
 */
export function readCharDevice(node: HostNode): CdiDeviceNode {
  let st: fs.BigIntStats;
  try {
    st = fs.statSync(node.hostPath, { bigint: true });
  } catch (err) {
    throw new CdiNodeError(node.hostPath, 'cannot be read', { cause: err });
  }
  if (!st.isCharacterDevice()) throw new CdiNodeError(node.hostPath, 'is not a character device');
  return {
    path: node.containerPath,
    hostPath: node.hostPath,
    type: 'c',
    ...splitRdev(st.rdev),
    fileMode: Number(st.mode & 0o777n),
    permissions: 'rw',
  };
}

/** `ascend.com/npu=<name>`, the fully qualified CDI device name kubelet and runtimes take. */
export function qualifiedName(name: string): string {
  return `${CDI_KIND}=${name}`;
}

/** Throws {@link CdiNameError} unless `name` is a CDI device name no longer than {@link MAX_CDI_NAME_LENGTH}. */
export function checkDeviceName(name: string): void {
  if (name.length > MAX_CDI_NAME_LENGTH || !DEVICE_NAME.test(name)) {
    throw new CdiNameError(`${JSON.stringify(name.slice(0, MAX_CDI_NAME_LENGTH))} is not a CDI device name`);
  }
}

/** What a spec is built from. */
export interface SpecInput {
  /** Each device with the nodes it alone brings (its `/dev/davinci<N>`). */
  readonly devices: readonly { readonly name: string; readonly nodes: readonly HostNode[] }[];
  /** Nodes every container with one of the devices gets (management nodes, spec C.4 items 1 and 3). */
  readonly shared: readonly HostNode[];
  readonly mounts: readonly CdiMount[];
}

/**
 * The spec of `input`, every node read from the host now. Throws {@link CdiNodeError} or {@link CdiNameError}; a
 * spec without devices is refused (a runtime could not name it).
 */
export function buildSpec(input: SpecInput): CdiSpec {
  if (input.devices.length === 0) throw new CdiNameError('a CDI spec needs at least one device');
  const seen = new Set<string>();
  const devices = input.devices.map((d) => {
    checkDeviceName(d.name);
    if (seen.has(d.name)) throw new CdiNameError(`device ${d.name} is named twice`);
    seen.add(d.name);
    return { name: d.name, containerEdits: { deviceNodes: d.nodes.map(readCharDevice) } };
  });
  const edits: CdiContainerEdits = {
    ...(input.shared.length > 0 ? { deviceNodes: input.shared.map(readCharDevice) } : {}),
    ...(input.mounts.length > 0 ? { mounts: input.mounts } : {}),
  };
  return { cdiVersion: CDI_VERSION, kind: CDI_KIND, devices, containerEdits: edits };
}

/**
 * The driver files a container of an Ascend device needs without Ascend's runtime hook (what that hook mounts by
 * default; Huawei's mount profile): the driver's libraries and headers, DCMI, `npu-smi`, and the queue-scheduling
 * folder (not on Ascend910A5).
 */
const DRIVER_PATHS = [
  '/usr/local/Ascend/driver/lib64',
  '/usr/local/Ascend/driver/include',
  '/usr/local/dcmi',
  '/usr/local/bin/npu-smi',
  '/var/queue_schedule',
] as const;

/** Bind options of a driver mount: read-only, no set-uid, no device files. */
export const DRIVER_MOUNT_OPTIONS: readonly string[] = Object.freeze(['ro', 'nosuid', 'nodev', 'bind']);

/**
 * The driver mounts of chip kind `kind`: every path of {@link DRIVER_PATHS} that exists under `hostRoot` (the
 * agent's view of the host, `-hostRoot`), mounted read-only at the same path. Read once at start.
 */
export function driverMounts(kind: ChipKind, hostRoot: string): CdiMount[] {
  const wanted = DRIVER_PATHS.filter((p) => !(kind === 'Ascend910A5' && p === '/var/queue_schedule'));
  return wanted
    .filter((p) => fs.existsSync(path.join(hostRoot, p)))
    .map((p) => ({ hostPath: p, containerPath: p, options: DRIVER_MOUNT_OPTIONS }));
}
