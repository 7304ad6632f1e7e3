/**
 * Runtime loading of the kubelet protos from `proto/` (located from PROJECT_ROOT, so it works from `src/` under
 * ts-jest and from `dist/`). The loader options must equal the `gen:proto` flags (toolchain pitfall 14).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { PROJECT_ROOT } from '../core/paths.js';
import type { ProtoGrpcType as DevicePluginProto } from '../generated/deviceplugin/api.js';
import type { ProtoGrpcType as PodResourcesProto } from '../generated/podresources/api.js';

/** Same as the `gen:proto` flags: --longs=String --enums=String --defaults --oneofs. */
export const LOADER_OPTIONS: protoLoader.Options = { longs: String, enums: String, defaults: true, oneofs: true };

export const DEVICE_PLUGIN_PROTO = path.join(PROJECT_ROOT, 'proto', 'deviceplugin', 'v1beta1', 'api.proto');
export const POD_RESOURCES_PROTO = path.join(PROJECT_ROOT, 'proto', 'podresources', 'v1', 'api.proto');

/** Device-plugin API version sent in Register. */
export const DEVICE_PLUGIN_VERSION = 'v1beta1';

/** The loaded `v1beta1` package (service constructors and definitions). */
export type DevicePluginPackage = DevicePluginProto['v1beta1'];
/** The loaded podresources `v1` package. */
export type PodResourcesPackage = PodResourcesProto['v1'];

/** Loads the device-plugin API (v1beta1). Each call parses the file; callers keep the result. */
export function loadDevicePluginProto(): DevicePluginPackage {
  const def = protoLoader.loadSync(DEVICE_PLUGIN_PROTO, LOADER_OPTIONS);
  return (grpc.loadPackageDefinition(def) as unknown as DevicePluginProto).v1beta1;
}

/** Loads the pod-resources API (v1). */
export function loadPodResourcesProto(): PodResourcesPackage {
  const def = protoLoader.loadSync(POD_RESOURCES_PROTO, LOADER_OPTIONS);
  return (grpc.loadPackageDefinition(def) as unknown as PodResourcesProto).v1;
}
