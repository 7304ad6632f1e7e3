// Original file: proto/dra-health/v1/api.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { NodeWatchResourcesRequest as _v1_NodeWatchResourcesRequest, NodeWatchResourcesRequest__Output as _v1_NodeWatchResourcesRequest__Output } from '../v1/NodeWatchResourcesRequest.js';
import type { NodeWatchResourcesResponse as _v1_NodeWatchResourcesResponse, NodeWatchResourcesResponse__Output as _v1_NodeWatchResourcesResponse__Output } from '../v1/NodeWatchResourcesResponse.js';

export interface DRAResourceHealthClient extends grpc.Client {
  NodeWatchResources(argument: _v1_NodeWatchResourcesRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1_NodeWatchResourcesResponse__Output>;
  NodeWatchResources(argument: _v1_NodeWatchResourcesRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1_NodeWatchResourcesResponse__Output>;
  nodeWatchResources(argument: _v1_NodeWatchResourcesRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1_NodeWatchResourcesResponse__Output>;
  nodeWatchResources(argument: _v1_NodeWatchResourcesRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1_NodeWatchResourcesResponse__Output>;
  
}

export interface DRAResourceHealthHandlers extends grpc.UntypedServiceImplementation {
  NodeWatchResources: grpc.handleServerStreamingCall<_v1_NodeWatchResourcesRequest__Output, _v1_NodeWatchResourcesResponse>;
  
}

export interface DRAResourceHealthDefinition extends grpc.ServiceDefinition {
  NodeWatchResources: MethodDefinition<_v1_NodeWatchResourcesRequest, _v1_NodeWatchResourcesResponse, _v1_NodeWatchResourcesRequest__Output, _v1_NodeWatchResourcesResponse__Output>
}
