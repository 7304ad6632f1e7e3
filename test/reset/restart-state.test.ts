/**
 * Issue [T] item 4: what the reset layer leaves in `-stateDir` for an agent restart — `offline-resets.json` (the
 * offline resets in flight and the token buckets) — and the store overrides a restarted agent derives from both files
 * before its first snapshot (docs/hot-reset.md "Agent restart").
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { OfflineStateFile, type OfflineState } from '../../src/reset/offline-state.js';
import type { EpisodeRecord } from '../../src/reset/online-types.js';
import { restartOverrides } from '../../src/reset/restart-overrides.js';
import { EpisodeFileStore } from '../../src/reset/reset-runtime.js';
import { recordingLogger } from '../runtime/log-recorder.js';

let dir = '';
afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = '';
});
const tmp = (): string => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reset-state-')));

const OFFLINE: OfflineState = {
  resets: [{ logicId: 3, group: [0, 1, 2, 3, 4, 5, 6, 7], startedAt: 1_767_225_600_000, phase: 'waitingBoot' }],
  buckets: [{ logicId: 3, tokens: 2, lastRefillAt: 1_767_225_600_000 }],
};

function episode(state: EpisodeRecord['state'], outcome?: 'failed'): EpisodeRecord {
  return {
    task: 'job1',
    namespace: 'default',
    podUid: 'uid',
    initialPolicy: 'reset',
    policy: 'reset',
    state,
    startedAt: 1,
    snapshot: [{ logicId: 11, rankId: 0, policy: 'reset', codes: [1] }],
    rankChips: [8, 9, 10, 11],
    ringChips: [8, 9, 10, 11, 12, 13, 14, 15],
    ...(outcome ? { outcome } : {}),
  };
}

describe('offline-resets.json (issue [T] item 4)', () => {
  test('saved and loaded back; private (0600)', () => {
    const d = tmp();
    const f = new OfflineStateFile(d);
    f.save(OFFLINE);
    expect(f.load()).toEqual(OFFLINE);
    expect(fs.statSync(path.join(d, 'offline-resets.json')).mode & 0o777).toBe(0o600);
  });

  test.each([
    ['not an object', '[]', /not a JSON object/],
    [
      'a phase that does not exist',
      JSON.stringify({ ...OFFLINE, resets: [{ ...OFFLINE.resets[0], phase: 'x' }] }),
      /resets\[0\]\.phase/,
    ],
    [
      'an empty group',
      JSON.stringify({ ...OFFLINE, resets: [{ ...OFFLINE.resets[0], group: [] }] }),
      /resets\[0\]\.group/,
    ],
    ['a bucket without tokens', JSON.stringify({ ...OFFLINE, buckets: [{ logicId: 1 }] }), /buckets\[0\]/],
  ])('%s: set aside as <file>.corrupt-<ms>, logged with the reason, nothing loaded', (_, text, why) => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'offline-resets.json'), text);
    const { log, lines } = recordingLogger();
    expect(new OfflineStateFile(d, log).load()).toBeUndefined();
    expect(fs.readdirSync(d).filter((f) => /^offline-resets\.json\.corrupt-\d+$/.test(f))).toHaveLength(1);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([['error', 'offline resets file ignored']]);
    expect(String(lines[0]!.fields.why)).toMatch(why);
  });
});

describe('store overrides of a restarted agent (docs/hot-reset.md "Agent restart")', () => {
  test('nothing saved: no override', () => {
    const o = restartOverrides(tmp(), true);
    expect([o.healthy.size, o.networkHealthy.size, o.recovering.size]).toEqual([0, 0, 0]);
  });

  test('an offline reset in flight: its group is reported rebooting (Unhealthy, -Recovering)', () => {
    const d = tmp();
    new OfflineStateFile(d).save(OFFLINE);
    expect([...restartOverrides(d, false).recovering]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('§3.10 an online episode past its first write: RankList chips Healthy, its ring NetworkHealthy', () => {
    const d = tmp();
    new EpisodeFileStore(d).save([episode('waitingProcesses')]);
    const o = restartOverrides(d, true);
    expect([...o.healthy]).toEqual([8, 9, 10, 11]);
    expect([...o.networkHealthy]).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
  });

  test.each([
    ['its first write unconfirmed (starting)', episode('starting')],
    ['failing (isolate decided)', episode('writingResult', 'failed')],
  ])('§3.10 an online episode %s is not filtered', (_, ep) => {
    const d = tmp();
    new EpisodeFileStore(d).save([ep]);
    expect(restartOverrides(d, true).healthy.size).toBe(0);
  });

  test('online episodes count only where the online engine runs (-hotReset=1)', () => {
    const d = tmp();
    new EpisodeFileStore(d).save([episode('waitingBoot')]);
    expect(restartOverrides(d, false).healthy.size).toBe(0);
  });
});
