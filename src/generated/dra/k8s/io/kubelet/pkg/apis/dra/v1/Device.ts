// Original file: proto/dra/v1/api.proto


export interface Device {
  'requestNames'?: (string)[];
  'poolName'?: (string);
  'deviceName'?: (string);
  'cdiDeviceIds'?: (string)[];
  'shareId'?: (string);
  '_shareId'?: "shareId";
}

export interface Device__Output {
  'requestNames': (string)[];
  'poolName': (string);
  'deviceName': (string);
  'cdiDeviceIds': (string)[];
  'shareId'?: (string);
  '_shareId'?: "shareId";
}
