// Original file: proto/dra-health/v1/api.proto

import type { DeviceHealth as _v1_DeviceHealth, DeviceHealth__Output as _v1_DeviceHealth__Output } from '../v1/DeviceHealth.js';

export interface NodeWatchResourcesResponse {
  'devices'?: (_v1_DeviceHealth)[];
}

export interface NodeWatchResourcesResponse__Output {
  'devices': (_v1_DeviceHealth__Output)[];
}
