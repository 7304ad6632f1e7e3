/**
 * Decoding of a `SendPublicFault` request (`PublicFaultRequest`, spec cluster-faults.md §2.11) from its protobuf
 * bytes to the collector's message, within the limits of §2.5, so that what a request costs in memory is bounded
 * before anything is built (issue [K] item 2: 1.3 M empty faults in 2.6 MB were decoded into ~1 GB before the
 * 100-fault rule was checked).
 *
 * Pass 1 reads the top level: the header fields, and the `faults` entries counted and skipped. Over
 * {@link MAX_FAULTS} faults that is all: no fault is read or built, the message carries
 * {@link PublicFaultMessage.faultsSent} and validation refuses it at rule 5 ("invalid faults length") after the
 * sender limiter and rules 1–4, as upstream answers (a fault that is malformed inside goes unnoticed then; the
 * message is refused either way). Otherwise pass 2 reads every fault, fully checked (a malformed byte refuses the
 * request, as Go's decoder does), but builds only within the limits: per fault at most {@link MAX_INFLUENCES} + 1
 * influences, per influence {@link MAX_DEVICE_IDS} + 1 device ids, per `faultLocation`
 * {@link MAX_LOCATION_ENTRIES} + 1 distinct keys, and each string field up to {@link KEEP_BYTES}: one more than the
 * rule allows, so validation drops that fault by the same rule, at the same place in the rule order, as upstream.
 *
 * Proto3 semantics as Go: missing fields are zero values, the last of repeated scalar fields wins, repeated fields
 * append, packed and unpacked device ids are both read, a known field with another wire type is skipped as unknown,
 * map entries default their missing key or value to "" and a later entry of the same key replaces the earlier one,
 * and strings must be valid UTF-8.
 */
import type { PublicFault, PublicFaultInfluence, PublicFaultMessage } from './types.js';
import { MAX_DEVICE_IDS, MAX_FAULTS, MAX_INFLUENCES, MAX_LOCATION_ENTRIES } from './validator.js';
import { WIRE_LEN, WIRE_VARINT, WireReader } from '../../core/proto-wire.js';

export { WireFormatError } from '../../core/proto-wire.js';

/** Entries of the repeated fields as sent, built or not (over MAX_FAULTS faults, only `faults`: nothing else is read). */
export interface WireCounts {
  faults: number;
  influences: number;
  deviceIds: number;
  /** `faultLocation` entries on the wire (a repeated key counts each time) */
  locationEntries: number;
}

/** A decoded request and what it held on the wire. */
export interface DecodedRequest {
  message: PublicFaultMessage;
  counts: WireCounts;
}

// field numbers of api.proto
const REQ_ID = 1;
const REQ_TIMESTAMP = 2;
const REQ_VERSION = 3;
const REQ_RESOURCE = 4;
const REQ_FAULTS = 5;
const F_ID = 1;
const F_TYPE = 2;
const F_CODE = 3;
const F_TIME = 4;
const F_ASSERTION = 5;
const F_LOCATION = 6;
const F_INFLUENCE = 7;
const F_DESCRIPTION = 8;
const I_NODE_NAME = 1;
const I_NODE_SN = 2;
const I_DEVICE_IDS = 3;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;

/**
 * Bytes decoded of each string field: one more than the longest value its §2.5 rule accepts. A cut value is still
 * longer than the rule allows (a character cut in two decodes to U+FFFD, 3 bytes), so it fails the same rule.
 * `resource` and `nodeSN` are kept whole: they are matched against the configuration and the nodes' serial numbers,
 * which §2.5 does not bound.
 */
export const KEEP_BYTES = {
  /** `^[A-Za-z0-9_.-]{8,128}$` (also faultId) */
  id: 129,
  /** exactly "1.0" */
  version: 4,
  /** NPU, Node, Network, Storage */
  faultType: 8,
  /** exactly 9 bytes */
  faultCode: 10,
  /** occur, recover, once */
  assertion: 8,
  /** 512 code points of at most 4 bytes: 2,052 bytes always hold 513 */
  description: 2052,
  locationKey: 17,
  locationValue: 129,
  /** a node name of at most 253 characters */
  nodeName: 254,
} as const;

const fieldOf = (tag: number): number => tag >>> 3;
const wireOf = (tag: number): number => tag & 7;

class RequestDecoder {
  readonly counts: WireCounts = { faults: 0, influences: 0, deviceIds: 0, locationEntries: 0 };
  readonly #r: WireReader;

  constructor(buf: Buffer) {
    this.#r = new WireReader(buf);
  }

  /** Enters a length-delimited field: reads are confined to it; returns the outer limit for {@link #leave}. */
  #enter(): number {
    const r = this.#r;
    const end = r.lengthEnd();
    const outer = r.limit;
    r.limit = end;
    return outer;
  }

  /** Leaves the field entered last (it has been read to its end). */
  #leave(outer: number): void {
    this.#r.limit = outer;
  }

  /**
   * Pass 1: the top-level fields, with the `faults` entries counted and skipped. Over {@link MAX_FAULTS} faults the
   * message is complete here (rule 5 refuses it whatever the faults hold); otherwise pass 2 reads the faults.
   */
  request(): PublicFaultMessage {
    const r = this.#r;
    const msg: PublicFaultMessage = { id: '', timestamp: 0, version: '', resource: '', faults: [] };
    let faults = 0;
    while (!r.atLimit) {
      const t = r.tag();
      const len = wireOf(t) === WIRE_LEN;
      switch (fieldOf(t)) {
        case REQ_ID:
          if (len) msg.id = r.string(KEEP_BYTES.id);
          else r.skip(t);
          break;
        case REQ_TIMESTAMP:
          if (wireOf(t) === WIRE_VARINT) msg.timestamp = r.int64();
          else r.skip(t);
          break;
        case REQ_VERSION:
          if (len) msg.version = r.string(KEEP_BYTES.version);
          else r.skip(t);
          break;
        case REQ_RESOURCE:
          if (len) msg.resource = r.string();
          else r.skip(t);
          break;
        case REQ_FAULTS:
          if (len) faults++;
          r.skip(t);
          break;
        default:
          r.skip(t);
      }
    }
    if (faults > MAX_FAULTS) {
      this.counts.faults = faults;
      msg.faultsSent = faults;
      return msg;
    }
    // pass 2: the faults
    r.pos = 0;
    while (!r.atLimit) {
      const t = r.tag();
      if (t === ((REQ_FAULTS << 3) | WIRE_LEN)) {
        const outer = this.#enter();
        msg.faults.push(this.#fault());
        this.#leave(outer);
      } else {
        r.skip(t);
      }
    }
    return msg;
  }

  /** One fault, with at most MAX_INFLUENCES + 1 influences and MAX_LOCATION_ENTRIES + 1 location keys. */
  #fault(): PublicFault {
    const r = this.#r;
    this.counts.faults++;
    const location = Object.create(null) as Record<string, string>;
    const f: PublicFault = {
      faultId: '',
      faultType: '',
      faultCode: '',
      faultTime: 0,
      assertion: '',
      faultLocation: location,
      influence: [],
      description: '',
    };
    let influences = 0;
    let keys = 0;
    while (!r.atLimit) {
      const t = r.tag();
      const len = wireOf(t) === WIRE_LEN;
      const field = fieldOf(t);
      if (field === F_TIME && wireOf(t) === WIRE_VARINT) {
        f.faultTime = r.int64();
      } else if (!len) {
        r.skip(t);
      } else if (field === F_ID) {
        f.faultId = r.string(KEEP_BYTES.id);
      } else if (field === F_TYPE) {
        f.faultType = r.string(KEEP_BYTES.faultType);
      } else if (field === F_CODE) {
        f.faultCode = r.string(KEEP_BYTES.faultCode);
      } else if (field === F_ASSERTION) {
        f.assertion = r.string(KEEP_BYTES.assertion);
      } else if (field === F_DESCRIPTION) {
        f.description = r.string(KEEP_BYTES.description);
      } else if (field === F_LOCATION) {
        this.counts.locationEntries++;
        // limit + 1 distinct keys are kept: enough for the rule to fail as on upstream's map
        const keep = keys <= MAX_LOCATION_ENTRIES;
        const outer = this.#enter();
        const entry = this.#entry(keep);
        this.#leave(outer);
        if (entry !== undefined) {
          if (!Object.hasOwn(location, entry[0])) keys++;
          location[entry[0]] = entry[1];
        }
      } else if (field === F_INFLUENCE) {
        influences++;
        const outer = this.#enter();
        const inf = this.#influence(influences <= MAX_INFLUENCES + 1);
        this.#leave(outer);
        if (inf !== undefined) f.influence.push(inf);
      } else {
        r.skip(t);
      }
    }
    return f;
  }

  /** One `faultLocation` map entry as [key, value]; built only when `build`. */
  #entry(build: boolean): [string, string] | undefined {
    const r = this.#r;
    let key = '';
    let value = '';
    while (!r.atLimit) {
      const t = r.tag();
      const field = fieldOf(t);
      if ((field === ENTRY_KEY || field === ENTRY_VALUE) && wireOf(t) === WIRE_LEN) {
        if (!build) r.skipString();
        else if (field === ENTRY_KEY) key = r.string(KEEP_BYTES.locationKey);
        else value = r.string(KEEP_BYTES.locationValue);
      } else {
        r.skip(t);
      }
    }
    return build ? [key, value] : undefined;
  }

  /** One influence; built only when `build` (then with at most MAX_DEVICE_IDS + 1 device ids). */
  #influence(build: boolean): PublicFaultInfluence | undefined {
    const r = this.#r;
    const inf: PublicFaultInfluence | undefined = build ? { nodeName: '', nodeSN: '', deviceIds: [] } : undefined;
    let ids = 0;
    this.counts.influences++;
    while (!r.atLimit) {
      const t = r.tag();
      const field = fieldOf(t);
      if ((field === I_NODE_NAME || field === I_NODE_SN) && wireOf(t) === WIRE_LEN) {
        if (inf === undefined) r.skipString();
        else if (field === I_NODE_NAME) inf.nodeName = r.string(KEEP_BYTES.nodeName);
        else inf.nodeSN = r.string();
      } else if (field === I_DEVICE_IDS && wireOf(t) === WIRE_VARINT) {
        ids = this.#deviceId(inf, ids);
      } else if (field === I_DEVICE_IDS && wireOf(t) === WIRE_LEN) {
        // packed: varints filling the field exactly (an empty field is valid)
        const outer = this.#enter();
        while (!r.atLimit) ids = this.#deviceId(inf, ids);
        this.#leave(outer);
      } else {
        r.skip(t);
      }
    }
    return inf;
  }

  /** One device id; kept while the influence has at most MAX_DEVICE_IDS; returns the new count. */
  #deviceId(inf: PublicFaultInfluence | undefined, ids: number): number {
    const v = this.#r.int32();
    this.counts.deviceIds++;
    if (inf !== undefined && ids <= MAX_DEVICE_IDS) inf.deviceIds.push(v);
    return ids + 1;
  }
}

/**
 * Decodes a request within the §2.5 limits (see the module comment); throws {@link WireFormatError} when the bytes
 * are not a well-formed `PublicFaultRequest`, and nothing else.
 */
export function decodePublicFaultRequest(bytes: Buffer): DecodedRequest {
  const d = new RequestDecoder(bytes);
  const message = d.request();
  return { message, counts: d.counts };
}
