/**
 * Spec L.6 public-name customisation for the agent's wirings: `-nameCustomizationFile` read (size checked
 * first) and turned into the node's rules (`src/core/public-names.ts`).
 */
import fs from 'node:fs';
import { errorMessage as message } from '../core/errors.js';
import {
  IDENTITY_NAMES,
  MAX_NAME_CUSTOMIZATION_BYTES,
  parseNameCustomization,
  publicNamesFor,
  type PublicNames,
} from '../core/public-names.js';
import type { AgentBase } from './context.js';
import type { DcmiLayer } from './wire-dcmi.js';

/**
 * Spec L.6: the public-name rules of this node from `-nameCustomizationFile`. Absent file, unusable file (one
 * problem per bad entry in the log when `report`), or no entry for the node's resource type: no customisation —
 * the agent runs on with the inner names. Called once, by the DCMI wiring (`DcmiLayer.names`): every other wiring
 * uses that result.
 */
export function loadPublicNames(ctx: AgentBase, hw: Pick<DcmiLayer, 'deviceType'>, report: boolean): PublicNames {
  const file = ctx.flags.nameCustomizationFile;
  const log = ctx.log;
  let text: string;
  try {
    const size = fs.statSync(file).size; // size limit before reading (the parser checks the bytes again)
    if (size > MAX_NAME_CUSTOMIZATION_BYTES) {
      if (report) {
        log.warn(
          { file, bytes: size, limit: MAX_NAME_CUSTOMIZATION_BYTES },
          'device name customisation not used: the file is over the size limit',
        );
      }
      return IDENTITY_NAMES;
    }
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const absent = (err as NodeJS.ErrnoException).code === 'ENOENT';
    if (report) {
      if (absent) log.info({ file }, 'no device name customisation file: inner names (spec L.6)');
      else log.warn({ file, error: message(err) }, 'device name customisation not used: the file is unreadable');
    }
    return IDENTITY_NAMES;
  }
  const parsed = parseNameCustomization(text);
  if (report) {
    for (const w of parsed.warnings) log.warn({ file, warning: w }, 'device name customisation');
    for (const p of parsed.problems) log.warn({ file, problem: p }, 'device name customisation: bad entry');
    if (parsed.problems.length > 0) log.warn({ file }, 'device name customisation not used (spec L.6): inner names');
  }
  const names = publicNamesFor(parsed.entries, hw.deviceType);
  if (report && parsed.problems.length === 0) {
    const entry = parsed.entries.find((e) => e.resourceType === hw.deviceType);
    if (entry) log.info({ file, ...entry }, 'device name customisation in effect (spec L.6)');
    else log.info({ file, deviceType: hw.deviceType }, 'device name customisation has no entry for this node');
  }
  return names;
}
