// Original file: proto/podresources/v1/api.proto

import type { TopologyInfo as _v1_TopologyInfo, TopologyInfo__Output as _v1_TopologyInfo__Output } from '../v1/TopologyInfo.js';
import type { Long } from '@grpc/proto-loader';

export interface ContainerMemory {
  'memoryType'?: (string);
  'size'?: (number | string | Long);
  'topology'?: (_v1_TopologyInfo | null);
}

export interface ContainerMemory__Output {
  'memoryType': (string);
  'size': (string);
  'topology': (_v1_TopologyInfo__Output | null);
}
