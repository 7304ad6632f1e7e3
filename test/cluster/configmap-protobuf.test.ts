/**
 * The protobuf body of the chunk writes (issue [P] item 6): decoded by an independent decoder (protobufjs, from the
 * upstream field numbers) it is the same ConfigMap as the JSON body the center sent before, so the bytes ClusterD
 * and Volcano read back do not change; a server without protobuf (the API stand-in, 415) gets the JSON body.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import protobuf from 'protobufjs';
import { configMapProtobuf, PROTOBUF_CONTENT_TYPE } from '../../src/cluster/configmap-protobuf.js';
import { prepareConfigMap, prepareRawConfigMap, RawConfigMapWriter } from '../../src/cluster/raw-configmap-writer.js';
import { CONFIGMAPS, KubeApiStandIn } from '../../src/sim/kube-api.js';

// k8s.io/apimachinery runtime.Unknown, meta/v1 ObjectMeta and k8s.io/api core/v1 ConfigMap: the fields used
const PROTO = `
syntax = "proto2";
message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
message Unknown { optional TypeMeta typeMeta = 1; optional bytes raw = 2; optional string contentEncoding = 3; optional string contentType = 4; }
message ObjectMeta { optional string name = 1; optional string namespace = 3; map<string, string> labels = 11; }
message ConfigMap { optional ObjectMeta metadata = 1; map<string, string> data = 2; }
`;
const root = protobuf.parse(PROTO).root;
const Unknown = root.lookupType('Unknown');
const ConfigMap = root.lookupType('ConfigMap');

interface Decoded {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  labels: Record<string, string>;
  data: Record<string, string>;
}

function decode(pieces: readonly Buffer[]): Decoded {
  const all = Buffer.concat(pieces);
  expect([...all.subarray(0, 4)]).toEqual([0x6b, 0x38, 0x73, 0x00]);
  const u = Unknown.toObject(Unknown.decode(all.subarray(4))) as {
    typeMeta: { apiVersion: string; kind: string };
    raw: Uint8Array;
  };
  const cm = ConfigMap.toObject(ConfigMap.decode(u.raw)) as {
    metadata: { name: string; namespace: string; labels?: Record<string, string> };
    data?: Record<string, string>;
  };
  return {
    apiVersion: u.typeMeta.apiVersion,
    kind: u.typeMeta.kind,
    name: cm.metadata.name,
    namespace: cm.metadata.namespace,
    labels: cm.metadata.labels ?? {},
    data: cm.data ?? {},
  };
}

// quotes, a control character, 2-, 3- and 4-byte UTF-8: what JSON escapes and what it does not
const VALUE = '{"mindx-dl-deviceinfo-n1":{"a":"b\\"c\\u0001é€😀"},"n2":{}}';
const META = {
  name: 'cluster-info-device-0',
  namespace: 'mindx-dl',
  labels: { 'mx-consumer-volcano': 'true', b: 'c' },
};

describe('ConfigMap protobuf body', () => {
  test('[P] 6 decodes to the ConfigMap of the JSON body: same metadata, labels and data bytes', () => {
    const d = decode(configMapProtobuf(META, META.name, [Buffer.from(VALUE, 'utf8')]));
    expect(d).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: META.name,
      namespace: META.namespace,
      labels: META.labels,
      data: { [META.name]: VALUE },
    });
  });

  test('[P] 6 a value in pieces is carried as the pieces in order, not copied', () => {
    const pieces = ['{', '"x":1', ',', '"y":"é"', '}'].map((s) => Buffer.from(s, 'utf8'));
    const body = configMapProtobuf(META, 'k', pieces);
    expect(body.slice(1)).toEqual(pieces);
    body.slice(1).forEach((b, i) => expect(b).toBe(pieces[i]));
    expect(decode(body).data).toEqual({ k: '{"x":1,"y":"é"}' });
  });

  test('[P] 6 lengths over 127 and over 16 KiB take multi-byte varints and still decode', () => {
    for (const n of [127, 128, 16_383, 16_384, 900_000]) {
      const v = 'a'.repeat(n);
      expect(decode(configMapProtobuf(META, 'k', [Buffer.from(v)])).data.k).toBe(v);
    }
  });

  test('[P] 6 prepareRawConfigMap: its protobuf and its JSON body are the same ConfigMap', () => {
    const pieces = [
      Buffer.from('{'),
      Buffer.from('"n1":"a\\"é"'),
      Buffer.from(','),
      Buffer.from('"n2":{}'),
      Buffer.from('}'),
    ];
    const text = Buffer.concat(pieces).toString('utf8');
    const p = prepareRawConfigMap(META, META.name, pieces);
    const fromPb = decode(p.protobuf!);
    const fromJson = JSON.parse(Buffer.concat(p.body).toString('utf8')) as k8s.V1ConfigMap;
    const plain = JSON.parse(
      Buffer.concat(prepareConfigMap({ metadata: { ...META }, data: { [META.name]: text } }).body).toString('utf8'),
    ) as k8s.V1ConfigMap;
    expect(fromJson).toEqual(plain);
    expect(fromPb.data).toEqual(fromJson.data);
    expect(fromPb.labels).toEqual(fromJson.metadata?.labels);
    expect(PROTOBUF_CONTENT_TYPE).toBe('application/vnd.kubernetes.protobuf');
  });
});

describe('RawConfigMapWriter protobuf fallback', () => {
  let api: KubeApiStandIn;
  beforeAll(async () => {
    api = await KubeApiStandIn.start({ token: 'pb-token' });
  });
  afterAll(async () => {
    await api.stop();
  });

  test('[P] 6 a server that answers 415 to protobuf gets the JSON body, and JSON from then on', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig());
    try {
      expect(w.protobuf).toBe(true);
      await w.create(prepareRawConfigMap(META, META.name, [Buffer.from(VALUE, 'utf8')]));
      expect(w.protobuf).toBe(false);
      expect((api.store.get(CONFIGMAPS, META.namespace, META.name) as k8s.V1ConfigMap).data).toEqual({
        [META.name]: VALUE,
      });
      await w.update(prepareRawConfigMap(META, META.name, [Buffer.from('{}')]));
      expect((api.store.get(CONFIGMAPS, META.namespace, META.name) as k8s.V1ConfigMap).data).toEqual({
        [META.name]: '{}',
      });
    } finally {
      w.close();
    }
  });

  test('[P] 6 with protobuf off the writer sends JSON at once', async () => {
    const w = new RawConfigMapWriter(api.kubeConfig(), 30_000, { protobuf: false });
    try {
      expect(w.protobuf).toBe(false);
      await w.update(prepareRawConfigMap(META, META.name, [Buffer.from('{"z":1}')]));
      expect((api.store.get(CONFIGMAPS, META.namespace, META.name) as k8s.V1ConfigMap).data).toEqual({
        [META.name]: '{"z":1}',
      });
    } finally {
      w.close();
    }
  });
});
