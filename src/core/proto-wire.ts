/**
 * A small reader of the protobuf wire format (varints, 64- and 32-bit fixed fields, length-delimited fields,
 * groups), used to decode `SendPublicFault` requests (`src/cluster/public-fault/request-decode.ts`) and containerd's
event payloads (`src/runtime/containerd-client.ts`) within limits. It reads Go's way
 * (upstream decodes with Go protobuf): varints of at most 10 bytes whose 10th byte is 0 or 1, field numbers 1 to
 * 2^29 - 1, wire types 0 to 5, an end-group tag only to close its own group. Every read is checked against the end
 * of the field that encloses it ({@link WireReader.limit}), so nothing is read past it; every problem is a
 * {@link WireFormatError} naming the byte offset.
 */
import { isUtf8 } from 'node:buffer';

/** The input is not a well-formed protobuf message (or breaks a rule of the reader). */
export class WireFormatError extends Error {
  constructor(
    /** what is wrong, e.g. "truncated varint" */
    readonly problem: string,
    /** byte offset in the message where the offending item starts */
    readonly offset: number,
  ) {
    super(`${problem} at byte ${offset}`);
    this.name = 'WireFormatError';
  }
}

/** Wire types (protobuf encoding guide). */
export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_SGROUP = 3;
export const WIRE_EGROUP = 4;
export const WIRE_I32 = 5;

/**
 * Deepest nesting of groups that {@link WireReader.skip} follows. Nothing in `PublicFaultRequest` is a group; an
 * unknown group field is skipped, and a deeper one is refused (Go's limit is 10,000, which would mean 10,000 stack
 * frames here).
 */
export const MAX_GROUP_DEPTH = 32;

const TWO_32 = 2 ** 32;
/** strings up to this many bytes are checked for ASCII in JS first */
const SHORT_STRING = 64;

/** A cursor over `buf[pos, limit)`; one instance walks a whole message, nested fields narrow {@link limit}. */
export class WireReader {
  /** next byte to read */
  pos: number;
  /** end of the innermost enclosing field (exclusive); reads never pass it */
  limit: number;
  /** the last varint read: low 32 bits (unsigned) and high 32 bits (unsigned) */
  #lo = 0;
  #hi = 0;

  constructor(
    readonly buf: Buffer,
    pos = 0,
    limit = buf.length,
  ) {
    this.pos = pos;
    this.limit = limit;
  }

  /** True when the enclosing field has been read completely. */
  get atLimit(): boolean {
    return this.pos >= this.limit;
  }

  #byte(start: number, what: string): number {
    if (this.pos >= this.limit) throw new WireFormatError(`truncated ${what}`, start);
    return this.buf[this.pos++]!;
  }

  /** Reads one varint into #lo/#hi. */
  #varint(what: string): void {
    const start = this.pos;
    let lo = 0;
    let b: number;
    for (let shift = 0; shift < 28; shift += 7) {
      b = this.#byte(start, what);
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.#lo = lo >>> 0;
        this.#hi = 0;
        return;
      }
    }
    b = this.#byte(start, what);
    lo |= (b & 0x0f) << 28;
    let hi = (b & 0x7f) >>> 4;
    if (b >= 0x80) {
      for (let shift = 3; ; shift += 7) {
        b = this.#byte(start, what);
        if (shift === 31) {
          // the 10th byte carries bit 63 only
          if (b > 1) throw new WireFormatError(`${what} longer than 64 bits`, start);
          hi |= b << 31;
          break;
        }
        hi |= (b & 0x7f) << shift;
        if (b < 0x80) break;
      }
    }
    this.#lo = lo >>> 0;
    this.#hi = hi >>> 0;
  }

  /**
   * A field tag: `fieldNumber << 3 | wireType`, with the field number 1 to 2^29 - 1 and the wire type 0 to 5 (an
   * end-group tag is returned; the caller decides whether it closes a group).
   */
  tag(): number {
    const start = this.pos;
    this.#varint('tag');
    if (this.#hi !== 0 || this.#lo >>> 3 === 0) throw new WireFormatError('field number out of range', start);
    if ((this.#lo & 7) > WIRE_I32) throw new WireFormatError(`invalid wire type ${this.#lo & 7}`, start);
    return this.#lo;
  }

  /** An int64 varint as a number (two's complement; beyond ±2^53 rounded like `Number(BigInt)`). */
  int64(): number {
    this.#varint('varint');
    return this.#hi < 0x80000000 ? this.#hi * TWO_32 + this.#lo : (this.#hi - TWO_32) * TWO_32 + this.#lo;
  }

  /** An int32 varint: the low 32 bits as a signed number (Go and protobufjs both truncate). */
  int32(): number {
    this.#varint('varint');
    return this.#lo | 0;
  }

  /**
   * The length prefix of a length-delimited field; returns the field's end (the content is `[pos, end)`).
   * The length must fit in the enclosing field.
   */
  lengthEnd(): number {
    const start = this.pos;
    this.#varint('length');
    const left = this.limit - this.pos;
    if (this.#hi !== 0 || this.#lo > left) {
      const n = this.#hi === 0 ? String(this.#lo) : 'over 2^32';
      throw new WireFormatError(`length ${n} past the end of the enclosing field (${left} bytes left)`, start);
    }
    return this.pos + this.#lo;
  }

  /**
   * A string field's content after its length prefix; refuses invalid UTF-8 as Go does for proto3 strings. Only the
   * first `keepBytes` bytes are decoded (the whole field is checked); a character cut there becomes U+FFFD.
   */
  string(keepBytes = Infinity): string {
    const start = this.pos;
    const end = this.lengthEnd();
    this.#checkUtf8(start, end);
    const s = this.buf.toString('utf8', this.pos, Math.min(end, this.pos + keepBytes));
    this.pos = end;
    return s;
  }

  /** Like {@link string} but only checks the field (no string is built). */
  skipString(): void {
    const start = this.pos;
    const end = this.lengthEnd();
    this.#checkUtf8(start, end);
    this.pos = end;
  }

  #checkUtf8(start: number, end: number): void {
    // short ASCII strings (the usual case) without a native call and a view object each
    if (end - this.pos <= SHORT_STRING) {
      let i = this.pos;
      while (i < end && this.buf[i]! < 0x80) i++;
      if (i === end) return;
    }
    if (!isUtf8(this.buf.subarray(this.pos, end))) throw new WireFormatError('invalid UTF-8 in a string field', start);
  }

  /**
   * Skips the value of a field whose tag was just read (an unknown field, or a known field with another wire
   * type, which Go also keeps as unknown). `depth` is the group nesting of the caller.
   */
  skip(tag: number, depth = 0): void {
    const start = this.pos;
    switch (tag & 7) {
      case WIRE_VARINT:
        this.#varint('varint');
        return;
      case WIRE_I64:
        this.#fixed(8, start);
        return;
      case WIRE_LEN:
        this.pos = this.lengthEnd();
        return;
      case WIRE_I32:
        this.#fixed(4, start);
        return;
      case WIRE_SGROUP: {
        if (depth >= MAX_GROUP_DEPTH) throw new WireFormatError(`groups nested deeper than ${MAX_GROUP_DEPTH}`, start);
        for (;;) {
          if (this.atLimit) throw new WireFormatError('unterminated group', start);
          const t = this.tag();
          if ((t & 7) === WIRE_EGROUP) {
            if (t >>> 3 !== tag >>> 3) throw new WireFormatError('end-group tag of another group', this.pos);
            return;
          }
          this.skip(t, depth + 1);
        }
      }
      default:
        throw new WireFormatError('end-group tag outside a group', start);
    }
  }

  #fixed(n: number, start: number): void {
    if (this.limit - this.pos < n) throw new WireFormatError(`truncated ${n * 8}-bit field`, start);
    this.pos += n;
  }
}
