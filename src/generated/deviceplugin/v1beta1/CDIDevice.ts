// Original file: proto/deviceplugin/v1beta1/api.proto


export interface CDIDevice {
  'name'?: (string);
}

export interface CDIDevice__Output {
  'name': (string);
}
