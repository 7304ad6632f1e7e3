/**
 * A minimal device plugin (deviceplugin v1beta1 over a Unix socket) that records the calls it gets, for tests that
 * drive a kubelet (the simulator, or the real one of test/k8s) without the agent: two devices `d0`, `d1`, Healthy;
 * GetDevicePluginOptions can be made to fail; ListAndWatch streams can be ended.
 */
import * as grpc from '@grpc/grpc-js';
import { loadDevicePluginProto } from '../../src/kubelet/proto.js';

/** Options of {@link startFakeDevicePlugin}. */
export interface FakeDevicePluginOptions {
  /** When set, GetDevicePluginOptions fails with FAILED_PRECONDITION and this text. */
  readonly failOptions?: string;
  /** Device IDs (default `d0`, `d1`). */
  readonly devices?: readonly string[];
}

/** A running fake plugin. */
export interface FakeDevicePlugin {
  /** Names of the RPCs received, in order. */
  readonly calls: string[];
  /** Ends every open ListAndWatch stream (the plugin keeps serving). */
  endStreams(): void;
  /** Ends the streams and stops serving. */
  close(): Promise<void>;
}

/** The RegisterRequest of a fake plugin at `endpoint` (a file name in kubelet's folder). */
export function fakeRegisterRequest(endpoint: string, resourceName = 'example.com/dev'): object {
  return { version: 'v1beta1', endpoint, resourceName, options: { getPreferredAllocationAvailable: true } };
}

/** Serves a fake plugin on `socket`. */
export async function startFakeDevicePlugin(
  socket: string,
  o: FakeDevicePluginOptions = {},
): Promise<FakeDevicePlugin> {
  const dp = loadDevicePluginProto();
  const calls: string[] = [];
  const streams: grpc.ServerWritableStream<unknown, unknown>[] = [];
  const server = new grpc.Server();
  server.addService(dp.DevicePlugin.service, {
    GetDevicePluginOptions: (_call: unknown, cb: grpc.sendUnaryData<object>) => {
      calls.push('GetDevicePluginOptions');
      if (o.failOptions) cb({ code: grpc.status.FAILED_PRECONDITION, details: o.failOptions });
      else cb(null, { preStartRequired: false, getPreferredAllocationAvailable: true });
    },
    ListAndWatch: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      calls.push('ListAndWatch');
      streams.push(call);
      call.write({ devices: (o.devices ?? ['d0', 'd1']).map((ID) => ({ ID, health: 'Healthy' })) });
    },
    Allocate: (
      call: grpc.ServerUnaryCall<{ containerRequests: unknown[] }, unknown>,
      cb: grpc.sendUnaryData<object>,
    ) => {
      calls.push('Allocate');
      cb(null, { containerResponses: call.request.containerRequests.map(() => ({})) });
    },
    // the first `allocationSize` of the available devices
    GetPreferredAllocation: (
      call: grpc.ServerUnaryCall<
        { containerRequests: { availableDeviceIDs: string[]; allocationSize: number }[] },
        unknown
      >,
      cb: grpc.sendUnaryData<object>,
    ) => {
      calls.push('GetPreferredAllocation');
      cb(null, {
        containerResponses: call.request.containerRequests.map((r) => ({
          deviceIDs: [...r.availableDeviceIDs].sort().slice(0, r.allocationSize),
        })),
      });
    },
    PreStartContainer: (_call: unknown, cb: grpc.sendUnaryData<object>) => {
      calls.push('PreStartContainer');
      cb(null, {});
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  const endStreams = (): void => {
    for (const st of streams.splice(0)) st.end();
  };
  return {
    calls,
    endStreams,
    close: () =>
      new Promise<void>((resolve) => {
        endStreams();
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 1000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
