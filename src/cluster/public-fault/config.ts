/**
 * The level/sender configuration of public faults (spec cluster-faults.md §2.3): a pure parser from file text to an
 * immutable {@link PublicFaultConfig}. Reading and watching the file is `config-source.ts`.
 */
import type { PublicFaultLevel } from './types.js';

/** Largest file read (§2.3: upstream reads at most 10 MiB; a larger file fails to parse). */
export const MAX_CONFIG_BYTES = 10 * 1024 * 1024;

/** The four code lists, in the order a code's level is looked up (§2.3: most severe wins). */
const LEVEL_LISTS: readonly (readonly [string, PublicFaultLevel])[] = [
  ['SeparateNPUCodes', 'SeparateNPU'],
  ['PreSeparateNPUCodes', 'PreSeparateNPU'],
  ['SubHealthFaultCodes', 'SubHealthFault'],
  ['NotHandleFaultCodes', 'NotHandleFault'],
];

/** A configuration file that cannot be used; `path` is the JSON path of the problem. */
export class PublicFaultConfigError extends Error {
  constructor(
    message: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(path ? `${path}: ${message}` : message, options);
    this.name = 'PublicFaultConfigError';
  }
}

/** An accepted configuration. */
export interface PublicFaultConfig {
  /** allowed senders (`publicFaultResource`), duplicates removed, order kept */
  readonly senders: readonly string[];
  /** code → level, the most severe list winning */
  readonly levels: ReadonlyMap<string, PublicFaultLevel>;
  /** things that do not stop the file from loading (duplicates, codes listed twice, codes that are not 9 bytes) */
  readonly warnings: readonly string[];
}

/** A configuration that allows no sender and no code (before anything loaded). */
export const EMPTY_PUBLIC_FAULT_CONFIG: PublicFaultConfig = { senders: [], levels: new Map(), warnings: [] };

/** §2.3 "Fault level of a code": `""` means the code is not allowed. */
export function levelOf(config: PublicFaultConfig, code: string): PublicFaultLevel | '' {
  return config.levels.get(code) ?? '';
}

/** Go's `encoding/json` matches struct fields case-insensitively; the last matching member wins. */
function member(obj: Record<string, unknown>, name: string): unknown {
  let found: unknown = undefined;
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === lower) found = v;
  return found;
}

function stringList(value: unknown, path: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new PublicFaultConfigError('must be an array of strings', path);
  return value.map((v, i) => {
    if (typeof v !== 'string') throw new PublicFaultConfigError('must be a string', `${path}[${i}]`);
    return v;
  });
}

function dedupe(list: readonly string[], path: string, warnings: string[]): string[] {
  const seen = new Set<string>();
  for (const s of list) {
    if (seen.has(s)) warnings.push(`${path}: "${s}" is listed more than once`);
    seen.add(s);
  }
  return [...seen];
}

/**
 * Parses a configuration file's text (§2.3). Throws {@link PublicFaultConfigError} for an empty or oversized file,
 * invalid JSON or a wrong JSON type — the cases where upstream keeps the previous configuration.
 */
export function parsePublicFaultConfig(text: string): PublicFaultConfig {
  if (Buffer.byteLength(text, 'utf8') > MAX_CONFIG_BYTES) {
    throw new PublicFaultConfigError(`larger than ${MAX_CONFIG_BYTES} bytes`, '');
  }
  if (text.trim() === '') throw new PublicFaultConfigError('the file is empty', '');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new PublicFaultConfigError(`not valid JSON (${(e as Error).message})`, '', { cause: e });
  }
  if (doc === null) doc = {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new PublicFaultConfigError('must be a JSON object', '$');
  const root = doc as Record<string, unknown>;
  const warnings: string[] = [];
  let codes = member(root, 'publicFaultCode');
  if (codes === undefined || codes === null) codes = {};
  if (typeof codes !== 'object' || Array.isArray(codes)) {
    throw new PublicFaultConfigError('must be a JSON object', '$.publicFaultCode');
  }
  const senders = dedupe(
    stringList(member(root, 'publicFaultResource'), '$.publicFaultResource'),
    '$.publicFaultResource',
    warnings,
  );
  if (senders.length === 0) warnings.push('$.publicFaultResource: no sender is allowed, every message is refused');
  const levels = new Map<string, PublicFaultLevel>();
  for (const [key, level] of LEVEL_LISTS) {
    const path = `$.publicFaultCode.${key}`;
    for (const code of dedupe(stringList(member(codes as Record<string, unknown>, key), path), path, warnings)) {
      const previous = levels.get(code);
      if (previous !== undefined) {
        warnings.push(`${path}: "${code}" is also a ${previous} code; the more severe ${previous} applies`);
        continue;
      }
      if (Buffer.byteLength(code, 'utf8') !== 9) {
        warnings.push(`${path}: "${code}" is not 9 bytes long and can never pass validation (§2.5)`);
      }
      levels.set(code, level);
    }
  }
  return { senders, levels, warnings };
}
