// Original file: proto/deviceplugin/v1beta1/api.proto


export interface Empty {
}

export interface Empty__Output {
}
