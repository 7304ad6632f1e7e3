// Original file: proto/dra-health/v1/api.proto

export const HealthStatus = {
  UNKNOWN: 'UNKNOWN',
  HEALTHY: 'HEALTHY',
  UNHEALTHY: 'UNHEALTHY',
} as const;

export type HealthStatus =
  | 'UNKNOWN'
  | 0
  | 'HEALTHY'
  | 1
  | 'UNHEALTHY'
  | 2

export type HealthStatus__Output = typeof HealthStatus[keyof typeof HealthStatus]
