/**
 * The hang-detection configuration (spec device-plugin.md D.9): `/usr/local/hangDetectionConfig.json`, decoded the
 * way upstream's Go loader decodes it (field names as in upstream's `hangDetectionConfig.json`, matched
 * case-insensitively; thresholds are Go `int32`s, so fractions, strings and out-of-range numbers fail the document).
 *
 * - No file: the defaults, silently (upstream ships the file; a node without it still runs with the defaults).
 * - A document that cannot be used (unreadable, too large, not JSON, a wrong type anywhere): the defaults, and one
 *   warning that names every bad field.
 * - A negative threshold, or a `DetectDuration` ≤ 0: that field alone takes its default (upstream rule), one warning.
 * - Beyond upstream: a missing field takes its default (Go would leave a zero: `Enabled` false, thresholds 0), and
 *   unknown keys are reported (Go ignores them silently; a misspelt key would otherwise go unnoticed).
 */
import fs from 'node:fs';
import { GoDecoder, JsonSyntaxError, childPath, parseJsonText, preview, type JsonNode } from '../core/json-text.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';

/** Upstream's path of the file (spec D.9). */
export const DEFAULT_HANG_CONFIG_FILE = '/usr/local/hangDetectionConfig.json';
/** Largest file accepted; the real one is about 250 bytes. */
export const MAX_HANG_CONFIG_BYTES = 64 * 1024;

/** Thresholds of one sample (spec D.9); deltas are between two consecutive samples (one tick, 60 s by default). */
export interface HangThresholds {
  /** A sample can look hung only while AI-core utilisation is below this, %. */
  readonly aiCoreUtilization: number;
  /** … and the HBM utilisation grew by at most this many percentage points. */
  readonly hbmMemoryDelta: number;
  /** … and fewer RoCE packets (tx + rx) than this were counted. */
  readonly trafficDelta: number;
  /** … and the chip's processes used less CPU time than this, s. */
  readonly cpuTimeDelta: number;
  /** Consecutive hung samples before the fault is raised. */
  readonly detectDuration: number;
}

/** The effective configuration. */
export interface HangDetectionConfig {
  readonly enabled: boolean;
  readonly thresholds: HangThresholds;
}

/** Spec D.9 defaults (the values of upstream's shipped file and of its Go constants). */
export const DEFAULT_HANG_DETECTION_CONFIG: HangDetectionConfig = Object.freeze({
  enabled: true,
  thresholds: Object.freeze({
    aiCoreUtilization: 5,
    hbmMemoryDelta: 0,
    trafficDelta: 100,
    cpuTimeDelta: 5,
    detectDuration: 5,
  }),
});

/** What a parse found. */
export interface HangConfigParse {
  readonly config: HangDetectionConfig;
  /** One line per finding, each naming its JSON path. */
  readonly problems: readonly string[];
  /** True when the whole document was refused (the defaults are in use). */
  readonly rejected: boolean;
}

/** JSON names (upstream) → our names, with the lowest accepted value (below it: the field's default). */
const THRESHOLD_FIELDS: readonly { json: string; key: keyof HangThresholds; min: number; unit: string }[] = [
  { json: 'AICoreUtilization', key: 'aiCoreUtilization', min: 0, unit: '%' },
  { json: 'HbmMemoryDelta', key: 'hbmMemoryDelta', min: 0, unit: '%' },
  { json: 'TrafficDelta', key: 'trafficDelta', min: 0, unit: 'packets' },
  { json: 'CPUTimeDelta', key: 'cpuTimeDelta', min: 0, unit: 's' },
  { json: 'DetectDuration', key: 'detectDuration', min: 1, unit: 'samples' },
];

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function int32(n: JsonNode, path: string, fatal: string[]): number | undefined {
  if (n.t === 'null') return undefined; // Go: null leaves the field as it is
  if (n.t !== 'num' || !/^-?[0-9]+$/.test(n.raw)) {
    fatal.push(`${path}: ${preview(n)} is not an integer`);
    return undefined;
  }
  const v = Number(n.raw);
  if (v < INT32_MIN || v > INT32_MAX) {
    fatal.push(`${path}: ${n.raw} is outside the int32 range`);
    return undefined;
  }
  return v;
}

/** Decodes the text of a `hangDetectionConfig.json`. Never throws. */
export function parseHangDetectionConfig(text: string): HangConfigParse {
  const rejected = (problems: readonly string[]): HangConfigParse => ({
    config: DEFAULT_HANG_DETECTION_CONFIG,
    problems,
    rejected: true,
  });
  if (text.length > MAX_HANG_CONFIG_BYTES) return rejected([`document is larger than ${MAX_HANG_CONFIG_BYTES} bytes`]);
  let root: JsonNode;
  try {
    root = parseJsonText(text);
  } catch (err) {
    if (err instanceof JsonSyntaxError) return rejected([`not JSON: ${err.message}`]);
    throw err;
  }
  const fatal: string[] = [];
  const notes: string[] = [];
  const dec = new GoDecoder();
  const unknown = (where: string, keys: readonly string[]): void => {
    for (const k of keys) notes.push(`${childPath(where, k)}: unknown key, ignored`);
  };

  const top = dec.fields(root, '$', ['HangDetection']);
  if (top) unknown('$', top.unknown);
  let enabled: boolean | undefined;
  const thresholds: { -readonly [K in keyof HangThresholds]?: number } = {};
  top?.decode('HangDetection', '$', (hdNode, hdPath) => {
    const hd = dec.fields(hdNode, hdPath, ['Enabled', 'Threshold']);
    if (!hd) return undefined;
    unknown(hdPath, hd.unknown);
    hd.decode('Enabled', hdPath, (n, p) => {
      if (n.t === 'bool') enabled = n.v;
      else if (n.t !== 'null') fatal.push(`${p}: ${preview(n)} is not a boolean`);
      return undefined;
    });
    hd.decode('Threshold', hdPath, (thNode, thPath) => {
      const th = dec.fields(
        thNode,
        thPath,
        THRESHOLD_FIELDS.map((f) => f.json),
      );
      if (!th) return undefined;
      unknown(thPath, th.unknown);
      for (const f of THRESHOLD_FIELDS) {
        const v = th.decode(f.json, thPath, (n, p) => int32(n, p, fatal));
        if (v === undefined) continue;
        if (v < f.min) {
          const def = DEFAULT_HANG_DETECTION_CONFIG.thresholds[f.key];
          notes.push(
            `${childPath(thPath, th.keyOf(f.json) ?? f.json)}: ${v} is below ${f.min}, using the default ${def} ${f.unit}`,
          );
        } else {
          thresholds[f.key] = v;
        }
      }
      return undefined;
    });
    return undefined;
  });
  for (const t of dec.typeProblems)
    fatal.push(`${t.path}: ${t.value} is not ${t.expected === 'object' ? 'an' : 'a'} ${t.expected}`);
  if (fatal.length > 0) return rejected(fatal);
  return {
    config: {
      enabled: enabled ?? DEFAULT_HANG_DETECTION_CONFIG.enabled,
      thresholds: { ...DEFAULT_HANG_DETECTION_CONFIG.thresholds, ...thresholds },
    },
    problems: notes,
    rejected: false,
  };
}

/** How {@link loadHangDetectionConfig} reads the file (tests inject one). */
export type ReadConfigFile = (file: string, maxBytes: number) => Promise<string | undefined>;

/** Reads a regular file of at most `maxBytes`; undefined when it does not exist. Throws with the reason otherwise. */
export const readConfigFile: ReadConfigFile = async (file, maxBytes) => {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > maxBytes) throw new Error(`${st.size} bytes, over the ${maxBytes}-byte limit`);
    const buf = Buffer.alloc(maxBytes + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    if (bytesRead > maxBytes) throw new Error(`grew over the ${maxBytes}-byte limit`);
    return buf.toString('utf8', 0, bytesRead);
  } finally {
    await handle.close();
  }
};

/**
 * Loads the configuration from `file`. Never throws: every problem ends in the defaults (whole file or one
 * field) and exactly one warning; the effective configuration is logged once at info.
 */
export async function loadHangDetectionConfig(
  file: string,
  options: { logger?: Logger; read?: ReadConfigFile } = {},
): Promise<HangDetectionConfig> {
  const log = options.logger ?? NOOP_LOGGER;
  let result: HangConfigParse;
  let source: 'file' | 'defaults' = 'file';
  try {
    const text = await (options.read ?? readConfigFile)(file, MAX_HANG_CONFIG_BYTES);
    if (text === undefined) {
      source = 'defaults';
      result = { config: DEFAULT_HANG_DETECTION_CONFIG, problems: [], rejected: false };
    } else {
      result = parseHangDetectionConfig(text);
    }
  } catch (err) {
    result = {
      config: DEFAULT_HANG_DETECTION_CONFIG,
      problems: [`cannot read: ${(err as Error).message}`],
      rejected: true,
    };
  }
  if (result.rejected) {
    source = 'defaults';
    log.warn({ file, problems: result.problems }, 'hang detection config unusable, using the defaults (spec D.9)');
  } else if (result.problems.length > 0) {
    log.warn({ file, problems: result.problems }, 'hang detection config: some fields replaced by their defaults');
  }
  log.info({ file, source, ...result.config }, 'hang detection config');
  return result.config;
}
