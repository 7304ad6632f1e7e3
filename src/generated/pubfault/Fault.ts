// Original file: proto/pubfault/api.proto

import type { PubFaultInfo as _PubFaultInfo, PubFaultInfo__Output as _PubFaultInfo__Output } from './PubFaultInfo.js';
import type { Long } from '@grpc/proto-loader';

export interface Fault {
  'faultId'?: (string);
  'faultType'?: (string);
  'faultCode'?: (string);
  'faultTime'?: (number | string | Long);
  'assertion'?: (string);
  'faultLocation'?: ({[key: string]: string});
  'influence'?: (_PubFaultInfo)[];
  'description'?: (string);
}

export interface Fault__Output {
  'faultId': (string);
  'faultType': (string);
  'faultCode': (string);
  'faultTime': (string);
  'assertion': (string);
  'faultLocation': ({[key: string]: string});
  'influence': (_PubFaultInfo__Output)[];
  'description': (string);
}
