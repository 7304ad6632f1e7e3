/**
 * Intake of the per-node device-info ConfigMaps (cluster-faults §0.1): CheckCode verification, parsing into a
 * {@link NodeDeviceView}, splitting fault objects into one fault per code, receive-time stamping, and the
 * "old object invalid → update ignored" rule. Pure: the caller passes ConfigMap data and the time.
 */
import {
  DEVICE_INFO_NAME_PREFIX,
  DEVICE_INFO_NAMESPACE,
  KEY_DEVICE_INFO,
  decodeDeviceInfoCfg,
} from '../kube/device-info.js';
import type { DeviceFault, FaultObject, NodeDeviceView, TimeAndLevel } from './device-view.js';

/** Largest `DeviceInfoCfg` value accepted (a ConfigMap cannot exceed 1 MiB anyway). */
export const MAX_DEVICE_INFO_BYTES = 1024 * 1024;

/** Why a device-info ConfigMap was not taken. */
export type IntakeRejection = 'not-device-info' | 'missing-key' | 'too-large' | 'check-code' | 'malformed';

/** Result of {@link parseDeviceInfoConfigMap}. */
export type IntakeResult = { ok: true; view: NodeDeviceView } | { ok: false; reason: IntakeRejection; detail: string };

/** The minimum of a ConfigMap the intake reads. */
export interface ConfigMapLike {
  metadata?: { name?: string; namespace?: string };
  data?: Record<string, string> | null;
}

/** §0.1 "Device type" from the keys of `DeviceList`. */
export function deviceTypeOf(deviceList: Readonly<Record<string, string>>): string {
  const keys = Object.keys(deviceList);
  if (keys.includes('huawei.com/npu')) return 'npu';
  for (const t of ['Ascend910', 'Ascend310P', 'Ascend310']) if (keys.some((k) => k.includes(t))) return t;
  return 'npu';
}

function isTimeAndLevel(v: unknown): v is TimeAndLevel {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as TimeAndLevel).fault_time === 'number' &&
    typeof (v as TimeAndLevel).fault_level === 'string'
  );
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/**
 * §0.1 "Splitting faults": one {@link DeviceFault} per code of each fault object (spaces removed, comma-separated);
 * the level is the code's map entry, else the object's `fault_level`; an empty code at `ManuallySeparateNPU` is the
 * pseudo-code `ManuallySeparateNPU` with time -1. `receivedTime` is 0 here; {@link stampReceiveTimes} sets it.
 */
export function splitFaults(faultJson: string | undefined): Map<string, DeviceFault[]> {
  const out = new Map<string, DeviceFault[]>();
  if (faultJson === undefined || faultJson === '') return out;
  const parsed: unknown = JSON.parse(faultJson);
  if (parsed === null) return out;
  if (!Array.isArray(parsed)) throw new Error('the -Fault value is not a JSON array');
  for (const raw of parsed as unknown[]) {
    if (typeof raw !== 'object' || raw === null) throw new Error('a -Fault entry is not an object');
    const o = raw as Record<string, unknown>;
    const name = str(o.npu_name);
    const objectLevel = str(o.fault_level);
    const map = (
      typeof o.fault_time_and_level_map === 'object' && o.fault_time_and_level_map !== null
        ? o.fault_time_and_level_map
        : {}
    ) as Record<string, unknown>;
    const codeText = str(o.fault_code);
    let codes = (codeText.includes(' ') ? codeText.replace(/ /g, '') : codeText).split(',');
    if (codes.includes('')) codes = codes.filter((c) => c !== '');
    let pseudo = false;
    if (codes.length === 0 && objectLevel === 'ManuallySeparateNPU') {
      codes = ['ManuallySeparateNPU'];
      pseudo = true;
    }
    for (const code of codes) {
      const entry = map[code];
      const level = pseudo ? 'ManuallySeparateNPU' : isTimeAndLevel(entry) ? entry.fault_level : objectLevel;
      const faultTime = pseudo ? -1 : isTimeAndLevel(entry) ? entry.fault_time : 0;
      const object: FaultObject = {
        fault_type: str(o.fault_type),
        npu_name: name,
        large_model_fault_level: level,
        fault_level: level,
        fault_handling: level,
        fault_code: code,
        fault_time_and_level_map: { [code]: { fault_time: faultTime, fault_level: level } },
      };
      const list = out.get(name) ?? [];
      list.push({ code, level, faultTime, receivedTime: 0, object });
      out.set(name, list);
    }
  }
  return out;
}

/**
 * Parses and verifies one device-info ConfigMap (§0.1). Only `kube-system/mindx-dl-deviceinfo-*` objects are taken;
 * the CheckCode must match the Go serialisation of `DeviceInfo`. Refusals: `missing-key`, `too-large` (checked
 * before anything is parsed), `malformed` (not JSON, a member of the wrong type, an unreadable `-Fault` list; the
 * detail names which) and `check-code` (empty, or not the hash of `DeviceInfo`).
 */
export function parseDeviceInfoConfigMap(cm: ConfigMapLike): IntakeResult {
  const name = cm.metadata?.name ?? '';
  if (cm.metadata?.namespace !== DEVICE_INFO_NAMESPACE || !name.startsWith(DEVICE_INFO_NAME_PREFIX)) {
    return { ok: false, reason: 'not-device-info', detail: `${cm.metadata?.namespace ?? ''}/${name}` };
  }
  const text = cm.data?.[KEY_DEVICE_INFO];
  if (text === undefined) return { ok: false, reason: 'missing-key', detail: `no ${KEY_DEVICE_INFO} key` };
  // a UTF-16 unit is at most 3 UTF-8 bytes: only a long text is measured
  if (text.length * 3 > MAX_DEVICE_INFO_BYTES && Buffer.byteLength(text) > MAX_DEVICE_INFO_BYTES) {
    return { ok: false, reason: 'too-large', detail: `${KEY_DEVICE_INFO} exceeds ${MAX_DEVICE_INFO_BYTES} bytes` };
  }
  // ClusterD's ParseDeviceInfoCM: decode into its struct (Go zero values: a null DeviceList is an empty list),
  // then the CheckCode; the reason names which of the two failed
  const decoded = decodeDeviceInfoCfg(text);
  if (!decoded.ok) return { ok: false, reason: decoded.reason, detail: `${KEY_DEVICE_INFO}: ${decoded.detail}` };
  const { deviceList, updateTime, superPodId, serverIndex, rackId } = decoded.value;
  const deviceType = deviceTypeOf(deviceList);
  let faults: Map<string, DeviceFault[]>;
  try {
    faults = splitFaults(deviceList[`huawei.com/${deviceType}-Fault`]);
  } catch (e) {
    return { ok: false, reason: 'malformed', detail: `huawei.com/${deviceType}-Fault: ${(e as Error).message}` };
  }
  return {
    ok: true,
    view: {
      node: name.slice(DEVICE_INFO_NAME_PREFIX.length),
      deviceType,
      // decodeDeviceInfoCfg's list is this call's own (parsed from the text): no copy
      deviceList,
      updateTime,
      superPodId,
      serverIndex,
      rackId,
      faults,
    },
  };
}

/** Receive times known for a node: device → code → ms. */
export type ReceiveStamps = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** The receive times of a view, as {@link ReceiveStamps}. */
export function stampsOf(view: NodeDeviceView): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const [dev, list] of view.faults) out.set(dev, new Map(list.map((f) => [f.code, f.receivedTime])));
  return out;
}

/**
 * §0.1 receive-time stamping: a (device, code) already present in `previous` keeps its receive time, any other
 * gets `nowMs`. Mutates `next`.
 */
export function stampReceiveTimes(previous: ReceiveStamps | undefined, next: NodeDeviceView, nowMs: number): void {
  for (const [dev, list] of next.faults) {
    const old = previous?.get(dev);
    for (const f of list) f.receivedTime = old?.get(f.code) ?? nowMs;
  }
}

/** One ConfigMap event as the watcher delivers it. */
export type DeviceInfoEvent =
  | { type: 'add'; cm: ConfigMapLike }
  | { type: 'update'; old: ConfigMapLike | undefined; cm: ConfigMapLike }
  | { type: 'delete'; cm: ConfigMapLike };

/** What {@link DeviceInfoIntake.offer} did with an event. */
export type OfferResult =
  | { accepted: true; node: string }
  | { accepted: false; node?: string; reason: IntakeRejection | 'old-invalid'; detail: string };

/**
 * The "original" per-node state of §0.2 step 1: events are verified at once and queued (the last version per node
 * wins), and applied with receive-time stamping by {@link applyQueued} at the start of a processing cycle.
 */
export class DeviceInfoIntake {
  readonly #views = new Map<string, NodeDeviceView>();
  readonly #queued = new Map<string, NodeDeviceView | null>();
  #restored: Map<string, Map<string, Map<string, number>>> = new Map();
  /** whether the last version offered of each node's ConfigMap was valid (§0.1 "old object invalid") */
  readonly #lastValid = new Map<string, boolean>();

  /** Receive times to reuse for the first version of each node after a restart (persisted state). */
  restoreStamps(stamps: Map<string, Map<string, Map<string, number>>>): void {
    this.#restored = stamps;
  }

  /**
   * Verifies an event and queues its effect; a rejected event changes nothing. For an update the validity of the
   * old object is that of `old` when given, else that of the last version offered for the node (so the caller
   * need not keep old objects).
   */
  offer(event: DeviceInfoEvent): OfferResult {
    const node = parseNodeName(event.cm);
    if (event.type === 'delete') {
      if (node === undefined) {
        return { accepted: false, reason: 'not-device-info', detail: 'not a device-info ConfigMap' };
      }
      this.#lastValid.delete(node);
      this.#queued.set(node, null);
      return { accepted: true, node };
    }
    const r = parseDeviceInfoConfigMap(event.cm);
    if (node !== undefined) {
      const wasValid = this.#lastValid.get(node);
      this.#lastValid.set(node, r.ok);
      if (event.type === 'update') {
        // §0.1: an update whose old object fails to parse or verify is ignored, even when the new one is valid.
        let old: { ok: boolean; detail: string } = { ok: wasValid ?? true, detail: 'its previous version was refused' };
        if (event.old !== undefined) {
          const o = parseDeviceInfoConfigMap(event.old);
          old = o.ok || o.reason === 'not-device-info' ? { ok: true, detail: '' } : { ok: false, detail: o.detail };
        }
        // reported as the new version's own fault when it has one (the update is refused either way)
        if (!old.ok && r.ok) return { accepted: false, node, reason: 'old-invalid', detail: old.detail };
      }
    }
    if (!r.ok) return { accepted: false, ...(node !== undefined ? { node } : {}), reason: r.reason, detail: r.detail };
    this.#queued.set(r.view.node, r.view);
    return { accepted: true, node: r.view.node };
  }

  /** Whether events wait for {@link applyQueued}. */
  get hasQueued(): boolean {
    return this.#queued.size > 0;
  }

  /** §0.2 step 1: applies the queued versions, stamping receive times; returns the nodes that changed. */
  applyQueued(nowMs: number): string[] {
    const changed = [...this.#queued.keys()];
    for (const [node, view] of this.#queued) {
      if (view === null) {
        this.#views.delete(node);
        continue;
      }
      const prev = this.#views.get(node);
      const stamps = prev !== undefined ? stampsOf(prev) : this.#restored.get(node);
      stampReceiveTimes(stamps, view, nowMs);
      this.#restored.delete(node);
      this.#views.set(node, view);
    }
    this.#queued.clear();
    return changed;
  }

  /** The original views (do not mutate; the processing cycle clones them). */
  get views(): ReadonlyMap<string, NodeDeviceView> {
    return this.#views;
  }
}

function parseNodeName(cm: ConfigMapLike): string | undefined {
  const name = cm.metadata?.name ?? '';
  if (cm.metadata?.namespace !== DEVICE_INFO_NAMESPACE || !name.startsWith(DEVICE_INFO_NAME_PREFIX)) return undefined;
  return name.slice(DEVICE_INFO_NAME_PREFIX.length);
}
