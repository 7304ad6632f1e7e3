/**
 * Issue 17 item 2: soft share (spec L.7; `-shareDevCount=100 -softShareDevConfigDir=<dir> -volcanoType=true`) with
 * the agent as a child process on the mock library (`scenarios/310p-soft.json`: 4 chips, 24 GiB each, a die id per
 * chip), the kubelet simulator and the API stand-in. Volcano's part (the pod annotations) is written by the test.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import {
  AgentSandbox,
  deviceList,
  NODE_NAME,
  RESOURCE as RESOURCE_910,
  runAgentOnce,
} from '../helpers/agent-process.js';

const SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '310p-soft.json');
const R = 'huawei.com/Ascend310P';
const DIES = (JSON.parse(fs.readFileSync(SCENARIO, 'utf8')) as { cards: { chips: { dieId: string }[] }[] }).cards.map(
  (c) => c.chips[0]!.dieId,
);
const HOLD_ENV = 'ASCEND_NPU_AGENT_TEST_SOFT_SHARE_HOLD_MS';

interface SoftPod {
  name: string;
  job: string;
  chip: number;
  aicore: string;
  hbm: string;
  policy: string;
  /** kubelet copies requested (default: the AI-core quota) */
  copies?: number;
}

function softFlags(sb: AgentSandbox): string[] {
  return ['-shareDevCount=100', `-softShareDevConfigDir=${path.join(sb.dir, 'share_device')}`, '-volcanoType'];
}

async function createPod(sb: AgentSandbox, p: SoftPod): Promise<void> {
  const copies = p.copies ?? Number(p.aicore);
  await sb.core().createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: {
        name: p.name,
        namespace: 'default',
        labels: { 'volcano.sh/job-name': p.job },
        annotations: {
          [R]: `Ascend310P-${p.chip}`,
          'predicate-time': String(Date.now()),
          'huawei.com/scheduler.softShareDev.aicoreQuota': p.aicore,
          'huawei.com/scheduler.softShareDev.hbmQuota': p.hbm,
          'huawei.com/scheduler.softShareDev.policy': p.policy,
        },
      },
      spec: {
        nodeName: NODE_NAME,
        containers: [{ name: 'c0', image: 'x', resources: { limits: { [R]: String(copies) } } }],
      },
    },
  });
}

/** `copies` kubelet device IDs, taken from chip 3 (kubelet's choice is arbitrary; the annotation decides the chip). */
function kubeletIds(copies: number, offset = 0): string[] {
  return Array.from({ length: copies }, (_, i) => `Ascend310P-3-${(offset + i) % 100}`);
}

async function allocatePod(sb: AgentSandbox, p: SoftPod, offset = 0) {
  return sb.kubelet.allocate(R, [kubeletIds(p.copies ?? Number(p.aicore), offset)], {
    namespace: 'default',
    name: p.name,
  });
}

function refusal(p: Promise<unknown>): Promise<ServiceError | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => e as ServiceError,
  );
}

const enpu = (sb: AgentSandbox, ...parts: string[]) => path.join(sb.dir, 'host', 'etc', 'enpu', ...parts);

describe('issue 17 item 2: soft share, agent as a child process', () => {
  let sb: AgentSandbox;
  beforeAll(async () => {
    sb = await AgentSandbox.create(SCENARIO);
    await sb.start(softFlags(sb), { ASCEND_DOCKER_RUNTIME: 'True' }, { resource: R });
  }, 60_000);
  afterAll(async () => {
    await sb?.close();
  });

  const a: SoftPod = { name: 'a-0', job: 'job1', chip: 0, aicore: '30', hbm: '8192', policy: 'elastic' };
  const b: SoftPod = { name: 'a-1', job: 'job1', chip: 0, aicore: '20', hbm: '4096', policy: 'elastic' };
  const c: SoftPod = { name: 'c-0', job: 'job2', chip: 0, aicore: '50', hbm: '1024', policy: 'elastic' };

  test('L.7/B.3 registers huawei.com/Ascend310P with 100 copies of each of the 4 chips, all Healthy', () => {
    const devices = sb.kubelet.devices(R)!;
    expect(devices).toHaveLength(400);
    expect(devices.map((d) => d.ID)).toEqual(expect.arrayContaining(['Ascend310P-0-0', 'Ascend310P-3-99']));
    expect(devices.every((d) => d.health === 'Healthy')).toBe(true);
  });

  test('L.7/C.4 Allocate of an annotated pod writes npu_info.config with its values and mounts it with the shm entry', async () => {
    await createPod(sb, a);
    const res = await allocatePod(sb, a);
    const cr = res.containerResponses[0]!;
    expect(cr.envs.ASCEND_VISIBLE_DEVICES).toBe('0'); // the annotated chip, not kubelet's copies of chip 3
    const file = enpu(sb, 'default.job1', '0_0', 'npu_info.config');
    expect(fs.readFileSync(file, 'utf8')).toBe(
      [
        'physical-npu-id=0',
        'virtual-npu-id=0',
        'aicore-quota=30',
        'memory-quota=8192',
        `shm-id=${DIES[0]}`,
        'scheduling-policy=2',
        '',
      ].join('\n'),
    );
    expect(fs.statSync(file).mode & 0o777).toBe(0o644);
    const shm = path.join(sb.dir, 'share_device', '0', DIES[0]!);
    expect(cr.mounts.map((m) => ({ c: m.containerPath, h: m.hostPath, ro: m.readOnly }))).toEqual([
      { c: `/dev/shm/${DIES[0]}`, h: shm, ro: false },
      { c: '/etc/enpu/vcann-rt/', h: `${enpu(sb, 'default.job1', '0_0')}/`, ro: true },
    ]);
    expect(fs.statSync(shm).isDirectory()).toBe(true);
  }, 30_000);

  test('L.7 a second pod on the same chip gets the next free virtual id', async () => {
    await createPod(sb, b);
    await allocatePod(sb, b, 30);
    const text = fs.readFileSync(enpu(sb, 'default.job1', '0_1', 'npu_info.config'), 'utf8');
    expect(text).toContain('virtual-npu-id=1\n');
    expect(text).toContain('aicore-quota=20\n');
  }, 30_000);

  test('L.7/H.3 a chip with room stays schedulable; once its AI-core quota is used up its copies leave the list', async () => {
    const before = await sb.until(() => deviceList(sb)?.[R], 'the device-info list');
    expect(before.split(',')).toContain('Ascend310P-0-0');
    await createPod(sb, c);
    await allocatePod(sb, c, 50);
    const list = await sb.until(
      () => {
        const l = deviceList(sb)?.[R];
        return l !== undefined && !l.split(',').includes('Ascend310P-0-0') ? l : undefined;
      },
      'chip 0 off the schedulable list',
      20_000,
    );
    const names = list.split(',');
    expect(names.filter((n) => n.startsWith('Ascend310P-0-'))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['Ascend310P-1-0', 'Ascend310P-1-99']));
  }, 30_000);

  test('L.7 bad input: a full chip is refused naming the pod, an Event on the pod, nothing on disk', async () => {
    const full: SoftPod = { name: 'full-0', job: 'job3', chip: 0, aicore: '10', hbm: '10', policy: 'elastic' };
    await createPod(sb, full);
    const err = await refusal(allocatePod(sb, full));
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toMatch(/pod default\/full-0: chip 0 has 0% AI cores left/);
    expect(fs.existsSync(enpu(sb, 'default.job3'))).toBe(false);
    await sb.until(
      () => sb.events().find((e) => e.involvedObject.name === 'full-0' && e.reason === 'SoftShareAllocateFailed'),
      'the Event on pod full-0',
    );
  }, 30_000);

  test.each<[string, Partial<SoftPod>, RegExp]>([
    ['a memory quota of 0', { hbm: '0' }, /hbmQuota "0" is not 1\.\.24576 \(MiB\)/],
    ['a memory quota above the chip memory', { hbm: '99999' }, /hbmQuota "99999" is not 1\.\.24576/],
    ['an unknown policy', { policy: 'greedy' }, /policy "greedy" is not one of fixed-share, elastic, best-effort/],
    ['an AI-core quota that is not a number', { aicore: 'lots', copies: 5 }, /aicoreQuota "lots" is not 1\.\.100/],
    ['an AI-core quota other than the copies', { aicore: '7', copies: 5 }, /aicoreQuota is 7 but kubelet allocates 5/],
  ])(
    'L.7 bad input: %s is refused with INVALID_ARGUMENT naming the pod, an Event, nothing on disk',
    async (what, patch, re) => {
      const name = `bad-${what.length}-${Date.now() % 100000}`;
      const p: SoftPod = {
        name,
        job: `bad${what.length}`,
        chip: 1,
        aicore: '5',
        hbm: '100',
        policy: 'elastic',
        ...patch,
      };
      await createPod(sb, p);
      const err = await refusal(allocatePod(sb, p));
      expect(err?.code).toBe(status.INVALID_ARGUMENT);
      expect(err?.details).toContain(`pod default/${name}`);
      expect(err?.details).toMatch(re);
      expect(fs.existsSync(enpu(sb, `default.${p.job}`))).toBe(false);
      await sb.until(
        () => sb.events().find((e) => e.involvedObject.name === name && e.reason === 'SoftShareAllocateFailed'),
        `the Event on pod ${name}`,
      );
      expect(sb.agent!.child.exitCode).toBeNull(); // the daemon keeps running
    },
    30_000,
  );

  test("L.7 a pod's vNPU goes with the pod; the job folder goes with the job's last pod", async () => {
    await sb.core().deleteNamespacedPod({ namespace: 'default', name: a.name });
    await sb.until(() => !fs.existsSync(enpu(sb, 'default.job1', '0_0')), "pod a-0's vNPU folder removed", 20_000);
    expect(fs.existsSync(enpu(sb, 'default.job1', '0_1', 'npu_info.config'))).toBe(true); // a-1 still runs
    await sb.core().deleteNamespacedPod({ namespace: 'default', name: b.name });
    await sb.until(() => !fs.existsSync(enpu(sb, 'default.job1')), 'the folder of job1 removed', 20_000);
    expect(fs.existsSync(enpu(sb, 'default.job2', '0_2', 'npu_info.config'))).toBe(true); // job2 untouched
    // chip 0 has room again: back on the schedulable list
    await sb.until(
      () => (deviceList(sb)?.[R] ?? '').split(',').includes('Ascend310P-0-0'),
      'chip 0 schedulable',
      20_000,
    );
  }, 60_000);

  test('C.1 a fault on chip 2 makes all its 100 copies Unhealthy; a pod annotated to it is refused naming the pod', async () => {
    await sb.mock({ op: 'fault', logicId: 2, eventId: '80E3A201', assertion: 'occur' });
    await sb.kubelet.waitForDevices(
      R,
      (d) => d.filter((x) => x.ID.startsWith('Ascend310P-2-') && x.health === 'Unhealthy').length === 100,
      'every copy of chip 2 Unhealthy',
      20_000,
    );
    expect(sb.kubelet.devices(R)!.filter((d) => d.health === 'Unhealthy')).toHaveLength(100);
    const p: SoftPod = { name: 'sick-0', job: 'job4', chip: 2, aicore: '10', hbm: '10', policy: 'elastic' };
    await createPod(sb, p);
    const err = await refusal(allocatePod(sb, p));
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toBe(
      'pod default/sick-0: refusing to allocate: Ascend310P-2 is Unhealthy (level SeparateNPU)',
    );
    expect(fs.existsSync(enpu(sb, 'default.job4'))).toBe(false);
  }, 40_000);
});

describe('issue 17 item 2: a crash between the write and the response', () => {
  let sb: AgentSandbox | undefined;
  afterAll(async () => {
    await sb?.close();
  });

  test('L.7 the agent killed after writing npu_info.config: at restart the files of the gone pod are removed', async () => {
    sb = await AgentSandbox.create(SCENARIO);
    const s = sb;
    await s.start(softFlags(s), { ASCEND_DOCKER_RUNTIME: 'True', [HOLD_ENV]: '30000' }, { resource: R });
    const p: SoftPod = { name: 'crash-0', job: 'crashjob', chip: 2, aicore: '40', hbm: '2048', policy: 'best-effort' };
    await createPod(s, p);
    const answer = refusal(allocatePod(s, p));
    const file = enpu(s, 'default.crashjob', '2_0', 'npu_info.config');
    await s.until(() => fs.existsSync(file), 'npu_info.config written', 20_000);
    await s.agent!.kill(); // SIGKILL while the agent holds the response
    const err = await answer;
    expect(err?.code).toBe(status.UNAVAILABLE); // kubelet never got the mounts
    expect(fs.readFileSync(file, 'utf8')).toContain('scheduling-policy=3\n');
    await s.core().deleteNamespacedPod({ namespace: 'default', name: p.name });
    await s.start(softFlags(s), { ASCEND_DOCKER_RUNTIME: 'True' }, { resource: R });
    await s.until(
      () => !fs.existsSync(enpu(s, 'default.crashjob')),
      'the leftover job folder removed at start',
      20_000,
    );
    expect(fs.readdirSync(enpu(s))).toEqual([]);
  }, 90_000);
});

describe('issue 17 item 2: soft-share flags', () => {
  let sb: AgentSandbox | undefined;
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
  });

  test('A.1 -softShareDevConfigDir whose parent folder does not exist exits 2 naming the folder', async () => {
    sb = await AgentSandbox.create(SCENARIO);
    const dir = path.join(sb.dir, 'missing', 'share_device');
    const r = await runAgentOnce(
      sb.flags(['-shareDevCount=100', `-softShareDevConfigDir=${dir}`, '-volcanoType']),
      sb.env(),
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`-softShareDevConfigDir=${dir}: its parent folder does not exist`);
  });

  test('L.7 on a 910B node the soft-share flags have no effect, and the log says so', async () => {
    sb = await AgentSandbox.create();
    await sb.start(softFlags(sb));
    expect(sb.kubelet.devices(RESOURCE_910)).toHaveLength(8);
    expect(
      sb.agent!.logs().some((l) => String(l.msg).startsWith('-softShareDevConfigDir has no effect on this chip kind')),
    ).toBe(true);
  }, 30_000);
});
