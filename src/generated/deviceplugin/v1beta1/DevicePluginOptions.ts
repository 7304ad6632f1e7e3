// Original file: proto/deviceplugin/v1beta1/api.proto


export interface DevicePluginOptions {
  'preStartRequired'?: (boolean);
  'getPreferredAllocationAvailable'?: (boolean);
}

export interface DevicePluginOptions__Output {
  'preStartRequired': (boolean);
  'getPreferredAllocationAvailable': (boolean);
}
