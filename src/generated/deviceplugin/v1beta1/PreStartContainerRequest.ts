// Original file: proto/deviceplugin/v1beta1/api.proto


export interface PreStartContainerRequest {
  'devicesIds'?: (string)[];
}

export interface PreStartContainerRequest__Output {
  'devicesIds': (string)[];
}
