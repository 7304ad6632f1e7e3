// Original file: proto/deviceplugin/v1beta1/api.proto


export interface DeviceSpec {
  'containerPath'?: (string);
  'hostPath'?: (string);
  'permissions'?: (string);
}

export interface DeviceSpec__Output {
  'containerPath': (string);
  'hostPath': (string);
  'permissions': (string);
}
