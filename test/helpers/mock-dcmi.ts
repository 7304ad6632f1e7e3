/**
 * Test harness: the real binding on the mock library with a scenario of our choice and its control socket.
 * One harness at a time per process: the mock's state lives in the loaded library.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MOCK_DCMI_LIBRARY, PROJECT_ROOT } from '../../src/core/paths.js';
import { Dcmi, type FaultEvent, type FaultOverflow } from '../../src/dcmi/dcmi.js';
import { MockControlClient } from '../../src/sim/mock-control.js';

/** The scenario fields the tests read (schema: scenarios/README.md). */
export interface ScenarioChip {
  deviceId: number;
  logicId: number;
  phyId: number;
  health?: number;
  errorCodes?: string[];
  ip?: string;
  link?: string;
  processes?: number;
}
export interface Scenario {
  chipName: string;
  chipType?: string;
  chipVersion?: string;
  aicoreCount?: number;
  boardId: number;
  mainboardId?: number;
  dcmiVersion?: string;
  productType?: string;
  subscribe?: 'ok' | 'fail';
  hbmSizeMiB?: number;
  /** DCMI API generation (1 default, 2 = Ascend910A5 `dcmiv2_*`) */
  apiVersion?: 1 | 2;
  superPod?: { superPodId: number; serverId: number; scaleType: number; chassisId?: number; superPodType?: number };
  cards: { cardId: number; brotherCardId?: number; productType?: string; chips: ScenarioChip[] }[];
  [key: string]: unknown;
}

export const SCENARIO_NAMES = ['910b-8chip', '910a-8chip', '910a3-16chip', '310p-4chip'] as const;

export function scenarioPath(name: string): string {
  return path.join(PROJECT_ROOT, 'scenarios', `${name}.json`);
}

export function loadScenario(name: string): Scenario {
  return JSON.parse(fs.readFileSync(scenarioPath(name), 'utf8')) as Scenario;
}

/** Every chip of a scenario with its card id, in enumeration order. */
export function scenarioChips(s: Scenario): (ScenarioChip & { cardId: number })[] {
  return s.cards.flatMap((card) =>
    [...card.chips].sort((a, b) => a.deviceId - b.deviceId).map((chip) => ({ ...chip, cardId: card.cardId })),
  );
}

export function tempDir(prefix = 'dcmi-'): string {
  // short path: Unix socket paths must stay under 108 bytes
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface MockHarness {
  dcmi: Dcmi;
  control: MockControlClient;
  dir: string;
  controlPath: string;
  scenario: Scenario;
  close(): void;
}

/** Opens the mock with a scenario (a name under scenarios/ or an object written to a temp file) and inits it. */
export async function openMock(scenario: string | Scenario): Promise<MockHarness> {
  const dir = tempDir();
  let file: string;
  let parsed: Scenario;
  if (typeof scenario === 'string') {
    file = scenarioPath(scenario);
    parsed = loadScenario(scenario);
  } else {
    file = path.join(dir, 'scenario.json');
    fs.writeFileSync(file, JSON.stringify(scenario));
    parsed = scenario;
  }
  const controlPath = path.join(dir, 'ctl.sock');
  const dcmi = Dcmi.open(MOCK_DCMI_LIBRARY);
  try {
    dcmi.mockConfigure(file, controlPath);
    await dcmi.init();
    const control = await MockControlClient.connect(controlPath);
    return {
      dcmi,
      control,
      dir,
      controlPath,
      scenario: parsed,
      close() {
        control.close();
        dcmi.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    dcmi.close();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Collects fault events and overflow notices and waits for them without sleeping blindly. */
export class EventCollector {
  readonly events: FaultEvent[] = [];
  readonly overflows: FaultOverflow[] = [];
  private waiters: (() => void)[] = [];

  readonly subscription = {
    onEvent: (e: FaultEvent): void => {
      this.events.push(e);
      this.wake();
    },
    onOverflow: (n: FaultOverflow): void => {
      this.overflows.push(n);
      this.wake();
    },
  };

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once `count` events have arrived; rejects after `timeoutMs`. */
  waitForEvents(count: number, timeoutMs = 5000): Promise<FaultEvent[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`expected ${count} events, got ${this.events.length}`)),
        timeoutMs,
      );
      const check = (): void => {
        if (this.events.length >= count) {
          clearTimeout(timer);
          resolve(this.events.slice(0, count));
        } else {
          this.waiters.push(check);
        }
      };
      check();
    });
  }
}

/** 8-digit upper-case hex, as the mock's `state` reply and the ConfigMaps write codes. */
export function hex(code: number): string {
  return (code >>> 0).toString(16).toUpperCase().padStart(8, '0');
}

/** Polls `predicate` every few ms until it holds; rejects with `what` after `timeoutMs`. */
export async function waitUntil(predicate: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** What `f` throws; fails the test when it returns instead. */
export function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}
