// Original file: proto/pubfault/api.proto


export interface PubFaultInfo {
  'nodeName'?: (string);
  'nodeSN'?: (string);
  'deviceIds'?: (number)[];
}

export interface PubFaultInfo__Output {
  'nodeName': (string);
  'nodeSN': (string);
  'deviceIds': (number)[];
}
