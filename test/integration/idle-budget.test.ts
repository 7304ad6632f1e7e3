/**
 * Issue [P] item 7: the agent's idle budgets as a CI check — a budget with a margin, not a stopwatch. The built
 * agent (`npm run build`) runs with the `node` options of its `#!` line, as the image runs it (src/cli/agent.ts),
 * on the mock library; after a settling time its idle RSS and DCMI calls are read from outside (/proc and the mock's
 * call counters, test/helpers/idle-figures.ts). Targets (issue [P] "Done when"): RSS ≤ 64 MiB with 16 chips, ≤ 140
 * DCMI calls a minute with 8 chips; the budgets below add a margin for run-to-run spread (the speeds and the
 * ratios against a baseline build are bench/lighter.ts's).
 */
import { describe, expect, test } from '@jest/globals';
import { AGENT_JS } from '../helpers/agent-process.js';
import { measureIdle, shebangNodeArgs } from '../helpers/idle-figures.js';

/** Target 64 MiB + 8 MiB for the spread of RSS between runs and machines (bench/README.md "lighter"). */
const RSS_BUDGET_MIB = 72;
/** Target 140 + 10 %: a 40 s window holds eight 5 s periods ± one period's reads. */
const DCMI_BUDGET_PER_MIN = 154;

const run = { agentJs: AGENT_JS, nodeArgs: shebangNodeArgs(AGENT_JS), settleSeconds: 8 };

describe('issue [P] item 7: idle budgets of the agent', () => {
  test('idle RSS with 16 chips (mean of 1 s samples over 15 s) within the budget', async () => {
    const idle = await measureIdle('910a3-16chip.json', { ...run, idleSeconds: 15 }, () => Promise.resolve());
    expect(idle.rssMiB).toBeLessThanOrEqual(RSS_BUDGET_MIB);
  }, 120_000);

  test('idle DCMI calls a minute with 8 chips (over 40 s, -listWatchPeriod=5) within the budget', async () => {
    const idle = await measureIdle('910b-8chip.json', { ...run, idleSeconds: 40 }, () => Promise.resolve());
    expect(idle.dcmiCallsPerMin).toBeLessThanOrEqual(DCMI_BUDGET_PER_MIN);
  }, 120_000);
});
