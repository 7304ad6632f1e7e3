/**
 * Issue [DRA] (node side), the agent as a child process against the DRA kubelet simulator and the API stand-in:
 * `-deviceApi=dra` registers only the DRA driver, NodePrepare writes a CDI spec naming exactly the allocated chip,
 * a fault reaches the health stream, `both` serves the device plugin and DRA from one store, and a kill -9 at each
 * durable step of a prepare or unprepare leaves no claim half prepared and loses none (the checkpoint).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { DRA_CRASH_ENV } from '../../src/agent/wire-dra.js';
import { NODE_NAME, RESOURCE, runAgentOnce, SEPARATE_CODE } from '../helpers/agent-process.js';
import { DraSandbox } from '../helpers/dra-sandbox.js';
import { MAJOR } from '../dra/helpers.js';

let s: DraSandbox | undefined;

/** Polls `check` every 20 ms until it gives a value (the stand-in's and kubelet simulator's state change unseen). */
async function until<T>(check: () => T | undefined | null | false, what: string, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('issue [DRA] -deviceApi=dra', () => {
  test('registers the DRA driver only; NodePrepare writes a CDI spec with exactly the allocated chip', async () => {
    s = await DraSandbox.create();
    await s.start('dra');
    expect(s.sb.kubelet.registrations).toEqual([]); // no device plugin in dra mode
    const ref = s.claim('one-npu', ['ascend910-5']);
    const res = await s.dra.prepare(DRA_DRIVER, [ref]);
    expect(res.claims[ref.uid]).toEqual({
      devices: [
        {
          requestNames: ['npu'],
          poolName: NODE_NAME,
          deviceName: 'ascend910-5',
          cdiDeviceIds: [`ascend.com/npu=${ref.uid}-ascend910-5`],
        },
      ],
      error: '',
    });
    const spec = s.spec(ref.uid)!;
    expect(spec.devices.flatMap((d) => d.containerEdits.deviceNodes.map((n) => [n.path, n.major, n.minor]))).toEqual([
      ['/dev/davinci5', MAJOR.davinci, 5],
    ]);
    expect(spec.containerEdits.deviceNodes?.map((n) => n.path)).toEqual([
      '/dev/davinci_manager',
      '/dev/hisi_hdc',
      '/dev/devmm_svm',
    ]);
    await s.dra.unprepare(DRA_DRIVER, [ref]);
    expect(s.spec(ref.uid)).toBeUndefined();
  });

  test('a fault injected through the mock shows in the health stream; a prepare on that chip is refused', async () => {
    s = await DraSandbox.create();
    await s.start('dra');
    const sb = s.sb;
    const dra = s.dra;
    await dra.waitFor(
      () => dra.health(DRA_DRIVER, NODE_NAME, 'ascend910-2')?.health === 'HEALTHY',
      'ascend910-2 HEALTHY',
    );
    await sb.mock({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'occur' });
    const h = await dra.waitFor(() => {
      const x = dra.health(DRA_DRIVER, NODE_NAME, 'ascend910-2');
      return x?.health === 'UNHEALTHY' ? x : undefined;
    }, 'ascend910-2 UNHEALTHY');
    expect(h.message).toContain(`codes ${SEPARATE_CODE}`);
    const ref = s.claim('on-faulty', ['ascend910-2']);
    const res = await dra.prepare(DRA_DRIVER, [ref]);
    expect(res.claims[ref.uid]!.error).toMatch(/refusing to prepare ascend910-2 .* is Unhealthy \(level SeparateNPU\)/);
  });

  test('an agent restarted keeps its prepared claims: answered from the checkpoint even with the claim gone from the API', async () => {
    s = await DraSandbox.create();
    const first = await s.start('dra');
    const ref = s.claim('kept', ['ascend910-1']);
    const before = await s.dra.prepare(DRA_DRIVER, [ref]);
    first.child.kill('SIGTERM');
    await first.waitExit();
    s.deleteClaim('kept');
    await s.start('dra');
    const after = await s.dra.prepare(DRA_DRIVER, [ref]);
    expect(after.claims[ref.uid]).toEqual(before.claims[ref.uid]);
    expect(s.spec(ref.uid)).toBeDefined();
  });
});

describe('issue [DRA] -deviceApi=both', () => {
  test('one process, one store: the device plugin (with -cdiDevicePlugin) and the DRA driver, their CDI names apart', async () => {
    s = await DraSandbox.create();
    await s.start('both', {}, ['-cdiDevicePlugin']);
    expect(s.sb.kubelet.devices(RESOURCE)?.length).toBe(8);
    const res = await s.sb.kubelet.allocate(RESOURCE, [['Ascend910-0']]);
    expect([res.containerResponses[0]!.cdiDevices, res.containerResponses[0]!.devices]).toEqual([
      [{ name: 'ascend.com/npu=davinci0' }],
      [],
    ]);
    const nodeSpec = JSON.parse(fs.readFileSync(path.join(s.cdiDir, 'ascend.com-npu.json'), 'utf8')) as {
      devices: { name: string }[];
    };
    expect(nodeSpec.devices.map((d) => d.name)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `davinci${i}`));
    const ref = s.claim('both', ['ascend910-7']);
    expect((await s.dra.prepare(DRA_DRIVER, [ref])).claims[ref.uid]!.error).toBe('');
    expect(s.spec(ref.uid)!.devices.map((d) => d.name)).toEqual([`${ref.uid}-ascend910-7`]);
  });

  test('never the same chip twice: a chip a prepared claim holds is Unhealthy to kubelet and Allocate refuses it; unprepared, it is offered again', async () => {
    s = await DraSandbox.create();
    await s.start('both');
    const kubelet = s.sb.kubelet;
    const healthOf = (id: string): string | undefined => kubelet.devices(RESOURCE)?.find((d) => d.ID === id)?.health;
    const ref = s.claim('held', ['ascend910-4']);
    expect((await s.dra.prepare(DRA_DRIVER, [ref])).claims[ref.uid]!.error).toBe('');
    await until(() => healthOf('Ascend910-4') === 'Unhealthy', 'Ascend910-4 Unhealthy to kubelet');
    await expect(kubelet.allocate(RESOURCE, [['Ascend910-4']])).rejects.toThrow(/held by DRA claim default\/held/);
    await s.dra.unprepare(DRA_DRIVER, [ref]);
    await until(() => healthOf('Ascend910-4') === 'Healthy', 'Ascend910-4 Healthy again');
  });
});

describe('issue [DRA] items 2-3: the agent publishes its ResourceSlices', () => {
  test('-deviceApi=dra: every chip in the node’s pool; a fault taints its device; recovery lifts the taint', async () => {
    s = await DraSandbox.create();
    await s.start('dra');
    const devices = await until(() => s!.completePoolDevices(), 'the agent’s pool, every slice of it');
    expect([...devices.keys()].filter((n) => /^ascend910-\d$/.test(n)).sort()).toEqual(
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `ascend910-${i}`),
    );
    expect(devices.get('ascend910-2')?.taints).toBeUndefined();
    await s.sb.mock({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'occur' });
    const taints = await until(() => s!.sliceDevices().get('ascend910-2')?.taints, 'the taint on ascend910-2');
    expect(taints).toEqual([
      expect.objectContaining({ key: 'npu.huawei.com/SeparateNPU', value: SEPARATE_CODE, effect: 'NoExecute' }),
    ]);
    await s.sb.mock({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'recover' });
    await until(() => s!.sliceDevices().get('ascend910-2')?.taints === undefined, 'the taint lifted');
  });
});

describe('issue [DRA] item 1: kill -9 in the middle of NodePrepare / NodeUnprepare', () => {
  test.each(['prepare-intent', 'prepare-cdi'])(
    'killed after %s: at the restart the claim is not prepared and has no spec; kubelet asks again and gets it',
    async (step) => {
      s = await DraSandbox.create();
      const a = await s.start('dra', { [DRA_CRASH_ENV]: step });
      const ref = s.claim('c', ['ascend910-3']);
      await expect(s.dra.prepare(DRA_DRIVER, [ref])).rejects.toBeDefined();
      expect((await a.waitExit()).signal).toBe('SIGKILL');
      await s.start('dra');
      expect([s.checkpoint()[ref.uid], s.spec(ref.uid)]).toEqual([undefined, undefined]);
      const again = await s.dra.prepare(DRA_DRIVER, [ref]);
      expect([again.claims[ref.uid]!.error, s.checkpoint()[ref.uid], s.spec(ref.uid) !== undefined]).toEqual([
        '',
        'prepared',
        true,
      ]);
    },
  );

  test('killed after prepare-commit: the claim is prepared at the restart and kubelet’s retry is answered from the checkpoint', async () => {
    s = await DraSandbox.create();
    const a = await s.start('dra', { [DRA_CRASH_ENV]: 'prepare-commit' });
    const ref = s.claim('c', ['ascend910-4']);
    await expect(s.dra.prepare(DRA_DRIVER, [ref])).rejects.toBeDefined();
    expect((await a.waitExit()).signal).toBe('SIGKILL');
    s.deleteClaim('c'); // not read again: the checkpoint answers
    await s.start('dra');
    const again = await s.dra.prepare(DRA_DRIVER, [ref]);
    expect(again.claims[ref.uid]!.devices.map((d) => d.deviceName)).toEqual(['ascend910-4']);
    expect(s.spec(ref.uid)?.devices[0]?.containerEdits.deviceNodes[0]?.path).toBe('/dev/davinci4');
  });

  test.each(['unprepare-cdi', 'unprepare-commit'])(
    'killed after %s: the restart leaves the claim either prepared (spec back) or gone, and kubelet’s retry unprepares it',
    async (step) => {
      s = await DraSandbox.create();
      const a = await s.start('dra', { [DRA_CRASH_ENV]: step });
      const ref = s.claim('c', ['ascend910-6']);
      expect((await s.dra.prepare(DRA_DRIVER, [ref])).claims[ref.uid]!.error).toBe('');
      await expect(s.dra.unprepare(DRA_DRIVER, [ref])).rejects.toBeDefined();
      expect((await a.waitExit()).signal).toBe('SIGKILL');
      await s.start('dra');
      const state = s.checkpoint()[ref.uid];
      // never half: prepared with its spec, or gone with it
      expect([state, s.spec(ref.uid) !== undefined]).toEqual(
        step === 'unprepare-cdi' ? ['prepared', true] : [undefined, false],
      );
      expect((await s.dra.unprepare(DRA_DRIVER, [ref])).claims[ref.uid]!.error).toBe('');
      expect([s.checkpoint()[ref.uid], s.spec(ref.uid)]).toEqual([undefined, undefined]);
    },
  );
});

describe('issue [DRA] bad input at start (architecture §4 exit statuses)', () => {
  test('-deviceApi=dra without a kubeconfig: exit 2, saying NodePrepare needs the API server', async () => {
    s = await DraSandbox.create();
    const flags = s.sb.flags(s.draFlags('dra')).filter((f) => !f.startsWith('-kubeconfig='));
    const r = await runAgentOnce(flags, { ...s.sb.env(), KUBECONFIG: undefined });
    expect([r.code, r.stdout + r.stderr]).toEqual([2, expect.stringMatching(/-deviceApi=dra needs the API server/)]);
  });

  test('-deviceApi=dra with a symbolic link as the registry folder: exit 2 naming it (spec A.4 rule)', async () => {
    s = await DraSandbox.create();
    await s.dra.close();
    const real = path.join(s.dir, 'elsewhere');
    fs.mkdirSync(real);
    fs.rmSync(path.join(s.dir, 'plugins_registry'), { recursive: true, force: true });
    fs.symlinkSync(real, path.join(s.dir, 'plugins_registry'));
    const r = await runAgentOnce(s.sb.flags(s.draFlags('dra')), s.sb.env());
    expect([r.code, r.stdout + r.stderr]).toEqual([2, expect.stringMatching(/plugins_registry: is a symbolic link/)]);
  });
});
