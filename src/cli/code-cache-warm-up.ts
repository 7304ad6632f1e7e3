/**
 * Build time only (scripts/bundle-agent.ts; docs/operations.md "Start-up"): the kubelet exchange the agent makes at
 * every start, played once on a private socket by the composition root's own grpc-js and device-plugin proto before
 * the code cache is taken, so that the cache also holds the functions that exchange compiles (a gRPC server and
 * client, Register, GetDevicePluginOptions, the first ListAndWatch answer) and the agent does not compile them
 * between its Register and kubelet's first ListAndWatch (issue [P] item 3).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as Grpc from '@grpc/grpc-js';
import type { DevicePluginPackage } from '../kubelet/proto.js';

/** What the warm-up needs of the chunk's exports. */
interface ChunkExports {
  /** The chunk's grpc-js (esbuild's CommonJS wrapper: calling it returns the module). */
  readonly require_src: () => typeof Grpc;
  readonly loadDevicePluginProto: () => DevicePluginPackage;
  readonly DEVICE_PLUGIN_VERSION: string;
}

/** Plays Register → GetDevicePluginOptions → ListAndWatch (one answer) over a unix socket in a temp folder. */
export async function warmUpKubeletExchange(exports: Record<string, unknown>): Promise<void> {
  const x = exports as unknown as ChunkExports;
  const grpc = x.require_src();
  const dp = x.loadDevicePluginProto();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'code-cache-warm-up-'));
  const server = new grpc.Server();
  const clients: Grpc.Client[] = [];
  try {
    const sock = `unix://${path.join(dir, 'plugin.sock')}`;
    server.addService(dp.DevicePlugin.service, {
      GetDevicePluginOptions: (_call: unknown, cb: (e: null, v: object) => void) => cb(null, {}),
      ListAndWatch: (call: Grpc.ServerWritableStream<object, object>) => {
        call.write({ devices: [{ ID: 'Ascend910-0', health: 'Healthy' }] });
        call.end();
      },
    });
    server.addService(dp.Registration.service, {
      Register: (_call: unknown, cb: (e: null, v: object) => void) => cb(null, {}),
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(sock, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    // grpc-js takes a call's deadline only as a wall-clock time and turns it into a relative timer as the call
    // starts; made just before each call, it is a 5 s timeout (a clock step in between is the only exposure)
    const deadline = (): number => Date.now() + 5000;
    const reg = new dp.Registration(sock, grpc.credentials.createInsecure());
    const plugin = new dp.DevicePlugin(sock, grpc.credentials.createInsecure());
    clients.push(reg, plugin);
    const request = { version: x.DEVICE_PLUGIN_VERSION, endpoint: 'plugin.sock', resourceName: 'huawei.com/Ascend910' };
    await new Promise<void>((resolve, reject) =>
      reg.Register(request, { deadline: deadline() }, (err) => (err ? reject(err) : resolve())),
    );
    await new Promise<void>((resolve, reject) =>
      plugin.GetDevicePluginOptions({}, { deadline: deadline() }, (err) => (err ? reject(err) : resolve())),
    );
    await new Promise<void>((resolve, reject) => {
      const stream = plugin.ListAndWatch({}, { deadline: deadline() });
      stream.on('data', () => undefined);
      stream.on('error', reject);
      stream.on('end', resolve);
    });
  } finally {
    for (const c of clients) c.close();
    server.forceShutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
