import { describe, expect, test } from '@jest/globals';
import { LEVELS_BY_SEVERITY, resetPolicyOf, type FaultLevel } from '../../src/faults/levels.js';
import type { ChipKind } from '../../src/core/chips.js';
import {
  POLICY_LEVEL,
  isGraceToleranceSupported,
  isResetPolicy,
  needsReset,
  policyLevel,
  policyOfLevel,
  taskPolicy,
} from '../../src/reset/policy.js';
import type { HotResetMode, ResetPolicy } from '../../src/reset/types.js';

describe('§1.4 fault level → policy (GetDevProcessPolicy)', () => {
  test.each<[FaultLevel, ResetPolicy]>([
    ['NormalNPU', 'empty'],
    ['NotHandleFault', 'empty'],
    ['SubHealthFault', 'empty'],
    ['RestartRequest', 'restart_request'],
    ['RestartBusiness', 'restart'],
    ['FreeRestartNPU', 'free_reset'],
    ['RestartNPU', 'reset'],
    ['PreSeparateNPU', 'isolate'],
    ['SeparateNPU', 'isolate'],
    ['ManuallySeparateNPU', 'isolate'],
  ])('§1.4 %s → %s', (level, policy) => {
    expect(policyOfLevel(level)).toBe(policy);
  });
  test('§1.4 any other level → isolate', () => {
    expect(policyOfLevel('SomethingNew' as FaultLevel)).toBe('isolate');
  });
  test('§1.4 ignore is never produced', () => {
    expect(LEVELS_BY_SEVERITY.map(policyOfLevel)).not.toContain('ignore');
  });
  test('§1.4 agrees with the E.2 reset vocabulary of every level (faults/levels resetPolicyOf)', () => {
    for (const level of LEVELS_BY_SEVERITY) {
      expect([level, policyOfLevel(level), POLICY_LEVEL[policyOfLevel(level)]]).toEqual([
        level,
        resetPolicyOf(level).name,
        resetPolicyOf(level).value,
      ]);
    }
  });
});

describe('§1.4 policy levels', () => {
  test.each<[ResetPolicy, number]>([
    ['empty', 0],
    ['ignore', 1],
    ['restart_request', 2],
    ['restart', 3],
    ['free_reset', 4],
    ['reset', 5],
    ['isolate', 6],
  ])('§1.4 %s has level %i', (policy, level) => {
    expect(policyLevel(policy)).toBe(level);
    expect(POLICY_LEVEL[policy]).toBe(level);
  });
  test('§1.4 the vocabulary has exactly seven policies', () => {
    expect(Object.keys(POLICY_LEVEL)).toHaveLength(7);
  });
  test('§1.4 an unknown policy string is an error naming it', () => {
    expect(() => policyLevel('Reset')).toThrow('unknown reset policy "Reset"');
  });
  test('§1.4 the empty string is not a policy', () => {
    expect(() => policyLevel('')).toThrow('unknown reset policy ""');
  });
  test('§1.4 inherited object keys are not policies', () => {
    expect(isResetPolicy('toString')).toBe(false);
  });
});

describe('§1.4 task policy (GetTaskProcessPolicy)', () => {
  test('§1.4 HR-18 the task policy is the highest level: reset + no fault → reset (5)', () => {
    expect(
      taskPolicy([
        { logicId: 0, policy: 'reset' },
        { logicId: 1, policy: 'empty' },
      ]),
    ).toEqual({ policy: 'reset', level: 5 });
  });
  test('§1.4 one isolate chip (6) outranks reset chips (TestPolicyLevelHandle)', () => {
    expect(
      taskPolicy([
        { logicId: 0, policy: 'reset' },
        { logicId: 1, policy: 'isolate' },
        { logicId: 2, policy: 'reset' },
      ]),
    ).toEqual({ policy: 'isolate', level: 6 });
  });
  test('§1.4 free_reset (4) outranks restart (3)', () => {
    expect(
      taskPolicy([
        { logicId: 0, policy: 'restart' },
        { logicId: 1, policy: 'free_reset' },
      ]),
    ).toEqual({ policy: 'free_reset', level: 4 });
  });
  test('§1.4 on a tie the lowest logic id wins, whatever the input order', () => {
    // Same level, same policy string: the winner is observable only through which chip is chosen, so check that
    // the result does not depend on the order and equals the first chip's policy.
    const chips = [
      { logicId: 5, policy: 'restart' },
      { logicId: 2, policy: 'restart' },
    ];
    expect(taskPolicy(chips)).toEqual(taskPolicy([...chips].reverse()));
    expect(taskPolicy(chips)).toEqual({ policy: 'restart', level: 3 });
  });
  test('§1.4 all chips at level 0 → policy "" with level 0', () => {
    expect(
      taskPolicy([
        { logicId: 0, policy: 'empty' },
        { logicId: 1, policy: 'empty' },
      ]),
    ).toEqual({ policy: '', level: 0 });
  });
  test('§1.4 a task without chips → policy "" with level 0', () => {
    expect(taskPolicy([])).toEqual({ policy: '', level: 0 });
  });
  test('§1.4 ignore (1) is a policy of its own', () => {
    expect(taskPolicy([{ logicId: 0, policy: 'ignore' }])).toEqual({ policy: 'ignore', level: 1 });
  });
  test('§1.4 HR-18 an unknown policy string on any chip is an error naming the chip', () => {
    expect(() =>
      taskPolicy([
        { logicId: 0, policy: 'reset' },
        { logicId: 3, policy: 'reboot' },
      ]),
    ).toThrow('chip logic id 3 has unknown reset policy "reboot"');
  });
  test('§1.4 an unknown policy is an error even below a higher chip', () => {
    expect(() =>
      taskPolicy([
        { logicId: 0, policy: 'isolate' },
        { logicId: 1, policy: '' },
      ]),
    ).toThrow(/logic id 1/);
  });
});

describe('§1.4 chips needing reset (GetNeedResetDevMap)', () => {
  test.each<[ResetPolicy, boolean]>([
    ['empty', false],
    ['ignore', false],
    ['restart_request', true],
    ['restart', true],
    ['free_reset', false],
    ['reset', true],
    ['isolate', false],
  ])('§1.4 %s → %p', (policy, expected) => {
    expect(needsReset(policy)).toBe(expected);
  });
  test('§1.4 an unknown policy string is an error naming it', () => {
    expect(() => needsReset('restart-request')).toThrow('unknown reset policy "restart-request"');
  });
});

describe('§1.2 GraceToleranceOn gate (HR-01)', () => {
  test.each<[ChipKind, boolean, HotResetMode, boolean]>([
    ['Ascend910B', true, 1, true],
    ['Ascend910B', true, 2, true],
    ['Ascend910B', true, 0, false],
    ['Ascend910B', true, -1, false],
    ['Ascend910A3', false, 1, true],
    ['Ascend910A5', false, 1, true],
    ['Ascend310P', true, 1, false],
    ['Ascend310', true, 1, false],
    ['Ascend310B', true, 1, false],
    ['Ascend910', false, 1, false],
    ['Ascend910', true, 1, true],
  ])('§1.2 HR-01 %s, SMP %p, -hotReset=%i → %p', (kind, smp, mode, expected) => {
    expect(isGraceToleranceSupported(kind, smp, mode)).toBe(expected);
  });
});
