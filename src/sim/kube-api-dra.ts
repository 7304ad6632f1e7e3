/**
 * What the real API server checks on `resource.k8s.io/v1` objects that the agent relies on, so the fast tests fail
 * where the real server would refuse a write (issue [R] item 7: the stand-ins learn from the real thing). From
 * k8s.io/api v0.37.2 `resource/v1/types.go` (the limits) and k8s.io/kubernetes v1.37.2
 * `pkg/apis/resource/validation/validation.go` (the rules); each refusal is a 422 naming the field, as the real
 * server's. Not checked here: CEL, immutability of driver / pool name / node name on update, the node-allocatable
 * mappings, declarative-only rules the agent never comes near.
 *
 * The numbers are written out here again on purpose instead of imported from src/dra: a stand-in that shares the
 * writer's constants would accept whatever the writer gets wrong.
 */
import { invalid, type KubeObject, type ResourceType } from './kube-api-types.js';

const GROUP = 'resource.k8s.io';
/** `ResourceSliceMaxDevices`, `ResourceSliceMaxDevicesWithAdvancedFeatures` (taints or counters in the slice). */
const MAX_DEVICES = 128;
const MAX_DEVICES_ADVANCED = 64;
const MAX_COUNTER_SETS = 8;
const MAX_COUNTERS = 32;
const MAX_CONSUMPTIONS = 2;
const MAX_ATTRIBUTES_AND_CAPACITIES = 32;
const MAX_TAINTS = 16;
const MAX_BINDING_CONDITIONS = 4;
const MAX_ATTRIBUTE_STRING = 64;
const MAX_ID = 32;
const MAX_DEVICE_STATUS_CONDITIONS = 8;
const MAX_NETWORK_IPS = 16;
const TAINT_EFFECTS: ReadonlySet<string> = new Set(['None', 'NoSchedule', 'NoExecute']);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const C_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LABEL_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function dnsLabel(v: unknown): boolean {
  return typeof v === 'string' && v.length <= 63 && DNS_LABEL.test(v);
}

function dnsSubdomain(v: unknown, max = 253): boolean {
  return typeof v === 'string' && v.length <= max && DNS_SUBDOMAIN.test(v);
}

/** `metav1validation.ValidateLabelName`: `[prefix/]name`, prefix a DNS subdomain, name ≤ 63. */
export function isLabelName(v: unknown): boolean {
  if (typeof v !== 'string' || v === '') return false;
  const parts = v.split('/');
  if (parts.length > 2) return false;
  const name = parts.at(-1)!;
  if (parts.length === 2 && !dnsSubdomain(parts[0])) return false;
  return name.length <= 63 && LABEL_NAME_PART.test(name);
}

/** `validateQualifiedName` of an attribute or capacity: a C identifier ≤ 32, optionally `<driver-like domain>/`. */
function qualifiedName(v: string): boolean {
  const parts = v.split('/');
  if (parts.length === 1) return parts[0]!.length <= MAX_ID && C_IDENTIFIER.test(parts[0]!);
  if (parts.length !== 2) return false;
  return dnsSubdomain(parts[0], 63) && parts[1]!.length <= MAX_ID && C_IDENTIFIER.test(parts[1]!);
}

/** Checks a `resource.k8s.io/v1` object; throws the 422 the real server answers. No-op for other types. */
export function validateDra(t: ResourceType, obj: KubeObject): void {
  if (t.group !== GROUP) return;
  const name = obj.metadata?.name ?? '';
  const fail = (field: string, message: string): never => {
    throw invalid(t, name, field, message);
  };
  if (t.plural === 'resourceslices') validateSlice(obj, fail);
  if (t.plural === 'resourceclaims') validateClaimStatus(obj, fail);
}

type Fail = (field: string, message: string) => never;

function validateSlice(obj: KubeObject, fail: Fail): void {
  const spec = isObj(obj.spec) ? obj.spec : fail('spec', 'Required value');
  if (!dnsSubdomain(spec.driver, 63))
    fail(
      'spec.driver',
      `Invalid value: ${JSON.stringify(spec.driver)}: a lowercase RFC 1123 subdomain of at most 63 characters`,
    );
  const pool = isObj(spec.pool) ? spec.pool : fail('spec.pool', 'Required value');
  if (typeof pool.name !== 'string' || pool.name === '' || pool.name.length > 253)
    fail('spec.pool.name', 'Required value');
  if (typeof pool.resourceSliceCount !== 'number' || pool.resourceSliceCount <= 0) {
    fail(
      'spec.pool.resourceSliceCount',
      `Invalid value: ${String(pool.resourceSliceCount)}: must be greater than zero`,
    );
  }
  if (typeof pool.generation !== 'number' || pool.generation < 0) {
    fail('spec.pool.generation', `Invalid value: ${String(pool.generation)}: must be greater than or equal to zero`);
  }
  const set = ['nodeName', 'nodeSelector', 'allNodes', 'perDeviceNodeSelection'].filter(
    (k) => spec[k] !== undefined && spec[k] !== false && spec[k] !== '',
  );
  if (set.length !== 1)
    fail('spec', 'exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required');
  if (spec.nodeName !== undefined && !dnsSubdomain(spec.nodeName))
    fail('spec.nodeName', 'Invalid value: not a node name');
  if (spec.devices !== undefined && spec.sharedCounters !== undefined) {
    fail('spec', 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed');
  }
  const devices = list(spec.devices).filter(isObj);
  const advanced = devices.some((d) => list(d.taints).length > 0 || list(d.consumesCounters).length > 0);
  const max = advanced ? MAX_DEVICES_ADVANCED : MAX_DEVICES;
  if (devices.length > max) fail('spec.devices', `Too many: ${devices.length}: must have at most ${max} items`);
  const names = new Set<string>();
  devices.forEach((d, i) => {
    const at = `spec.devices[${i}]`;
    if (!dnsLabel(d.name))
      fail(
        `${at}.name`,
        `Invalid value: ${JSON.stringify(d.name)}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'`,
      );
    if (names.has(d.name as string)) fail(`${at}.name`, `Duplicate value: ${JSON.stringify(d.name)}`);
    names.add(d.name as string);
    validateDevice(d, at, fail);
  });
  const sets = list(spec.sharedCounters).filter(isObj);
  if (sets.length > MAX_COUNTER_SETS)
    fail('spec.sharedCounters', `Too many: ${sets.length}: must have at most ${MAX_COUNTER_SETS} items`);
  const setNames = new Set<string>();
  sets.forEach((s, i) => {
    const at = `spec.sharedCounters[${i}]`;
    if (!dnsLabel(s.name)) fail(`${at}.name`, `Invalid value: ${JSON.stringify(s.name)}: must be a DNS label`);
    if (setNames.has(s.name as string)) fail(`${at}.name`, `Duplicate value: ${JSON.stringify(s.name)}`);
    setNames.add(s.name as string);
    validateCounters(s.counters, `${at}.counters`, fail);
  });
}

function validateCounters(counters: unknown, at: string, fail: Fail): void {
  if (!isObj(counters) || Object.keys(counters).length === 0) fail(at, 'Required value');
  const keys = Object.keys(counters);
  if (keys.length > MAX_COUNTERS) fail(at, `Too many: ${keys.length}: must have at most ${MAX_COUNTERS} items`);
  for (const k of keys) {
    if (!dnsLabel(k)) fail(`${at}[${k}]`, 'Invalid value: must be a DNS label');
    const c = counters[k];
    if (!isObj(c) || typeof c.value !== 'string' || !/^[0-9.]+([KMGTPE]i?|[mkMGTPE])?$/.test(c.value)) {
      fail(`${at}[${k}].value`, 'Invalid value: not a quantity');
    }
  }
}

function validateDevice(d: Obj, at: string, fail: Fail): void {
  const attributes = isObj(d.attributes) ? d.attributes : {};
  const capacity = isObj(d.capacity) ? d.capacity : {};
  const n = Object.keys(attributes).length + Object.keys(capacity).length;
  if (n > MAX_ATTRIBUTES_AND_CAPACITIES) {
    fail(
      at,
      `Invalid value: ${n}: the total number of attributes and capacities must not exceed ${MAX_ATTRIBUTES_AND_CAPACITIES}`,
    );
  }
  for (const [k, v] of Object.entries(attributes)) {
    if (!qualifiedName(k))
      fail(
        `${at}.attributes[${k}]`,
        'Invalid value: must be a C identifier of at most 32 characters, optionally with a domain',
      );
    const set = isObj(v) ? Object.keys(v).filter((x) => v[x] !== undefined && v[x] !== null) : [];
    if (set.length !== 1) fail(`${at}.attributes[${k}]`, 'Invalid value: exactly one value must be specified');
    const a = v as Obj;
    if (typeof a.string === 'string' && a.string.length > MAX_ATTRIBUTE_STRING) {
      fail(`${at}.attributes[${k}].string`, `Too long: may not be more than ${MAX_ATTRIBUTE_STRING} bytes`);
    }
  }
  for (const k of Object.keys(capacity)) {
    if (!qualifiedName(k))
      fail(`${at}.capacity[${k}]`, 'Invalid value: must be a C identifier of at most 32 characters');
  }
  const taints = list(d.taints);
  if (taints.length > MAX_TAINTS)
    fail(`${at}.taints`, `Too many: ${taints.length}: must have at most ${MAX_TAINTS} items`);
  taints.forEach((t, i) => {
    const tt = isObj(t) ? t : fail(`${at}.taints[${i}]`, 'Required value');
    if (!isLabelName(tt.key))
      fail(`${at}.taints[${i}].key`, `Invalid value: ${JSON.stringify(tt.key)}: must be a label name`);
    if (
      tt.value !== undefined &&
      (typeof tt.value !== 'string' || tt.value.length > 63 || !LABEL_VALUE.test(tt.value))
    ) {
      fail(`${at}.taints[${i}].value`, `Invalid value: ${JSON.stringify(tt.value)}: must be a label value`);
    }
    if (!TAINT_EFFECTS.has(tt.effect as string)) {
      fail(
        `${at}.taints[${i}].effect`,
        `Unsupported value: ${JSON.stringify(tt.effect)}: supported values: "NoExecute", "NoSchedule", "None"`,
      );
    }
    if (tt.timeAdded !== undefined && (typeof tt.timeAdded !== 'string' || Number.isNaN(Date.parse(tt.timeAdded)))) {
      fail(`${at}.taints[${i}].timeAdded`, 'Invalid value: not an RFC 3339 time');
    }
  });
  const consumes = list(d.consumesCounters).filter(isObj);
  if (consumes.length > MAX_CONSUMPTIONS)
    fail(`${at}.consumesCounters`, `Too many: ${consumes.length}: must have at most ${MAX_CONSUMPTIONS} items`);
  consumes.forEach((c, i) => {
    if (!dnsLabel(c.counterSet)) fail(`${at}.consumesCounters[${i}].counterSet`, 'Invalid value: must be a DNS label');
    validateCounters(c.counters, `${at}.consumesCounters[${i}].counters`, fail);
  });
  const bc = list(d.bindingConditions);
  const bfc = list(d.bindingFailureConditions);
  if (bc.length > MAX_BINDING_CONDITIONS)
    fail(`${at}.bindingConditions`, `Too many: ${bc.length}: must have at most ${MAX_BINDING_CONDITIONS} items`);
  if (bfc.length > MAX_BINDING_CONDITIONS)
    fail(
      `${at}.bindingFailureConditions`,
      `Too many: ${bfc.length}: must have at most ${MAX_BINDING_CONDITIONS} items`,
    );
  for (const c of [...bc, ...bfc])
    if (!isLabelName(c)) fail(`${at}.bindingConditions`, `Invalid value: ${JSON.stringify(c)}`);
  if (bc.length === 0 && bfc.length > 0)
    fail(`${at}.bindingConditions`, 'Invalid value: bindingConditions are required to use bindingFailureConditions');
  if (bfc.length === 0 && bc.length > 0)
    fail(
      `${at}.bindingFailureConditions`,
      'Invalid value: bindingFailureConditions are required to use bindingConditions',
    );
  if (bfc.some((c) => bc.includes(c)))
    fail(
      `${at}.bindingFailureConditions`,
      'Invalid value: bindingFailureConditions must not overlap with bindingConditions',
    );
}

/** `validateDeviceStatus`: each entry names an allocated device; conditions ≤ 8; network IPs ≤ 16, in CIDR form. */
function validateClaimStatus(obj: KubeObject, fail: Fail): void {
  const status = isObj(obj.status) ? obj.status : undefined;
  const devices = list(status?.devices).filter(isObj);
  if (devices.length === 0) return;
  const allocation = isObj(status?.allocation) ? status.allocation : undefined;
  const results = list(isObj(allocation?.devices) ? allocation.devices.results : undefined).filter(isObj);
  const allocated = new Set(results.map((r) => `${String(r.driver)}/${String(r.pool)}/${String(r.device)}`));
  devices.forEach((d, i) => {
    const at = `status.devices[${i}]`;
    const id = `${String(d.driver)}/${String(d.pool)}/${String(d.device)}`;
    if (!allocated.has(id)) fail(at, `Invalid value: ${JSON.stringify(id)}: must be an allocated device in the claim`);
    const conditions = list(d.conditions);
    if (conditions.length > MAX_DEVICE_STATUS_CONDITIONS) {
      fail(
        `${at}.conditions`,
        `Too many: ${conditions.length}: must have at most ${MAX_DEVICE_STATUS_CONDITIONS} items`,
      );
    }
    conditions.forEach((c, j) => {
      const cc = isObj(c) ? c : fail(`${at}.conditions[${j}]`, 'Required value');
      if (!isLabelName(cc.type)) fail(`${at}.conditions[${j}].type`, `Invalid value: ${JSON.stringify(cc.type)}`);
      if (!['True', 'False', 'Unknown'].includes(cc.status as string))
        fail(`${at}.conditions[${j}].status`, 'Unsupported value');
      if (typeof cc.reason !== 'string' || !/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/.test(cc.reason)) {
        fail(`${at}.conditions[${j}].reason`, `Invalid value: ${JSON.stringify(cc.reason)}`);
      }
      if (typeof cc.lastTransitionTime !== 'string' || Number.isNaN(Date.parse(cc.lastTransitionTime))) {
        fail(`${at}.conditions[${j}].lastTransitionTime`, 'Required value');
      }
    });
    const ips = list(isObj(d.networkData) ? d.networkData.ips : undefined);
    if (ips.length > MAX_NETWORK_IPS)
      fail(`${at}.networkData.ips`, `Too many: ${ips.length}: must have at most ${MAX_NETWORK_IPS} items`);
    ips.forEach((ip, j) => {
      if (typeof ip !== 'string' || !/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(ip)) {
        fail(`${at}.networkData.ips[${j}]`, `Invalid value: ${JSON.stringify(ip)}: must be an IP address in CIDR form`);
      }
    });
  });
}
