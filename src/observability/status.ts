/**
 * The `/status` document of the observability server (issue [F] item 4): the chips as kubelet sees them and the
 * state of the reset layer, read by `npuctl status`. Built on demand from the latest store snapshot and
 * `ResetRuntime.status()`; nothing is cached. Each section is bounded by its share of the 1 MiB limit of `/status`
 * (issue 12): a section over it is served cut down with a count of what was left out, never as a 500.
 */
import type { ResetStatus } from '../reset/reset-runtime.js';
import type { NodeState } from '../state/store.js';
import { MAX_STATUS_BYTES } from './http-server.js';

/** Version of the document; `npuctl status` refuses a version it does not know. */
export const STATUS_VERSION = 1;

/** One chip of the node as the latest snapshot has it (reset filter applied, hot-reset.md §3.10). */
export interface StatusChip {
  readonly logicId: number;
  readonly phyId: number;
  /** `Ascend910-<phy>` (spec H.5). */
  readonly name: string;
  readonly health: string;
  readonly networkHealth: string;
  /** Effective chip fault level (spec E.4). */
  readonly level: string;
}

/** What `GET /status` answers. */
export interface AgentStatusDocument {
  readonly version: typeof STATUS_VERSION;
  readonly node: string;
  /** ISO time the document was built. */
  readonly time: string;
  /** Logic-id order. */
  readonly chips: readonly StatusChip[];
  /** null when the agent runs without the reset layer. */
  readonly reset: ResetStatus | null;
  /**
   * Present only when a section was over its share of the size limit and was cut to fit (see
   * {@link fitSection}): JSON path of each shortened list → entries left out; `strings`: texts cut.
   */
  readonly truncated?: Readonly<Record<string, number>>;
}

/**
 * Share of {@link MAX_STATUS_BYTES} each section may take (JSON bytes), so that no one section can push the whole
 * document over the limit (where `/status` answers 500): a section over its share is served cut down, lists
 * shortened and long texts cut, with what was left out in `truncated`.
 */
export const STATUS_SECTION_BYTES = {
  chips: Math.floor(MAX_STATUS_BYTES / 4),
  reset: Math.floor(MAX_STATUS_BYTES / 2),
} as const;

/** Lists kept to this many entries and texts to this many characters, tried in turn until a section fits. */
const FIT_STEPS: readonly { readonly entries: number; readonly chars: number }[] = [
  { entries: 1000, chars: 1024 },
  { entries: 100, chars: 256 },
  { entries: 20, chars: 128 },
  { entries: 5, chars: 64 },
  { entries: 0, chars: 16 },
];
/** Paths named in `truncated` at most; the rest are counted under `"…"`. */
const MAX_TRUNCATED_PATHS = 32;

const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');

/** `v` with arrays cut to `entries` and strings to `chars`; what was cut is counted into `notes`. */
function cut(v: unknown, entries: number, chars: number, path: string, notes: Map<string, number>): unknown {
  const note = (p: string, n: number): void => {
    const key = notes.has(p) || notes.size < MAX_TRUNCATED_PATHS ? p : '…';
    notes.set(key, (notes.get(key) ?? 0) + n);
  };
  if (typeof v === 'string') {
    if (v.length <= chars) return v;
    note('strings', 1);
    return `${v.slice(0, chars)}…(${v.length} chars)`;
  }
  if (Array.isArray(v)) {
    if (v.length > entries) note(path, v.length - entries);
    return v.slice(0, entries).map((x, i) => cut(x, entries, chars, `${path}[${i}]`, notes));
  }
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = cut(x, entries, chars, `${path}.${k}`, notes);
    return out;
  }
  return v;
}

/**
 * `value` as is when its JSON fits `maxBytes`, else the first of {@link FIT_STEPS} that fits (the last one always
 * does for the sections of this document: their objects have a fixed set of keys, or one key per chip).
 */
export function fitSection<T>(value: T, maxBytes: number, path: string, notes: Map<string, number>): T {
  if (jsonBytes(value) <= maxBytes) return value;
  let fitted: unknown = value;
  for (const step of FIT_STEPS) {
    const tried = new Map<string, number>();
    fitted = cut(value, step.entries, step.chars, path, tried);
    if (jsonBytes(fitted) <= maxBytes || step === FIT_STEPS.at(-1)) {
      for (const [k, n] of tried) notes.set(k, (notes.get(k) ?? 0) + n);
      break;
    }
  }
  return fitted as T;
}

/** Builds the document from the agent's current state. */
export function agentStatus(o: {
  readonly node: string;
  /** Epoch ms. */
  readonly now: number;
  readonly state: Pick<NodeState, 'chips'>;
  readonly reset?: ResetStatus;
}): AgentStatusDocument {
  const notes = new Map<string, number>();
  const chips = o.state.chips.map((c) => ({
    logicId: c.logicId,
    phyId: c.phyId,
    name: c.name,
    health: c.health,
    networkHealth: c.networkHealth,
    level: c.level,
  }));
  const doc: AgentStatusDocument = {
    version: STATUS_VERSION,
    node: o.node.length > 253 ? `${o.node.slice(0, 253)}…(${o.node.length} chars)` : o.node,
    time: new Date(o.now).toISOString(),
    chips: fitSection(chips, STATUS_SECTION_BYTES.chips, '$.chips', notes),
    reset: o.reset ? fitSection(o.reset, STATUS_SECTION_BYTES.reset, '$.reset', notes) : null,
  };
  return notes.size === 0 ? doc : { ...doc, truncated: Object.fromEntries(notes) };
}
