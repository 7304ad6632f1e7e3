// Original file: proto/pubfault/api.proto

import type { Fault as _Fault, Fault__Output as _Fault__Output } from './Fault.js';
import type { Long } from '@grpc/proto-loader';

export interface PublicFaultRequest {
  'id'?: (string);
  'timestamp'?: (number | string | Long);
  'version'?: (string);
  'resource'?: (string);
  'faults'?: (_Fault)[];
}

export interface PublicFaultRequest__Output {
  'id': (string);
  'timestamp': (string);
  'version': (string);
  'resource': (string);
  'faults': (_Fault__Output)[];
}
