// Original file: proto/podresources/v1/api.proto

import type { ContainerDevices as _v1_ContainerDevices, ContainerDevices__Output as _v1_ContainerDevices__Output } from '../v1/ContainerDevices.js';
import type { ContainerMemory as _v1_ContainerMemory, ContainerMemory__Output as _v1_ContainerMemory__Output } from '../v1/ContainerMemory.js';
import type { DynamicResource as _v1_DynamicResource, DynamicResource__Output as _v1_DynamicResource__Output } from '../v1/DynamicResource.js';
import type { Long } from '@grpc/proto-loader';

export interface ContainerResources {
  'name'?: (string);
  'devices'?: (_v1_ContainerDevices)[];
  'cpuIds'?: (number | string | Long)[];
  'memory'?: (_v1_ContainerMemory)[];
  'dynamicResources'?: (_v1_DynamicResource)[];
}

export interface ContainerResources__Output {
  'name': (string);
  'devices': (_v1_ContainerDevices__Output)[];
  'cpuIds': (string)[];
  'memory': (_v1_ContainerMemory__Output)[];
  'dynamicResources': (_v1_DynamicResource__Output)[];
}
