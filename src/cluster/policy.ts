/**
 * The manual-separation policy (cluster-faults §1.2): `manually_separate_policy.conf` in `clusterd-config-cm`,
 * YAML decoded with the semantics of Go `gopkg.in/yaml.v2` for the few fields it has, then validated. Pure.
 */

/** ConfigMap and key of the policy (§1.2). */
export const POLICY_CONFIGMAP = 'clusterd-config-cm';
export const POLICY_NAMESPACE = 'cluster-system';
export const POLICY_KEY = 'manually_separate_policy.conf';
/** Largest policy text accepted. */
export const MAX_POLICY_BYTES = 64 * 1024;

const HOUR_MS = 3_600_000;

/** A validated policy. */
export interface ManualSeparatePolicy {
  readonly enabled: boolean;
  readonly faultWindowHours: number;
  readonly faultThreshold: number;
  /** 1..240 or -1 (no auto-release) */
  readonly faultFreeHours: number;
}

/** §1.2 getters: window in ms. */
export function windowMs(p: ManualSeparatePolicy): number {
  return p.faultWindowHours * HOUR_MS;
}

/** §1.2 getters: release duration in ms, or -1 when auto-release is off. */
export function releaseMs(p: ManualSeparatePolicy): number {
  return p.faultFreeHours === -1 ? -1 : p.faultFreeHours * HOUR_MS;
}

/** A policy text that cannot be used, with the reason. */
export class PolicyError extends Error {
  constructor(
    message: string,
    /** YAML path of the offending value, when there is one */
    readonly path?: string,
  ) {
    super(message);
    this.name = 'PolicyError';
  }
}

type YamlNode = { kind: 'map'; entries: Map<string, YamlNode> } | { kind: 'scalar'; text: string; quoted: boolean };

function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || line[i - 1] === ' ' || line[i - 1] === '\t')) return line.slice(0, i);
  }
  return line;
}

function scalar(text: string, lineNo: number): YamlNode {
  const t = text.trim();
  if (
    (t.startsWith('"') && t.endsWith('"') && t.length >= 2) ||
    (t.startsWith("'") && t.endsWith("'") && t.length >= 2)
  ) {
    return { kind: 'scalar', text: t.slice(1, -1), quoted: true };
  }
  if (/^[[{&*!|>%@`]/.test(t)) throw new PolicyError(`line ${lineNo}: unsupported YAML construct '${t}'`);
  return { kind: 'scalar', text: t, quoted: false };
}

/**
 * Parses the block-mapping subset of YAML the policy uses (nested `key: value` mappings, comments, quoted and
 * plain scalars). Sequences, flow collections, anchors and block scalars are refused with a message.
 */
export function parseYamlMapping(text: string): Map<string, YamlNode> {
  const lines = text.split(/\r?\n/);
  const root: { indent: number; map: Map<string, YamlNode> }[] = [{ indent: -1, map: new Map() }];
  let pendingKey: { key: string; indent: number; parent: Map<string, YamlNode> } | undefined;
  lines.forEach((rawLine, i) => {
    const lineNo = i + 1;
    if (rawLine.includes('\t') && /^\s*\t/.test(rawLine)) throw new PolicyError(`line ${lineNo}: tab indentation`);
    const line = stripComment(rawLine).replace(/\s+$/, '');
    if (line.trim() === '' || line.trim() === '---') return;
    const indent = line.length - line.trimStart().length;
    const body = line.trim();
    if (body.startsWith('- ') || body === '-') throw new PolicyError(`line ${lineNo}: sequences are not supported`);
    const m = /^("[^"]*"|'[^']*'|[^:]+?)\s*:(?:\s+(.*))?$/.exec(body);
    if (m === null) throw new PolicyError(`line ${lineNo}: expected 'key: value', got '${body}'`);
    const key = m[1]!.replace(/^["']|["']$/g, '');
    let opened = false;
    if (pendingKey !== undefined) {
      if (indent > pendingKey.indent) {
        const child = new Map<string, YamlNode>();
        pendingKey.parent.set(pendingKey.key, { kind: 'map', entries: child });
        root.push({ indent, map: child });
        opened = true;
      } else pendingKey.parent.set(pendingKey.key, { kind: 'scalar', text: '', quoted: false });
      pendingKey = undefined;
    }
    while (!opened && root.length > 1 && indent < root[root.length - 1]!.indent) root.pop();
    const top = root[root.length - 1]!;
    if (root.length > 1 && indent !== top.indent) throw new PolicyError(`line ${lineNo}: inconsistent indentation`);
    const value = m[2];
    if (value === undefined || value === '') pendingKey = { key, indent, parent: top.map };
    else top.map.set(key, scalar(value, lineNo));
  });
  if (pendingKey !== undefined) pendingKey.parent.set(pendingKey.key, { kind: 'scalar', text: '', quoted: false });
  return root[0]!.map;
}

const YAML11_TRUE = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const YAML11_FALSE = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);
const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);

function decodeBool(node: YamlNode | undefined, path: string): boolean {
  if (node === undefined) return false; // §1.2: a missing `enabled` means false
  if (node.kind !== 'scalar' || node.quoted) throw new PolicyError(`${path}: not a boolean`, path);
  if (NULLS.has(node.text)) return false;
  if (YAML11_TRUE.has(node.text)) return true;
  if (YAML11_FALSE.has(node.text)) return false;
  throw new PolicyError(`${path}: cannot unmarshal '${node.text}' into bool`, path);
}

/** yaml.v2 int decoding: decimal/0x/0o/0b ints with `_`, floats truncated toward zero; quoted text is an error. */
function decodeInt(node: YamlNode | undefined, path: string): number {
  if (node === undefined) return 0;
  if (node.kind !== 'scalar') throw new PolicyError(`${path}: not a number`, path);
  if (node.quoted) throw new PolicyError(`${path}: cannot unmarshal a quoted string into int`, path);
  const t = node.text.replace(/_/g, '');
  if (NULLS.has(node.text)) return 0;
  let m = /^([-+]?)(0x[0-9a-fA-F]+|0o[0-7]+|0b[01]+|[0-9]+)$/.exec(t);
  if (m !== null) {
    const digits = m[2]!;
    const v = /^0[0-7]+$/.test(digits) ? parseInt(digits, 8) : Number(digits);
    return m[1] === '-' ? -v : v;
  }
  m = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.exec(t);
  if (m !== null) {
    const f = Number(t);
    if (Math.abs(f) < 2 ** 53) return Math.trunc(f) + 0;
  }
  throw new PolicyError(`${path}: cannot unmarshal '${node.text}' into int`, path);
}

function sub(root: Map<string, YamlNode>, key: string): Map<string, YamlNode> {
  const n = root.get(key);
  if (n === undefined) return new Map();
  if (n.kind === 'scalar') {
    if (!n.quoted && NULLS.has(n.text)) return new Map();
    throw new PolicyError(`${key}: expected a mapping`, key);
  }
  return n.entries;
}

/** §1.2 validation, in upstream order. */
export function validatePolicy(p: ManualSeparatePolicy): void {
  if (p.faultWindowHours < 1 || p.faultWindowHours > 720) {
    throw new PolicyError('fault_window_hours must be in [1, 720]', 'separate.fault_window_hours');
  }
  if (p.faultThreshold < 1 || p.faultThreshold > 50) {
    throw new PolicyError('fault_threshold must be in [1, 50]', 'separate.fault_threshold');
  }
  if (p.faultFreeHours !== -1 && (p.faultFreeHours < 1 || p.faultFreeHours > 240)) {
    throw new PolicyError('fault_free_hours must be in [1, 240] or -1', 'release.fault_free_hours');
  }
}

/** Decodes and validates the text of `manually_separate_policy.conf`; throws {@link PolicyError}. */
export function parsePolicy(text: string): ManualSeparatePolicy {
  if (Buffer.byteLength(text) > MAX_POLICY_BYTES) throw new PolicyError(`policy exceeds ${MAX_POLICY_BYTES} bytes`);
  const root = parseYamlMapping(text);
  const separate = sub(root, 'separate');
  const release = sub(root, 'release');
  const p: ManualSeparatePolicy = {
    enabled: decodeBool(root.get('enabled'), 'enabled'),
    faultWindowHours: decodeInt(separate.get('fault_window_hours'), 'separate.fault_window_hours'),
    faultThreshold: decodeInt(separate.get('fault_threshold'), 'separate.fault_threshold'),
    faultFreeHours: decodeInt(release.get('fault_free_hours'), 'release.fault_free_hours'),
  };
  validatePolicy(p);
  return p;
}

/** The policy from the `data` of `clusterd-config-cm`; throws {@link PolicyError} naming the key. */
export function policyFromConfigMapData(
  data: Readonly<Record<string, string>> | null | undefined,
): ManualSeparatePolicy {
  if (data === null || data === undefined) throw new PolicyError(`${POLICY_CONFIGMAP} has no data`);
  const text = data[POLICY_KEY];
  if (text === undefined) throw new PolicyError(`${POLICY_CONFIGMAP} has no key ${POLICY_KEY}`);
  try {
    return parsePolicy(text);
  } catch (e) {
    if (e instanceof PolicyError) throw new PolicyError(`${POLICY_KEY}: ${e.message}`, e.path);
    throw e;
  }
}
