/**
 * The two timestamp formats of the Kubernetes API (apimachinery `meta/v1`), as the API server parses and writes them
 * (issue [R] item 1, docs/testing.md "Differences between the real apiserver and the stand-in"):
 *
 * - `MicroTime` (`Event.eventTime`, `series.lastObservedTime`, Lease `spec.acquireTime` / `renewTime`) is parsed with
 *   the Go layout `2006-01-02T15:04:05.000000Z07:00`: exactly six fractional digits. A JavaScript `Date` serialises
 *   as `…45.167Z` (three), which the server refuses with 400 (`cannot parse ".167Z" as ".000000"`).
 * - `Time` (`firstTimestamp`, `lastTimestamp`, `creationTimestamp`, conditions) is parsed as RFC 3339 (a fraction is
 *   accepted and dropped) and written back in whole seconds, UTC.
 *
 * A `Date` given to a client is serialised through its `toJSON` / `toISOString` (JSON.stringify in the project's
 * own client, client-node's ObjectSerializer for a `Date`-typed field), so the writers hand over {@link MicroTime} /
 * {@link WholeSecondTime} values: `Date`s whose wire form is the server's.
 */

/** The Go layout of `metav1.MicroTime` (apimachinery `RFC3339Micro`), quoted in the server's parse errors. */
export const RFC3339_MICRO_LAYOUT = '2006-01-02T15:04:05.000000Z07:00';
/** The Go layout of `metav1.Time` (`time.RFC3339`). */
export const RFC3339_LAYOUT = '2006-01-02T15:04:05Z07:00';

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

function utcSeconds(d: Date): string {
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}` +
    `T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
  );
}

/** `ms` (epoch milliseconds) as a `MicroTime`: `2026-12-03T14:20:45.167000Z` (UTC, six fractional digits). */
export function microTime(ms: number): string {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) throw new RangeError(`microTime: not a time: ${ms}`);
  return `${utcSeconds(d)}.${pad(d.getUTCMilliseconds(), 3)}000Z`;
}

/** `ms` as a `metav1.Time`: `2026-12-03T14:20:45Z` (UTC, whole seconds: what the server stores and answers). */
export function wholeSecondTime(ms: number): string {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) throw new RangeError(`wholeSecondTime: not a time: ${ms}`);
  return `${utcSeconds(d)}Z`;
}

/**
 * A `Date` that serialises as a `MicroTime` ({@link microTime}): for the `V1MicroTime` fields of the client types,
 * which both clients send through `toJSON` / `toISOString`.
 */
export class MicroTime extends Date {
  override toISOString(): string {
    return microTime(this.getTime());
  }
  override toJSON(): string {
    return this.toISOString();
  }
}

/** A `Date` that serialises as a whole-second `metav1.Time` ({@link wholeSecondTime}). */
export class WholeSecondTime extends Date {
  override toISOString(): string {
    return wholeSecondTime(this.getTime());
  }
  override toJSON(): string {
    return this.toISOString();
  }
}

/** A time text the server would refuse: `message` is Go's `time.ParseError` text as the server quotes it. */
export class KubeTimeParseError extends Error {
  override readonly name = 'KubeTimeParseError';
}

/** What {@link goParse} read. */
interface Parsed {
  readonly ms: number;
  /** The fraction's digits as written. */
  readonly fraction: string;
}

/**
 * Go's `time.Parse` of the two layouts, element by element as its generic parser goes, so that a refusal carries
 * Go's message: `parsing time "<v>" as "<layout>": cannot parse "<rest>" as "<element>"`, or `parsing time "<v>":
 * <field> out of range`, or `…: extra text: "<rest>"`. `micro`: the fraction is the layout element `.000000`
 * (exactly six digits, `.` or `,`); otherwise a fraction of any length after the seconds is accepted (Go does so
 * for a layout without one).
 */
function goParse(text: string, micro: boolean): Parsed {
  const layout = micro ? RFC3339_MICRO_LAYOUT : RFC3339_LAYOUT;
  let rest = text;
  const bad = (elem: string): never => {
    throw new KubeTimeParseError(
      `parsing time ${quote(text)} as ${quote(layout)}: cannot parse ${quote(rest)} as ${quote(elem)}`,
    );
  };
  const range = (what: string): never => {
    throw new KubeTimeParseError(`parsing time ${quote(text)}: ${what} out of range`);
  };
  const num = (elem: string, min: number, max: number): number => {
    const m = (min === max ? new RegExp(`^\\d{${min}}`) : new RegExp(`^\\d{${min},${max}}`)).exec(rest);
    if (m === null) return bad(elem);
    rest = rest.slice(m[0].length);
    return Number(m[0]);
  };
  const lit = (l: string): void => {
    if (!rest.startsWith(l)) bad(l);
    rest = rest.slice(l.length);
  };
  const year = num('2006', 4, 4);
  lit('-');
  const month = num('01', 2, 2);
  if (month < 1 || month > 12) range('month');
  lit('-');
  const day = num('02', 2, 2);
  lit('T');
  const hour = num('15', 1, 2); // Go reads the hour with one or two digits
  if (hour > 23) range('hour');
  lit(':');
  const min = num('04', 2, 2);
  if (min > 59) range('minute');
  lit(':');
  const sec = num('05', 2, 2);
  if (sec > 59) range('second');
  let fraction = '';
  if (micro) {
    if (rest.length < 7 || !/^[.,]\d{6}/.test(rest)) bad('.000000');
    fraction = rest.slice(1, 7);
    rest = rest.slice(7);
  } else {
    const f = /^[.,](\d+)/.exec(rest);
    if (f !== null) {
      fraction = f[1]!;
      rest = rest.slice(f[0].length);
    }
  }
  let offsetMin = 0;
  if (rest.startsWith('Z')) rest = rest.slice(1);
  else {
    const z = /^([+-])(\d{2}):(\d{2})/.exec(rest);
    if (z === null) return bad('Z07:00');
    const oh = Number(z[2]);
    const om = Number(z[3]);
    if (oh > 24) range('time zone offset hour');
    if (om > 59) range('time zone offset minute');
    offsetMin = (z[1] === '-' ? -1 : 1) * (oh * 60 + om);
    rest = rest.slice(z[0].length);
  }
  if (rest !== '') throw new KubeTimeParseError(`parsing time ${quote(text)}: extra text: ${quote(rest)}`);
  if (day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) range('day');
  const ms = Number((fraction + '000').slice(0, 3));
  return { ms: Date.UTC(year, month - 1, day, hour, min, sec, ms) - offsetMin * 60_000, fraction };
}

/** Go's `quote` of a value in a parse error (JSON's escapes are the same for the characters that matter here). */
const quote = (s: string): string => JSON.stringify(s);

/**
 * Parses a `MicroTime` as the API server does (Go `time.Parse(RFC3339Micro)`): six fractional digits, `Z` or a
 * `±hh:mm` offset. Returns epoch milliseconds (the microseconds beyond are dropped); throws
 * {@link KubeTimeParseError} with Go's message (`parsing time "…" as "…": cannot parse ".167Z" as ".000000"`).
 */
export function parseMicroTime(text: string): number {
  return goParse(text, true).ms;
}

/**
 * A `MicroTime` as the server writes it back after {@link parseMicroTime}: UTC, the six digits kept (an offset
 * `+08:00` becomes `Z`). Throws {@link KubeTimeParseError}.
 */
export function canonicalMicroTime(text: string): string {
  const p = goParse(text, true);
  return `${microTime(p.ms).slice(0, -4)}${p.fraction.slice(3)}Z`;
}

/**
 * Parses a `metav1.Time` as the API server does (RFC 3339; Go accepts a fraction of 1–9 digits and ignores it when
 * it stores the value). Returns epoch milliseconds of the whole second; throws {@link KubeTimeParseError}.
 */
export function parseKubeTime(text: string): number {
  return Math.floor(goParse(text, false).ms / 1000) * 1000;
}
