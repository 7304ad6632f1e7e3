/**
 * Which NPUs a container holds (spec L.5), from its OCI runtime spec: the last `ASCEND_VISIBLE_DEVICES` entry of
 * `process.env` when it names at least one device, else the character devices of its device cgroup rules
 * (`linux.resources.devices`, allowed, type `c`) whose major number `/proc/devices` lists as `devdrv-cdev` or
 * `vdevdrv-cdev`; the minor number is the N of `/dev/davinci<N>`. As upstream: the cgroup rules, not
 * `linux.devices`, so a privileged container (all host devices in `linux.devices`, one "allow all" rule without a
 * major) is not taken for holding every NPU.
 *
 * Every part that cannot be read is one problem (bounded text); what can be read is kept.
 */
import fs from 'node:fs/promises';
import { boundedText } from '../core/text.js';

/** Bounds of what is parsed. */
export const NPU_DEVICE_LIMITS = {
  /** The OCI spec JSON of one container. */
  maxSpecBytes: 1024 * 1024,
  /** The `ASCEND_VISIBLE_DEVICES` value (upstream's bound). */
  maxEnvValueBytes: 1024,
  /** Largest device number (upstream's bound of a range end: MaxInt16). */
  maxDeviceId: 32_767,
  /** Devices kept per container. */
  maxDevicesPerContainer: 1024,
  /** `/proc/devices`: bytes read and lines looked at (upstream: 512 lines). */
  maxProcDevicesBytes: 64 * 1024,
  maxProcDevicesLines: 512,
  /** Problems kept per container. */
  maxProblems: 8,
} as const;

/** The environment variable of the Ascend container runtime naming the container's NPUs. */
export const VISIBLE_DEVICES_ENV = 'ASCEND_VISIBLE_DEVICES';

/** The NPUs of one container and what could not be read. */
export interface ContainerDevices {
  /** Sorted, each once. */
  readonly devices: number[];
  /** Where they came from. */
  readonly source: 'env' | 'device-cgroup' | 'none';
  readonly problems: string[];
}

/** Upstream's line rule: `<1 to 3 digits><one blank>[v]devdrv-cdev`. */
const MAJOR_LINE = /^([0-9]{1,3})\s(?:v)?devdrv-cdev$/;

/** The NPU major numbers in the text of `/proc/devices` (first {@link NPU_DEVICE_LIMITS}.maxProcDevicesLines lines). */
export function parseNpuMajors(text: string): Set<number> {
  const majors = new Set<number>();
  const lines = text.split('\n', NPU_DEVICE_LIMITS.maxProcDevicesLines);
  for (const line of lines) {
    const m = MAJOR_LINE.exec(line.trimEnd());
    if (m) majors.add(Number(m[1]));
  }
  return majors;
}

/**
 * Reads `path` (normally `/proc/devices`) within {@link NPU_DEVICE_LIMITS}.maxProcDevicesBytes. A file that cannot
 * be read gives no majors and a problem (the env rule still works).
 */
export async function readNpuMajors(path: string): Promise<{ majors: Set<number>; problem?: string }> {
  let fh: fs.FileHandle | undefined;
  try {
    fh = await fs.open(path, 'r');
    const buf = Buffer.alloc(NPU_DEVICE_LIMITS.maxProcDevicesBytes);
    let n = 0;
    // /proc files report size 0: read until EOF or the bound
    for (;;) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n >= buf.length) break;
    }
    return { majors: parseNpuMajors(buf.toString('utf8', 0, n)) };
  } catch (err) {
    return { majors: new Set(), problem: `cannot read ${path}: ${(err as Error).message}` };
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/**
 * The devices named by an `ASCEND_VISIBLE_DEVICES` value, in upstream's forms: `0,1,2`, `0-3`, `0-1,3` and
 * `Ascend910-0,Ascend910-1` (any value containing "Ascend": each part `<name>-<N>`). Parts that are not numbers,
 * reversed or out-of-range ranges are problems and skipped.
 */
export function parseVisibleDevices(value: string): { devices: number[]; problems: string[] } {
  const problems: string[] = [];
  const devices: number[] = [];
  if (Buffer.byteLength(value) > NPU_DEVICE_LIMITS.maxEnvValueBytes) {
    return { devices, problems: [`${VISIBLE_DEVICES_ENV} is longer than ${NPU_DEVICE_LIMITS.maxEnvValueBytes} bytes`] };
  }
  if (value.trim() === '') return { devices, problems };
  const named = value.includes('Ascend');
  const id = (text: string): number | undefined => {
    const t = text.trim();
    if (!/^[0-9]{1,5}$/.test(t) || Number(t) > NPU_DEVICE_LIMITS.maxDeviceId) return undefined;
    return Number(t);
  };
  const bad = (part: string, why: string): void =>
    void problems.push(`${VISIBLE_DEVICES_ENV} part "${quote(part)}" ${why}`);
  for (const raw of value.split(',')) {
    const part = raw.trim();
    const pieces = part.split('-');
    if (named) {
      const n = pieces.length === 2 ? id(pieces[1]!) : undefined;
      if (n === undefined) bad(part, 'is not <name>-<device number>');
      else devices.push(n);
    } else if (pieces.length === 1) {
      const n = id(part);
      if (n === undefined) bad(part, `is not a device number (0 to ${NPU_DEVICE_LIMITS.maxDeviceId})`);
      else devices.push(n);
    } else if (pieces.length === 2) {
      const [from, to] = [id(pieces[0]!), id(pieces[1]!)];
      if (from === undefined || to === undefined)
        bad(part, `is not a range of device numbers (0 to ${NPU_DEVICE_LIMITS.maxDeviceId})`);
      else if (from > to) bad(part, 'is a range whose start is after its end');
      else
        for (let i = from; i <= to && devices.length <= NPU_DEVICE_LIMITS.maxDevicesPerContainer; i++) devices.push(i);
    } else {
      bad(part, 'is not a device number or range');
    }
  }
  return { devices, problems };
}

interface OciDeviceRule {
  allow?: unknown;
  type?: unknown;
  major?: unknown;
  minor?: unknown;
}

/** The NPUs a container holds by its OCI spec JSON (`spec`), with `majors` the NPU major numbers. */
export function devicesOfSpec(spec: Buffer, majors: ReadonlySet<number>): ContainerDevices {
  const problems: string[] = [];
  const done = (devices: number[], source: ContainerDevices['source']): ContainerDevices => {
    let list = [...new Set(devices)].sort((a, b) => a - b);
    if (list.length > NPU_DEVICE_LIMITS.maxDevicesPerContainer) {
      problems.push(`more than ${NPU_DEVICE_LIMITS.maxDevicesPerContainer} devices; the first ones kept`);
      list = list.slice(0, NPU_DEVICE_LIMITS.maxDevicesPerContainer);
    }
    return {
      devices: list,
      source: list.length ? source : 'none',
      problems: problems.slice(0, NPU_DEVICE_LIMITS.maxProblems),
    };
  };
  if (spec.length > NPU_DEVICE_LIMITS.maxSpecBytes) {
    problems.push(`OCI spec of ${spec.length} bytes, the limit is ${NPU_DEVICE_LIMITS.maxSpecBytes}`);
    return done([], 'none');
  }
  let doc: unknown;
  try {
    doc = JSON.parse(spec.toString('utf8'));
  } catch (err) {
    problems.push(`OCI spec is not JSON: ${boundedText((err as Error).message, 200)}`);
    return done([], 'none');
  }
  if (doc === null || typeof doc !== 'object') {
    problems.push('OCI spec is not a JSON object');
    return done([], 'none');
  }
  const o = doc as { process?: { env?: unknown }; linux?: { resources?: { devices?: unknown } } };
  // 1. the env rule: the last entry whose name is ASCEND_VISIBLE_DEVICES
  const env = o.process?.env;
  if (Array.isArray(env)) {
    for (let i = env.length - 1; i >= 0; i--) {
      const entry: unknown = env[i];
      if (typeof entry !== 'string') continue;
      const eq = entry.indexOf('=');
      if (eq < 0 || entry.slice(0, eq).trim() !== VISIBLE_DEVICES_ENV) continue;
      const r = parseVisibleDevices(entry.slice(eq + 1));
      problems.push(...r.problems);
      if (r.devices.length) return done(r.devices, 'env');
      break;
    }
  }
  // 2. the device cgroup rules
  const rules = o.linux?.resources?.devices;
  const devices: number[] = [];
  if (Array.isArray(rules) && majors.size) {
    for (const rule of rules as OciDeviceRule[]) {
      if (rule === null || typeof rule !== 'object') continue;
      if (rule.allow !== true || rule.type !== 'c') continue;
      if (typeof rule.major !== 'number' || typeof rule.minor !== 'number') continue; // e.g. "all minors": no NPU
      if (!majors.has(rule.major)) continue;
      if (!Number.isInteger(rule.minor) || rule.minor < 0 || rule.minor > NPU_DEVICE_LIMITS.maxDeviceId) {
        problems.push(`device rule ${rule.major}:${String(rule.minor)} has a minor number out of range`);
        continue;
      }
      devices.push(rule.minor);
    }
  }
  return done(devices, 'device-cgroup');
}

function quote(s: string): string {
  return boundedText(s, 64);
}
