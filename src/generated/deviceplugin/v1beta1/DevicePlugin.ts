// Original file: proto/deviceplugin/v1beta1/api.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AllocateRequest as _v1beta1_AllocateRequest, AllocateRequest__Output as _v1beta1_AllocateRequest__Output } from '../v1beta1/AllocateRequest.js';
import type { AllocateResponse as _v1beta1_AllocateResponse, AllocateResponse__Output as _v1beta1_AllocateResponse__Output } from '../v1beta1/AllocateResponse.js';
import type { DevicePluginOptions as _v1beta1_DevicePluginOptions, DevicePluginOptions__Output as _v1beta1_DevicePluginOptions__Output } from '../v1beta1/DevicePluginOptions.js';
import type { Empty as _v1beta1_Empty, Empty__Output as _v1beta1_Empty__Output } from '../v1beta1/Empty.js';
import type { ListAndWatchResponse as _v1beta1_ListAndWatchResponse, ListAndWatchResponse__Output as _v1beta1_ListAndWatchResponse__Output } from '../v1beta1/ListAndWatchResponse.js';
import type { PreStartContainerRequest as _v1beta1_PreStartContainerRequest, PreStartContainerRequest__Output as _v1beta1_PreStartContainerRequest__Output } from '../v1beta1/PreStartContainerRequest.js';
import type { PreStartContainerResponse as _v1beta1_PreStartContainerResponse, PreStartContainerResponse__Output as _v1beta1_PreStartContainerResponse__Output } from '../v1beta1/PreStartContainerResponse.js';
import type { PreferredAllocationRequest as _v1beta1_PreferredAllocationRequest, PreferredAllocationRequest__Output as _v1beta1_PreferredAllocationRequest__Output } from '../v1beta1/PreferredAllocationRequest.js';
import type { PreferredAllocationResponse as _v1beta1_PreferredAllocationResponse, PreferredAllocationResponse__Output as _v1beta1_PreferredAllocationResponse__Output } from '../v1beta1/PreferredAllocationResponse.js';

export interface DevicePluginClient extends grpc.Client {
  Allocate(argument: _v1beta1_AllocateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  Allocate(argument: _v1beta1_AllocateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  Allocate(argument: _v1beta1_AllocateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  Allocate(argument: _v1beta1_AllocateRequest, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  allocate(argument: _v1beta1_AllocateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  allocate(argument: _v1beta1_AllocateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  allocate(argument: _v1beta1_AllocateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  allocate(argument: _v1beta1_AllocateRequest, callback: grpc.requestCallback<_v1beta1_AllocateResponse__Output>): grpc.ClientUnaryCall;
  
  GetDevicePluginOptions(argument: _v1beta1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  GetDevicePluginOptions(argument: _v1beta1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  GetDevicePluginOptions(argument: _v1beta1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  GetDevicePluginOptions(argument: _v1beta1_Empty, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  getDevicePluginOptions(argument: _v1beta1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  getDevicePluginOptions(argument: _v1beta1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  getDevicePluginOptions(argument: _v1beta1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  getDevicePluginOptions(argument: _v1beta1_Empty, callback: grpc.requestCallback<_v1beta1_DevicePluginOptions__Output>): grpc.ClientUnaryCall;
  
  GetPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  GetPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  GetPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  GetPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  getPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  getPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  getPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  getPreferredAllocation(argument: _v1beta1_PreferredAllocationRequest, callback: grpc.requestCallback<_v1beta1_PreferredAllocationResponse__Output>): grpc.ClientUnaryCall;
  
  ListAndWatch(argument: _v1beta1_Empty, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1beta1_ListAndWatchResponse__Output>;
  ListAndWatch(argument: _v1beta1_Empty, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1beta1_ListAndWatchResponse__Output>;
  listAndWatch(argument: _v1beta1_Empty, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1beta1_ListAndWatchResponse__Output>;
  listAndWatch(argument: _v1beta1_Empty, options?: grpc.CallOptions): grpc.ClientReadableStream<_v1beta1_ListAndWatchResponse__Output>;
  
  PreStartContainer(argument: _v1beta1_PreStartContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  PreStartContainer(argument: _v1beta1_PreStartContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  PreStartContainer(argument: _v1beta1_PreStartContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  PreStartContainer(argument: _v1beta1_PreStartContainerRequest, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  preStartContainer(argument: _v1beta1_PreStartContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  preStartContainer(argument: _v1beta1_PreStartContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  preStartContainer(argument: _v1beta1_PreStartContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  preStartContainer(argument: _v1beta1_PreStartContainerRequest, callback: grpc.requestCallback<_v1beta1_PreStartContainerResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface DevicePluginHandlers extends grpc.UntypedServiceImplementation {
  Allocate: grpc.handleUnaryCall<_v1beta1_AllocateRequest__Output, _v1beta1_AllocateResponse>;
  
  GetDevicePluginOptions: grpc.handleUnaryCall<_v1beta1_Empty__Output, _v1beta1_DevicePluginOptions>;
  
  GetPreferredAllocation: grpc.handleUnaryCall<_v1beta1_PreferredAllocationRequest__Output, _v1beta1_PreferredAllocationResponse>;
  
  ListAndWatch: grpc.handleServerStreamingCall<_v1beta1_Empty__Output, _v1beta1_ListAndWatchResponse>;
  
  PreStartContainer: grpc.handleUnaryCall<_v1beta1_PreStartContainerRequest__Output, _v1beta1_PreStartContainerResponse>;
  
}

export interface DevicePluginDefinition extends grpc.ServiceDefinition {
  Allocate: MethodDefinition<_v1beta1_AllocateRequest, _v1beta1_AllocateResponse, _v1beta1_AllocateRequest__Output, _v1beta1_AllocateResponse__Output>
  GetDevicePluginOptions: MethodDefinition<_v1beta1_Empty, _v1beta1_DevicePluginOptions, _v1beta1_Empty__Output, _v1beta1_DevicePluginOptions__Output>
  GetPreferredAllocation: MethodDefinition<_v1beta1_PreferredAllocationRequest, _v1beta1_PreferredAllocationResponse, _v1beta1_PreferredAllocationRequest__Output, _v1beta1_PreferredAllocationResponse__Output>
  ListAndWatch: MethodDefinition<_v1beta1_Empty, _v1beta1_ListAndWatchResponse, _v1beta1_Empty__Output, _v1beta1_ListAndWatchResponse__Output>
  PreStartContainer: MethodDefinition<_v1beta1_PreStartContainerRequest, _v1beta1_PreStartContainerResponse, _v1beta1_PreStartContainerRequest__Output, _v1beta1_PreStartContainerResponse__Output>
}
