/**
 * Hand-built protobuf wire bytes for the decoder tests (what a serializer would refuse to produce), and the
 * proto-loader (protobufjs) codec of `PublicFaultRequest` as the reference.
 */
import type { PublicFaultRequest } from '../../../src/generated/pubfault/PublicFaultRequest.js';
import type { PublicFaultRequest__Output } from '../../../src/generated/pubfault/PublicFaultRequest.js';
import { loadPubFaultProto } from '../../../src/cluster/public-fault/proto.js';
import type { PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';

const method = loadPubFaultProto().PubFault.service.SendPublicFault;

/** protobufjs encoding of a request (proto-loader's serializer). */
export function encodeRequest(req: PublicFaultRequest): Buffer {
  return method.requestSerialize(req);
}

/** protobufjs decoding of a request (proto-loader's deserializer: the server's decoder before issue [K]). */
export function protobufjsDecode(bytes: Buffer): PublicFaultRequest__Output {
  return method.requestDeserialize(bytes);
}

/** The pre-[K] mapping of a protobufjs-decoded request to the collector's message (the reference). */
export function referenceMessage(req: PublicFaultRequest__Output): PublicFaultMessage {
  return {
    id: req.id,
    timestamp: Number(req.timestamp),
    version: req.version,
    resource: req.resource,
    faults: req.faults.map((f) => ({
      faultId: f.faultId,
      faultType: f.faultType,
      faultCode: f.faultCode,
      faultTime: Number(f.faultTime),
      assertion: f.assertion,
      faultLocation: { ...f.faultLocation },
      influence: f.influence.map((i) => ({ nodeName: i.nodeName, nodeSN: i.nodeSN, deviceIds: [...i.deviceIds] })),
      description: f.description,
    })),
  };
}

/** A varint (any non-negative integer, or a bigint for up to 64 bits). */
export function varint(n: number | bigint): Buffer {
  let v = BigInt(n);
  if (v < 0n) v = BigInt.asUintN(64, v);
  const out: number[] = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

export function tag(field: number, wire: number): Buffer {
  return varint(field * 8 + wire);
}

/** A length-delimited field. */
export function lenField(field: number, content: Buffer | string): Buffer {
  const c = typeof content === 'string' ? Buffer.from(content) : content;
  return Buffer.concat([tag(field, 2), varint(c.length), c]);
}

/** A varint field. */
export function varintField(field: number, v: number | bigint): Buffer {
  return Buffer.concat([tag(field, 0), varint(v)]);
}

/** `n` copies of `unit` after `head` (fast for millions of copies). */
export function repeated(head: Buffer, unit: Buffer, n: number): Buffer {
  const out = Buffer.alloc(head.length + unit.length * n);
  head.copy(out);
  for (let i = 0; i < n; i++) unit.copy(out, head.length + i * unit.length);
  return out;
}

/** A valid header of sender `CCAE` at 2026-03-01T02:00:00Z, no faults. */
export function header(): Buffer {
  return encodeRequest({ id: 'msg.20260301-0001', timestamp: '1772330400000', version: '1.0', resource: 'CCAE' });
}

/** The fields of one valid fault (without its field-5 wrapper) with `extra` fields appended. */
export function faultBody(extra: Buffer[] = [], faultId = 'fault-0001'): Buffer {
  return Buffer.concat([
    lenField(1, faultId),
    lenField(2, 'Storage'),
    lenField(3, '220001001'),
    varintField(4, 1_772_330_390_000),
    lenField(5, 'occur'),
    ...extra,
  ]);
}

/** One influence on node-1 (field 7) with the given extra fields. */
export function influence(...fields: Buffer[]): Buffer {
  return lenField(7, Buffer.concat([lenField(1, 'node-1'), ...fields]));
}
