// Original file: proto/deviceplugin/v1beta1/api.proto

import type { NUMANode as _v1beta1_NUMANode, NUMANode__Output as _v1beta1_NUMANode__Output } from '../v1beta1/NUMANode.js';

export interface TopologyInfo {
  'nodes'?: (_v1beta1_NUMANode)[];
}

export interface TopologyInfo__Output {
  'nodes': (_v1beta1_NUMANode__Output)[];
}
