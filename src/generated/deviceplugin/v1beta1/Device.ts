// Original file: proto/deviceplugin/v1beta1/api.proto

import type { TopologyInfo as _v1beta1_TopologyInfo, TopologyInfo__Output as _v1beta1_TopologyInfo__Output } from '../v1beta1/TopologyInfo.js';

export interface Device {
  'ID'?: (string);
  'health'?: (string);
  'topology'?: (_v1beta1_TopologyInfo | null);
}

export interface Device__Output {
  'ID': (string);
  'health': (string);
  'topology': (_v1beta1_TopologyInfo__Output | null);
}
