/**
 * The `simulate` demo of the DCMI foundation: the real binding on the mock library, faults injected through the
 * mock's control socket, and what DCMI then reports. Needs no NPU, no cluster and no root.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MOCK_DCMI_LIBRARY, MOCK_HCCN_TOOL, PROJECT_ROOT } from '../dcmi/bindings.js';
import { Dcmi, type FaultEvent } from '../dcmi/dcmi.js';
import { queryLinkStatus } from '../dcmi/hccn.js';
import { resolveDcmiLibrary } from '../dcmi/library-path.js';
import { MockControlClient } from './mock-control.js';

/** Text of a fault code as the rest of the product writes it: 8 upper-case hex digits. */
export function hexCode(code: number): string {
  return (code >>> 0).toString(16).toUpperCase().padStart(8, '0');
}

function waitForEvent(events: FaultEvent[], count: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      if (events.length >= count) resolve();
      else if (Date.now() > deadline) reject(new Error(`no fault event within ${timeoutMs} ms`));
      else setTimeout(tick, 2);
    };
    tick();
  });
}

/** Runs the demo; returns the exit status. `args`: optional `--scenario FILE`. */
export async function runDcmiDemo(args: readonly string[], out: NodeJS.WritableStream): Promise<number> {
  const i = args.indexOf('--scenario');
  const scenario = path.resolve(
    i >= 0 && args[i + 1] ? args[i + 1]! : path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'),
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-demo-'));
  const control = path.join(dir, 'mock.sock');
  const say = (line = ''): void => void out.write(`${line}\n`);
  const lib = await resolveDcmiLibrary({
    explicitPath: MOCK_DCMI_LIBRARY,
    env: process.env,
    ownUid: process.getuid?.() ?? 0,
  });
  const dcmi = Dcmi.open(lib.path);
  let client: MockControlClient | undefined;
  try {
    dcmi.mockConfigure(scenario, control);
    await dcmi.init();
    client = await MockControlClient.connect(control);
    say(
      `DCMI ${dcmi.getDcmiVersion()} from ${path.relative(PROJECT_ROOT, lib.path)}, scenario ${path.relative(PROJECT_ROOT, scenario)}`,
    );
    const chips = dcmi.enumerate();
    const first = chips[0]!;
    const info = dcmi.getChipInfo(first.cardId, first.deviceId);
    const board = dcmi.getBoardInfo(first.cardId, first.deviceId);
    say(
      `chip ${info.chipName}, board 0x${board.boardId.toString(16)}, ${chips.length} chips, ${info.aicoreCount} AI cores each`,
    );
    say();
    say('logic phy card dev  health  ip               link');
    const hccn = { toolPath: MOCK_HCCN_TOOL, env: { ...process.env, ASCEND_MOCK_CONTROL: control } };
    for (const c of chips) {
      let ip = '-';
      try {
        ip = dcmi.getDeviceIp(c.cardId, c.deviceId);
      } catch {
        // 310P and friends have no RoCE address
      }
      const link = (await queryLinkStatus(hccn, c.phyId)).status;
      const health = dcmi.getDeviceHealth(c.cardId, c.deviceId);
      say(
        `${String(c.logicId).padStart(5)} ${String(c.phyId).padStart(3)} ${String(c.cardId).padStart(4)} ${String(c.deviceId).padStart(3)}  ${String(health).padStart(6)}  ${ip.padEnd(16)} ${link}`,
      );
    }
    const events: FaultEvent[] = [];
    dcmi.subscribeFaultEvents({
      onEvent: (e) => events.push(e),
      onOverflow: (n) => say(`overflow: ${n.dropped} events for chips ${n.logicIds.join(',')} must be re-read`),
    });
    const target = chips[Math.min(3, chips.length - 1)]!;
    const codes = (): string => {
      const r = dcmi.getDeviceAllErrorCodes(target.cardId, target.deviceId);
      return r.codes.length ? r.codes.map(hexCode).join(',') : '(none)';
    };
    say();
    for (const assertion of ['occur', 'recover'] as const) {
      const before = events.length;
      const sentNs = process.hrtime.bigint();
      await client.expectOk({ op: 'fault', logicId: target.logicId, eventId: '80E01801', assertion });
      await waitForEvent(events, before + 1, 2000);
      const e = events[events.length - 1]!;
      const ms = Number(process.hrtime.bigint() - sentNs) / 1e6;
      say(
        `injected 80E01801 ${assertion} on logic ${target.logicId}: event ${hexCode(e.eventId)} assertion=${e.assertion} severity=${e.severity} "${e.eventName}" reached JS in ${ms.toFixed(2)} ms; codes now ${codes()}`,
      );
    }
    await client.expectOk({ op: 'drop', logicId: target.logicId });
    say(`card drop on logic ${target.logicId}: codes now ${codes()} (0x40F84E00 = card drop, synthesised from -8012)`);
    await client.expectOk({ op: 'restore', logicId: target.logicId });
    say(`restored: codes now ${codes()}`);
    say();
    say('The node agent itself (kubelet device plugin, device-info ConfigMap) is not built yet.');
    return 0;
  } finally {
    client?.close();
    dcmi.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
