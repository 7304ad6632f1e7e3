// Original file: proto/podresources/v1/api.proto

import type { TopologyInfo as _v1_TopologyInfo, TopologyInfo__Output as _v1_TopologyInfo__Output } from '../v1/TopologyInfo.js';

export interface ContainerDevices {
  'resourceName'?: (string);
  'deviceIds'?: (string)[];
  'topology'?: (_v1_TopologyInfo | null);
}

export interface ContainerDevices__Output {
  'resourceName': (string);
  'deviceIds': (string)[];
  'topology': (_v1_TopologyInfo__Output | null);
}
