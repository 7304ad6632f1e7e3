/**
 * Public-name customisation (spec L.6, `/usr/local/deviceNameCustomization.json`): the file read the way upstream's
 * Go `encoding/json` reads it (case-insensitive field names, unknown members ignored — reported here), validated
 * field by field, and the replacement rules. Upstream rejects the whole file when one entry is bad; so does this,
 * but every bad entry is named (one problem per entry, its first). Pure: the caller reads the file.
 *
 * The rules, as upstream (`customname`): for the node's resource type (`Ascend910`, `Ascend310P`, `Ascend310`), every
 * occurrence of the inner name prefix (`Ascend910-`) becomes `DevicePublicNamePre`, every occurrence of the inner
 * resource name (`huawei.com/Ascend910`) becomes `DevicePublicType`, and the 910 rank-table annotation key becomes
 * `PodConfigurationName`; the reverse prefix rule maps names coming back (Allocate, operator edits).
 */
import { GoDecoder, JsonSyntaxError, parseJsonText, type JsonNode } from './json-text.js';
import { RESOURCE_PREFIX } from './device-names.js';

/** Largest file accepted (checked before parsing). */
export const MAX_NAME_CUSTOMIZATION_BYTES = 64 * 1024;
/** Entries accepted (there are three resource types). */
export const MAX_NAME_CUSTOMIZATION_ENTRIES = 16;

/** Resource types a file may customise (spec L.6). */
export const CUSTOMIZABLE_TYPES: readonly string[] = ['Ascend910', 'Ascend310', 'Ascend310P'];

const PUBLIC_TYPE = /^[a-zA-Z][a-zA-Z0-9./]{8,30}[a-zA-Z0-9]$/;
const NAME_PREFIX = /^[a-zA-Z][a-zA-Z0-9-]{1,15}$/;
const POD_CONFIGURATION = /^[a-zA-Z][a-zA-Z0-9./-]{8,61}[a-zA-Z0-9]$/;

/** The 910 rank-table pod annotation key (spec I.3), replaced by `PodConfigurationName`. */
export const RANK_TABLE_910_KEY = 'ascend.kubectl.kubernetes.io/ascend-910-configuration';

/** One entry of the file. */
export interface NameCustomization {
  readonly resourceType: string;
  readonly devicePublicType: string;
  readonly devicePublicNamePre: string;
  /** `''` when not given. */
  readonly podConfigurationName: string;
}

/** The result of {@link parseNameCustomization}. */
export interface NameCustomizationParse {
  /** Every entry when the file is usable; empty otherwise. */
  readonly entries: readonly NameCustomization[];
  /** Why the file is not used: one line per bad entry (or one for the whole file). Empty = usable. */
  readonly problems: readonly string[];
  /** Not errors: members that name no field (Go ignores them). */
  readonly warnings: readonly string[];
}

/** Longest `UpgradeFaultReason` text whose names are mapped back (a longer one is refused by its reader anyway). */
const MAX_REASONS_TEXT = 1024 * 1024;

const FIELDS = ['ResourceType', 'DevicePublicType', 'DevicePublicNamePre', 'PodConfigurationName'] as const;

function show(v: string): string {
  return JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v);
}

/** The first problem of one entry, or undefined. */
function entryProblem(e: NameCustomization, seen: ReadonlySet<string>): string | undefined {
  for (const [field, v] of [
    ['ResourceType', e.resourceType],
    ['DevicePublicType', e.devicePublicType],
    ['DevicePublicNamePre', e.devicePublicNamePre],
  ] as const) {
    if (v === '') return `${field} is empty`;
  }
  if (!CUSTOMIZABLE_TYPES.includes(e.resourceType)) {
    return `ResourceType ${show(e.resourceType)} is not one of ${CUSTOMIZABLE_TYPES.join(', ')}`;
  }
  if (seen.has(e.resourceType)) return `ResourceType ${e.resourceType} is customised twice`;
  if (!PUBLIC_TYPE.test(e.devicePublicType)) {
    return `DevicePublicType ${show(e.devicePublicType)} does not match ${PUBLIC_TYPE.source}`;
  }
  if (!NAME_PREFIX.test(e.devicePublicNamePre)) {
    return `DevicePublicNamePre ${show(e.devicePublicNamePre)} does not match ${NAME_PREFIX.source}`;
  }
  if (e.podConfigurationName !== '' && !POD_CONFIGURATION.test(e.podConfigurationName)) {
    return `PodConfigurationName ${show(e.podConfigurationName)} does not match ${POD_CONFIGURATION.source}`;
  }
  return undefined;
}

/** Reads and validates the file's text (spec L.6). Never throws. */
export function parseNameCustomization(text: string): NameCustomizationParse {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_NAME_CUSTOMIZATION_BYTES) {
    return {
      entries: [],
      problems: [`${bytes} bytes, over the ${MAX_NAME_CUSTOMIZATION_BYTES}-byte limit`],
      warnings: [],
    };
  }
  let root: JsonNode;
  try {
    root = parseJsonText(text);
  } catch (err) {
    const why = err instanceof JsonSyntaxError ? err.message : String(err);
    return { entries: [], problems: [`not JSON: ${why}`], warnings: [] };
  }
  if (root.t !== 'arr') return { entries: [], problems: [`the top level is not an array of entries`], warnings: [] };
  if (root.items.length > MAX_NAME_CUSTOMIZATION_ENTRIES) {
    return {
      entries: [],
      problems: [`${root.items.length} entries, the limit is ${MAX_NAME_CUSTOMIZATION_ENTRIES}`],
      warnings: [],
    };
  }
  const problems: string[] = [];
  const warnings: string[] = [];
  const entries: NameCustomization[] = [];
  const seen = new Set<string>();
  root.items.forEach((item, i) => {
    const at = `entry ${i}`;
    const d = new GoDecoder();
    const f = d.fields(item, `$[${i}]`, FIELDS);
    const value = (name: (typeof FIELDS)[number]): string => f?.decode(name, `$[${i}]`, (n, p) => d.string(n, p)) ?? '';
    const e: NameCustomization = {
      resourceType: value('ResourceType'),
      devicePublicType: value('DevicePublicType'),
      devicePublicNamePre: value('DevicePublicNamePre'),
      podConfigurationName: value('PodConfigurationName'),
    };
    const t = d.typeProblems[0];
    if (!f || t) {
      problems.push(`${at}: ${t ? `${t.path} is ${t.value}, expected ${t.expected}` : 'not an object'}`);
      return;
    }
    for (const k of f.unknown) warnings.push(`${at}: member ${show(k)} names no field; ignored`);
    const p = entryProblem(e, seen);
    if (p !== undefined) problems.push(`${at}: ${p}`);
    seen.add(e.resourceType);
    entries.push(e);
  });
  return problems.length > 0 ? { entries: [], problems, warnings } : { entries, problems, warnings };
}

function replaceAll(text: string, from: string, to: string): string {
  return from === '' || from === to ? text : text.split(from).join(to);
}

/** The replacement rules of one node (identity when not customised). */
export interface PublicNames {
  /** True when the node's resource type is customised. */
  readonly active: boolean;
  /** Inner text (a device name, a list of names, a JSON value) → public: every inner name prefix replaced. */
  readonly name: (text: string) => string;
  /**
   * Public device name or comma-separated names (Allocate input, an operator's edit) → inner: a name that starts
   * with the public prefix gets the inner prefix back; anything else is left as it is (and refused later as before).
   */
  readonly inner: (text: string) => string;
  /** An `UpgradeFaultReason` value read back: its device-name keys made inner; text that is not a JSON object as is. */
  readonly innerReasons: (text: string) => string;
  /** Inner resource name or key (`huawei.com/Ascend910`, `huawei.com/Ascend910-Unhealthy`) → public. */
  readonly resource: (text: string) => string;
  /** A pod annotation key: the 910 rank-table key → `PodConfigurationName` when given. */
  readonly podKey: (key: string) => string;
}

/** No customisation. */
export const IDENTITY_NAMES: PublicNames = Object.freeze({
  active: false,
  name: (t: string) => t,
  inner: (t: string) => t,
  innerReasons: (t: string) => t,
  resource: (t: string) => t,
  podKey: (k: string) => k,
});

/**
 * The rules for a node whose manager name is `managerName` (`Ascend910`, `Ascend310P`, `Ascend310`); identity when
 * no entry names it (e.g. a 910 file on a 310P node, or A5's `npu`).
 */
export function publicNamesFor(entries: readonly NameCustomization[], managerName: string): PublicNames {
  const e = entries.find((x) => x.resourceType === managerName);
  if (!e) return IDENTITY_NAMES;
  // upstream would write an empty key when PodConfigurationName is empty; the rank table keeps its key then
  const podKey = (k: string): string =>
    k === RANK_TABLE_910_KEY && e.podConfigurationName !== '' ? e.podConfigurationName : k;
  return prefixRules(
    `${managerName}-`,
    e.devicePublicNamePre,
    `${RESOURCE_PREFIX}${managerName}`,
    e.devicePublicType,
    podKey,
  );
}

/**
 * Spec L.6 last sentence, H.3: on Ascend910A5 (not an "old" kind) upstream rewrites the run-mode names of the
 * device-info ConfigMap (`Ascend910-<phy>`, `huawei.com/Ascend910…`) to `npu-<phy>` / `huawei.com/npu…` — in the
 * device lists, `ManuallySeparateNPU` and `UpgradeFaultReason` — and reads an operator's `npu-<phy>` back. The
 * kubelet names are `npu-<phy>` already (B.3), so these rules are for the ConfigMap and its read-back only.
 */
export const A5_INFO_NAMES: PublicNames = prefixRules(
  'Ascend910-',
  'npu-',
  `${RESOURCE_PREFIX}Ascend910`,
  `${RESOURCE_PREFIX}npu`,
  (k) => k,
);

/** The rules replacing one inner prefix and resource name by public ones, and their reverse. */
function prefixRules(
  innerPre: string,
  pub: string,
  innerType: string,
  publicType: string,
  podKey: (key: string) => string,
): PublicNames {
  const innerOne = (n: string): string => (n.startsWith(pub) ? innerPre + n.slice(pub.length) : n);
  const inner = (t: string): string => (t.includes(',') ? t.split(',').map(innerOne).join(',') : innerOne(t));
  return Object.freeze({
    active: true,
    name: (t: string) => replaceAll(t, innerPre, pub),
    inner,
    innerReasons: (t: string) => {
      if (t.length > MAX_REASONS_TEXT) return t; // left to the reader, which refuses it before parsing
      let v: unknown;
      try {
        v = JSON.parse(t);
      } catch {
        return t;
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return t;
      return JSON.stringify(Object.fromEntries(Object.entries(v).map(([k, x]) => [innerOne(k), x as unknown])));
    },
    resource: (t: string) => replaceAll(t, innerType, publicType),
    podKey,
  });
}
