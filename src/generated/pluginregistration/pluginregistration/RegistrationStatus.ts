// Original file: proto/pluginregistration/v1/api.proto


export interface RegistrationStatus {
  'pluginRegistered'?: (boolean);
  'error'?: (string);
}

export interface RegistrationStatus__Output {
  'pluginRegistered': (boolean);
  'error': (string);
}
