/**
 * 910A3 switch faults end to end (issue 18 items 1 and 6; spec L.9, H.2, K.4): the real agent as a child process on
 * the mock libdcmi.so and the mock liblingqu-dcmi.so, driven by the mock's control socket (`switchFault`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { KEY_SWITCH_INFO } from '../../src/kube/device-info.js';
import { EMPTY_SWITCH_INFO_CFG } from '../../src/kube/device-info-switch.js';
import { AgentSandbox } from '../helpers/agent-process.js';

const SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '910a3-switch.json');
const LINGQU = path.join(PROJECT_ROOT, 'build', 'Release', 'liblingqu-dcmi.so');
const PARTIAL = path.join(PROJECT_ROOT, 'build', 'Release', 'libdcmi_partial.so');

interface SwitchInfo {
  FaultCode: string[] | null;
  FaultLevel: string;
  UpdateTime: number;
  NodeStatus: string;
  FaultTimeAndLevelMap: Record<string, { fault_time: number; fault_level: string }> | null;
}

let sb: AgentSandbox | undefined;
const after: (() => void)[] = [];

afterEach(async () => {
  await sb?.close();
  sb = undefined;
  for (const f of after.splice(0)) f();
});

async function startWithSwitch(scenario = SCENARIO, extra: string[] = []): Promise<AgentSandbox> {
  const s = await AgentSandbox.create(scenario);
  sb = s; // closed by afterEach even when the start fails
  fs.copyFileSync(path.join(PROJECT_ROOT, 'SwitchFaultCode.json'), path.join(s.dir, 'SwitchFaultCode.json'));
  await s.start([
    `-switchLibrary=${LINGQU}`,
    `-switchFaultCodeFile=${path.join(s.dir, 'SwitchFaultCode.json')}`,
    ...extra,
  ]);
  return s;
}

function switchInfo(s: AgentSandbox): SwitchInfo | undefined {
  const v = s.deviceInfo()?.data?.[KEY_SWITCH_INFO];
  return v === undefined || v === EMPTY_SWITCH_INFO_CFG ? undefined : (JSON.parse(v) as SwitchInfo);
}

const until = (s: AgentSandbox, check: (i: SwitchInfo) => boolean, what: string): Promise<SwitchInfo> =>
  s.until(
    () => {
      const i = switchInfo(s);
      return i && check(i) ? i : undefined;
    },
    what,
    20_000,
  );

describe('spec L.9 switch faults through the subscription', () => {
  test('L.9 a Separate switch fault reaches SwitchInfoCfg with its level, node status and time map; its recovery clears it', async () => {
    sb = await startWithSwitch();
    const s = sb;
    const healthy = await until(s, (i) => i.NodeStatus === 'Healthy', 'a Healthy SwitchInfoCfg');
    expect(healthy.FaultCode).toEqual([]);
    expect(healthy.FaultLevel).toBe('');
    // [0x00f103b0,155907,na,na] is a SeparateFaultCodes entry of the shipped file
    const fault = { op: 'switchFault', alarmId: '0x00f103b0', faultId: 155907, peer: 'na', chipId: 1, portId: 4 };
    const r = await s.mock({ ...fault, timeMs: 1744167455784 });
    expect(r.fired).toBe(true);
    const bad = await until(s, (i) => i.FaultLevel === 'Separate', 'the Separate switch fault');
    expect(bad.NodeStatus).toBe('UnHealthy');
    expect(bad.FaultCode).toHaveLength(1);
    expect(JSON.parse(bad.FaultCode![0]!)).toMatchObject({
      AssembledFaultCode: '[0x00f103b0,155907,na,na]',
      SwitchChipId: 1,
      SwitchPortId: 4,
      Assertion: 1,
    });
    expect(bad.FaultTimeAndLevelMap).toEqual({
      '[0x00f103b0,155907,na,na]_1_4': { fault_time: 1744167455784, fault_level: 'Separate' },
    });
    await s.mock({ ...fault, assertion: 'recover' });
    const back = await until(s, (i) => i.NodeStatus === 'Healthy', 'the recovery');
    expect(back.FaultCode).toEqual([]);
    // the chips are untouched by switch faults: kubelet still sees every chip healthy
    expect(s.health('Ascend910-0')).toBe('Healthy');
  }, 60_000);

  test('L.9 faults on 16 L2-facing ports of one switch chip force Separate although each is NotHandle', async () => {
    sb = await startWithSwitch();
    const s = sb;
    await until(s, (i) => i.NodeStatus === 'Healthy', 'a Healthy SwitchInfoCfg');
    // [0x08520003,na,L2,na] is a NotHandleFaultCodes entry (port down towards L2)
    const down = (port: number) => ({
      op: 'switchFault',
      alarmId: '0x08520003',
      faultId: 'na',
      peer: 'L2',
      chipId: 0,
      portId: port,
    });
    for (let p = 0; p < 15; p++) await s.mock(down(p));
    const fifteen = await until(s, (i) => (i.FaultCode?.length ?? 0) === 15, '15 port faults');
    expect(fifteen.FaultLevel).toBe('NotHandle');
    expect(fifteen.NodeStatus).toBe('Healthy');
    await s.mock(down(15));
    const sixteen = await until(s, (i) => i.FaultLevel === 'Separate', 'Separate after the 16th port');
    expect(sixteen.NodeStatus).toBe('UnHealthy');
  }, 60_000);
});

describe('spec L.9 switch faults by polling', () => {
  test('dcmi-abi §8 without the subscription a fault the library only lists is read within a cycle', async () => {
    const scenario = JSON.parse(fs.readFileSync(SCENARIO, 'utf8')) as Record<string, unknown>;
    scenario.switch = { chips: 2, subscribe: 'fail' };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-it-switch-'));
    after.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'switch-nosub.json');
    fs.writeFileSync(file, JSON.stringify(scenario));
    sb = await startWithSwitch(file, ['-listWatchPeriod=3']);
    const s = sb;
    await until(s, (i) => i.NodeStatus === 'Healthy', 'a Healthy SwitchInfoCfg');
    const r = await s.mock({ op: 'switchFault', alarmId: '0x00f1fef5', faultId: 155914, peer: 'npu', notify: false });
    expect(r.fired).toBe(false);
    const got = await until(s, (i) => i.FaultLevel === 'RestartRequest', 'the polled RestartRequest fault');
    expect(got.NodeStatus).toBe('UnHealthy');
    const state = await s.mock({ op: 'switchState' });
    expect((state.switch as { subscribed: boolean }).subscribed).toBe(false);
  }, 60_000);
});

describe('spec L.9 SwitchFaultCode.json hot reload', () => {
  test('F.8 an edited file relevels the current faults; a malformed one keeps the last good table', async () => {
    sb = await startWithSwitch();
    const s = sb;
    const file = path.join(s.dir, 'SwitchFaultCode.json');
    await until(s, (i) => i.NodeStatus === 'Healthy', 'a Healthy SwitchInfoCfg');
    await s.mock({ op: 'switchFault', alarmId: '0x00f103b6', faultId: 155908, peer: 'na' });
    await until(s, (i) => i.FaultLevel === 'SubHealthFault', 'the SubHealthFault fault');
    const tmp = `${file}.new`;
    fs.writeFileSync(tmp, JSON.stringify({ PreSeparateFaultCodes: ['[0x00f103b6,155908,na,na]'] }));
    fs.renameSync(tmp, file);
    const re = await until(s, (i) => i.FaultLevel === 'PreSeparate', 'the relevelled fault');
    expect(re.NodeStatus).toBe('PreSeparate');
    fs.writeFileSync(tmp, '{"SeparateFaultCodes": [');
    fs.renameSync(tmp, file);
    await s.until(
      () =>
        s.agent?.logs().find((l) => typeof l.msg === 'string' && l.msg.includes('unusable, the last good table stays')),
      'the rejection in the log',
      20_000,
    );
    expect(switchInfo(s)?.FaultLevel).toBe('PreSeparate');
  }, 60_000);
});

describe('spec F.8 the fault-config ConfigMap key SwitchFaultCode.json', () => {
  test('F.8 the key overrides the file; a key that is not usable, or none, gives the file again', async () => {
    sb = await startWithSwitch();
    const s = sb;
    await until(s, (i) => i.NodeStatus === 'Healthy', 'a Healthy SwitchInfoCfg');
    await s.mock({ op: 'switchFault', alarmId: '0x00f103b6', faultId: 155908, peer: 'na' });
    await until(s, (i) => i.FaultLevel === 'SubHealthFault', 'the SubHealthFault fault (file)');
    const cm = (data: Record<string, string>) => ({
      metadata: { name: 'mindx-dl-fault-config', namespace: 'kube-system' },
      data,
    });
    await s.core().createNamespacedConfigMap({
      namespace: 'kube-system',
      body: cm({ 'SwitchFaultCode.json': JSON.stringify({ SeparateFaultCodes: ['[0x00f103b6,155908,na,na]'] }) }),
    });
    await until(s, (i) => i.FaultLevel === 'Separate', 'the level of the ConfigMap key');
    await s.core().replaceNamespacedConfigMap({
      name: 'mindx-dl-fault-config',
      namespace: 'kube-system',
      body: cm({ 'SwitchFaultCode.json': '{"SeparateFaultCodes": 5}' }),
    });
    await until(s, (i) => i.FaultLevel === 'SubHealthFault', 'the file level after an unusable key');
    await s.core().replaceNamespacedConfigMap({
      name: 'mindx-dl-fault-config',
      namespace: 'kube-system',
      body: cm({ 'SwitchFaultCode.json': JSON.stringify({ PreSeparateFaultCodes: ['[0x00f103b6,155908,na,na]'] }) }),
    });
    await until(s, (i) => i.FaultLevel === 'PreSeparate', 'the level of the new key');
    await s.core().deleteNamespacedConfigMap({ name: 'mindx-dl-fault-config', namespace: 'kube-system' });
    await until(s, (i) => i.FaultLevel === 'SubHealthFault', 'the file level without the ConfigMap');
  }, 60_000);
});

describe('issue 18 Bad input: the switch library', () => {
  test('a switch library lacking the symbols: switch faults off with one warning, the agent serves the chips', async () => {
    sb = await AgentSandbox.create(SCENARIO);
    const s = sb;
    await s.start([`-switchLibrary=${PARTIAL}`]);
    const data = await s.until(() => s.deviceInfo()?.data, 'the device-info ConfigMap', 20_000);
    expect(data[KEY_SWITCH_INFO]).toBe(EMPTY_SWITCH_INFO_CFG);
    const warnings = s
      .agent!.logs()
      .filter((l) => typeof l.msg === 'string' && l.msg.startsWith('910A3 switch faults off'));
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]!.msg)).toMatch(/lacks lq_dcmi_init/);
    expect(s.health('Ascend910-0')).toBe('Healthy');
  }, 60_000);

  test('no switch library found: switch faults off with one warning', async () => {
    sb = await AgentSandbox.create(SCENARIO);
    const s = sb;
    await s.start([`-switchLibrary=${path.join(s.dir, 'absent', 'liblingqu-dcmi.so')}`]);
    await s.until(() => s.deviceInfo()?.data, 'the device-info ConfigMap', 20_000);
    const warnings = s
      .agent!.logs()
      .filter((l) => typeof l.msg === 'string' && l.msg.startsWith('910A3 switch faults off'));
    expect(warnings).toHaveLength(1);
  }, 60_000);
});
