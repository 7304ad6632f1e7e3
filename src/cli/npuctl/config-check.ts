/**
 * `npuctl config check` (architecture §7): validates both fault files (and SwitchFaultCode.json, spec L.9) exactly
 * as the agent does and reports every rule as accepted, ignored or defaulted, with the reason, the JSON path, the
 * value and the spec section; and, when asked, the public-name customisation file (spec L.6) as the agent reads it.
 */
import {
  FormatTable,
  MAX_CONFIG_BYTES,
  describePolicy,
  makePolicy,
  parseCustomizationJson,
  parseFaultCodeJson,
  parseSwitchFaultCodeJson,
  SWITCH_CODE_KEYS,
  type ConfigProblem,
  type RuleReport,
} from '../../faults/index.js';
import {
  MAX_NAME_CUSTOMIZATION_BYTES,
  parseNameCustomization,
  type NameCustomization,
} from '../../core/public-names.js';
import { UsageError, readTextFile } from './io.js';

/** The machine-readable report (architecture §7 shape, extended with paths and counts). */
export interface ConfigCheckReport {
  faultCode: {
    path: string;
    ok: boolean;
    fatal?: string[];
    problems: ConfigProblem[];
    codes?: { chip: number; network: number };
  };
  customization: {
    path: string;
    ok: boolean;
    fatal?: string[];
    rules: RuleReport[];
    problems: ConfigProblem[];
    effective?: Record<string, unknown>;
  };
  /** Spec L.6 `deviceNameCustomization.json`, when a path was given. */
  deviceNames?: {
    path: string;
    /** False: no file (no customisation, which is fine). */
    found: boolean;
    /** True when the agent uses the file (or there is none). */
    ok: boolean;
    /** Why the file is not used: one line per bad entry, or the read error. */
    problems: string[];
    warnings: string[];
    entries: NameCustomization[];
  };
  /** SwitchFaultCode.json (910A3 switch faults, spec L.9), when checked. */
  switchFaultCode?: {
    path: string;
    ok: boolean;
    fatal?: string[];
    problems: ConfigProblem[];
    /** Level → number of codes at that level. */
    codes?: Record<string, number>;
  };
  exitCode: 0 | 1 | 2;
}

/** Spec L.6: the name file as the agent reads it (absent: no customisation; bad: not used, exit 1). */
function checkNames(file: string): NonNullable<ConfigCheckReport['deviceNames']> {
  let text: string;
  try {
    text = readTextFile(file, MAX_NAME_CUSTOMIZATION_BYTES, 'device name customisation file');
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (/ENOENT/.test(e.message))
      return { path: file, found: false, ok: true, problems: [], warnings: [], entries: [] };
    return { path: file, found: true, ok: false, problems: [e.message], warnings: [], entries: [] };
  }
  const p = parseNameCustomization(text);
  return {
    path: file,
    found: true,
    ok: p.problems.length === 0,
    problems: [...p.problems],
    warnings: [...p.warnings],
    entries: [...p.entries],
  };
}

/** The optional files of a check. */
export interface ConfigCheckFiles {
  /** Spec L.6 `deviceNameCustomization.json`. */
  readonly names?: string;
  /** Spec L.9 `SwitchFaultCode.json`. */
  readonly switchFaultCode?: string;
}

/**
 * Runs the check over the two fault files and, when given, the name customisation file and SwitchFaultCode.json.
 * Never throws for file content; unreadable fault files are fatal (exit 2).
 */
export function checkConfig(
  faultCodeFile: string,
  customizationFile: string,
  files: ConfigCheckFiles = {},
): ConfigCheckReport {
  const namesFile = files.names;
  const switchFaultCodeFile = files.switchFaultCode;
  const read = (f: string, what: string): { text?: string; error?: string } => {
    try {
      return { text: readTextFile(f, MAX_CONFIG_BYTES, what) };
    } catch (e) {
      if (e instanceof UsageError) return { error: e.message };
      throw e;
    }
  };
  const fcText = read(faultCodeFile, 'fault code file');
  const cuText = read(customizationFile, 'customization file');
  const fc = fcText.text !== undefined ? parseFaultCodeJson(fcText.text) : undefined;
  const cu = cuText.text !== undefined ? parseCustomizationJson(cuText.text) : undefined;
  const faultCode: ConfigCheckReport['faultCode'] = fc?.ok
    ? {
        path: faultCodeFile,
        ok: !fc.problems.some((p) => p.kind !== 'warning'),
        problems: fc.problems,
        codes: { chip: fc.table.chip.size, network: fc.table.network.size },
      }
    : {
        path: faultCodeFile,
        ok: false,
        fatal: fc ? (fc.ok ? [] : fc.fatal) : [fcText.error!],
        problems: fc?.problems ?? [],
      };
  let customization: ConfigCheckReport['customization'];
  if (cu?.ok) {
    const formats = FormatTable.empty()
      .extend(fc?.ok ? fc.table.spellings : [])
      .extend(cu.customization.spellings);
    customization = {
      path: customizationFile,
      ok: cu.rules.every((r) => r.status === 'accepted'),
      rules: cu.rules,
      problems: cu.problems,
      effective: describePolicy(
        makePolicy(fc?.ok ? fc.table : { chip: new Map(), network: new Map(), spellings: [] }, cu.customization),
        (c) => formats.upper(c),
      ),
    };
  } else {
    customization = {
      path: customizationFile,
      ok: false,
      fatal: cu && !cu.ok ? cu.fatal : [cuText.error!],
      rules: [],
      problems: [],
    };
  }
  let switchFaultCode: ConfigCheckReport['switchFaultCode'];
  if (switchFaultCodeFile !== undefined) {
    const swText = read(switchFaultCodeFile, 'switch fault code file');
    const sw = swText.text !== undefined ? parseSwitchFaultCodeJson(swText.text) : undefined;
    if (sw?.ok) {
      const codes: Record<string, number> = {};
      for (const { level } of SWITCH_CODE_KEYS) codes[level] = 0;
      for (const level of sw.table.levels.values()) codes[level] = (codes[level] ?? 0) + 1;
      switchFaultCode = {
        path: switchFaultCodeFile,
        ok: !sw.problems.some((p) => p.kind !== 'warning'),
        problems: sw.problems,
        codes,
      };
    } else {
      switchFaultCode = {
        path: switchFaultCodeFile,
        ok: false,
        fatal: sw && !sw.ok ? sw.fatal : [swText.error!],
        problems: sw?.problems ?? [],
      };
    }
  }
  const deviceNames = namesFile !== undefined ? checkNames(namesFile) : undefined;
  const fatal =
    faultCode.fatal !== undefined || customization.fatal !== undefined || switchFaultCode?.fatal !== undefined;
  const allOk = faultCode.ok && customization.ok && (switchFaultCode?.ok ?? true) && (deviceNames?.ok ?? true);
  const exitCode = fatal ? 2 : allOk ? 0 : 1;
  return {
    faultCode,
    customization,
    ...(switchFaultCode ? { switchFaultCode } : {}),
    ...(deviceNames ? { deviceNames } : {}),
    exitCode,
  };
}

/** The human-readable rendering of a report. */
export function renderConfigCheck(r: ConfigCheckReport): string {
  const out: string[] = [];
  const fc = r.faultCode;
  if (fc.fatal) {
    out.push(`faultCode.json ${fc.path}: UNUSABLE`);
    for (const f of fc.fatal) out.push(`  error      ${f}`);
  } else {
    const counts = fc.codes ? `${fc.codes.chip} chip codes, ${fc.codes.network} network codes` : '';
    out.push(`faultCode.json ${fc.path}: ${fc.ok ? 'ok' : 'entries ignored'} (${counts})`);
  }
  for (const p of fc.problems)
    out.push(
      `  ${p.kind.padEnd(10)} ${p.path}${p.value !== undefined ? ` = ${p.value}` : ''}: ${p.reason} [${p.spec}]`,
    );
  const cu = r.customization;
  if (cu.fatal) {
    out.push(`faultCustomization.json ${cu.path}: UNUSABLE (the agent keeps its last good configuration)`);
    for (const f of cu.fatal) out.push(`  error      ${f}`);
  } else {
    out.push(
      `faultCustomization.json ${cu.path}: ${cu.ok ? 'every rule accepted' : 'some rules ignored or defaulted'}`,
    );
    for (const rule of cu.rules) {
      const what =
        rule.section === 'GraceTolerance'
          ? `GraceTolerance.${rule.field}`
          : `${rule.section}[${rule.index}] ${rule.eventIds.length === 1 ? rule.eventIds[0] : `${rule.eventIds.length} EventIds (${rule.eventIds.slice(0, 3).join(', ')}${rule.eventIds.length > 3 ? ', …' : ''})`}`;
      out.push(`  ${rule.status.padEnd(10)} ${what}`);
      out.push(
        `             at ${rule.path}${rule.value !== undefined ? ` = ${rule.value}` : ''}: ${rule.reason} [${rule.spec}]`,
      );
      for (const w of rule.warnings ?? []) out.push(`             warning: ${w}`);
    }
    const shown = new Set(cu.rules.flatMap((x) => (x.warnings ?? []).map((w) => `${x.path}|${w}`)));
    for (const p of cu.problems.filter((x) => x.kind === 'warning' && !shown.has(`${x.path}|${x.reason}`)))
      out.push(`  warning    ${p.path}: ${p.reason} [${p.spec}]`);
  }
  const sw = r.switchFaultCode;
  if (sw?.fatal) {
    out.push(`SwitchFaultCode.json ${sw.path}: UNUSABLE (the agent keeps its last good switch code table)`);
    for (const f of sw.fatal) out.push(`  error      ${f}`);
  } else if (sw) {
    const counts = Object.entries(sw.codes ?? {})
      .map(([level, n]) => `${n} ${level}`)
      .join(', ');
    out.push(`SwitchFaultCode.json ${sw.path}: ${sw.ok ? 'ok' : 'entries ignored'} (${counts})`);
  }
  for (const p of sw?.problems ?? [])
    out.push(
      `  ${p.kind.padEnd(10)} ${p.path}${p.value !== undefined ? ` = ${p.value}` : ''}: ${p.reason} [${p.spec}]`,
    );
  const dn = r.deviceNames;
  if (dn) {
    if (!dn.found) out.push(`deviceNameCustomization.json ${dn.path}: absent (no customisation) [L.6]`);
    else if (!dn.ok) {
      out.push(`deviceNameCustomization.json ${dn.path}: NOT USED (the agent keeps the inner names) [L.6]`);
      for (const p of dn.problems) out.push(`  ignored    ${p}`);
    } else {
      out.push(`deviceNameCustomization.json ${dn.path}: used [L.6]`);
      for (const e of dn.entries) {
        const pod = e.podConfigurationName !== '' ? `, rank-table key ${e.podConfigurationName}` : '';
        out.push(
          `  accepted   ${e.resourceType}: resource huawei.com/${e.resourceType} → ${e.devicePublicType}, ` +
            `names ${e.resourceType}-<id> → ${e.devicePublicNamePre}<id>${pod}`,
        );
      }
    }
    for (const w of dn.warnings) out.push(`  warning    ${w}`);
  }
  const verdict = { 0: 'everything accepted', 1: 'something was ignored or defaulted', 2: 'a file cannot be used' }[
    r.exitCode
  ];
  out.push(`result: ${verdict} (exit ${r.exitCode})`);
  return `${out.join('\n')}\n`;
}
