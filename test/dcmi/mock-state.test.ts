/**
 * Issue [T] item 4: the mock's chip state kept outside the process (`ASCEND_MOCK_STATE`, scenarios/README.md "State
 * file"). Each "agent" here is a child process that loads the real binding on the mock library — the variable must
 * reach the library's own `getenv`, which `process.env` in a jest worker does not (toolchain.md §6.8) — changes the
 * chips through the control socket or DCMI, and prints the mock's `state` reply. The next child must find the chips
 * as the previous one left them, also when the previous one was killed with SIGKILL in the middle of a reset.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { MOCK_DCMI_LIBRARY, PROJECT_ROOT } from '../../src/core/paths.js';
import { openMock, scenarioPath, tempDir } from '../helpers/mock-dcmi.js';

const ADDON = path.join(PROJECT_ROOT, 'build', 'Release', 'dcmi_addon.node');
const RESTART_NPU = '8C03A000';

/**
 * The child: dcmi_init, then each request line of argv[3] (JSON array) on the control socket, then an optional DCMI
 * reset of (card, device) argv[4] that it announces with `calling` (and may be killed in), then the `state` reply.
 */
const CHILD = `
const net = require('node:net');
const a = require(process.argv[1]);
const lib = new a.DcmiLibrary(process.argv[2]);
const requests = JSON.parse(process.argv[3]);
const reset = process.argv[4] ? JSON.parse(process.argv[4]) : undefined;
function ask(reqs) {
  return new Promise((resolve, reject) => {
    const s = net.connect(process.env.ASCEND_MOCK_CONTROL);
    let buf = '';
    const out = [];
    s.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\\n')) >= 0) {
        out.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
        if (out.length === reqs.length) { s.end(); resolve(out); }
      }
    });
    s.on('error', reject);
    s.write(reqs.map((r) => JSON.stringify(r) + '\\n').join(''));
  });
}
lib.init().then(async () => {
  if (requests.length) for (const r of await ask(requests)) if (!r.ok) console.log('FAILED ' + JSON.stringify(r));
  if (reset) {
    const p = lib.setDeviceReset(reset[0], reset[1], 1);
    console.log('calling');
    await p;
  }
  console.log(JSON.stringify((await ask([{ op: 'state' }]))[0]));
}, (e) => console.log('init ' + String(e.code)));`;

interface ChipState {
  logicId: number;
  health: number;
  errorCodes: string[];
  link: string;
  processes: number;
  dropped: boolean;
  resets: number;
  resetAttempts: number;
  resetResult: string;
  bootSeconds: number;
  callSeconds: number;
  bootStatus: number;
}
interface State {
  chips: ChipState[];
  stateFile: string | null;
}

let dir = '';
const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = '';
});

function setup(): { stateFile: string; env: Record<string, string> } {
  dir = tempDir('mock-state-');
  const stateFile = path.join(dir, 'chips.json');
  return {
    stateFile,
    env: {
      PATH: process.env.PATH ?? '',
      ASCEND_MOCK_SCENARIO: scenarioPath('910b-8chip'),
      ASCEND_MOCK_CONTROL: path.join(dir, 'ctl.sock'),
      ASCEND_MOCK_STATE: stateFile,
    },
  };
}

function start(
  env: Record<string, string>,
  requests: object[] = [],
  reset?: [number, number],
): { child: ChildProcess; out: () => string; err: () => string; done: Promise<void> } {
  const args = ['-e', CHILD, ADDON, MOCK_DCMI_LIBRARY, JSON.stringify(requests)];
  if (reset) args.push(JSON.stringify(reset));
  const child = spawn(process.execPath, args, { env });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, out: () => out, err: () => err, done };
}

/** One child to completion; its `state` reply (or throws with its output). */
async function run(env: Record<string, string>, requests: object[] = []): Promise<State> {
  const c = start(env, requests);
  await c.done;
  const last = c.out().trim().split('\n').at(-1) ?? '';
  if (!last.startsWith('{') || c.out().includes('FAILED')) throw new Error(`child: ${c.out()} ${c.err()}`);
  return JSON.parse(last) as State;
}

async function until(check: () => boolean, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('scenarios/README "State file" (ASCEND_MOCK_STATE, issue [T] item 4)', () => {
  test('without the variable nothing is kept: the state reply names no state file', async () => {
    const h = await openMock('910b-8chip');
    try {
      const st = (await h.control.request({ op: 'state' })) as unknown as State;
      expect(st.stateFile).toBeNull();
    } finally {
      h.close();
    }
  });

  test('the file is created at the first dcmi_init from the scenario, mode 0600', async () => {
    const { stateFile, env } = setup();
    const st = await run(env);
    expect(st.stateFile).toBe(stateFile);
    expect(fs.statSync(stateFile).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { version: number; chips: { logicId: number }[] };
    expect(saved.version).toBe(1);
    expect(saved.chips.map((c) => c.logicId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('faults, health, link, processes, card drop and the reset behaviour survive the process', async () => {
    const { env } = setup();
    await run(env, [
      { op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' },
      { op: 'silentFault', logicId: 3, eventId: '80E01801', assertion: 'occur' },
      { op: 'health', logicId: 3, value: 2 },
      { op: 'link', logicId: 5, status: 'DOWN' },
      { op: 'processes', logicId: 1, count: 2 },
      { op: 'drop', logicId: 6 },
      { op: 'resetResult', logicId: 2, result: 'hang', bootSeconds: 7, callSeconds: 0.5 },
    ]);
    const st = await run(env);
    expect(st.chips[3]).toMatchObject({ errorCodes: [RESTART_NPU, '80E01801'], health: 2 });
    expect(st.chips[5]!.link).toBe('DOWN');
    expect(st.chips[1]!.processes).toBe(2);
    expect(st.chips[6]!.dropped).toBe(true);
    expect(st.chips[2]).toMatchObject({ resetResult: 'hang', bootSeconds: 7, callSeconds: 0.5 });
    // untouched chips keep the scenario's values
    expect(st.chips[0]).toMatchObject({ errorCodes: [], health: 0, link: 'UP', processes: 0, dropped: false });
  });

  test('SIGKILL during a blocking dcmi_set_device_reset: the next process finds the chip reset and booting', async () => {
    const { env } = setup();
    await run(env, [
      { op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' },
      { op: 'processes', logicId: 3, count: 1 },
      { op: 'resetResult', logicId: 3, result: 'ok', bootSeconds: 1, callSeconds: 30 },
    ]);
    const c = start(env, [], [3, 0]);
    await until(() => c.out().includes('calling'), 'the reset call');
    c.child.kill('SIGKILL');
    await c.done;
    const st = await run(env);
    // the reset took effect when it was issued (scenarios/README "Reset"); the boot runs until 30 s + 1 s later
    expect(st.chips[3]).toMatchObject({ resets: 1, resetAttempts: 1, errorCodes: [], processes: 0, bootStatus: 2 });
  });

  test('a boot in progress ends at its deadline, whichever process looks', async () => {
    const { env } = setup();
    await run(env, [{ op: 'resetResult', logicId: 1, result: 'ok', bootSeconds: 1 }]);
    const c = start(env, [], [1, 0]);
    await c.done;
    const during = await run(env);
    expect(during.chips[1]).toMatchObject({ resets: 1, bootStatus: 2 });
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await run(env)).chips[1]).toMatchObject({ resets: 1, bootStatus: 16 });
  });

  test('a file of another boot of the machine (other boot id) has every boot finished; a hang stays', async () => {
    const { stateFile, env } = setup();
    await run(env, [
      { op: 'resetResult', logicId: 1, result: 'ok', bootSeconds: 3600 },
      { op: 'resetResult', logicId: 2, result: 'hang' },
    ]);
    await start(env, [], [1, 0]).done;
    await start(env, [], [2, 0]).done;
    expect((await run(env)).chips.map((c) => c.bootStatus).slice(0, 3)).toEqual([16, 2, 2]);
    const saved = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { bootId: string };
    saved.bootId = '00000000-0000-0000-0000-000000000000';
    fs.writeFileSync(stateFile, JSON.stringify(saved));
    expect((await run(env)).chips.map((c) => c.bootStatus).slice(0, 3)).toEqual([16, 16, 2]);
  });

  test('every change rewrites the file by rename: no temporary file is left, the file is always whole', async () => {
    const { stateFile, env } = setup();
    const requests = Array.from({ length: 200 }, (_, i) => ({ op: 'processes', logicId: i % 8, count: i % 3 }));
    await run(env, requests);
    expect(fs.readdirSync(dir).filter((f) => f.includes('.tmp'))).toEqual([]);
    const saved = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { chips: { processes: number }[] };
    expect(saved.chips.map((c) => c.processes)).toEqual([192, 193, 194, 195, 196, 197, 198, 199].map((i) => i % 3));
  });

  test.each([
    ['not JSON', '{"version":1,', /line 1 column \d+/],
    ['another version', '{"version":2,"bootId":"","chips":[]}', /version: 2 is not supported/],
    ['a chip of another scenario', 'phy', /chips\[2\]\.phyId: 9, but the scenario's chip logicId 2 has phyId 2/],
    ['a chip missing', 'missing', /chips: no entry for the scenario's chip logicId 7/],
    ['an unknown field', 'unknown', /chips\[0\]\.colour: unknown field/],
  ])('an invalid state file (%s) makes dcmi_init return -8005 naming the file and the field', async (_, text, why) => {
    const { stateFile, env } = setup();
    await run(env);
    const saved = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { chips: Record<string, unknown>[] };
    if (text === 'phy') saved.chips[2]!.phyId = 9;
    else if (text === 'missing') saved.chips.pop();
    else if (text === 'unknown') saved.chips[0]!.colour = 'red';
    fs.writeFileSync(stateFile, text.startsWith('{') ? text : JSON.stringify(saved));
    const c = start(env);
    await c.done;
    expect(c.out().trim()).toBe('init -8005');
    const line = c
      .err()
      .split('\n')
      .find((l) => l.startsWith('mock_dcmi: '));
    expect(line).toMatch(new RegExp(`^mock_dcmi: ${stateFile}: `));
    expect(line).toMatch(why);
  });
});
