/**
 * Timelines (architecture §7): JSON lines, each a mock-control request (§5) plus `t` (ms from the start), or one of
 * the operator/pod operations `release`, `podUses`, `query`, `devices`, `pod` (create or delete a pod with
 * annotations, as Volcano would leave it) and `allocate` (kubelet's Allocate on given IDs). The player parses them and plays them in real time
 * against handlers: mock operations go to the control socket, the others to the caller.
 */
import fs from 'node:fs';

/** One timeline line. */
export interface TimelineStep {
  readonly t: number;
  readonly op: string;
  readonly logicId?: number;
  readonly [key: string]: unknown;
}

/** Operations the player does not send to the mock. */
export const PLAYER_OPS: ReadonlySet<string> = new Set(['release', 'podUses', 'query', 'devices', 'pod', 'allocate']);

/** At most this many device IDs in one `allocate` step or pod request (a 310P node has 16 × 100 copies). */
export const MAX_STEP_IDS = 1600;
/** A pod name (RFC 1123 label, as Kubernetes checks it). */
const POD_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Parses a JSON-lines timeline; throws naming the line. Steps are returned in time order (stable). */
export function parseTimeline(text: string, where = 'timeline'): TimelineStep[] {
  const steps: TimelineStep[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new Error(`${where}:${i + 1}: not JSON: ${(err as Error).message}`, { cause: err });
    }
    steps.push(checkStep(v, `${where}:${i + 1}`));
  });
  return sortSteps(steps);
}

/** Checks the `timeline` array of a scenario file. */
export function timelineFromArray(items: readonly unknown[], where = 'scenario timeline'): TimelineStep[] {
  return sortSteps(items.map((v, i) => checkStep(v, `${where}[${i}]`)));
}

export function readTimelineFile(file: string): TimelineStep[] {
  return parseTimeline(fs.readFileSync(file, 'utf8'), file);
}

function sortSteps(steps: TimelineStep[]): TimelineStep[] {
  return steps
    .map((s, i) => ({ s, i }))
    .sort((a, b) => a.s.t - b.s.t || a.i - b.i)
    .map((x) => x.s);
}

function checkStep(v: unknown, where: string): TimelineStep {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where}: not a JSON object`);
  const o = v as Record<string, unknown>;
  if (typeof o.t !== 'number' || !Number.isFinite(o.t) || o.t < 0) throw new Error(`${where}: "t" must be ≥ 0 ms`);
  if (typeof o.op !== 'string' || o.op === '') throw new Error(`${where}: "op" missing`);
  if ((o.op === 'release' || o.op === 'podUses') && typeof o.logicId !== 'number')
    throw new Error(`${where}: ${o.op} needs "logicId"`);
  if (o.op === 'pod') checkPodStep(o, where);
  if (o.op === 'allocate') checkAllocateStep(o, where);
  return o as TimelineStep;
}

const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_STEP_IDS;

function checkStringMap(v: unknown, field: string, where: string): void {
  if (v === undefined) return;
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error(`${where}: "${field}" must be an object`);
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string') throw new Error(`${where}: "${field}.${k}" must be a string`);
  }
}

/** `{"op":"pod","name":N,"resource":R,"count":C,"annotations":{…},"labels":{…}}` or `{"op":"pod","name":N,"delete":true}`. */
function checkPodStep(o: Record<string, unknown>, where: string): void {
  if (typeof o.name !== 'string' || !POD_NAME.test(o.name)) throw new Error(`${where}: pod needs "name", a pod name`);
  if (o.delete !== undefined && typeof o.delete !== 'boolean') throw new Error(`${where}: "delete" must be a boolean`);
  if (o.delete === true) return;
  if (typeof o.resource !== 'string' || o.resource === '') throw new Error(`${where}: pod needs "resource"`);
  if (!isCount(o.count)) throw new Error(`${where}: pod needs "count", an integer 1..${MAX_STEP_IDS}`);
  checkStringMap(o.annotations, 'annotations', where);
  checkStringMap(o.labels, 'labels', where);
}

/** `{"op":"allocate","resource":R,"ids":[…]}` or `"count":N` (the first N Healthy IDs), optional `"pod":N`. */
function checkAllocateStep(o: Record<string, unknown>, where: string): void {
  if (typeof o.resource !== 'string' || o.resource === '') throw new Error(`${where}: allocate needs "resource"`);
  const ids = o.ids;
  if ((ids === undefined) === (o.count === undefined)) throw new Error(`${where}: allocate needs "ids" or "count"`);
  if (ids !== undefined) {
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_STEP_IDS || ids.some((x) => typeof x !== 'string'))
      throw new Error(`${where}: "ids" must be 1..${MAX_STEP_IDS} device IDs (strings)`);
  } else if (!isCount(o.count)) throw new Error(`${where}: "count" must be an integer 1..${MAX_STEP_IDS}`);
  if (o.pod !== undefined && (typeof o.pod !== 'string' || !POD_NAME.test(o.pod)))
    throw new Error(`${where}: "pod" must be a pod name`);
}

/** What the player calls. */
export interface TimelineHandlers {
  /** A §5 mock-control request (without `t`). */
  mock(request: Record<string, unknown>): Promise<void>;
  release(logicId: number): Promise<void>;
  podUses(logicId: number, used: boolean): Promise<void>;
  query(step: TimelineStep): Promise<void>;
  /** `pod`: create (or with `delete`, delete) a pod on the node. */
  pod?(step: TimelineStep): Promise<void>;
  /** `allocate`: kubelet's Allocate on the step's IDs. */
  allocate?(step: TimelineStep): Promise<void>;
  /** `devices`: print what kubelet sees per resource (the IDs and their health); a `query` without it. */
  devices?(step: TimelineStep): Promise<void>;
  /** After each step (for a live display). */
  afterStep?(step: TimelineStep): Promise<void> | void;
}

/** Plays `steps` in real time (scaled by `speed`, 1 = real time); resolves after the last step. */
export async function playTimeline(
  steps: readonly TimelineStep[],
  handlers: TimelineHandlers,
  options: { speed?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const speed = options.speed ?? 1;
  const start = Date.now();
  for (const step of steps) {
    if (options.signal?.aborted) return;
    const wait = start + step.t / speed - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const { t: _t, ...request } = step;
    void _t;
    switch (step.op) {
      case 'release':
        await handlers.release(step.logicId!);
        break;
      case 'podUses':
        await handlers.podUses(step.logicId!, step.used !== false);
        break;
      case 'query':
        await handlers.query(step);
        break;
      case 'devices':
        await (handlers.devices ? handlers.devices(step) : handlers.query(step));
        break;
      case 'pod':
        if (!handlers.pod) throw new Error('timeline op pod is not handled here');
        await handlers.pod(step);
        break;
      case 'allocate':
        if (!handlers.allocate) throw new Error('timeline op allocate is not handled here');
        await handlers.allocate(step);
        break;
      default:
        await handlers.mock(request);
    }
    await handlers.afterStep?.(step);
  }
}
