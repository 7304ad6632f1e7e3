// Original file: proto/dra-health/v1/api.proto


export interface DeviceIdentifier {
  'poolName'?: (string);
  'deviceName'?: (string);
}

export interface DeviceIdentifier__Output {
  'poolName': (string);
  'deviceName': (string);
}
