// Original file: proto/dra-health/v1/api.proto

import type { DeviceIdentifier as _v1_DeviceIdentifier, DeviceIdentifier__Output as _v1_DeviceIdentifier__Output } from '../v1/DeviceIdentifier.js';
import type { HealthStatus as _v1_HealthStatus, HealthStatus__Output as _v1_HealthStatus__Output } from '../v1/HealthStatus.js';
import type { Long } from '@grpc/proto-loader';

export interface DeviceHealth {
  'device'?: (_v1_DeviceIdentifier | null);
  'health'?: (_v1_HealthStatus);
  'lastUpdatedTime'?: (number | string | Long);
  'healthCheckTimeoutSeconds'?: (number | string | Long);
  'message'?: (string);
}

export interface DeviceHealth__Output {
  'device': (_v1_DeviceIdentifier__Output | null);
  'health': (_v1_HealthStatus__Output);
  'lastUpdatedTime': (string);
  'healthCheckTimeoutSeconds': (string);
  'message': (string);
}
