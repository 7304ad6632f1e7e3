// Original file: proto/deviceplugin/v1beta1/api.proto

import type { Long } from '@grpc/proto-loader';

export interface NUMANode {
  'ID'?: (number | string | Long);
}

export interface NUMANode__Output {
  'ID': (string);
}
