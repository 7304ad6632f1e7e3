import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Claim as _k8s_io_kubelet_pkg_apis_dra_v1_Claim, Claim__Output as _k8s_io_kubelet_pkg_apis_dra_v1_Claim__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/Claim.js';
import type { DRAPluginClient as _k8s_io_kubelet_pkg_apis_dra_v1_DRAPluginClient, DRAPluginDefinition as _k8s_io_kubelet_pkg_apis_dra_v1_DRAPluginDefinition } from './k8s/io/kubelet/pkg/apis/dra/v1/DRAPlugin.js';
import type { Device as _k8s_io_kubelet_pkg_apis_dra_v1_Device, Device__Output as _k8s_io_kubelet_pkg_apis_dra_v1_Device__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/Device.js';
import type { NodePrepareResourceResponse as _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourceResponse, NodePrepareResourceResponse__Output as _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourceResponse__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/NodePrepareResourceResponse.js';
import type { NodePrepareResourcesRequest as _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesRequest, NodePrepareResourcesRequest__Output as _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesRequest__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/NodePrepareResourcesRequest.js';
import type { NodePrepareResourcesResponse as _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesResponse, NodePrepareResourcesResponse__Output as _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesResponse__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/NodePrepareResourcesResponse.js';
import type { NodeUnprepareResourceResponse as _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourceResponse, NodeUnprepareResourceResponse__Output as _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourceResponse__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/NodeUnprepareResourceResponse.js';
import type { NodeUnprepareResourcesRequest as _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesRequest, NodeUnprepareResourcesRequest__Output as _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesRequest__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/NodeUnprepareResourcesRequest.js';
import type { NodeUnprepareResourcesResponse as _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesResponse, NodeUnprepareResourcesResponse__Output as _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesResponse__Output } from './k8s/io/kubelet/pkg/apis/dra/v1/NodeUnprepareResourcesResponse.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  k8s: {
    io: {
      kubelet: {
        pkg: {
          apis: {
            dra: {
              v1: {
                Claim: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_Claim, _k8s_io_kubelet_pkg_apis_dra_v1_Claim__Output>
                DRAPlugin: SubtypeConstructor<typeof grpc.Client, _k8s_io_kubelet_pkg_apis_dra_v1_DRAPluginClient> & { service: _k8s_io_kubelet_pkg_apis_dra_v1_DRAPluginDefinition }
                Device: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_Device, _k8s_io_kubelet_pkg_apis_dra_v1_Device__Output>
                NodePrepareResourceResponse: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourceResponse, _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourceResponse__Output>
                NodePrepareResourcesRequest: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesRequest, _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesRequest__Output>
                NodePrepareResourcesResponse: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesResponse, _k8s_io_kubelet_pkg_apis_dra_v1_NodePrepareResourcesResponse__Output>
                NodeUnprepareResourceResponse: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourceResponse, _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourceResponse__Output>
                NodeUnprepareResourcesRequest: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesRequest, _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesRequest__Output>
                NodeUnprepareResourcesResponse: MessageTypeDefinition<_k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesResponse, _k8s_io_kubelet_pkg_apis_dra_v1_NodeUnprepareResourcesResponse__Output>
              }
            }
          }
        }
      }
    }
  }
}

