import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Fault as _Fault, Fault__Output as _Fault__Output } from './Fault.js';
import type { PubFaultClient as _PubFaultClient, PubFaultDefinition as _PubFaultDefinition } from './PubFault.js';
import type { PubFaultInfo as _PubFaultInfo, PubFaultInfo__Output as _PubFaultInfo__Output } from './PubFaultInfo.js';
import type { PublicFaultRequest as _PublicFaultRequest, PublicFaultRequest__Output as _PublicFaultRequest__Output } from './PublicFaultRequest.js';
import type { RespStatus as _RespStatus, RespStatus__Output as _RespStatus__Output } from './RespStatus.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  Fault: MessageTypeDefinition<_Fault, _Fault__Output>
  PubFault: SubtypeConstructor<typeof grpc.Client, _PubFaultClient> & { service: _PubFaultDefinition }
  PubFaultInfo: MessageTypeDefinition<_PubFaultInfo, _PubFaultInfo__Output>
  PublicFaultRequest: MessageTypeDefinition<_PublicFaultRequest, _PublicFaultRequest__Output>
  RespStatus: MessageTypeDefinition<_RespStatus, _RespStatus__Output>
}

