/**
 * The `resource.k8s.io/v1` objects as the agent writes and reads them, in their JSON form (the API server's, not
 * client-node's models: those drop fields newer than their release). Only the members the agent uses are typed;
 * objects read from the API server keep every other member as it came (`[k: string]: unknown`).
 *
 * Field names and semantics: k8s.io/api v0.37.2 `resource/v1/types.go`.
 */

/** `apiVersion` of every object here. */
export const RESOURCE_API_VERSION = 'resource.k8s.io/v1';
/** Every slice of the cluster (list, watch, create). */
export const RESOURCE_SLICES_PATH = '/apis/resource.k8s.io/v1/resourceslices';
/** Every claim of the cluster (list and watch). */
export const RESOURCE_CLAIMS_PATH = '/apis/resource.k8s.io/v1/resourceclaims';

/** Exactly one member set. */
export interface DeviceAttribute {
  int?: number;
  bool?: boolean;
  string?: string;
  version?: string;
}

/** A quantity in its canonical text (`20`, `64Gi`). */
export interface QuantityValue {
  value: string;
}

/** `None` (informational), `NoSchedule`, `NoExecute`. */
export type DeviceTaintEffect = 'None' | 'NoSchedule' | 'NoExecute';

/** A taint of a device (`DeviceTaint`). */
export interface DeviceTaint {
  /** A label name. */
  key: string;
  /** A label value. */
  value?: string;
  effect: DeviceTaintEffect;
  /** RFC 3339, whole seconds (`metav1.Time`). The API server sets it to its "now" when absent. */
  timeAdded?: string;
}

/** What a device consumes of one counter set. */
export interface DeviceCounterConsumption {
  counterSet: string;
  counters: Record<string, QuantityValue>;
}

/** One device of a slice. */
export interface Device {
  name: string;
  attributes?: Record<string, DeviceAttribute>;
  capacity?: Record<string, QuantityValue>;
  consumesCounters?: DeviceCounterConsumption[];
  taints?: DeviceTaint[];
  bindingConditions?: string[];
  bindingFailureConditions?: string[];
}

/** A named set of counters shared by the devices of a pool (partitions). */
export interface CounterSet {
  name: string;
  counters: Record<string, QuantityValue>;
}

/** The pool a slice belongs to. */
export interface ResourcePool {
  name: string;
  generation: number;
  resourceSliceCount: number;
}

/** What a slice publishes. */
export interface ResourceSliceSpec {
  driver: string;
  pool: ResourcePool;
  nodeName?: string;
  /** Only one of `devices` and `sharedCounters` in one slice. */
  devices?: Device[];
  sharedCounters?: CounterSet[];
}

/** The metadata members read or written. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [k: string]: unknown;
}

/** A ResourceSlice. */
export interface ResourceSlice {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: ResourceSliceSpec;
}

/** A list answer. */
export interface ObjectList<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** One device of an allocation result. */
export interface DeviceRequestAllocationResult {
  request: string;
  driver: string;
  pool: string;
  device: string;
  /** The device is watched, not taken (admin access): NodePrepare does not hold it. */
  adminAccess?: boolean | null;
  /** The share of a consumable-capacity allocation. */
  shareID?: string | null;
  bindingConditions?: string[];
  bindingFailureConditions?: string[];
  [k: string]: unknown;
}

/** A claim's `status.allocation`. */
export interface AllocationResult {
  devices?: { results?: DeviceRequestAllocationResult[]; [k: string]: unknown };
  nodeSelector?: unknown;
  allocationTimestamp?: string;
  [k: string]: unknown;
}

/** An entry of `status.reservedFor`. */
export interface ResourceClaimConsumerReference {
  apiGroup?: string;
  resource: string;
  name: string;
  uid: string;
}

/** `metav1.Condition`. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  /** RFC 3339, whole seconds. */
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** `networkData` of a device status entry. */
export interface NetworkDeviceData {
  interfaceName?: string;
  /** CIDR notation. */
  ips?: string[];
  hardwareAddress?: string;
}

/** An entry of a claim's `status.devices` (keyed by driver, pool, device, share id). */
export interface AllocatedDeviceStatus {
  driver: string;
  pool: string;
  device: string;
  shareID?: string;
  conditions?: Condition[];
  data?: unknown;
  networkData?: NetworkDeviceData;
}

/** A claim's status. */
export interface ResourceClaimStatus {
  allocation?: AllocationResult;
  reservedFor?: ResourceClaimConsumerReference[];
  devices?: AllocatedDeviceStatus[];
  [k: string]: unknown;
}

/** A ResourceClaim. */
export interface ResourceClaim {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: ResourceClaimStatus;
}
