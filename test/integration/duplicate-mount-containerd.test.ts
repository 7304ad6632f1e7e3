/**
 * Spec L.5 and issue [N] item 5 against a real containerd (Debian's `containerd` package, started here with its own
 * root, state and socket in a temp folder; `test/runtime/containerd-harness.ts`): containers run with `ctr` on a
 * tiny rootfs, two of them holding the same `/dev/davinci<N>`, and the agent (the built `dist/cli/agent.js`, its
 * socket given by `CONTAINERD_ADDRESS`) must warn. The device-node path (majors from `/proc/devices`) runs the
 * detector in this process with a `/proc/devices` file of the test, since the agent reads the real one.
 *
 * Where containerd cannot run containers (not root, runc missing) the suite says why in the test name and
 * exercises containerd's list and event stream alone (containers created, not started).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ContainerdClient, type ContainerEvent } from '../../src/runtime/containerd-client.js';
import { DuplicateMountDetector } from '../../src/runtime/duplicate-mounts.js';
import { AgentSandbox, type AgentProcess } from '../helpers/agent-process.js';
import { RealContainerd, whyNoContainerd } from '../runtime/containerd-harness.js';
import { recordingLogger, until } from '../runtime/log-recorder.js';

const DUP = 'detected duplicate NPU device mount: device /dev/davinci';
const SUITE_MS = 120_000;
const why = whyNoContainerd();

let ctd: RealContainerd | undefined;
afterAll(async () => {
  await ctd?.stop();
}, SUITE_MS);

if (why === undefined) {
  describe('L.5 real containerd, the agent as a child process', () => {
    let sb: AgentSandbox;
    let agent: AgentProcess;
    const msgs = (): string[] => agent.logs().map((l) => String(l.msg));
    const warnings = (): string[] => msgs().filter((m) => m.startsWith(DUP));

    beforeAll(async () => {
      ctd = await RealContainerd.start();
      sb = await AgentSandbox.create(undefined, { prefix: 'npu-dm-' });
      agent = await sb.start([], { CONTAINERD_ADDRESS: ctd.socket });
      await until(() => msgs().some((m) => m.includes('containers scanned')), 'the detector scan');
    }, SUITE_MS);
    afterAll(async () => {
      await sb?.close();
    }, SUITE_MS);

    test(
      'L.5 two running containers holding /dev/davinci3 (ASCEND_VISIBLE_DEVICES) make the agent warn once, naming both; stopping one clears it',
      async () => {
        await ctd!.runContainer('k8s.io', 'npu-a', {
          env: ['ASCEND_VISIBLE_DEVICES=3'],
          labels: {
            'io.kubernetes.container.name': 'train',
            'io.kubernetes.pod.name': 'job-0',
            'io.kubernetes.pod.namespace': 'ai',
          },
        });
        await ctd!.runContainer('k8s.io', 'npu-b', { env: ['ASCEND_VISIBLE_DEVICES=Ascend910-3'] });
        await until(() => warnings().length, 'the duplicate warning', 20_000);
        expect(warnings()).toEqual([
          `${DUP}3 is mounted by multiple containers: ID=npu-a, Name=train, Namespace=k8s.io, Pod=ai/job-0; ID=npu-b, Name=, Namespace=k8s.io`,
        ]);
        await ctd!.removeContainer('k8s.io', 'npu-b');
        await until(() => msgs().some((m) => m.startsWith('duplicate NPU device mount cleared')), 'the clearing');
        expect(warnings()).toHaveLength(1);
      },
      SUITE_MS,
    );

    test(
      'L.5 containerd stopped and started again: the agent warns once, keeps serving, scans again (no repeated warning for the same set)',
      async () => {
        await ctd!.runContainer('other', 'npu-c', { env: ['ASCEND_VISIBLE_DEVICES=2-3'] });
        await until(() => warnings().length === 2, 'the warning for npu-a and npu-c', 20_000);
        expect(warnings()[1]).toContain('ID=npu-c, Name=, Namespace=other');
        await ctd!.kill();
        await until(() => msgs().some((m) => m.includes('containerd unreachable')), 'the lost connection');
        expect(agent.child.exitCode).toBeNull();
        expect(sb.health('Ascend910-0')).toBe('Healthy'); // the kubelet path is not affected
        await ctd!.restart(); // the shims kept the tasks running
        await until(
          () => msgs().filter((m) => m.includes('containers scanned')).length === 2,
          'the second scan',
          60_000,
        );
        expect(warnings()).toHaveLength(2);
        expect(msgs().filter((m) => m.includes('containerd unreachable'))).toHaveLength(1);
      },
      SUITE_MS,
    );
  });

  describe('L.5 real containerd, device nodes (majors from /proc/devices)', () => {
    test(
      'L.5 two containers started before the detector with a devdrv-cdev character device /dev/davinci6: the scan warns',
      async () => {
        ctd ??= await RealContainerd.start();
        const procDevices = path.join(ctd.dir, 'proc-devices');
        fs.writeFileSync(procDevices, 'Character devices:\n  1 mem\n240 devdrv-cdev\n\nBlock devices:\n  8 sd\n');
        const node = path.join(ctd.dir, 'davinci6');
        execFileSync('mknod', [node, 'c', '240', '6']);
        await ctd.runContainer('k8s.io', 'dev-a', { devices: [node] });
        await ctd.runContainer('moby', 'dev-b', { devices: [node] });
        const rec = recordingLogger();
        const d = new DuplicateMountDetector({
          log: rec.log,
          env: { CONTAINERD_ADDRESS: ctd.socket },
          procDevicesPath: procDevices,
        });
        d.start();
        try {
          await until(() => rec.lines.find((l) => l.msg.startsWith(`${DUP}6 `)), 'the duplicate warning');
          expect(rec.lines.filter((l) => l.msg.startsWith(`${DUP}6 `)).map((l) => l.msg)).toEqual([
            `${DUP}6 is mounted by multiple containers: ID=dev-a, Name=, Namespace=k8s.io; ID=dev-b, Name=, Namespace=moby`,
          ]);
        } finally {
          await d.stop();
        }
      },
      SUITE_MS,
    );
  });
} else {
  describe(`L.5 real containerd cannot run containers here (${why}): containerd's list and event stream alone`, () => {
    test(`L.5 containers created (not started; ${why}) are listed and their deletion is an event`, async () => {
      ctd = await RealContainerd.start(); // fails, saying why, where containerd itself is missing
      const rootfs = ctd.rootfs;
      await ctd.ctr('k8s.io', [
        'container',
        'create',
        '--rootfs',
        '--env',
        'ASCEND_VISIBLE_DEVICES=1',
        rootfs,
        'meta-1',
        '/bin/sleep',
      ]);
      const client = new ContainerdClient(ctd.socket);
      const events: ContainerEvent[] = [];
      const sub = client.subscribe({
        onEvent: (e) => events.push(e),
        onProblem: () => undefined,
        onEnd: () => undefined,
      });
      try {
        expect(await client.namespaces()).toContain('k8s.io');
        const listed = await client.containers('k8s.io');
        expect(listed.map((c) => c.id)).toEqual(['meta-1']);
        expect(JSON.parse(listed[0]!.spec.toString()).process.env).toContain('ASCEND_VISIBLE_DEVICES=1');
        await new Promise((r) => setTimeout(r, 500)); // the subscription is registered
        await ctd.ctr('k8s.io', ['container', 'rm', 'meta-1']);
        await until(() => events.find((e) => e.topic === '/containers/delete'), 'the delete event');
        expect(events).toContainEqual({
          namespace: 'k8s.io',
          topic: '/containers/delete',
          containerId: 'meta-1',
          processId: '',
        });
      } finally {
        sub.cancel();
        client.close();
      }
    });
  });
}
