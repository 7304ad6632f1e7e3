/**
 * Shared builders for the public-fault tests: the shipped configuration, a valid message, a silent logger.
 */
import type { Logger } from '../../../src/core/logger.js';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import { parsePublicFaultConfig, type PublicFaultConfig } from '../../../src/cluster/public-fault/config.js';
import type { PublicFault, PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';

export const SHIPPED_CONFIG_FILE = path.join(PROJECT_ROOT, 'publicFaultConfig.json');

export function shippedConfig(): PublicFaultConfig {
  return parsePublicFaultConfig(fs.readFileSync(SHIPPED_CONFIG_FILE, 'utf8'));
}

/** 2026-03-01T02:00:00Z */
export const T0_MS = 1_772_330_400_000;

export function fault(over: Partial<PublicFault> = {}): PublicFault {
  return {
    faultId: 'fault-0001',
    faultType: 'Storage',
    faultCode: '220001001',
    faultTime: T0_MS - 10_000,
    assertion: 'occur',
    faultLocation: null,
    influence: [{ nodeName: 'node-1', nodeSN: '', deviceIds: [0, 1] }],
    description: '',
    ...over,
  };
}

export function message(over: Partial<PublicFaultMessage> = {}, faults: PublicFault[] = [fault()]): PublicFaultMessage {
  return { id: 'msg.20260301-0001', timestamp: T0_MS, version: '1.0', resource: 'CCAE', faults, ...over };
}

/** A logger that keeps its lines (level + message) for assertions. */
export function recordingLogger(): Logger & { lines: { level: string; obj: object; msg: string }[] } {
  const lines: { level: string; obj: object; msg: string }[] = [];
  const at =
    (level: string) =>
    (obj: object | string, msg?: string): void =>
      void lines.push(typeof obj === 'string' ? { level, obj: {}, msg: obj } : { level, obj, msg: msg ?? '' });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

/** A settable clock (ms). */
export function manualClock(start = T0_MS): {
  now: () => number;
  set: (ms: number) => void;
  advance: (ms: number) => void;
} {
  let t = start;
  return { now: () => t, set: (ms) => void (t = ms), advance: (ms) => void (t += ms) };
}
