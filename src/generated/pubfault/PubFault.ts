// Original file: proto/pubfault/api.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { PublicFaultRequest as _PublicFaultRequest, PublicFaultRequest__Output as _PublicFaultRequest__Output } from './PublicFaultRequest.js';
import type { RespStatus as _RespStatus, RespStatus__Output as _RespStatus__Output } from './RespStatus.js';

export interface PubFaultClient extends grpc.Client {
  SendPublicFault(argument: _PublicFaultRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  SendPublicFault(argument: _PublicFaultRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  SendPublicFault(argument: _PublicFaultRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  SendPublicFault(argument: _PublicFaultRequest, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  sendPublicFault(argument: _PublicFaultRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  sendPublicFault(argument: _PublicFaultRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  sendPublicFault(argument: _PublicFaultRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  sendPublicFault(argument: _PublicFaultRequest, callback: grpc.requestCallback<_RespStatus__Output>): grpc.ClientUnaryCall;
  
}

export interface PubFaultHandlers extends grpc.UntypedServiceImplementation {
  SendPublicFault: grpc.handleUnaryCall<_PublicFaultRequest__Output, _RespStatus>;
  
}

export interface PubFaultDefinition extends grpc.ServiceDefinition {
  SendPublicFault: MethodDefinition<_PublicFaultRequest, _RespStatus, _PublicFaultRequest__Output, _RespStatus__Output>
}
