/**
 * Runtime loading of `proto/pubfault/api.proto` (spec cluster-faults.md §2.11), located from PROJECT_ROOT so it
 * works from `src/` under ts-jest and from `dist/`. The server decodes requests itself (`request-decode.ts`); the
 * loaded definition gives it the method and the response serializer, and the tests their client.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { PROJECT_ROOT } from '../../core/paths.js';
import type { ProtoGrpcType } from '../../generated/pubfault/api.js';

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
