import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { NodeDeviceView } from '../../../src/cluster/device-view.js';
import { createPublicFaultService, type PublicFaultService } from '../../../src/cluster/public-fault/index.js';
import { loadPubFaultProto } from '../../../src/cluster/public-fault/proto.js';
import type { PubFaultClient } from '../../../src/generated/pubfault/PubFault.js';
import type { PublicFaultRequest } from '../../../src/generated/pubfault/PublicFaultRequest.js';
import type { RespStatus__Output } from '../../../src/generated/pubfault/RespStatus.js';
import { centerKube } from '../helpers.js';
import { KubeApiStandIn } from '../../../src/sim/kube-api.js';
import { until } from './helpers.js';
import { recordingLogger, SHIPPED_CONFIG_FILE, T0_MS } from './fixtures.js';

let api: KubeApiStandIn;
let service: PublicFaultService;
let registry: Registry;
let client: PubFaultClient | undefined;

function view(node: string): NodeDeviceView {
  return {
    node,
    deviceType: 'Ascend910',
    deviceList: {
      'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-3',
      'huawei.com/Ascend910-Unhealthy': '',
    },
    updateTime: 1,
    superPodId: -2,
    serverIndex: -2,
    rackId: -2,
    faults: new Map(),
  };
}

function request(over: Partial<PublicFaultRequest> = {}): PublicFaultRequest {
  return {
    id: 'msg.20260301-0002',
    timestamp: String(T0_MS),
    version: '1.0',
    resource: 'pingmesh',
    faults: [
      {
        faultId: 'pm-link-42',
        faultType: 'Network',
        faultCode: '220001001',
        faultTime: String(T0_MS - 1000),
        assertion: 'occur',
        influence: [{ nodeName: 'node-2', deviceIds: [3] }],
      },
    ],
    ...over,
  };
}

async function start(): Promise<void> {
  registry = new Registry();
  service = createPublicFaultService({
    kube: centerKube(api),
    grpcAddress: '127.0.0.1:0',
    configFile: SHIPPED_CONFIG_FILE,
    stateNamespace: 'cluster-system',
    logger: recordingLogger(),
    registry,
    statisticsIntervalMs: 1,
  });
  await service.start();
  client = new (loadPubFaultProto().PubFault)(service.grpcAddress!, grpc.credentials.createInsecure());
}

function send(req: PublicFaultRequest): Promise<RespStatus__Output> {
  return new Promise((resolve, reject) => client!.SendPublicFault(req, (e, r) => (e ? reject(e) : resolve(r!))));
}

beforeEach(async () => {
  api = await KubeApiStandIn.start();
});

afterEach(async () => {
  client?.close();
  client = undefined;
  await service.stop();
  await api.stop();
});

describe('public-fault service (contract with the fault center)', () => {
  test('§2.9 a fault sent over gRPC reaches the device view through the processor', async () => {
    await start();
    await send(request());
    const views = new Map([['node-2', view('node-2')]]);
    service.processor.process(views, Date.now());
    expect(views.get('node-2')!.deviceList['huawei.com/Ascend910-Unhealthy']).toBe('Ascend910-3');
  });

  test('onChange fires after an accepted fault', async () => {
    await start();
    let calls = 0;
    service.onChange(() => void calls++);
    await send(request());
    expect(calls).toBe(1);
  });

  test('§2.10 an accepted fault is persisted in statistic-fault-info', async () => {
    await start();
    await send(request());
    const core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    let data: Record<string, string> | undefined;
    await until(() => {
      void core
        .readNamespacedConfigMap({ name: 'statistic-fault-info', namespace: 'cluster-system' })
        .then((cm) => (data = cm.data))
        .catch(() => undefined);
      return data?.FaultNum === '{"publicFaultNum":1}';
    });
    expect(data?.PublicFaults).toContain('"node-2":[{"resource":"pingmesh","devIds":[3],"faultId":"pm-link-42"');
  });

  test('§2.10 a restart restores the faults', async () => {
    await start();
    await send(request());
    await until(
      () => api.writeCount({ resource: 'configmaps', namespace: 'cluster-system', name: 'statistic-fault-info' }) > 0,
    );
    client?.close();
    await service.stop();
    await start();
    expect(service.size).toBe(1);
  });

  test('§2.10 corrupt stored state: the service still starts and serves', async () => {
    await api
      .kubeConfig()
      .makeApiClient(k8s.CoreV1Api)
      .createNamespacedConfigMap({
        namespace: 'cluster-system',
        body: { metadata: { name: 'statistic-fault-info' }, data: { PublicFaults: 'garbage' } },
      });
    await start();
    expect([service.size, (await send(request())).code]).toEqual([0, 0]);
  });

  test('§2.5 a nodeSN resolves through the Node annotation product-serial-number', async () => {
    await api
      .kubeConfig()
      .makeApiClient(k8s.CoreV1Api)
      .createNode({
        body: { metadata: { name: 'node-7', annotations: { 'product-serial-number': '2102313ABCD' } } },
      });
    await start();
    const req = request();
    req.faults![0]!.influence = [{ nodeSN: '2102313ABCD', deviceIds: [1] }];
    await send(req);
    const views = new Map([['node-7', view('node-7')]]);
    service.processor.process(views, Date.now());
    expect(views.get('node-7')!.faults.get('Ascend910-1')?.length).toBe(1);
  });

  test('§2.1 a public-fault ConfigMap is collected by the running service', async () => {
    await start();
    await api
      .kubeConfig()
      .makeApiClient(k8s.CoreV1Api)
      .createNamespacedConfigMap({
        namespace: 'default',
        body: {
          metadata: { name: 'ccae-fault', labels: { 'mc-consumer-publicfault': 'true' } },
          data: {
            PublicFault: JSON.stringify({
              ...request({ resource: 'CCAE' }),
              timestamp: T0_MS,
              faults: [{ ...request().faults![0], faultTime: T0_MS }],
            }),
          },
        },
      });
    await until(() => service.size === 1);
    expect(service.size).toBe(1);
  });

  test('issue [G] item 3: rejections are exported as a metric by reason', async () => {
    await start();
    await send(request({ resource: 'nobody' }));
    expect(await registry.getSingleMetricAsString('ascend_fault_center_public_fault_rejections_total')).toContain(
      'ascend_fault_center_public_fault_rejections_total{source="grpc",reason="unknown-sender"} 1',
    );
  });
});
