// Original file: proto/podresources/v1/api.proto

import type { ClaimResource as _v1_ClaimResource, ClaimResource__Output as _v1_ClaimResource__Output } from '../v1/ClaimResource.js';

export interface DynamicResource {
  'claimName'?: (string);
  'claimNamespace'?: (string);
  'claimResources'?: (_v1_ClaimResource)[];
}

export interface DynamicResource__Output {
  'claimName': (string);
  'claimNamespace': (string);
  'claimResources': (_v1_ClaimResource__Output)[];
}
