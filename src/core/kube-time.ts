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

const MICRO_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})[.,](\d{6})(Z|[+-]\d{2}:\d{2})$/;
const TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** A time text the server would refuse: `message` is Go's `time.ParseError` text as the server quotes it. */
export class KubeTimeParseError extends Error {
  override readonly name = 'KubeTimeParseError';
}

/**
 * Parses a `MicroTime` as the API server does (Go `time.Parse(RFC3339Micro)`): six fractional digits, `Z` or a
 * `±hh:mm` offset. Returns epoch milliseconds (the microseconds beyond are dropped); throws
 * {@link KubeTimeParseError} with Go's message (`parsing time "…" as "…": cannot parse ".167Z" as ".000000"`).
 */
export function parseMicroTime(text: string): number {
  const m = MICRO_RE.exec(text);
  if (m === null) throw new KubeTimeParseError(goParseMessage(text, RFC3339_MICRO_LAYOUT, microFailure(text)));
  return epochOf(text, m);
}

/**
 * A `MicroTime` as the server writes it back after {@link parseMicroTime}: UTC, the six digits kept (an offset
 * `+08:00` becomes `Z`). Throws {@link KubeTimeParseError}.
 */
export function canonicalMicroTime(text: string): string {
  const ms = parseMicroTime(text);
  const micro = MICRO_RE.exec(text)![7]!.slice(3);
  return `${microTime(ms).slice(0, -4)}${micro}Z`;
}

/**
 * Parses a `metav1.Time` as the API server does (RFC 3339; Go accepts a fraction of 1–9 digits and ignores it when
 * it stores the value). Returns epoch milliseconds of the whole second; throws {@link KubeTimeParseError}.
 */
export function parseKubeTime(text: string): number {
  const m = TIME_RE.exec(text);
  if (m === null) throw new KubeTimeParseError(goParseMessage(text, RFC3339_LAYOUT, ''));
  return Math.floor(epochOf(text, m) / 1000) * 1000;
}

function epochOf(text: string, m: RegExpExecArray): number {
  const [year, month, day, hour, min, sec] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const range = (what: string): never => {
    throw new KubeTimeParseError(`parsing time ${JSON.stringify(text)}: ${what} out of range`);
  };
  if (month < 1 || month > 12) range('month');
  if (hour > 23) range('hour');
  if (min > 59) range('minute');
  if (sec > 59) range('second');
  const daysIn = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > daysIn) range('day');
  const frac = m[7] ?? '';
  const zone = m[8]!;
  let offsetMin = 0;
  if (zone !== 'Z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 24 || om > 59) range('time zone offset hour');
    offsetMin = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const ms = Number((frac + '000').slice(0, 3));
  return Date.UTC(year, month - 1, day, hour, min, sec, ms) - offsetMin * 60_000;
}

/** Go's `ParseError.Error()` for the layouts here: the element that failed and what was left of the value. */
function goParseMessage(text: string, layout: string, detail: string): string {
  const head = `parsing time ${JSON.stringify(text)} as ${JSON.stringify(layout)}`;
  if (detail !== '') return `${head}: ${detail}`;
  return `${head}: cannot parse ${JSON.stringify(text)} as ${JSON.stringify(layout.slice(0, 4))}`;
}

/**
 * The part of Go's message after `: ` for a MicroTime whose date and clock are well formed but whose fraction is
 * not six digits (`cannot parse ".167Z" as ".000000"`); otherwise the generic form.
 */
function microFailure(text: string): string {
  const clock = /^\d{4}-\d{2}-\d{2}T\d{1,2}:\d{2}:\d{2}/.exec(text);
  if (clock === null) return `cannot parse ${JSON.stringify(text)} as "2006"`;
  const rest = text.slice(clock[0].length);
  if (/^[.,]\d{6}/.test(rest)) return `cannot parse ${JSON.stringify(rest.slice(7))} as "Z07:00"`;
  return `cannot parse ${JSON.stringify(rest)} as ".000000"`;
}
