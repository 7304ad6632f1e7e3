/**
 * The format of the fault center's persisted state (docs/fault-center.md "Persisted state", issue [O] item 2): one
 * record per node (intake snapshot, counter, pending job faults, manual cache, `LastCmInfo`; see
 * `FaultCenterCore.records`), kept in ConfigMaps that each stay below the 1 MiB object limit. Pure.
 *
 * - The **head** `<leaseName>-state` (key `state`) is the commit point: a header line, then the records changed
 *   since the base (`<node>\t<record>`, an empty record for a node whose state is gone). One write, so atomic.
 * - The **base** is a full copy of the records in up to {@link MAX_STATE_PARTS} parts
 *   `<leaseName>-state-<set>-<i>` (key `state.gz`, gzip of the same line format), written to the set (`a` or `b`)
 *   that the durable head does not reference, then made current by the head that names it with each part's
 *   SHA-256. A part is therefore never overwritten while a durable head needs it: a crash in the middle of writing
 *   a base leaves the previous head and its base intact, and a restart reads exactly the state of one commit.
 * - When the head would grow over {@link HEAD_MAX_BYTES}, a new base is written (compaction) and the head starts
 *   again from an empty delta.
 */
import { createHash } from 'node:crypto';

/** Data key of the head (the same key held the whole state in version 1). */
export const STATE_KEY = 'state';
/** binaryData key of a base part: gzip of the part's text. */
export const PART_KEY = 'state.gz';
/** Largest head text: above it the records move to a new base. */
export const HEAD_MAX_BYTES = 512 * 1024;
/** Raw text per part before compression; a part whose compressed form is too large is split. */
export const PART_RAW_TARGET_BYTES = 4 * 1024 * 1024;
/** Largest part as stored (base64 of the gzip, as the API server counts the ConfigMap with binaryData). */
export const PART_MAX_STORED_BYTES = 900 * 1024;
/** Parts per base set: the names RBAC grants (deploy/fault-center/rbac.yaml). */
export const MAX_STATE_PARTS = 8;
/** Largest decompressed part accepted when reading (bounds a corrupt or hostile object). */
export const PART_MAX_INFLATED_BYTES = 64 * 1024 * 1024;

/** The two base sets. */
export type PartSet = 'a' | 'b';

/** A base as the head references it. */
export interface BaseRef {
  readonly set: PartSet;
  readonly generation: number;
  /** SHA-256 (hex) of each part's stored `state.gz` value, in part order */
  readonly parts: readonly string[];
}

/** The header line of a head. */
export interface HeadHeader {
  readonly version: 2;
  /** increases with every head written */
  readonly generation: number;
  /** ms, when written */
  readonly written: number;
  /** arrival number of the next pending job fault */
  readonly nextJobSeq: number;
  readonly base: BaseRef | null;
}

/** A decoded head. */
export interface DecodedHead {
  readonly header: HeadHeader;
  /** node → record, or null for a node whose state is gone */
  readonly delta: Map<string, string | null>;
}

/** The persisted state cannot be read. */
export class StateFormatError extends Error {
  override name = 'StateFormatError';
}

/** Name of the head object. */
export function headName(leaseName: string): string {
  return `${leaseName}-state`;
}

/** Name of part `i` of `set`. */
export function partName(leaseName: string, set: PartSet, i: number): string {
  return `${leaseName}-state-${set}-${i}`;
}

/** Every part name RBAC must grant for `leaseName`. */
export function allPartNames(leaseName: string): string[] {
  const out: string[] = [];
  for (const set of ['a', 'b'] as const)
    for (let i = 0; i < MAX_STATE_PARTS; i++) out.push(partName(leaseName, set, i));
  return out;
}

/** The other set. */
export function otherSet(set: PartSet | undefined): PartSet {
  return set === 'a' ? 'b' : 'a';
}

/** SHA-256 hex of a stored part value. */
export function partDigest(stored: string): string {
  return createHash('sha256').update(stored).digest('hex');
}

/** One record line. Node names are DNS names (no tab, no newline); records are JSON (no raw newline). */
function line(node: string, record: string | null): string {
  return `${node}\t${record ?? ''}`;
}

/** The text of a head. */
export function encodeHead(header: HeadHeader, delta: Iterable<readonly [string, string | null]>): string {
  const lines = [JSON.stringify(header)];
  for (const [node, record] of delta) lines.push(line(node, record));
  return lines.join('\n');
}

/** The byte length the head would have (without building it). */
export function headBytes(header: HeadHeader, delta: Iterable<readonly [string, string | null]>): number {
  let n = Buffer.byteLength(JSON.stringify(header));
  for (const [node, record] of delta)
    n += 1 + Buffer.byteLength(node) + 1 + (record === null ? 0 : Buffer.byteLength(record));
  return n;
}

function parseLines(text: string, what: string, into: Map<string, string | null>, from: number): void {
  let at = from;
  let lineNo = 2;
  while (at < text.length) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const l = text.slice(at, end);
    const tab = l.indexOf('\t');
    if (tab <= 0) throw new StateFormatError(`${what} line ${lineNo} is not <node>\\t<record>`);
    const record = l.slice(tab + 1);
    into.set(l.slice(0, tab), record === '' ? null : record);
    at = end + 1;
    lineNo++;
  }
}

/** The header (first line) of a text, parsed. */
function headerOf(text: string, what: string): { header: unknown; rest: number } {
  const nl = text.indexOf('\n');
  const first = nl < 0 ? text : text.slice(0, nl);
  try {
    return { header: JSON.parse(first) as unknown, rest: nl < 0 ? text.length : nl + 1 };
  } catch (e) {
    throw new StateFormatError(`${what}: the first line is not JSON (${(e as Error).message})`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads a head: `{kind: 'v2'}` with header and delta, or `{kind: 'v1'}` for the single-object state of version 1
 * (parsed JSON). Throws {@link StateFormatError}.
 */
export function decodeHead(text: string): { kind: 'v2'; head: DecodedHead } | { kind: 'v1'; state: unknown } {
  const { header, rest } = headerOf(text, 'state head');
  if (isObject(header) && header.version === 1 && rest >= text.length) return { kind: 'v1', state: header };
  if (!isObject(header) || header.version !== 2) {
    throw new StateFormatError(`state head: unknown version ${isObject(header) ? String(header.version) : '?'}`);
  }
  const h = header as Partial<HeadHeader> & Record<string, unknown>;
  if (!Number.isSafeInteger(h.generation) || !Number.isSafeInteger(h.nextJobSeq)) {
    throw new StateFormatError('state head: generation or nextJobSeq is not an integer');
  }
  let base: BaseRef | null = null;
  if (h.base !== null && h.base !== undefined) {
    const b = h.base as Partial<BaseRef>;
    if (
      (b.set !== 'a' && b.set !== 'b') ||
      !Number.isSafeInteger(b.generation) ||
      !Array.isArray(b.parts) ||
      b.parts.length > MAX_STATE_PARTS ||
      !b.parts.every((p) => typeof p === 'string' && /^[0-9a-f]{64}$/.test(p))
    ) {
      throw new StateFormatError('state head: base is not {set, generation, parts: sha256[]}');
    }
    base = { set: b.set, generation: b.generation!, parts: b.parts };
  }
  const delta = new Map<string, string | null>();
  parseLines(text, 'state head', delta, rest);
  return {
    kind: 'v2',
    head: {
      header: {
        version: 2,
        generation: h.generation!,
        written: Number(h.written) || 0,
        nextJobSeq: h.nextJobSeq!,
        base,
      },
      delta,
    },
  };
}

/** The header of a part. */
export interface PartHeader {
  readonly version: 2;
  readonly set: PartSet;
  readonly generation: number;
  readonly index: number;
}

/** The raw (uncompressed) text of a part. */
export function encodePart(header: PartHeader, records: Iterable<readonly [string, string]>): string {
  const lines = [JSON.stringify(header)];
  for (const [node, record] of records) lines.push(line(node, record));
  return lines.join('\n');
}

/** Reads the raw text of part `index` of base `ref`; the header must match. Throws {@link StateFormatError}. */
export function decodePart(text: string, ref: BaseRef, index: number, into: Map<string, string>): void {
  const { header, rest } = headerOf(text, `state part ${ref.set}-${index}`);
  const h = header as Partial<PartHeader> | null;
  if (!isObject(h) || h.version !== 2 || h.set !== ref.set || h.generation !== ref.generation || h.index !== index) {
    throw new StateFormatError(`state part ${ref.set}-${index}: its header does not belong to base ${ref.generation}`);
  }
  const lines = new Map<string, string | null>();
  parseLines(text, `state part ${ref.set}-${index}`, lines, rest);
  for (const [node, record] of lines) if (record !== null) into.set(node, record);
}

/**
 * Splits the records (sorted by node) into groups of about {@link PART_RAW_TARGET_BYTES} of text each, as the
 * raw parts of a base; a group found too large once compressed is halved by the caller.
 */
export function groupRecords(
  records: ReadonlyMap<string, string>,
  targetBytes = PART_RAW_TARGET_BYTES,
): [string, string][][] {
  const nodes = [...records.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const groups: [string, string][][] = [];
  let current: [string, string][] = [];
  let size = 0;
  for (const node of nodes) {
    const record = records.get(node)!;
    const add = Buffer.byteLength(node) + Buffer.byteLength(record) + 2;
    if (current.length > 0 && size + add > targetBytes) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push([node, record]);
    size += add;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
