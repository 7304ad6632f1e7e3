/**
 * Device nodes mounted into containers in native mode (spec C.4), looked up under `-devDir` through a small
 * probe so that tests and the simulator need no real `/dev`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChipKind } from '../core/chips.js';
import { DeviceNodeMissingError } from './errors.js';

/** A device node to mount: host path (under `-devDir`) and the path inside the container (under `/dev`). */
export interface DeviceNodeSpec {
  readonly hostPath: string;
  readonly containerPath: string;
}

/** Looks up device nodes relative to the device directory (`-devDir`, default `/dev`). */
export interface DeviceNodeProbe {
  /** Host path of `name` (relative to the device directory, e.g. `davinci_manager`, `uburma/x`). */
  hostPath(name: string): string;
  /** Whether the node exists. */
  exists(name: string): boolean;
  /** Names of the non-directory entries of `dir`, or undefined when `dir` does not exist. */
  listFiles(dir: string): readonly string[] | undefined;
}

/** {@link DeviceNodeProbe} over the file system. */
export class FsDeviceNodeProbe implements DeviceNodeProbe {
  constructor(readonly devDir: string) {}

  hostPath(name: string): string {
    return path.join(this.devDir, name);
  }

  exists(name: string): boolean {
    return fs.existsSync(this.hostPath(name));
  }

  listFiles(dir: string): readonly string[] | undefined {
    try {
      return fs
        .readdirSync(this.hostPath(dir), { withFileTypes: true })
        .filter((e) => !e.isDirectory())
        .map((e) => e.name)
        .sort();
    } catch {
      return undefined;
    }
  }
}

/** {@link DeviceNodeProbe} over a fixed set of relative names (e.g. `davinci_manager`, `ummu/dev0`). */
export class InMemoryDeviceNodeProbe implements DeviceNodeProbe {
  readonly #names: Set<string>;

  constructor(
    names: Iterable<string>,
    readonly devDir = '/dev',
  ) {
    this.#names = new Set(names);
  }

  hostPath(name: string): string {
    return path.posix.join(this.devDir, name);
  }

  exists(name: string): boolean {
    return this.#names.has(name);
  }

  listFiles(dir: string): readonly string[] | undefined {
    const prefix = `${dir}/`;
    const inDir = [...this.#names].filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
    if (inDir.length === 0) return undefined;
    return inDir.filter((n) => !n.includes('/')).sort();
  }
}

/** What decides the default device nodes (spec C.4). */
export interface DefaultNodeOptions {
  readonly chipKind: ChipKind;
  /** `-fdFlag`. */
  readonly fdFlag?: boolean;
  /** DCMI product types of the node; a node whose only product is `Atlas 200I SoC A1` mounts its extra nodes. */
  readonly productTypes?: readonly string[];
}

const FD_NODES = ['event_sched', 'hi_dvpp', 'log_drv', 'memory_bandwidth', 'svm0', 'ts_aisle', 'upgrade'];
const SOC_A1_REQUIRED = [
  'vpc',
  'vdec',
  'sys',
  'spi_smbus',
  'user_config',
  'ts_aisle',
  'svm0',
  'log_drv',
  'memory_bandwidth',
  'upgrade',
];
const SOC_A1_OPTIONAL = ['event_sched', 'xsmem_dev'];
const A310B_OPTIONAL = [
  'pngd',
  'venc',
  'upgrade',
  'sys',
  'svm0',
  'vdec',
  'vpc',
  'ts_aisle',
  'log_drv',
  'acodec',
  'ai',
  'ao',
  'vo',
  'hdmi',
];

/**
 * The default device nodes, in upstream order (spec C.4 item 1), collected once at start. Throws
 * {@link DeviceNodeMissingError} when a mandatory node is absent.
 */
export function collectDefaultDeviceNodes(probe: DeviceNodeProbe, opts: DefaultNodeOptions): DeviceNodeSpec[] {
  const out: DeviceNodeSpec[] = [];
  const seen = new Set<string>();
  const add = (name: string, containerName = name): void => {
    const containerPath = `/dev/${containerName}`;
    if (seen.has(containerPath)) return;
    seen.add(containerPath);
    out.push({ hostPath: probe.hostPath(name), containerPath });
  };
  const required = (name: string): void => {
    if (!probe.exists(name)) throw new DeviceNodeMissingError(probe.hostPath(name));
    add(name);
  };
  const optional = (name: string): void => {
    if (probe.exists(name)) add(name);
  };

  if (opts.chipKind === 'Ascend310B' && probe.exists('davinci_manager_docker')) {
    add('davinci_manager_docker', 'davinci_manager');
  } else {
    required('davinci_manager');
  }
  optional('hisi_hdc');
  optional('devmm_svm');
  if (opts.fdFlag) FD_NODES.forEach(optional);
  optional('dvpp_cmdlist');
  const products = opts.productTypes ?? [];
  if (products.length === 1 && products[0] === 'Atlas 200I SoC A1') {
    SOC_A1_REQUIRED.forEach(required);
    SOC_A1_OPTIONAL.forEach(optional);
  }
  if (opts.chipKind === 'Ascend310B') A310B_OPTIONAL.forEach(optional);
  return out;
}

/** Nodes of `/dev/uburma/` and `/dev/ummu/` mounted when at least one chip is (spec C.4 item 3). */
export function ubNodes(probe: DeviceNodeProbe): DeviceNodeSpec[] {
  const out: DeviceNodeSpec[] = [];
  for (const dir of ['uburma', 'ummu']) {
    for (const name of probe.listFiles(dir) ?? []) {
      out.push({ hostPath: probe.hostPath(`${dir}/${name}`), containerPath: `/dev/${dir}/${name}` });
    }
  }
  return out;
}
