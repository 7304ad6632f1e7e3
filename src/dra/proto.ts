/**
 * The kubelet's DRA plugin APIs at Kubernetes 1.37 (real-cluster.md, issue [DRA] item 1), built from the JSON
 * descriptors of src/generated/descriptors.ts (`npm run gen:descriptors` from `proto/`) with the loader options of
 * `gen:proto:dra`: plugin registration `pluginregistration` (the plugin watcher of `<root-dir>/plugins_registry`),
 * `DRAPlugin` v1 (NodePrepareResources / NodeUnprepareResources) and `DRAResourceHealth` v1 (NodeWatchResources,
 * KEP-4680). The names kubelet checks are constants here.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { DRA_DRIVER } from '../core/dra-devices.js';
import { DRA_DESCRIPTOR, DRA_HEALTH_DESCRIPTOR, REGISTRATION_DESCRIPTOR } from '../generated/descriptors.js';
import type { ProtoGrpcType as DraProto } from '../generated/dra/api.js';
import type { ProtoGrpcType as DraHealthProto } from '../generated/drahealth/api.js';
import type { ProtoGrpcType as RegistrationProto } from '../generated/pluginregistration/api.js';
import { LOADER_OPTIONS } from '../kubelet/proto.js';

/** `PluginInfo.type` of a DRA plugin (k8s.io/kubelet pluginregistration/v1 `DRAPlugin`). */
export const DRA_PLUGIN_TYPE = 'DRAPlugin';
/**
 * The gRPC services the plugin serves, as kubelet reads them from `supported_versions` (`<proto package's last
 * element>.<service>`: k8s.io/kubelet dra/v1 `DRAPluginService`, dra-health/v1 `DRAResourceHealthService`). kubelet
 * 1.37 picks the first DRAPlugin service it knows and, when listed, the health service.
 */
export const DRA_PLUGIN_SERVICE = 'v1.DRAPlugin';
export const DRA_HEALTH_SERVICE = 'v1.DRAResourceHealth';

/** Socket of the registration server in the registry folder (kubeletplugin's default `<driver>-reg.sock`). */
export const REGISTRATION_SOCKET = `${DRA_DRIVER}-reg.sock`;
/** The driver's service socket `<plugins dir>/<driver>/dra.sock` (kubeletplugin's default). */
export const DRA_SOCKET = 'dra.sock';

/** The loaded DRA v1 package. */
export type DraPackage = DraProto['k8s']['io']['kubelet']['pkg']['apis']['dra']['v1'];
/** The loaded dra-health v1 package. */
export type DraHealthPackage = DraHealthProto['v1'];
/** The loaded pluginregistration package. */
export type RegistrationPackage = RegistrationProto['pluginregistration'];

/** The three packages, each parsed once by {@link loadDraProtos}; callers keep the result. */
export interface DraProtos {
  readonly dra: DraPackage;
  readonly health: DraHealthPackage;
  readonly registration: RegistrationPackage;
}

/** Builds the three packages. */
export function loadDraProtos(): DraProtos {
  const load = <T>(json: Record<string, unknown>): T =>
    grpc.loadPackageDefinition(protoLoader.fromJSON(json, LOADER_OPTIONS)) as T;
  return {
    dra: load<DraProto>(DRA_DESCRIPTOR).k8s.io.kubelet.pkg.apis.dra.v1,
    health: load<DraHealthProto>(DRA_HEALTH_DESCRIPTOR).v1,
    registration: load<RegistrationProto>(REGISTRATION_DESCRIPTOR).pluginregistration,
  };
}
