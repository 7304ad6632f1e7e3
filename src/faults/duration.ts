/**
 * The FaultDuration state machine of one (code, chip) pair (spec F.4), as a pure function over plain data.
 */
import type { DurationRule } from './customization.js';

/** Assertion of a fault event: 0 recovery, 1 occurrence, 2 one-shot notice (spec D.4). */
export type Assertion = 'recover' | 'occur' | 'once';

/** A queued event of the duration machine. */
export interface DurationEvent {
  assertion: Assertion;
  time: number;
}

/** State of one (code, chip) pair. Plain JSON. */
export interface DurationData {
  timedOut: boolean;
  queue: DurationEvent[];
  /** ms; the last measured fault duration. */
  faultDuration: number;
  /** ms; the last measured recovery duration. */
  recoverDuration: number;
  /** ms; when the last flip took effect (start + threshold). */
  alarmTime: number;
}

/** A fresh pair state. */
export function newDurationData(): DurationData {
  return { timedOut: false, queue: [], faultDuration: 0, recoverDuration: 0, alarmTime: 0 };
}

/**
 * Runs one cycle of the machine on `d` (mutated) with the events already appended to `d.queue`.
 * Returns the flip of this cycle, comparing the state before and after as upstream does.
 */
export function runDuration(d: DurationData, rule: DurationRule, now: number): 'on' | 'off' | 'none' {
  // Stable sort by time (upstream's sort is not stable; equal times keep arrival order here).
  let q = d.queue.slice().sort((a, b) => a.time - b.time);
  // Collapse runs of equal assertion, keeping the first of each run.
  q = q.filter((e, i) => i === 0 || e.assertion !== q[i - 1]!.assertion);
  if (!d.timedOut && q[0]?.assertion === 'recover') q = q.slice(1);
  if (d.timedOut && q[0]?.assertion === 'occur') q = q.slice(1);
  const initial = d.timedOut;
  for (;;) {
    if (q.length === 0) break;
    const thr = (d.timedOut ? rule.recoverTimeoutSec : rule.faultTimeoutSec) * 1000;
    const half = Math.floor(q.length / 2);
    let lastD = 0;
    let flippedOff = false;
    let stop = false;
    for (let i = 0; i < half; i++) {
      const start = q[2 * i]!.time;
      lastD = q[2 * i + 1]!.time - start;
      if (lastD <= thr) continue; // spec F.4: strictly longer than the threshold
      if (!d.timedOut) {
        d.timedOut = true;
        d.faultDuration = lastD;
        d.alarmTime = start + thr;
        stop = true; // the queue is kept as is; the next cycle drops its leading occurrence
      } else {
        d.timedOut = false;
        d.recoverDuration = lastD;
        d.alarmTime = start + thr;
        q = q.slice(2 * i + 1);
        flippedOff = true;
      }
      break;
    }
    if (stop) break;
    if (flippedOff) continue;
    if (q.length % 2 === 1) {
      const last = q[q.length - 1]!;
      const dd = now - last.time;
      if (dd <= thr) {
        if (d.timedOut) d.recoverDuration = dd;
        else d.faultDuration = dd;
        q = [last];
        break;
      }
      if (!d.timedOut) {
        d.timedOut = true;
        d.faultDuration = dd;
        d.alarmTime = last.time + thr;
        break;
      }
      d.timedOut = false;
      d.recoverDuration = dd;
      d.alarmTime = last.time + thr;
      q = [];
      continue;
    }
    if (d.timedOut) d.recoverDuration = lastD;
    else d.faultDuration = lastD;
    q = [];
    break;
  }
  d.queue = q;
  if (!initial && d.timedOut) return 'on';
  if (initial && !d.timedOut) return 'off';
  return 'none';
}
