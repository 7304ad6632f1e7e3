/**
 * What a ResourceClaim allocated on this node means for the agent (issue [DRA] item 4), pure: the devices of our
 * driver and pool in its allocation, the chips behind them, the per-device status the agent writes into the claim
 * (`status.devices`: the device IP as `networkData`, the binding conditions of a chip under reset), and how that
 * status merges with the entries other writers own.
 */
import { CHIP_FAILED_CONDITION, CHIP_READY_CONDITION, DRA_DRIVER, parseDraDeviceName } from '../core/dra-devices.js';
import type { ChipKind } from '../core/chips.js';
import { chipTaints, isResetting, type TaintChip } from './device-taints.js';
import type { AllocatedDeviceStatus, Condition, DeviceRequestAllocationResult, ResourceClaim } from './dra-types.js';

/** A device of the claim's allocation that is ours (driver `npu.huawei.com`, pool = this node). */
export interface OurDevice {
  readonly result: DeviceRequestAllocationResult;
  readonly phyId: number;
  /** Absent for a whole chip. */
  readonly template?: string;
}

/** A list from the API server, or nothing when it is not one (a claim is input: never trusted to be well formed). */
export function listOf<T>(v: readonly T[] | undefined | null): readonly T[] {
  return Array.isArray(v) ? (v as readonly T[]) : [];
}

/** The claim's allocated devices in our pool whose names parse as ours (others are ignored). */
export function ourDevices(claim: ResourceClaim, pool: string, kind: ChipKind): OurDevice[] {
  const out: OurDevice[] = [];
  for (const r of listOf(claim.status?.allocation?.devices?.results)) {
    if (r === null || typeof r !== 'object' || r.driver !== DRA_DRIVER || r.pool !== pool) continue;
    if (typeof r.device !== 'string') continue;
    const ref = parseDraDeviceName(r.device, kind);
    if (ref === undefined) continue;
    out.push({ result: r, phyId: ref.phyId, ...(ref.template !== undefined ? { template: ref.template } : {}) });
  }
  return out;
}

/** Whether the claim is reserved for the pod (`status.reservedFor`). */
export function reservedFor(claim: ResourceClaim, podUid: string): boolean {
  return listOf(claim.status?.reservedFor).some((r) => r?.resource === 'pods' && r.uid === podUid);
}

/**
 * `networkData.ips` of a device IP (CIDR form, as the API wants it): a host address, `/32` or `/128`; undefined for
 * what is not an IP (C.5 `-1`, empty, A5) and for the loopback of a virtual device.
 */
export function cidrOf(ip: string | undefined): string | undefined {
  if (ip === undefined) return undefined;
  if (/^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/.test(ip)) {
    return ip.startsWith('127.') || ip === '0.0.0.0' ? undefined : `${ip}/32`;
  }
  if (/^[0-9a-fA-F:]+$/.test(ip) && ip.includes(':') && ip !== '::1' && ip !== '::') return `${ip.toLowerCase()}/128`;
  return undefined;
}

/** Verdict on a binding condition of a device: the chip is still being reset, is usable, or is not. */
export type BindingVerdict = 'pending' | 'ready' | 'failed';

/**
 * A chip whose reset is over: ready when nothing takes it off scheduling any more (no NoSchedule or NoExecute
 * taint), failed when something does (the reset did not cure it, or another fault came).
 */
export function bindingVerdict(chip: TaintChip | undefined): BindingVerdict {
  if (chip === undefined) return 'failed';
  if (isResetting(chip)) return 'pending';
  return chipTaints(chip).some((t) => t.effect !== 'None') ? 'failed' : 'ready';
}

/** What the agent knows of a chip for the claim status. */
export interface ChipStatusFacts {
  /** The chip's state now (undefined: not a chip of this node). */
  readonly chip?: TaintChip;
  /** C.5 device IP. */
  readonly ip?: string;
}

/** The fields the agent owns in the status entry of one of our devices. */
export interface OurDeviceFields {
  readonly device: string;
  /** `networkData.ips`; absent: not known (a live value is left alone). */
  readonly ips?: readonly string[];
  /** Our binding-condition types only (`ChipReady`, `ChipFailed`). */
  readonly conditions: readonly Condition[];
}

const OUR_CONDITIONS: ReadonlySet<string> = new Set([CHIP_READY_CONDITION, CHIP_FAILED_CONDITION]);

/**
 * Our fields in the status entries of our devices: `networkData.ips` from the chip's IP (whole chips only: a
 * partition's rank-table IP is the loopback), and for a device allocated with our binding conditions the condition the
 * chip now warrants (`ChipReady` or `ChipFailed` True; nothing while it is still being reset). A verdict already given
 * stays with its time: the scheduler acted on it.
 */
export function desiredDeviceFields(
  claim: ResourceClaim,
  pool: string,
  kind: ChipKind,
  facts: (phyId: number) => ChipStatusFacts,
  nowIso: string,
): OurDeviceFields[] {
  const live = listOf(claim.status?.devices);
  const out: OurDeviceFields[] = [];
  for (const d of ourDevices(claim, pool, kind)) {
    const f = facts(d.phyId);
    const ip = d.template === undefined ? cidrOf(f.ip) : undefined;
    const prior = live.find((e) => e.driver === DRA_DRIVER && e.pool === pool && e.device === d.result.device);
    const conditions = listOf(prior?.conditions).filter((c) => OUR_CONDITIONS.has(c?.type));
    const waits = listOf(d.result.bindingConditions).includes(CHIP_READY_CONDITION);
    if (waits && !conditions.some((c) => c.status === 'True')) {
      const verdict = bindingVerdict(f.chip);
      if (verdict !== 'pending') conditions.push(conditionOf(verdict, nowIso, claim.metadata.generation));
    }
    out.push({ device: d.result.device, ...(ip !== undefined ? { ips: [ip] } : {}), conditions });
  }
  return out;
}

function conditionOf(verdict: 'ready' | 'failed', nowIso: string, generation: number | undefined): Condition {
  const observed = generation !== undefined ? { observedGeneration: generation } : {};
  return verdict === 'ready'
    ? {
        type: CHIP_READY_CONDITION,
        status: 'True',
        ...observed,
        lastTransitionTime: nowIso,
        reason: 'ResetFinished',
        message: 'the chip reset finished and the chip is healthy',
      }
    : {
        type: CHIP_FAILED_CONDITION,
        status: 'True',
        ...observed,
        lastTransitionTime: nowIso,
        reason: 'ChipUnusable',
        message: 'the chip is not usable after its reset: a fault or a separation takes it off scheduling',
      };
}

/**
 * The claim's `status.devices` with our fields applied: in the entry of each of our devices (made when missing and
 * there is something to say) the IPs set when known and our condition types replaced; every other field, condition
 * and entry (the node side's, another driver's) kept as it is, in its place.
 */
export function applyDeviceFields(
  live: readonly AllocatedDeviceStatus[],
  fields: readonly OurDeviceFields[],
  pool: string,
): AllocatedDeviceStatus[] {
  const out = live.map((e) => ({ ...e }));
  for (const f of fields) {
    let entry = out.find((e) => e?.driver === DRA_DRIVER && e.pool === pool && e.device === f.device);
    if (entry === undefined) {
      if (f.ips === undefined && f.conditions.length === 0) continue;
      entry = { driver: DRA_DRIVER, pool, device: f.device };
      out.push(entry);
    }
    if (f.ips !== undefined) entry.networkData = { ...entry.networkData, ips: [...f.ips] };
    const before = listOf(entry.conditions); // the API server writes a missing list as null
    const conditions = [...before.filter((c) => !OUR_CONDITIONS.has(c.type)), ...f.conditions];
    if (JSON.stringify(conditions) !== JSON.stringify(before)) entry.conditions = conditions;
  }
  return out;
}
