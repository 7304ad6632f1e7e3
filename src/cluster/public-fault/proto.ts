/**
 * Runtime loading of `proto/pubfault/api.proto` (spec cluster-faults.md §2.11), located from PROJECT_ROOT so it
 * works from `src/` under ts-jest and from `dist/`, and the mapping of a request to the collector's message type.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { PROJECT_ROOT } from '../../dcmi/bindings.js';
import type { ProtoGrpcType } from '../../generated/pubfault/api.js';
import type { PublicFaultRequest__Output } from '../../generated/pubfault/PublicFaultRequest.js';
import type { PublicFaultMessage } from './types.js';

/** Same as the `gen:proto:pubfault` flags: --longs=String --enums=String --defaults --oneofs. */
export const PUBFAULT_LOADER_OPTIONS: protoLoader.Options = {
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

export const PUBFAULT_PROTO = path.join(PROJECT_ROOT, 'proto', 'pubfault', 'api.proto');

/** The full method name, as in upstream's global-limit error (§2.4). */
export const SEND_PUBLIC_FAULT_METHOD = '/PubFault/SendPublicFault';

/** Loads the proto (no package: `PubFault` is at the root). Each call parses the file; callers keep the result. */
export function loadPubFaultProto(): ProtoGrpcType {
  return grpc.loadPackageDefinition(
    protoLoader.loadSync(PUBFAULT_PROTO, PUBFAULT_LOADER_OPTIONS),
  ) as unknown as ProtoGrpcType;
}

/** int64 fields arrive as decimal strings (`longs: String`). */
function int64(s: string | number): number {
  return typeof s === 'number' ? s : Number(s);
}

/** A decoded request as the collector's message (proto3 defaults are Go's zero values). */
export function messageFromRequest(req: PublicFaultRequest__Output): PublicFaultMessage {
  return {
    id: req.id,
    timestamp: int64(req.timestamp),
    version: req.version,
    resource: req.resource,
    faults: req.faults.map((f) => ({
      faultId: f.faultId,
      faultType: f.faultType,
      faultCode: f.faultCode,
      faultTime: int64(f.faultTime),
      assertion: f.assertion,
      // proto3 cannot tell an empty map from an absent one; both validate the same (§2.5 "optional")
      faultLocation: { ...f.faultLocation },
      influence: f.influence.map((i) => ({ nodeName: i.nodeName, nodeSN: i.nodeSN, deviceIds: [...i.deviceIds] })),
      description: f.description,
    })),
  };
}
