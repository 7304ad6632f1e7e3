/**
 * The device-info ConfigMap `kube-system/mindx-dl-deviceinfo-<node>` (spec H): a pure projection of a typed view of
 * the node's chips onto the ConfigMap's `data`, serialised byte-for-byte as Go's `encoding/json` would (H.6) so the
 * `CheckCode` verifies in Volcano and ClusterD.
 *
 * Every level in the view is computed by the fault engine (spec E.4); this module only arranges and serialises.
 */
import type { FaultLevel } from '../faults/levels.js';
import {
  goMap,
  GoJsonError,
  goQuote,
  goRaw,
  goSlice,
  goStruct,
  marshalDeviceInfo,
  marshalGo,
  sha256HexOfText,
  sortGoStrings,
  type GoValue,
} from '../core/go-json.js';
import { childPath, GoDecoder, parseJsonText, type JsonNode, type ObjectFields } from '../core/json-text.js';
import type { DeviceInfoSnapshot } from './write-policy.js';

/** Namespace of the ConfigMap (spec H.1). */
export const DEVICE_INFO_NAMESPACE = 'kube-system';
/** Name prefix of the ConfigMap; the node name follows (spec H.1). */
export const DEVICE_INFO_NAME_PREFIX = 'mindx-dl-deviceinfo-';
/** Label every device-info ConfigMap carries (spec H.1). */
export const DEVICE_INFO_LABELS: Readonly<Record<string, string>> = Object.freeze({ 'mx-consumer-cim': 'true' });

/** Data keys (spec H.2). */
export const KEY_DEVICE_INFO = 'DeviceInfoCfg';
export const KEY_MANUALLY_SEPARATE = 'ManuallySeparateNPU';
export const KEY_UPGRADE_REASON = 'UpgradeFaultReason';
export const KEY_DESCRIPTION = 'Description';
export const KEY_SWITCH_INFO = 'SwitchInfoCfg';

/** The fixed `Description` value (spec H.2). */
export const DESCRIPTION_TEXT =
  "The field[xxx.com/xxx] is sunset. Volcano has the ability to maintain the usage status of chips on its own, and can temporarily use this field by configuring the Volcano parameter 'self-maintain-available-card'";

/** Plugin family (spec B.2 run mode): decides which DeviceList keys exist (spec H.3). */
export type DeviceRunMode = 'Ascend910' | 'Ascend310P' | 'Ascend310';

/** Health as kubelet and the ConfigMap show it. */
export type ChipHealth = 'Healthy' | 'Unhealthy';

/** One current fault code of a chip. */
export interface FaultCodeView {
  /** Upper-case canonical hex text (spec E.3), e.g. `80E18402`. */
  readonly code: string;
  /** Earliest occurrence, Unix ms (spec D.1 FaultTimeMap); 0 when unknown. */
  readonly firstSeenMs: number;
  /** `GetFaultType([code])` including the chip-wide frequency/duration/upgrade levels of the scope (spec H.3). */
  readonly level: FaultLevel;
}

/** The faults of one scope (chip or parameter-plane network) of a chip. */
export interface FaultScopeView {
  /** `L` of spec H.3: GetFaultType (chip) or GetNetworkFaultType (network) of the scope's codes and reasons. */
  readonly level: FaultLevel;
  /** Current codes of the scope, in the chip's order. */
  readonly codes: readonly FaultCodeView[];
}

/** One upgrade reason (spec G.4), in the ConfigMap's field names, plus the scope its code belongs to. */
export interface UpgradeReasonView {
  readonly upgrade_time: number;
  /** Configured lower-case hex text or `AutofillFaultCode`. */
  readonly fault_code: string;
  readonly fault_level: FaultLevel;
  readonly upgrade_type: 'FaultFrequency' | 'FaultDuration' | 'FaultAutofill';
  /** `network` for a parameter-plane code (spec E.4 note 3); autofill reasons are `chip`. */
  readonly scope: 'chip' | 'network';
}

/** One physical chip as the device-info ConfigMap sees it. */
export interface DeviceInfoChip {
  /** Orders `ManuallySeparateNPU` (spec G.2). */
  readonly logicId: number;
  /** Public device name, e.g. `Ascend910-3` (after spec L.6 replacement). */
  readonly name: string;
  readonly health: ChipHealth;
  readonly networkHealth: ChipHealth;
  /** Listed in an active pod's device annotation (spec H.3: not schedulable). */
  readonly podUsed: boolean;
  /** Off the schedulable list for another reason of spec H.3 (vNPU in `AscendReal`, soft share full, `-Recover`). */
  readonly withheld?: boolean;
  /**
   * Kept in `-NetworkUnhealthy` although network-healthy now: `-autoStowing=false` until an operator removes the
   * chip from the `huawei.com/Ascend910-NetworkRecover` node label (spec I.1). Changes only that list.
   */
  readonly stickyNetworkUnhealthy?: boolean;
  /** Status `resetting` (spec H.3 `-Recovering`; never set upstream). */
  readonly resetting?: boolean;
  readonly chipFaults: FaultScopeView;
  readonly networkFaults: FaultScopeView;
  readonly reasons: readonly UpgradeReasonView[];
  /** In the manual-separation cache (spec G.1). */
  readonly manuallySeparated: boolean;
  /**
   * 310P/310B share mode (spec B.3): the chip's copies. Upstream lists each copy under its own device name in the
   * health lists and the fault list (one entry per copy), and leaves out of the schedulable list only the copies a
   * pod holds; `ManuallySeparateNPU` and `UpgradeFaultReason` keep the chip's name.
   */
  readonly copies?: readonly ShareCopyView[];
}

/** One copy of a shared chip (spec B.3 share mode). */
export interface ShareCopyView {
  /** Public device name, e.g. `Ascend310P-3-7`. */
  readonly name: string;
  /** Listed in an active pod's device annotation. */
  readonly podUsed: boolean;
}

/** Everything the device-info ConfigMap is computed from. */
export interface DeviceInfoView {
  readonly runMode: DeviceRunMode;
  /** Resource name of the physical chips, e.g. `huawei.com/Ascend910` (A5 `huawei.com/npu`; spec L.6 applied). */
  readonly resourceName: string;
  /** Key of the fault list; default `<resourceName>-Fault` (310 uses `huawei.com/Ascend310P-Fault`, spec M.4). */
  readonly faultKey?: string;
  /** Chips in enumeration order (spec B.1). */
  readonly chips: readonly DeviceInfoChip[];
  /** Spec B.7; -2 when no chip answered. */
  readonly superPodId: number;
  readonly serverIndex: number;
  /** A5 1D/2D only; written after `CheckCode` when present (spec H.3). */
  readonly rackId?: number;
  /** `UpdateTime`, Unix seconds. */
  readonly updateTimeSec: number;
  /** DeviceList of this process's last successful write: its keys persist (spec H.3). */
  readonly previousDeviceList?: Readonly<Record<string, string>>;
  /** `SwitchInfoCfg` value (910A3/A5, spec L.9), written when present. */
  readonly switchInfoCfg?: string;
  /**
   * A5 DPU feature on (docs/super-node.md "DPU faults"): the device names whose NPU's DPU health is Unhealthy, listed
   * under `<resourceName>-DPUUnhealthy`; absent (no key) while the feature is off.
   */
  readonly dpuUnhealthy?: readonly string[];
}

/** The result: the ConfigMap `data` and the pieces the write policy compares (spec H.4). */
export interface DeviceInfoContent {
  readonly data: Readonly<Record<string, string>>;
  readonly deviceList: Readonly<Record<string, string>>;
  readonly checkCode: string;
}

/** One entry of the `-Fault` list (spec H.3), as a Go struct. */
export interface FaultEntry {
  readonly fault_type: 'CardNetworkUnhealthy' | 'CardUnhealthy';
  readonly npu_name: string;
  readonly large_model_fault_level: string;
  readonly fault_level: string;
  readonly fault_handling: string;
  readonly fault_code: string;
  readonly fault_time_and_level_map: ReadonlyMap<string, { readonly fault_time: number; readonly fault_level: string }>;
}

const VIRTUAL_TYPE = /^(Ascend910-([2-6]|8|10|12|16)c|Ascend310P-(1|2|4)c)/;

/** Name of the node's ConfigMap (spec H.1). */
export function deviceInfoConfigMapName(nodeName: string): string {
  return DEVICE_INFO_NAME_PREFIX + nodeName;
}

/**
 * What spec H.4's `same` test compares (the DeviceList, `ManuallySeparateNPU`, `UpgradeFaultReason`,
 * `SwitchInfoCfg`), without the CheckCode and the `DeviceInfoCfg` text that only a write needs: the publisher
 * decides with it whether a change is to be written (issue [P] item 5: a change that leaves the content as written
 * costs the lists, not the hash and the serialisation of the whole value).
 */
export function buildDeviceInfoSnapshot(view: DeviceInfoView): DeviceInfoSnapshot {
  return {
    deviceList: buildDeviceList(view),
    manuallySeparate: manuallySeparateValue(view.chips),
    upgradeReasons: upgradeReasonValue(view.chips),
    ...(view.switchInfoCfg !== undefined ? { switchInfo: view.switchInfoCfg } : {}),
  };
}

/** Builds the ConfigMap `data` from the view (spec H.2, H.3, G.2, G.5). */
export function buildDeviceInfo(view: DeviceInfoView): DeviceInfoContent {
  const { deviceList, manuallySeparate, upgradeReasons, switchInfo } = buildDeviceInfoSnapshot(view);
  // serialised once: hashed for the CheckCode and inserted as is (the bytes of deviceInfoGo's serialisation)
  const deviceInfo = marshalDeviceInfo(deviceList, view.updateTimeSec);
  const checkCode = sha256HexOfText(deviceInfo);
  const fields: [string, GoValue][] = [
    ['DeviceInfo', goRaw(deviceInfo)],
    ['SuperPodID', view.superPodId],
    ['ServerIndex', view.serverIndex],
    ['CheckCode', checkCode],
  ];
  if (view.rackId !== undefined) fields.push(['RackID', view.rackId]);
  const data: Record<string, string> = {
    [KEY_DEVICE_INFO]: marshalGo(goStruct(fields)),
    [KEY_MANUALLY_SEPARATE]: manuallySeparate,
    [KEY_UPGRADE_REASON]: upgradeReasons,
    [KEY_DESCRIPTION]: DESCRIPTION_TEXT,
  };
  if (switchInfo !== undefined) data[KEY_SWITCH_INFO] = switchInfo;
  return { data, deviceList, checkCode };
}

/** The Go value of the inner `DeviceInfo` struct, whose serialisation the CheckCode hashes (spec H.3). */
export function deviceInfoGo(deviceList: Readonly<Record<string, string>>, updateTimeSec: number): GoValue {
  return goStruct([
    ['DeviceList', goMap(deviceList)],
    ['UpdateTime', updateTimeSec],
  ]);
}

/**
 * `CheckCode` of a DeviceList and update time (spec H.3): the SHA-256 of Go's serialisation of `DeviceInfo`
 * ({@link deviceInfoGo}), written by the encoder for exactly that struct (`marshalDeviceInfo`, the same bytes as
 * the generic one). `null` is a nil DeviceList (hashed as `{"DeviceList":null,…}`).
 */
export function checkCodeOf(deviceList: Readonly<Record<string, string>> | null, updateTimeSec: number): string {
  return sha256HexOfText(marshalDeviceInfo(deviceList, updateTimeSec));
}

/** A `DeviceInfoCfg` as ClusterD reads it (`ParseDeviceInfoCM`): Go zero values for absent or `null` members. */
export interface DecodedDeviceInfoCfg {
  /** `DeviceInfo.DeviceList`; `{}` for a `null` or absent list (Go: a nil map) */
  readonly deviceList: Record<string, string>;
  /** whether `DeviceList` was `null` or absent (it then hashes as `null`) */
  readonly nilDeviceList: boolean;
  readonly updateTime: number;
  readonly superPodId: number;
  readonly serverIndex: number;
  readonly rackId: number;
}

/** Why a `DeviceInfoCfg` is refused: not decodable into ClusterD's struct, or a CheckCode that is empty or wrong. */
export type DeviceInfoCfgProblem = 'malformed' | 'check-code';

/** Result of {@link decodeDeviceInfoCfg}. */
export type DeviceInfoCfgResult =
  | { readonly ok: true; readonly value: DecodedDeviceInfoCfg }
  | { readonly ok: false; readonly reason: DeviceInfoCfgProblem; readonly detail: string };

const TOP_FIELDS = ['DeviceInfo', 'SuperPodID', 'ServerIndex', 'RackID', 'CheckCode'] as const;
const INFO_FIELDS = ['DeviceList', 'UpdateTime'] as const;

/** True when `o` has a key that matches one of `names` only case-insensitively (Go accepts it; JSON.parse does not). */
function hasFoldedKey(o: object, names: readonly string[]): boolean {
  for (const k of Object.keys(o)) {
    const lower = k.toLowerCase();
    if (names.some((n) => n !== k && n.toLowerCase() === lower)) return true;
  }
  return false;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Decodes and verifies a `DeviceInfoCfg` text the way ClusterD does (`ParseDeviceInfoCM`: `json.Unmarshal` into its
 * struct, then `EqualDataHash`): re-serialise `DeviceInfo` as Go does, hash, compare with `CheckCode`. Go's zero
 * values apply, so a `DeviceList` that is `null` (or absent) is a nil map that serialises as `null`: the text
 * `{"DeviceInfo":{"DeviceList":null,"UpdateTime":0},"CheckCode":"<sha256 of {"DeviceList":null,"UpdateTime":0}>"}`
 * is valid, as in ClusterD's own tests. Member names match case-insensitively, as in Go. Every refusal names its
 * cause: `malformed` (not JSON, or a member of the wrong type, with its path) or `check-code` (empty or not matching).
 */
export function decodeDeviceInfoCfg(text: string): DeviceInfoCfgResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: 'malformed', detail: `not JSON: ${(e as Error).message}` };
  }
  const bad = (detail: string): DeviceInfoCfgResult => ({ ok: false, reason: 'malformed', detail });
  // Go decodes the top-level null into the zero struct: an empty CheckCode, refused below
  const top = parsed === null ? {} : parsed;
  if (!isPlainObject(top)) return bad(`not a JSON object but ${Array.isArray(top) ? 'an array' : typeof top}`);
  if (hasFoldedKey(top, TOP_FIELDS)) return decodeFolded(text);
  const info = top.DeviceInfo ?? {};
  if (!isPlainObject(info)) return bad('DeviceInfo is not an object');
  if (hasFoldedKey(info, INFO_FIELDS)) return decodeFolded(text);
  const rawList = info.DeviceList ?? null;
  if (rawList !== null && !isPlainObject(rawList)) return bad('DeviceInfo.DeviceList is not an object of strings');
  // the parsed object itself when every element is a string (JSON.parse made it, nobody else holds it; a key such
  // as "__proto__" is an ordinary own key there); a copy only when a null element must become ""
  let hasNull = false;
  if (rawList !== null) {
    for (const k of Object.keys(rawList)) {
      const v = rawList[k];
      if (typeof v === 'string') continue;
      // Go stores a null element of a map[string]string as ""
      if (v !== null) return bad(`DeviceInfo.DeviceList[${JSON.stringify(k)}] is not a string`);
      hasNull = true;
    }
  }
  // fromEntries, not assignment: a key such as "__proto__" stays an ordinary key
  const deviceList = (
    rawList === null
      ? {}
      : hasNull
        ? Object.fromEntries(Object.entries(rawList).map(([k, v]) => [k, v ?? '']))
        : rawList
  ) as Record<string, string>;
  const ints: Record<string, number> = {};
  for (const [path, v] of [
    ['DeviceInfo.UpdateTime', info.UpdateTime],
    ['SuperPodID', top.SuperPodID],
    ['ServerIndex', top.ServerIndex],
    ['RackID', top.RackID],
  ] as const) {
    if (v === undefined || v === null) ints[path] = 0;
    else if (typeof v === 'number' && Number.isSafeInteger(v)) ints[path] = v;
    else return bad(`${path} is not an integer`);
  }
  // JSON.parse reads 1e3 and 1000.0 as integers; Go's int64 does not: those texts take the exact decoder
  if (info.UpdateTime !== undefined && info.UpdateTime !== null && !/"UpdateTime"\s*:\s*-?\d+\s*[,}]/.test(text)) {
    return decodeFolded(text);
  }
  const checkCode = top.CheckCode ?? '';
  if (typeof checkCode !== 'string') return bad('CheckCode is not a string');
  return verified(
    {
      deviceList,
      nilDeviceList: rawList === null,
      updateTime: ints['DeviceInfo.UpdateTime']!,
      superPodId: ints.SuperPodID!,
      serverIndex: ints.ServerIndex!,
      rackId: ints.RackID!,
    },
    checkCode,
  );
}

/** The CheckCode comparison of a decoded text (ClusterD `EqualDataHash`: an empty code never matches). */
function verified(value: DecodedDeviceInfoCfg, checkCode: string): DeviceInfoCfgResult {
  if (checkCode === '') return { ok: false, reason: 'check-code', detail: 'CheckCode is empty' };
  if (checkCodeOf(value.nilDeviceList ? null : value.deviceList, value.updateTime) !== checkCode) {
    return {
      ok: false,
      reason: 'check-code',
      detail: 'CheckCode is not the SHA-256 of the Go serialisation of DeviceInfo',
    };
  }
  return { ok: true, value };
}

/** The exact (slower) decoder, for texts with member names in other cases or numbers JSON.parse reads loosely. */
function decodeFolded(text: string): DeviceInfoCfgResult {
  let root: JsonNode;
  try {
    root = parseJsonText(text);
  } catch (e) {
    return { ok: false, reason: 'malformed', detail: `not JSON: ${(e as Error).message}` };
  }
  const d = new GoDecoder();
  const top = d.fields(root, '$', TOP_FIELDS);
  const infoFields = top?.decode('DeviceInfo', '$', (n, p) => d.fields(n, p, INFO_FIELDS));
  let nil = true;
  const deviceList = new Map<string, string>();
  infoFields?.decode('DeviceList', '$.DeviceInfo', (n, p) => {
    if (n.t === 'null') {
      // Go: null makes the map nil again
      nil = true;
      deviceList.clear();
      return undefined;
    }
    if (n.t !== 'obj') {
      d.typeProblems.push({ path: p, value: n.t, expected: 'object of strings' });
      return undefined;
    }
    nil = false;
    for (const [k, v] of n.entries) {
      const s = v.t === 'null' ? '' : d.string(v, childPath(p, k));
      if (s !== undefined) deviceList.set(k, s);
    }
    return true;
  });
  const int = (f: ObjectFields | undefined, name: string, parent: string): number =>
    f?.decode(name, parent, (n, p) => {
      const v = d.int64(n, p);
      if (v !== undefined && !Number.isSafeInteger(v)) {
        d.typeProblems.push({ path: p, value: String(v), expected: 'an integer within ±2^53' });
        return undefined;
      }
      return v;
    }) ?? 0;
  const updateTime = int(infoFields, 'UpdateTime', '$.DeviceInfo');
  const superPodId = int(top, 'SuperPodID', '$');
  const serverIndex = int(top, 'ServerIndex', '$');
  const rackId = int(top, 'RackID', '$');
  const checkCode = top?.decode('CheckCode', '$', (n, p) => d.string(n, p)) ?? '';
  const problem = d.typeProblems[0];
  if (problem !== undefined) {
    return { ok: false, reason: 'malformed', detail: `${problem.path} is ${problem.value}, not ${problem.expected}` };
  }
  return verified(
    { deviceList: Object.fromEntries(deviceList), nilDeviceList: nil, updateTime, superPodId, serverIndex, rackId },
    checkCode,
  );
}

/**
 * Verifies a `DeviceInfoCfg` text the way ClusterD does ({@link decodeDeviceInfoCfg}): true when it decodes and
 * its CheckCode matches.
 */
export function verifyDeviceInfoCfg(text: string): boolean {
  return decodeDeviceInfoCfg(text).ok;
}

/** The DeviceList map (spec H.3): previous keys kept, virtual types dropped, this cycle's keys filled. */
export function buildDeviceList(view: DeviceInfoView): Record<string, string> {
  const r = view.resourceName;
  const list: Record<string, string> = {};
  for (const [k, v] of Object.entries(view.previousDeviceList ?? {})) {
    if (!VIRTUAL_TYPE.test(k.slice(k.indexOf('/') + 1))) list[k] = v;
  }
  const names = (pick: (c: DeviceInfoChip) => boolean): string =>
    joinSorted(view.chips.filter(pick).flatMap(listedNames));
  list[r] = joinSorted(
    view.chips
      .filter((c) => c.health === 'Healthy' && c.withheld !== true)
      .flatMap((c) => (c.copies ? c.copies.filter((k) => !k.podUsed).map((k) => k.name) : c.podUsed ? [] : [c.name])),
  );
  list[`${r}-Unhealthy`] = names((c) => c.health === 'Unhealthy');
  if (view.runMode === 'Ascend910') {
    list[`${r}-NetworkUnhealthy`] = names((c) => c.networkHealth === 'Unhealthy' || c.stickyNetworkUnhealthy === true);
    list[`${r}-Recovering`] = names((c) => c.resetting === true);
  }
  list[view.faultKey ?? `${r}-Fault`] = marshalFaultEntries(faultEntries(view.chips));
  if (view.dpuUnhealthy !== undefined) list[`${r}-DPUUnhealthy`] = joinSorted(view.dpuUnhealthy);
  return list;
}

/** Device names joined by commas in Go `sort.Strings` order (byte order: `Ascend910-10` before `Ascend910-2`). */
export function joinSorted(names: readonly string[]): string {
  return [...names].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))).join(',');
}

/** The device names a chip is listed under: its copies in share mode, else its own name. */
function listedNames(c: DeviceInfoChip): readonly string[] {
  return c.copies ? c.copies.map((k) => k.name) : [c.name];
}

/**
 * The fault entries of all chips: per chip in enumeration order, network entry first (spec H.3); in share mode
 * one set per copy, in copy order.
 */
export function faultEntries(chips: readonly DeviceInfoChip[]): FaultEntry[] {
  const out: FaultEntry[] = [];
  for (const c of chips) {
    const network = c.networkFaults.codes.length > 0 || c.networkHealth === 'Unhealthy';
    const chip = c.chipFaults.codes.length > 0 || c.health === 'Unhealthy';
    if (!network && !chip) continue;
    for (const name of listedNames(c)) {
      if (network) out.push(scopeEntry(c, 'network', name));
      if (chip) out.push(scopeEntry(c, 'chip', name));
    }
  }
  return out;
}

function scopeEntry(c: DeviceInfoChip, scope: 'chip' | 'network', name: string): FaultEntry {
  const faults = scope === 'chip' ? c.chipFaults : c.networkFaults;
  const reasons = c.reasons.filter((r) => r.scope === scope);
  const codes: string[] = [];
  const map = new Map<string, { fault_time: number; fault_level: string }>();
  for (const f of faults.codes) {
    if (!codes.includes(f.code)) codes.push(f.code);
    map.set(f.code, { fault_time: f.firstSeenMs, fault_level: f.level });
  }
  for (const r of reasons) {
    const code = r.fault_code.toUpperCase();
    if (!codes.includes(code)) codes.push(code);
    map.set(code, { fault_time: r.upgrade_time, fault_level: r.fault_level }); // spec H.3: reasons override
  }
  return {
    fault_type: scope === 'chip' ? 'CardUnhealthy' : 'CardNetworkUnhealthy',
    npu_name: name,
    large_model_fault_level: faults.level,
    fault_level: faults.level,
    fault_handling: faults.level,
    fault_code: codes.join(','),
    fault_time_and_level_map: map,
  };
}

/**
 * A fault entry as the Go struct of spec H.3 (member order as declared upstream): the reference that
 * {@link marshalFaultEntries}, which writes the list, is checked against byte for byte (test/kube/device-info.test.ts).
 */
export function faultEntryGo(e: FaultEntry): GoValue {
  const map = new Map<string, GoValue>();
  for (const [code, t] of e.fault_time_and_level_map) {
    map.set(
      code,
      goStruct([
        ['fault_time', t.fault_time],
        ['fault_level', t.fault_level],
      ]),
    );
  }
  return goStruct([
    ['fault_type', e.fault_type],
    ['npu_name', e.npu_name],
    ['large_model_fault_level', e.large_model_fault_level],
    ['fault_level', e.fault_level],
    ['fault_handling', e.fault_handling],
    ['fault_code', e.fault_code],
    ['fault_time_and_level_map', goMap(map)],
  ]);
}

/**
 * `json.Marshal` of the fault list (spec H.3, H.6): the same bytes as {@link marshalGo} of
 * `goSlice(entries.map(faultEntryGo))`, written directly, without the value tree (issue [P] item 5: the publisher
 * builds this list for every change it decides on; the tree was most of that build's allocation). Throws
 * {@link GoJsonError} for a fault time that is not a safe integer, as the generic encoder does.
 */
export function marshalFaultEntries(entries: readonly FaultEntry[]): string {
  let out = '[';
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i > 0) out += ',';
    out +=
      '{"fault_type":' +
      goQuote(e.fault_type) +
      ',"npu_name":' +
      goQuote(e.npu_name) +
      ',"large_model_fault_level":' +
      goQuote(e.large_model_fault_level) +
      ',"fault_level":' +
      goQuote(e.fault_level) +
      ',"fault_handling":' +
      goQuote(e.fault_handling) +
      ',"fault_code":' +
      goQuote(e.fault_code) +
      ',"fault_time_and_level_map":{';
    const codes = sortGoStrings(Array.from(e.fault_time_and_level_map.keys()));
    for (let j = 0; j < codes.length; j++) {
      const code = codes[j]!;
      const t = e.fault_time_and_level_map.get(code)!;
      if (!Number.isSafeInteger(t.fault_time)) {
        throw new GoJsonError(
          `${t.fault_time} is not a safe integer (use goFloat or a bigint)`,
          `[${i}].fault_time_and_level_map.${code}.fault_time`,
        );
      }
      if (j > 0) out += ',';
      out +=
        goQuote(code) +
        ':{"fault_time":' +
        (Object.is(t.fault_time, -0) ? '0' : String(t.fault_time)) +
        ',"fault_level":' +
        goQuote(t.fault_level) +
        '}';
    }
    out += '}}';
  }
  return out + ']';
}

/** `ManuallySeparateNPU`: separated chips' names by logic ID, comma-joined; "" for none (spec G.2). */
export function manuallySeparateValue(chips: readonly DeviceInfoChip[]): string {
  return chips
    .filter((c) => c.manuallySeparated)
    .sort((a, b) => a.logicId - b.logicId)
    .map((c) => c.name)
    .join(',');
}

/** `UpgradeFaultReason`: device name → reasons in the G.5 member order; `{}` when no chip has one. */
export function upgradeReasonValue(chips: readonly DeviceInfoChip[]): string {
  const map = new Map<string, GoValue>();
  for (const c of chips) {
    if (c.reasons.length === 0) continue;
    map.set(
      c.name,
      goSlice(
        c.reasons.map((r) =>
          goStruct([
            ['upgrade_time', r.upgrade_time],
            ['fault_code', r.fault_code],
            ['fault_level', r.fault_level],
            ['upgrade_type', r.upgrade_type],
          ]),
        ),
      ),
    );
  }
  return marshalGo(goMap(map));
}

/** A ConfigMap object as client-node's `V1ConfigMap` accepts it. */
export interface DeviceInfoConfigMap {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string; labels: Record<string, string>; resourceVersion?: string };
  data: Record<string, string>;
}

/** The whole object written by UPDATE, or CREATE on NotFound (spec H.1: other keys and labels are replaced). */
export function deviceInfoConfigMap(nodeName: string, content: DeviceInfoContent): DeviceInfoConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: deviceInfoConfigMapName(nodeName),
      namespace: DEVICE_INFO_NAMESPACE,
      labels: { ...DEVICE_INFO_LABELS },
    },
    data: { ...content.data },
  };
}
