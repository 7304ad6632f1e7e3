/**
 * A ConfigMap in the Kubernetes protobuf encoding, for the fault center's chunk writes (issue [P] item 6): a real
 * kube-apiserver decodes an 800 KiB chunk sent as JSON with its JSON scanner (validity pass, then the string's
 * escapes one by one), which was its largest cost while a wave of device-info changes rewrote every chunk each
 * second; as protobuf the value is one length-prefixed run of bytes. The value is also sent unescaped (no
 * `\"` per quote), so the body is smaller and the center escapes nothing.
 *
 * Wire format (facts from the upstream `.proto` files and serializer): the 4 bytes `k8s\0`, then a `runtime.Unknown`
 * (k8s.io/apimachinery `pkg/runtime/generated.proto`: `typeMeta` = 1 with `apiVersion` = 1 and `kind` = 2, `raw` =
 * 2) whose `raw` is the `ConfigMap` message (k8s.io/api `core/v1/generated.proto`: `metadata` = 1, `data` = 2 as
 * `map<string, string>`, i.e. repeated entries of `key` = 1 and `value` = 2), with `ObjectMeta` (k8s.io/apimachinery
 * `pkg/apis/meta/v1/generated.proto`: `name` = 1, `namespace` = 3, `labels` = 11). Every field used is
 * length-delimited (wire type 2). A server without protobuf answers 415 (the API stand-in does); the writer then
 * falls back to JSON (raw-configmap-writer.ts).
 */

/** The content type of a protobuf body. */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

/** Field numbers (see the module comment). */
const UNKNOWN_TYPE_META = 1;
const UNKNOWN_RAW = 2;
const TYPE_META_API_VERSION = 1;
const TYPE_META_KIND = 2;
const CONFIGMAP_METADATA = 1;
const CONFIGMAP_DATA = 2;
const META_NAME = 1;
const META_NAMESPACE = 3;
const META_LABELS = 11;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;

/** Appends `n` (a non-negative safe integer) as a base-128 varint. */
function pushVarint(out: number[], n: number): void {
  while (n > 127) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

/** Appends the key and length of a length-delimited field. */
function pushHead(out: number[], field: number, length: number): void {
  pushVarint(out, (field << 3) | 2);
  pushVarint(out, length);
}

/** Appends a length-delimited field whose content is `bytes`. */
function pushBytes(out: number[], field: number, bytes: Uint8Array | readonly number[]): void {
  pushHead(out, field, bytes.length);
  for (const b of bytes) out.push(b);
}

function pushString(out: number[], field: number, s: string): void {
  pushBytes(out, field, Buffer.from(s, 'utf8'));
}

/** A map entry `{ key = 1, value = 2 }` as field `field`. */
function pushEntry(out: number[], field: number, key: string, value: string): void {
  const entry: number[] = [];
  pushString(entry, ENTRY_KEY, key);
  pushString(entry, ENTRY_VALUE, value);
  pushBytes(out, field, entry);
}

/** What of a ConfigMap's metadata the protobuf body carries. */
export interface ProtobufConfigMapMeta {
  readonly name: string;
  readonly namespace: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * The protobuf body of a ConfigMap with one data key whose UTF-8 value is given in pieces: a head (envelope,
 * metadata, the key and the value's length) followed by the pieces as they are, not copied.
 */
export function configMapProtobuf(
  meta: ProtobufConfigMapMeta,
  key: string,
  value: readonly Buffer[],
): readonly Buffer[] {
  let valueBytes = 0;
  for (const b of value) valueBytes += b.length;
  const metadata: number[] = [];
  pushString(metadata, META_NAME, meta.name);
  pushString(metadata, META_NAMESPACE, meta.namespace);
  // map entries in key order (Go's marshaller sorts them; any order decodes the same)
  for (const k of Object.keys(meta.labels ?? {}).sort()) pushEntry(metadata, META_LABELS, k, meta.labels![k]!);
  // ConfigMap: metadata, then one data entry whose value bytes follow the head
  const entryHead: number[] = [];
  pushString(entryHead, ENTRY_KEY, key);
  pushHead(entryHead, ENTRY_VALUE, valueBytes);
  const configMap: number[] = [];
  pushBytes(configMap, CONFIGMAP_METADATA, metadata);
  pushHead(configMap, CONFIGMAP_DATA, entryHead.length + valueBytes);
  for (const b of entryHead) configMap.push(b);
  const typeMeta: number[] = [];
  pushString(typeMeta, TYPE_META_API_VERSION, 'v1');
  pushString(typeMeta, TYPE_META_KIND, 'ConfigMap');
  const head: number[] = [...MAGIC];
  pushBytes(head, UNKNOWN_TYPE_META, typeMeta);
  pushHead(head, UNKNOWN_RAW, configMap.length + valueBytes);
  for (const b of configMap) head.push(b);
  return [Buffer.from(head), ...value];
}
