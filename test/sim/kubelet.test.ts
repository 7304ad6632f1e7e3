/** The kubelet simulator itself behaves like kubelet where the tests rely on it. */
import { afterEach, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadDevicePluginProto } from '../../src/kubelet/proto.js';
import { KubeletSimulator } from '../../src/sim/kubelet.js';

let sim: KubeletSimulator | undefined;
let root: string | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

function register(socket: string, req: object): Promise<void> {
  const dp = loadDevicePluginProto();
  const client = new dp.Registration(`unix://${socket}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) =>
    client.Register(req, (err) => {
      client.close();
      if (err) reject(err);
      else resolve();
    }),
  );
}

describe('kubelet simulator', () => {
  test('stop() removes kubelet.sock and restart() wipes the directory and serves it again', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
    sim = await KubeletSimulator.start({ dir: root });
    expect(fs.lstatSync(sim.socketPath).isSocket()).toBe(true);
    await sim.stop();
    expect(fs.existsSync(sim.socketPath)).toBe(false);
    fs.writeFileSync(path.join(root, 'Stale.sock'), '');
    fs.writeFileSync(path.join(root, 'kubelet_internal_checkpoint'), '{}');
    await sim.restart();
    expect(fs.readdirSync(root).sort()).toEqual(['kubelet.sock', 'kubelet_internal_checkpoint']);
  });

  test('Register with a wrong version or resource name is refused', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
    sim = await KubeletSimulator.start({ dir: root });
    const bad = [
      { version: 'v1alpha', endpoint: 'x.sock', resourceName: 'huawei.com/Ascend910' },
      { version: 'v1beta1', endpoint: 'x.sock', resourceName: 'Ascend910' },
      { version: 'v1beta1', endpoint: '../x.sock', resourceName: 'huawei.com/Ascend910' },
    ];
    for (const req of bad) {
      const err = (await register(sim.socketPath, req).catch((e: unknown) => e)) as ServiceError;
      expect(err.code).toBe(status.INVALID_ARGUMENT);
    }
    expect(sim.registrations).toEqual([]);
  });
});
