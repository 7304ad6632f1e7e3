/**
 * The fault center's lists of ConfigMaps and Pods read in the Kubernetes protobuf encoding (issue [P] item 6, the
 * start with 50,000 public faults): a real kube-apiserver writes a list page as protobuf at a fraction of its JSON
 * cost (10,000 device-info ConfigMaps: 0.06 s of its CPU against 0.13 s; 8,000 pods: 0.10 s against 0.25 s; on the
 * 2-core machine of the bench that is CPU the center then has), and reading only what the center uses skips the
 * rest by its length: a pod's spec except `nodeName`, its status and managed fields are never decoded, where
 * `JSON.parse` built every object of them.
 *
 * What is decoded is what the center's inputs read, in the shape `JSON.parse` gives (absent fields stay absent, and
 * so do the empty strings JSON omits):
 *
 * - the list's `metadata.resourceVersion` and `metadata.continue`;
 * - of every object, `metadata.name`, `namespace`, `uid`, `resourceVersion`, `labels`, `annotations` and
 *   `ownerReferences` (`apiVersion`, `kind`, `name`, `uid`, `controller`);
 * - of a ConfigMap, `data`; of a Pod, `spec.nodeName`; of a `PartialObjectMetadataList` (the Nodes, whose serial
 *   annotation is all the public faults need of them), nothing else.
 *
 * Wire format (facts from the upstream `generated.proto` files and serializer): the 4 bytes `k8s\0`, then a
 * `runtime.Unknown` whose field 2 (`raw`) is the list message: `metadata` = 1 (`ListMeta`: `resourceVersion` = 2,
 * `continue` = 3), `items` = 2. `ObjectMeta`: `name` = 1, `namespace` = 3, `uid` = 5, `resourceVersion` = 6,
 * `labels` = 11, `annotations` = 12, `ownerReferences` = 13 (`kind` = 1, `name` = 3, `uid` = 4, `apiVersion` = 5,
 * `controller` = 6, a varint). `ConfigMap`: `metadata` = 1, `data` = 2 (a map: entries of `key` = 1, `value` = 2).
 * `Pod`: `metadata` = 1, `spec` = 2 (`PodSpec.nodeName` = 10). Unknown fields of any wire type are skipped. Every
 * length is checked against what is left of its message before it is used: a truncated or corrupt answer is an
 * error naming where it broke, never a partial list.
 */

/** The Accept header of a list read: protobuf, or JSON from a server without it (the API stand-in, custom resources). */
export const LIST_ACCEPT = 'application/vnd.kubernetes.protobuf, application/json';

/**
 * The Accept header of a metadata-only list (`PartialObjectMetadataList`: the server drops everything but each
 * object's metadata before it encodes them), as protobuf, else as JSON, else the plain list from a server that
 * does not transform (the API stand-in).
 */
export const METADATA_LIST_ACCEPT =
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, ' +
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json';

/** The content type a protobuf answer carries. */
export const PROTOBUF_LIST_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** Which object a protobuf list holds (`Metadata`: a `PartialObjectMetadataList`, metadata only). */
export type ProtobufListKind = 'ConfigMap' | 'Pod' | 'Metadata';

/** A protobuf answer that could not be decoded. */
export class ProtobufListError extends Error {
  override name = 'ProtobufListError';
}

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

/** A bounded reader over one message of `buf`, from `pos` to `end`. */
class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
    readonly what: string,
  ) {
    this.pos = start;
  }

  fail(problem: string): never {
    throw new ProtobufListError(`${this.what}: ${problem} at byte ${this.pos}`);
  }

  get more(): boolean {
    return this.pos < this.end;
  }

  /** A varint as a number (exact up to 2^53; longer ones only need to be skipped here). */
  varint(): number {
    let n = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated varint');
      const b = this.buf[this.pos++]!;
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 128;
    }
    return this.fail('varint longer than 10 bytes');
  }

  /** A field's tag: [field number, wire type]. */
  tag(): [number, number] {
    const t = this.varint();
    return [Math.floor(t / 8), t % 8];
  }

  /** The bounds of a length-delimited field's content (the reader moves past it). */
  span(): [number, number] {
    const n = this.varint();
    if (n > this.end - this.pos) this.fail(`length ${n} past the end of the message`);
    const start = this.pos;
    this.pos += n;
    return [start, this.pos];
  }

  /** A nested message of a length-delimited field. */
  message(what: string): Reader {
    const [s, e] = this.span();
    return new Reader(this.buf, s, e, `${this.what}.${what}`);
  }

  string(): string {
    const [s, e] = this.span();
    return this.buf.toString('utf8', s, e);
  }

  /** Skips a field of wire type `wire`. */
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 2) this.span();
    else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      if (n > this.end - this.pos) this.fail('truncated fixed-size field');
      this.pos += n;
    } else this.fail(`wire type ${wire}`);
  }

  /** A field that must be length-delimited. */
  expectBytes(wire: number, field: string): void {
    if (wire !== 2) this.fail(`${field} has wire type ${wire}, not 2`);
  }
}

/**
 * Sets a string field that JSON leaves out when empty (`omitempty`): the protobuf encoding writes such fields
 * empty (a cluster-scoped object's `namespace`), `JSON.parse` of the JSON answer has no key at all.
 */
function setNonEmpty<K extends string>(o: { [k in K]?: string }, key: K, value: string): void {
  if (value !== '') o[key] = value;
}

/** A `map<string, string>` entry, added to `into`. */
function entry(r: Reader, into: Record<string, string>): void {
  const m = r.message('entry');
  let key = '';
  let value = '';
  while (m.more) {
    const [f, w] = m.tag();
    if (f === 1 && w === 2) key = m.string();
    else if (f === 2 && w === 2) value = m.string();
    else m.skip(w);
  }
  // a key named like an Object.prototype member stays an own data property, as JSON.parse makes it; only
  // `__proto__` would do otherwise when assigned (an accessor), and defining every entry was a tenth of the lists'
  // decoding (issue [P] item 6)
  if (key === '__proto__') {
    Object.defineProperty(into, key, { value, writable: true, enumerable: true, configurable: true });
  } else into[key] = value;
}

interface DecodedOwner {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

function ownerReference(r: Reader): DecodedOwner {
  const m = r.message('ownerReferences');
  const o: DecodedOwner = {};
  while (m.more) {
    const [f, w] = m.tag();
    if (f === 1 && w === 2) o.kind = m.string();
    else if (f === 3 && w === 2) o.name = m.string();
    else if (f === 4 && w === 2) o.uid = m.string();
    else if (f === 5 && w === 2) o.apiVersion = m.string();
    else if (f === 6 && w === 0) o.controller = m.varint() !== 0;
    else m.skip(w);
  }
  return o;
}

interface DecodedMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: DecodedOwner[];
}

function objectMeta(r: Reader): DecodedMeta {
  const m = r.message('metadata');
  const o: DecodedMeta = {};
  while (m.more) {
    const [f, w] = m.tag();
    if (f === 1 && w === 2) setNonEmpty(o, 'name', m.string());
    else if (f === 3 && w === 2) setNonEmpty(o, 'namespace', m.string());
    else if (f === 5 && w === 2) setNonEmpty(o, 'uid', m.string());
    else if (f === 6 && w === 2) setNonEmpty(o, 'resourceVersion', m.string());
    else if (f === 11 && w === 2) entry(m, (o.labels ??= {}));
    else if (f === 12 && w === 2) entry(m, (o.annotations ??= {}));
    else if (f === 13 && w === 2) (o.ownerReferences ??= []).push(ownerReference(m));
    else m.skip(w);
  }
  return o;
}

/**
 * An object message of a list (`metadata` = 1, whatever the kind): its metadata into `o.metadata`, its other fields
 * to `field` (which returns false for a field it does not read: that one is skipped).
 */
function object<O extends { metadata?: DecodedMeta }>(
  r: Reader,
  what: string,
  o: O,
  field?: (m: Reader, f: number, w: number) => boolean,
): O {
  const m = r.message(what);
  while (m.more) {
    const [f, w] = m.tag();
    if (f === 1) {
      m.expectBytes(w, 'metadata');
      o.metadata = objectMeta(m);
    } else if (field === undefined || !field(m, f, w)) m.skip(w);
  }
  return o;
}

function configMap(r: Reader): object {
  const o: { metadata?: DecodedMeta; data?: Record<string, string> } = {};
  return object(r, 'ConfigMap', o, (m, f, w) => {
    if (f !== 2 || w !== 2) return false;
    entry(m, (o.data ??= {}));
    return true;
  });
}

function pod(r: Reader): object {
  const o: { metadata?: DecodedMeta; spec?: { nodeName?: string } } = {};
  return object(r, 'Pod', o, (m, f, w) => {
    if (f !== 2 || w !== 2) return false;
    const s = m.message('spec');
    const spec: { nodeName?: string } = {};
    while (s.more) {
      const [sf, sw] = s.tag();
      if (sf === 10 && sw === 2) setNonEmpty(spec, 'nodeName', s.string());
      else s.skip(sw);
    }
    o.spec = spec;
    return true;
  });
}

/** An item of a `PartialObjectMetadataList` (`metadata` = 1): its metadata alone. */
function metadataOnly(r: Reader): object {
  return object(r, 'PartialObjectMetadata', {});
}

/** A decoded list page: what the center's informers read of a JSON list. */
export interface DecodedList {
  metadata: { resourceVersion?: string; continue?: string };
  items: object[];
}

/** Decodes a protobuf list answer of `kind` objects (see the module comment); throws a {@link ProtobufListError}. */
export function decodeProtobufList(buf: Buffer, kind: ProtobufListKind): DecodedList {
  const what = kind === 'Metadata' ? 'PartialObjectMetadataList' : `${kind}List`;
  if (buf.length < MAGIC.length || MAGIC.some((b, i) => buf[i] !== b))
    throw new ProtobufListError(`${what}: the answer does not start with the protobuf envelope k8s\\0`);
  const env = new Reader(buf, MAGIC.length, buf.length, what);
  let list: Reader | undefined;
  while (env.more) {
    const [f, w] = env.tag();
    if (f === 2) {
      env.expectBytes(w, 'raw');
      list = env.message('raw');
    } else env.skip(w);
  }
  if (list === undefined) throw new ProtobufListError(`${what}: the envelope holds no object`);
  const item = kind === 'ConfigMap' ? configMap : kind === 'Pod' ? pod : metadataOnly;
  const out: DecodedList = { metadata: {}, items: [] };
  while (list.more) {
    const [f, w] = list.tag();
    if (f === 1) {
      list.expectBytes(w, 'metadata');
      const m = list.message('metadata');
      while (m.more) {
        const [mf, mw] = m.tag();
        if (mf === 2 && mw === 2) setNonEmpty(out.metadata, 'resourceVersion', m.string());
        else if (mf === 3 && mw === 2) setNonEmpty(out.metadata, 'continue', m.string());
        else m.skip(mw);
      }
    } else if (f === 2) {
      list.expectBytes(w, 'items');
      out.items.push(item(list));
    } else list.skip(w);
  }
  return out;
}

/**
 * The `message` of an error answered as a protobuf `Status` (a list asked for as protobuf gets its errors so:
 * `Status.message` = 3 inside the envelope's object), or undefined when the bytes are not one.
 */
export function protobufStatusMessage(buf: Buffer): string | undefined {
  if (buf.length < MAGIC.length || MAGIC.some((b, i) => buf[i] !== b)) return undefined;
  try {
    const env = new Reader(buf, MAGIC.length, buf.length, 'Status');
    while (env.more) {
      const [f, w] = env.tag();
      if (f !== 2 || w !== 2) {
        env.skip(w);
        continue;
      }
      const status = env.message('raw');
      while (status.more) {
        const [sf, sw] = status.tag();
        if (sf === 3 && sw === 2) return status.string();
        status.skip(sw);
      }
    }
  } catch (e) {
    if (!(e instanceof ProtobufListError)) throw e;
  }
  return undefined;
}
