/**
 * A small parser for Go `flag` package syntax (spec device-plugin.md A.1, architecture §4): `-name=value`,
 * `-name value`, `--name=value`, `--name value`, bare booleans and `-name=false`. Parsing stops at `--` or at the
 * first argument that is not a flag (Go's rule); that argument and everything after it are returned untouched.
 * Pure: no process state, no output.
 */

/** Value kinds of Go's `flag` package that the agent uses. */
export type GoFlagKind = 'bool' | 'int' | 'int64' | 'uint' | 'float64' | 'string';

/** What the parser needs to know about one flag. */
export interface GoFlagShape {
  readonly kind: GoFlagKind;
}

/** One flag as it appeared on the command line (the last occurrence wins, as in Go). */
export interface RawFlag {
  readonly name: string;
  /** Text of the value; `true` for a bare boolean. */
  readonly text: string;
  /** How it was written, for messages (`-logLevel`, `--logLevel`). */
  readonly spelling: string;
}

export interface GoFlagParse {
  /** Flags seen, by name; later occurrences replace earlier ones. */
  readonly flags: ReadonlyMap<string, RawFlag>;
  /** The first non-flag argument and everything after it (after `--`: everything that follows it). */
  readonly rest: readonly string[];
  /** `-h`, `-help` or `--help` was given (and is not itself a defined flag). */
  readonly help: boolean;
  /** Syntax errors and unknown flags, one clear line each. */
  readonly errors: readonly string[];
}

/**
 * Parses `argv` against `shapes`. Errors are collected (every unknown flag is named); a missing value of the last
 * flag is an error rather than a silent default.
 */
export function parseGoFlags(argv: readonly string[], shapes: ReadonlyMap<string, GoFlagShape>): GoFlagParse {
  const flags = new Map<string, RawFlag>();
  const errors: string[] = [];
  let help = false;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      i++;
      break;
    }
    if (arg.length < 2 || arg[0] !== '-') break; // "" , "-" and plain words end the flags (Go)
    const dashes = arg[1] === '-' ? 2 : 1;
    const body = arg.slice(dashes);
    if (body.length === 0 || body[0] === '-' || body[0] === '=') {
      errors.push(`bad flag syntax: ${arg}`);
      continue;
    }
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    const spelling = `${'-'.repeat(dashes)}${name}`;
    const shape = shapes.get(name);
    if (!shape) {
      if (name === 'help' || name === 'h') {
        help = true;
        continue;
      }
      errors.push(`flag provided but not defined: ${spelling}`);
      continue;
    }
    let text: string;
    if (eq >= 0) {
      text = body.slice(eq + 1);
    } else if (shape.kind === 'bool') {
      text = 'true';
    } else if (i + 1 < argv.length) {
      text = argv[++i]!;
    } else {
      errors.push(`flag needs an argument: ${spelling}`);
      continue;
    }
    flags.set(name, { name, text, spelling });
  }
  return { flags, rest: argv.slice(i), help, errors };
}

/** Go `strconv.ParseBool`. */
export function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(text)) return false;
  return undefined;
}

/**
 * Go `strconv.ParseInt(text, 0, 64)` / `ParseUint(text, 0, 64)` as `flag` uses them: optional sign (signed only),
 * `0x`/`0o`/`0b` prefixes and a leading `0` for octal, `_` between digits only with a prefix. Returns undefined
 * for anything else, and for values beyond ±2^53 (no agent flag needs more).
 */
export function parseGoInt(text: string, unsigned = false): number | undefined {
  let s = text;
  let sign = 1;
  if (!unsigned && (s.startsWith('+') || s.startsWith('-'))) {
    if (s[0] === '-') sign = -1;
    s = s.slice(1);
  }
  let base = 10;
  let digits = s;
  let prefixed = false;
  if (/^0[xX]/.test(s)) [base, digits, prefixed] = [16, s.slice(2), true];
  else if (/^0[oO]/.test(s)) [base, digits, prefixed] = [8, s.slice(2), true];
  else if (/^0[bB]/.test(s)) [base, digits, prefixed] = [2, s.slice(2), true];
  else if (s.length > 1 && s[0] === '0') [base, digits, prefixed] = [8, s.slice(1), true];
  if (prefixed && digits.includes('_')) {
    if (!/^_?[0-9a-fA-F]+(_[0-9a-fA-F]+)*$/.test(digits)) return undefined;
    digits = digits.replaceAll('_', '');
  }
  const alphabet = { 2: /^[01]+$/, 8: /^[0-7]+$/, 10: /^[0-9]+$/, 16: /^[0-9a-fA-F]+$/ }[base]!;
  if (!alphabet.test(digits)) return undefined;
  const n = sign * parseInt(digits, base);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * Go `strconv.ParseFloat(text, 64)` as `flag.Float64` uses it, for the decimal forms: optional sign, digits with an
 * optional fraction and exponent (`1`, `1.5`, `.5`, `2e-1`), and `Inf`/`Infinity`/`NaN` in any case (the caller
 * range-checks); a literal beyond float64 (`1e400`) is an error, as in Go. Hexadecimal floats and `_` separators,
 * which Go also takes, are refused (undefined).
 */
export function parseGoFloat(text: string): number | undefined {
  if (/^[+-]?(inf|infinity)$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return NaN;
  if (!/^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined; // Go: out of float64 range is a syntax error (ErrRange)
}
