/**
 * The first stage shared by the code-list files (faultCode.json, spec E.1; SwitchFaultCode.json, L.9): the size
 * limit before the parse, strict JSON, then Go's decoding of an object whose known keys are string arrays (keys
 * matched as `encoding/json` does). What each list means is the caller's business.
 */
import { GoDecoder, JsonSyntaxError, childPath, parseJsonText } from '../core/json-text.js';
import { MAX_CONFIG_BYTES } from './problems.js';

/** One list of codes as written, with its JSON path. */
export interface CodeList {
  readonly path: string;
  readonly codes: string[];
}

/** The lists of a code-list file by key, and its keys that are none of them; or why the file cannot be used. */
export type CodeListsRead =
  | { readonly ok: true; readonly lists: ReadonlyMap<string, CodeList>; readonly unknown: readonly string[] }
  | { readonly ok: false; readonly fatal: string[] };

/** Reads the string-array members `keys` of a JSON object document; `spec` names the section in the messages. */
export function readCodeLists(text: string, keys: readonly string[], spec: string): CodeListsRead {
  if (text.length > MAX_CONFIG_BYTES)
    return { ok: false, fatal: [`document is larger than ${MAX_CONFIG_BYTES} bytes`] };
  let root;
  try {
    root = parseJsonText(text);
  } catch (e) {
    const msg = e instanceof JsonSyntaxError ? e.message : String(e);
    return { ok: false, fatal: [`not valid JSON: ${msg} (${spec})`] };
  }
  const dec = new GoDecoder();
  const fields = dec.fields(root, '$', [...keys]);
  const lists = new Map<string, CodeList>();
  if (fields) {
    for (const key of keys) {
      const codes = fields.decode(key, '$', (n, p) => dec.stringArray(n, p));
      if (codes) lists.set(key, { path: childPath('$', fields.keyOf(key) ?? key), codes });
    }
  }
  if (dec.typeProblems.length > 0) {
    return {
      ok: false,
      fatal: dec.typeProblems.map(
        (p) => `${p.path}: ${p.value} is not ${aOrAn(p.expected)} (${spec}: wrong JSON type)`,
      ),
    };
  }
  return { ok: true, lists, unknown: fields?.unknown ?? [] };
}

function aOrAn(word: string): string {
  return /^[aeiou]/i.test(word) ? `an ${word}` : `a ${word}`;
}
