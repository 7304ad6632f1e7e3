import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { DRAResourceHealthClient as _v1_DRAResourceHealthClient, DRAResourceHealthDefinition as _v1_DRAResourceHealthDefinition } from './v1/DRAResourceHealth.js';
import type { DeviceHealth as _v1_DeviceHealth, DeviceHealth__Output as _v1_DeviceHealth__Output } from './v1/DeviceHealth.js';
import type { DeviceIdentifier as _v1_DeviceIdentifier, DeviceIdentifier__Output as _v1_DeviceIdentifier__Output } from './v1/DeviceIdentifier.js';
import type { NodeWatchResourcesRequest as _v1_NodeWatchResourcesRequest, NodeWatchResourcesRequest__Output as _v1_NodeWatchResourcesRequest__Output } from './v1/NodeWatchResourcesRequest.js';
import type { NodeWatchResourcesResponse as _v1_NodeWatchResourcesResponse, NodeWatchResourcesResponse__Output as _v1_NodeWatchResourcesResponse__Output } from './v1/NodeWatchResourcesResponse.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  v1: {
    DRAResourceHealth: SubtypeConstructor<typeof grpc.Client, _v1_DRAResourceHealthClient> & { service: _v1_DRAResourceHealthDefinition }
    DeviceHealth: MessageTypeDefinition<_v1_DeviceHealth, _v1_DeviceHealth__Output>
    DeviceIdentifier: MessageTypeDefinition<_v1_DeviceIdentifier, _v1_DeviceIdentifier__Output>
    HealthStatus: EnumTypeDefinition
    NodeWatchResourcesRequest: MessageTypeDefinition<_v1_NodeWatchResourcesRequest, _v1_NodeWatchResourcesRequest__Output>
    NodeWatchResourcesResponse: MessageTypeDefinition<_v1_NodeWatchResourcesResponse, _v1_NodeWatchResourcesResponse__Output>
  }
}

