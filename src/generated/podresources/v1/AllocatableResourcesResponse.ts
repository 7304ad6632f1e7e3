// Original file: proto/podresources/v1/api.proto

import type { ContainerDevices as _v1_ContainerDevices, ContainerDevices__Output as _v1_ContainerDevices__Output } from '../v1/ContainerDevices.js';
import type { ContainerMemory as _v1_ContainerMemory, ContainerMemory__Output as _v1_ContainerMemory__Output } from '../v1/ContainerMemory.js';
import type { Long } from '@grpc/proto-loader';

export interface AllocatableResourcesResponse {
  'devices'?: (_v1_ContainerDevices)[];
  'cpuIds'?: (number | string | Long)[];
  'memory'?: (_v1_ContainerMemory)[];
}

export interface AllocatableResourcesResponse__Output {
  'devices': (_v1_ContainerDevices__Output)[];
  'cpuIds': (string)[];
  'memory': (_v1_ContainerMemory__Output)[];
}
