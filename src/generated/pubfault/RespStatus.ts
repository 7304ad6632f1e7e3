// Original file: proto/pubfault/api.proto


export interface RespStatus {
  'code'?: (number);
  'info'?: (string);
}

export interface RespStatus__Output {
  'code': (number);
  'info': (string);
}
