// Original file: proto/deviceplugin/v1beta1/api.proto

import type { ContainerPreferredAllocationResponse as _v1beta1_ContainerPreferredAllocationResponse, ContainerPreferredAllocationResponse__Output as _v1beta1_ContainerPreferredAllocationResponse__Output } from '../v1beta1/ContainerPreferredAllocationResponse.js';

export interface PreferredAllocationResponse {
  'containerResponses'?: (_v1beta1_ContainerPreferredAllocationResponse)[];
}

export interface PreferredAllocationResponse__Output {
  'containerResponses': (_v1beta1_ContainerPreferredAllocationResponse__Output)[];
}
