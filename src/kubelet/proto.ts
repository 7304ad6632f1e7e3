/**
 * The kubelet protos the agent serves and calls, built from the JSON descriptors of src/generated/descriptors.ts
 * (`npm run gen:descriptors` from `proto/`; a tenth of the time parsing the `.proto` text takes at every start, issue
 * [P] item 3). The loader options must equal the `gen:proto` flags (toolchain pitfall 14).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { DEVICE_PLUGIN_DESCRIPTOR, POD_RESOURCES_DESCRIPTOR } from '../generated/descriptors.js';
import type { ProtoGrpcType as DevicePluginProto } from '../generated/deviceplugin/api.js';
import type { ProtoGrpcType as PodResourcesProto } from '../generated/podresources/api.js';

/** Same as the `gen:proto` flags: --longs=String --enums=String --defaults --oneofs. */
export const LOADER_OPTIONS: protoLoader.Options = { longs: String, enums: String, defaults: true, oneofs: true };

/** Device-plugin API version sent in Register. */
export const DEVICE_PLUGIN_VERSION = 'v1beta1';

/** The loaded `v1beta1` package (service constructors and definitions). */
export type DevicePluginPackage = DevicePluginProto['v1beta1'];
/** The loaded podresources `v1` package. */
export type PodResourcesPackage = PodResourcesProto['v1'];

/** Loads the device-plugin API (v1beta1). Each call builds it anew; callers keep the result. */
export function loadDevicePluginProto(): DevicePluginPackage {
  const def = protoLoader.fromJSON(DEVICE_PLUGIN_DESCRIPTOR, LOADER_OPTIONS);
  return (grpc.loadPackageDefinition(def) as unknown as DevicePluginProto).v1beta1;
}

/** Loads the pod-resources API (v1). */
export function loadPodResourcesProto(): PodResourcesPackage {
  const def = protoLoader.fromJSON(POD_RESOURCES_DESCRIPTOR, LOADER_OPTIONS);
  return (grpc.loadPackageDefinition(def) as unknown as PodResourcesProto).v1;
}
