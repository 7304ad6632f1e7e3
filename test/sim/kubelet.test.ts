/** The kubelet simulator itself behaves like kubelet where the tests rely on it. */
import { afterEach, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { PodResourcesClient } from '../../src/kubelet/podresources-client.js';
import { loadDevicePluginProto, loadPodResourcesProto } from '../../src/kubelet/proto.js';
import { KubeletSimulator } from '../../src/sim/kubelet.js';
import { fakeRegisterRequest, startFakeDevicePlugin } from '../helpers/fake-device-plugin.js';

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

  // Codes and messages as kubelet 1.37 answers them (checked on the real kubelet by test/k8s/suites/kubelet-stand-in).
  test.each([
    [
      'a wrong version',
      { version: 'v1alpha', endpoint: 'x.sock', resourceName: 'huawei.com/Ascend910' },
      'requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]',
    ],
    [
      'a resource name without a domain',
      { version: 'v1beta1', endpoint: 'x.sock', resourceName: 'Ascend910' },
      'the ResourceName "Ascend910" is invalid',
    ],
    [
      'an endpoint outside the folder',
      { version: 'v1beta1', endpoint: '../x.sock', resourceName: 'huawei.com/Ascend910' },
      'failed to dial device plugin',
    ],
  ])('[R] item 7 Register with %s is refused with code Unknown and kubelet message', async (_what, req, message) => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
    sim = await KubeletSimulator.start({ dir: root });
    const err = (await register(sim.socketPath, req).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe(status.UNKNOWN);
    expect(err.details).toContain(message);
    expect(sim.registrations).toEqual([]);
  });

  test('[R] item 7 Register asks GetDevicePluginOptions first: a plugin that fails it is not registered', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
    sim = await KubeletSimulator.start({ dir: root });
    const plugin = await startFakeDevicePlugin(path.join(root, 'p.sock'), { failOptions: 'no options today' });
    try {
      const err = (await register(sim.socketPath, fakeRegisterRequest('p.sock')).catch(
        (e: unknown) => e,
      )) as ServiceError;
      expect(err.code).toBe(status.UNKNOWN);
      expect(err.details).toBe(
        'failed to get device plugin options: rpc error: code = FailedPrecondition desc = no options today',
      );
      expect(plugin.calls).toEqual(['GetDevicePluginOptions']);
      expect(sim.registrations).toEqual([]);
    } finally {
      await plugin.close();
    }
  });

  test('[R] item 7 Register records the options the plugin answers, then opens ListAndWatch', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
    sim = await KubeletSimulator.start({ dir: root });
    const plugin = await startFakeDevicePlugin(path.join(root, 'p.sock'));
    try {
      await register(sim.socketPath, fakeRegisterRequest('p.sock'));
      expect(plugin.calls[0]).toBe('GetDevicePluginOptions');
      expect(sim.registrations[0]?.pluginOptions).toEqual({
        preStartRequired: false,
        getPreferredAllocationAvailable: true,
      });
      await sim.waitForRegistration('example.com/dev');
      expect(plugin.calls).toEqual(['GetDevicePluginOptions', 'ListAndWatch']);
    } finally {
      await plugin.close();
    }
  });

  test('[R] item 7 the same endpoint registering again while its stream is open is refused; the stream goes on', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
    sim = await KubeletSimulator.start({ dir: root });
    const plugin = await startFakeDevicePlugin(path.join(root, 'p.sock'));
    try {
      await register(sim.socketPath, fakeRegisterRequest('p.sock'));
      await sim.waitForRegistration('example.com/dev');
      const err = (await register(sim.socketPath, fakeRegisterRequest('p.sock')).catch(
        (e: unknown) => e,
      )) as ServiceError;
      expect(err.code).toBe(status.UNKNOWN);
      expect(err.details).toBe(`device plugin already connected: ${path.join(root, 'p.sock')}`);
      expect(sim.registrationsOf('example.com/dev')).toHaveLength(1);
      expect(sim.streamOpen('example.com/dev')).toBe(true);
    } finally {
      await plugin.close();
    }
  });

  test('[R] item 7 pod-resources: one ContainerDevices per device, none allocatable once the stream ended, Get of an unknown pod is Unknown', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'kp-'));
    const prSocket = path.join(root, 'pr.sock');
    sim = await KubeletSimulator.start({ dir: path.join(root, 'dp'), podResourcesSocket: prSocket });
    const plugin = await startFakeDevicePlugin(path.join(root, 'dp', 'p.sock'));
    try {
      await register(sim.socketPath, fakeRegisterRequest('p.sock'));
      await sim.waitForRegistration('example.com/dev');
      await sim.allocate('example.com/dev', [['d0', 'd1']], { namespace: 'ns', name: 'pod' });
      const client = new PodResourcesClient(prSocket);
      const list = await client.list();
      expect(list.podResources[0]?.containers[0]?.devices.map((d) => d.deviceIds)).toEqual([['d0'], ['d1']]);
      expect((await client.getAllocatableResources()).devices).toHaveLength(2);
      sim.endStream('example.com/dev');
      await sim.waitFor(() => !sim!.streamOpen('example.com/dev'), 'the stream closed');
      expect((await client.getAllocatableResources()).devices).toEqual([]);
      const err = (await podResourcesGet(prSocket, 'ns', 'nope').catch((e: unknown) => e)) as ServiceError;
      expect(err.code).toBe(status.UNKNOWN);
      expect(err.details).toBe('pod nope in namespace ns not found');
    } finally {
      await plugin.close();
    }
  });
});

function podResourcesGet(socket: string, podNamespace: string, podName: string): Promise<unknown> {
  const pr = loadPodResourcesProto();
  const client = new pr.PodResourcesLister(`unix://${socket}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) =>
    client.Get({ podNamespace, podName }, (err, v) => {
      client.close();
      if (err) reject(err);
      else resolve(v);
    }),
  );
}
