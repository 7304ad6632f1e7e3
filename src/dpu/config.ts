/**
 * DPU switch file (docs/super-node.md "DPU faults"; upstream `dpucontrol` `loadDpuConfigFromFile`):
 * `{"configList":[{"busType":"ub"|"pcie","selectors":{"vendor":[…],"deviceIds":[…],"devices":[…]}}]}`, read once at
 * start. Decoded as Go's `encoding/json` would into upstream's structs: member names match case-insensitively (the
 * last one wins), unknown members are ignored, `null` is the zero value, a wrong type anywhere refuses the document.
 * Only the first entry of `configList` counts; it needs `busType` (`ub` or `pcie`), `selectors`, and a non-empty
 * `vendor` or `deviceIds`. Anything else leaves the feature off with one reason (the agent runs on).
 */
import fs from 'node:fs/promises';
import { JsonSyntaxError, parseJsonText, type JsonNode } from '../core/json-text.js';

/** Default path (upstream's constant). */
export const DEFAULT_DPU_CONFIG_FILE = '/user/mindx-dl/dpu/dpu-config.json';
/** Largest file read (upstream's LoadFile limit is of this order); larger is refused before parsing. */
export const DPU_CONFIG_LIMIT = 1024 * 1024;

export type DpuBusType = 'ub' | 'pcie';

/** The usable switch: bus type and the selectors (an empty list selects every value). */
export interface DpuConfig {
  readonly busType: DpuBusType;
  readonly vendor: readonly string[];
  readonly deviceIds: readonly string[];
  readonly devices: readonly string[];
}

/** A usable configuration, or why the feature is off (`missing`: no file, which is not an error). */
export type DpuConfigResult = { ok: true; config: DpuConfig } | { ok: false; missing: boolean; reason: string };

function member(obj: JsonNode, name: string): JsonNode | undefined {
  if (obj.t !== 'obj') return undefined;
  let found: JsonNode | undefined;
  for (const [k, v] of obj.entries) if (k.toLowerCase() === name.toLowerCase()) found = v;
  return found;
}

class Refused extends Error {}

function strings(n: JsonNode | undefined, path: string): string[] {
  if (n === undefined || n.t === 'null') return [];
  if (n.t !== 'arr') throw new Refused(`${path} must be an array of strings, found ${n.t}`);
  return n.items.map((it, i) => {
    if (it.t === 'null') return '';
    if (it.t !== 'str') throw new Refused(`${path}[${i}] must be a string, found ${it.t}`);
    return it.v;
  });
}

/** Parses the file's text. Never throws. */
export function parseDpuConfig(text: string): DpuConfigResult {
  const off = (reason: string): DpuConfigResult => ({ ok: false, missing: false, reason });
  let root: JsonNode;
  try {
    root = parseJsonText(text);
  } catch (err) {
    return off(err instanceof JsonSyntaxError ? `not JSON: ${err.message}` : String(err));
  }
  try {
    if (root.t !== 'obj') throw new Refused(`the document must be an object, found ${root.t}`);
    const list = member(root, 'configList');
    if (list !== undefined && list.t !== 'null' && list.t !== 'arr') {
      throw new Refused(`$.configList must be an array, found ${list.t}`);
    }
    const entries = list?.t === 'arr' ? list.items : [];
    // Go decodes every entry (a wrong type in a later one fails the document too)
    const decoded = entries.map((e, i) => {
      const p = `$.configList[${i}]`;
      if (e.t === 'null') return { busType: '', selectors: undefined };
      if (e.t !== 'obj') throw new Refused(`${p} must be an object, found ${e.t}`);
      const bus = member(e, 'busType');
      if (bus !== undefined && bus.t !== 'null' && bus.t !== 'str') {
        throw new Refused(`${p}.busType must be a string, found ${bus.t}`);
      }
      const sel = member(e, 'selectors');
      if (sel !== undefined && sel.t !== 'null' && sel.t !== 'obj') {
        throw new Refused(`${p}.selectors must be an object, found ${sel.t}`);
      }
      const selectors =
        sel === undefined || sel.t === 'null'
          ? undefined
          : {
              vendor: strings(member(sel, 'vendor'), `${p}.selectors.vendor`),
              deviceIds: strings(member(sel, 'deviceIds'), `${p}.selectors.deviceIds`),
              devices: strings(member(sel, 'devices'), `${p}.selectors.devices`),
            };
      return { busType: bus?.t === 'str' ? bus.v : '', selectors };
    });
    const first = decoded[0];
    if (!first || first.selectors === undefined || first.busType === '') {
      return off('config missing parameter (configList[0] needs busType and selectors): DPU discovery is off');
    }
    if (first.busType !== 'ub' && first.busType !== 'pcie') {
      return off(`invalid busType ${JSON.stringify(first.busType)} (ub or pcie)`);
    }
    const s = first.selectors;
    if (s.vendor.length === 0 && s.deviceIds.length === 0) {
      return off('no vendor and no deviceIds selector: DPU discovery is off');
    }
    return { ok: true, config: { busType: first.busType, ...s } };
  } catch (err) {
    if (err instanceof Refused) return off(err.message);
    throw err;
  }
}

/** Reads and parses the file; a missing file is `missing` (the feature is off, as upstream without the file). */
export async function loadDpuConfig(file: string): Promise<DpuConfigResult> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, missing: code === 'ENOENT', reason: `${file}: ${code ?? String(err)}` };
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return { ok: false, missing: false, reason: `${file}: not a regular file` };
    if (st.size > DPU_CONFIG_LIMIT) {
      return { ok: false, missing: false, reason: `${file}: ${st.size} bytes, more than ${DPU_CONFIG_LIMIT}` };
    }
    const text = await handle.readFile('utf8');
    const r = parseDpuConfig(text);
    return r.ok ? r : { ...r, reason: `${file}: ${r.reason}` };
  } finally {
    await handle.close();
  }
}
