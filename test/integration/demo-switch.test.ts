/**
 * Issue 18 item 6: the 910A3 switch demo. The built `ascend-npu-agent simulate` runs as a child process on
 * `scenarios/910a3-switch.json` (the mock liblingqu-dcmi.so with two switch chips) and plays
 * `scenarios/timelines/910a3-switch.jsonl`: a SubHealth switch fault and its recovery, then 16 L2-facing port faults
 * on one switch chip forcing Separate (spec L.9), then one port back.
 */
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { switchLine } from '../../src/sim/simulate.js';
import { simulate, stepAt, type SimulateRun } from '../helpers/simulate-cli.js';

/** The `switch` line of a step's block, or a note that it has none. */
const switchOf = (block: string): string =>
  block.split('\n').find((l) => l.trimStart().startsWith('switch ')) ?? '(no switch line)';

describe('issue 18 item 6: the 910A3 switch timeline', () => {
  let run: SimulateRun | undefined;
  const played = async (): Promise<SimulateRun> => {
    run ??= await simulate([
      '--scenario',
      path.join(PROJECT_ROOT, 'scenarios', '910a3-switch.json'),
      '--timeline',
      path.join(PROJECT_ROOT, 'scenarios', 'timelines', '910a3-switch.jsonl'),
    ]);
    return run;
  };

  test('L.9 the demo exits 0 and its summary shows the switch line', async () => {
    const r = await played();
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/\n {2}switch {14}NodeStatus=/);
  }, 120_000);

  test('L.9 a SubHealth switch fault shows as SubHealthy with its code, chip and port', async () => {
    const r = await played();
    expect(switchOf(stepAt(r.stdout, '3.0', 'query'))).toMatch(
      /NodeStatus=SubHealthy FaultLevel=SubHealthFault faults=1 \[0x00f103b6,155908,na,na\]@0\/2$/,
    );
  }, 120_000);

  test('L.9 its recovery leaves a quiet switch (no switch line)', async () => {
    const r = await played();
    expect(switchOf(stepAt(r.stdout, '5.5', 'query'))).toBe('(no switch line)');
  }, 120_000);

  test('L.9 16 L2-facing port faults on one switch chip force Separate and UnHealthy', async () => {
    const r = await played();
    expect(switchOf(stepAt(r.stdout, '10.0', 'query'))).toMatch(
      /NodeStatus=UnHealthy FaultLevel=Separate faults=16 \[0x08520003,na,L2,na\]@1\/0 /,
    );
  }, 120_000);

  test('L.9 switch faults leave the chips alone: kubelet keeps every chip Healthy', async () => {
    const r = await played();
    expect(stepAt(r.stdout, '10.5', 'devices')).toMatch(/huawei\.com\/Ascend910: 16 IDs .*; all Healthy/);
  }, 120_000);

  test('L.9 one port back (15 left) is NotHandle again and the node Healthy', async () => {
    const r = await played();
    expect(switchOf(stepAt(r.stdout, '13.0', 'query'))).toMatch(/NodeStatus=Healthy FaultLevel=NotHandle faults=15 /);
  }, 120_000);

  test('a burst of the same op prints the table once, after its last step', async () => {
    const r = await played();
    expect(stepAt(r.stdout, '7.4', 'switchFault')).toBe(
      't=7.4 s switchFault alarmId=0x08520003 faultId=na peer=L2 chipId=1 portId=14',
    );
  }, 120_000);
});

describe('switchLine (the simulate table line for SwitchInfoCfg)', () => {
  test('L.9 the Go zero value with Healthy status is quiet', () => {
    const v = JSON.stringify({ FaultCode: [], FaultLevel: '', UpdateTime: 0, NodeStatus: 'Healthy' });
    expect(switchLine(v)).toEqual({ text: 'NodeStatus=Healthy FaultLevel=- faults=0', quiet: true });
  });

  test('a value that is not JSON is reported with its size, not thrown', () => {
    expect(switchLine('{oops')).toEqual({ text: 'SwitchInfoCfg is not JSON (5 bytes)', quiet: false });
  });
});
