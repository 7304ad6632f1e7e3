// Original file: proto/dra-health/v1/api.proto


export interface NodeWatchResourcesRequest {
}

export interface NodeWatchResourcesRequest__Output {
}
