/**
 * The kubelet simulator (src/sim/kubelet.ts) against the real kubelet (issue [R] item 7): the same requests to
 * both, the same answers, so that a fast test on the simulator shows what a real kubelet would do. Driven by a
 * minimal fake device plugin (test/helpers/fake-device-plugin.ts), not the agent. Differences that remain are
 * listed in docs/testing.md ("A real cluster").
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import path from 'node:path';
import { PodResourcesClient } from '../../../src/kubelet/podresources-client.js';
import { loadDevicePluginProto, loadPodResourcesProto } from '../../../src/kubelet/proto.js';
import { KubeletSimulator } from '../../../src/sim/kubelet.js';
import { fakeRegisterRequest, startFakeDevicePlugin, type FakeDevicePlugin } from '../../helpers/fake-device-plugin.js';
import { Cluster, DEVICE_PLUGIN_DIR } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';

let cluster: Cluster;
let sim: KubeletSimulator;
const plugins: FakeDevicePlugin[] = [];

/** One of the two kubelets: its device-plugin folder and pod-resources socket. */
interface Side {
  readonly name: 'real' | 'stand-in';
  readonly dir: string;
  readonly podResources: string;
}
let real: Side;
let standIn: Side;

beforeAll(async () => {
  cluster = await Cluster.start();
  const root = path.join(cluster.runDir, 'stand-in');
  fs.mkdirSync(root, { recursive: true });
  sim = await KubeletSimulator.start({ dir: path.join(root, 'dp'), podResourcesSocket: path.join(root, 'pr.sock') });
  real = { name: 'real', dir: DEVICE_PLUGIN_DIR, podResources: cluster.podResourcesSocket };
  standIn = { name: 'stand-in', dir: sim.dir, podResources: path.join(root, 'pr.sock') };
}, 120_000);

afterAll(async () => {
  for (const p of plugins) await p.close();
  await sim?.close();
  await cluster?.stop();
}, 60_000);

/** Register on a side's kubelet.sock: `OK` or `<grpc code> <details>` with the side's folder written `<dir>`. */
function register(side: Side, req: object): Promise<string> {
  const dp = loadDevicePluginProto();
  const client = new dp.Registration(
    `unix://${path.join(side.dir, 'kubelet.sock')}`,
    grpc.credentials.createInsecure(),
  );
  return new Promise((resolve) =>
    client.Register(req, { deadline: Date.now() + 20_000 }, (err) => {
      client.close();
      resolve(err ? `${grpc.status[err.code]} ${err.details.split(side.dir).join('<dir>')}` : 'OK');
    }),
  );
}

async function plugin(side: Side, endpoint: string, o: { failOptions?: string } = {}): Promise<FakeDevicePlugin> {
  const p = await startFakeDevicePlugin(path.join(side.dir, endpoint), o);
  plugins.push(p);
  return p;
}

/** Both sides' answers to the same thing, real first. */
async function both<T>(f: (side: Side) => Promise<T>): Promise<[T, T]> {
  return [await f(real), await f(standIn)];
}

describe('[R] item 7 Register as the real kubelet answers it', () => {
  test.each([
    ['a version kubelet does not speak', { version: 'v1alpha', endpoint: 'x.sock', resourceName: 'example.com/x' }],
    ['a resource name without a domain', { version: 'v1beta1', endpoint: 'x.sock', resourceName: 'Ascend910' }],
  ])('%s: the same refusal', async (_what, req) => {
    const [r, s] = await both((side) => register(side, req));
    expect(r).toMatch(/^UNKNOWN /);
    expect(s).toBe(r);
  });

  test('a plugin whose GetDevicePluginOptions fails: the same refusal, and no ListAndWatch', async () => {
    const [r, s] = await both(async (side) => {
      const p = await plugin(side, 'noopts.sock', { failOptions: 'not today' });
      const answer = await register(side, fakeRegisterRequest('noopts.sock', 'example.com/noopts'));
      return { answer, calls: [...p.calls] };
    });
    expect(r.answer).toContain('failed to get device plugin options');
    expect(s).toEqual(r);
  });

  test('the same endpoint registering again while its stream is open: the same refusal', async () => {
    const [r, s] = await both(async (side) => {
      await plugin(side, 'dup.sock');
      const first = await register(side, fakeRegisterRequest('dup.sock', 'example.com/dup'));
      // kubelet opens ListAndWatch after answering Register
      await pollUntil(() => plugins.at(-1)!.calls.includes('ListAndWatch'), `${side.name}: ListAndWatch`, 10_000);
      const second = await register(side, fakeRegisterRequest('dup.sock', 'example.com/dup'));
      return [first, second];
    });
    expect(r[1]).toContain('device plugin already connected');
    expect(s).toEqual(r);
  });
});

describe('[R] item 7 pod-resources as the real kubelet answers it', () => {
  test('a container holding two devices: one ContainerDevices per device ID', async () => {
    const shape = async (side: Side): Promise<string[][]> => {
      await plugin(side, 'dev.sock');
      expect(await register(side, fakeRegisterRequest('dev.sock', 'example.com/dev'))).toBe('OK');
      if (side.name === 'real') {
        await pollUntil(
          async () => (await cluster.node()).status?.allocatable?.['example.com/dev'] === '2',
          'example.com/dev allocatable 2',
          30_000,
        );
        await cluster.core().createNamespacedPod({
          namespace: 'default',
          body: {
            metadata: { name: 'dev-user' },
            spec: {
              containers: [{ name: 'c0', image: 'x', resources: { limits: { 'example.com/dev': '2' } } }],
            },
          },
        });
      } else {
        await sim.waitForRegistration('example.com/dev');
        await sim.allocate('example.com/dev', [['d0', 'd1']], { namespace: 'default', name: 'dev-user' });
      }
      return pollUntil(
        async () => {
          const list = await new PodResourcesClient(side.podResources).list();
          const pod = list.podResources.find((p) => p.name === 'dev-user');
          const devices = pod?.containers[0]?.devices.filter((d) => d.resourceName === 'example.com/dev') ?? [];
          return devices.length > 0 ? devices.map((d) => [...d.deviceIds]).sort() : undefined;
        },
        `${side.name}: the pod's devices in pod-resources`,
        60_000,
      );
    };
    const [r, s] = await both(shape);
    expect(r).toEqual([['d0'], ['d1']]);
    expect(s).toEqual(r);
  });

  test('Get of a pod kubelet does not know: the same error', async () => {
    const get = (side: Side): Promise<string> => {
      const pr = loadPodResourcesProto();
      const client = new pr.PodResourcesLister(`unix://${side.podResources}`, grpc.credentials.createInsecure());
      return new Promise((resolve) =>
        client.Get({ podNamespace: 'default', podName: 'nobody' }, { deadline: Date.now() + 5000 }, (err) => {
          client.close();
          resolve(err ? `${grpc.status[err.code]} ${err.details}` : 'found');
        }),
      );
    };
    const [r, s] = await both(get);
    expect(r).toMatch(/^UNKNOWN /);
    expect(s).toBe(r);
  });

  test('a plugin whose ListAndWatch ended: none of its devices allocatable', async () => {
    const allocatable = async (side: Side): Promise<[number, number]> => {
      const p = await plugin(side, 'gone.sock');
      expect(await register(side, fakeRegisterRequest('gone.sock', 'example.com/gone'))).toBe('OK');
      const count = async (): Promise<number> =>
        (await new PodResourcesClient(side.podResources).getAllocatableResources()).devices.filter(
          (d) => d.resourceName === 'example.com/gone',
        ).length;
      const before = await pollUntil(count, `${side.name}: example.com/gone allocatable`, 30_000);
      p.endStreams();
      await pollUntil(async () => (await count()) === 0, `${side.name}: nothing allocatable`, 30_000);
      return [before, await count()];
    };
    const [r, s] = await both(allocatable);
    expect(r).toEqual([2, 0]);
    expect(s).toEqual(r);
  });
});
