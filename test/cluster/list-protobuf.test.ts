/**
 * The protobuf list reader of the fault center's inputs (issue [P] item 6): what it decodes of ConfigMap and Pod
 * lists (the shape `JSON.parse` gives, absent fields absent), the unknown fields it skips at every level, its
 * refusal of truncated or corrupt answers, and the writer's content negotiation (protobuf asked for, JSON read
 * from a server without it). Against the real kube-apiserver it runs in test:cluster (the fault center's lists).
 */
import { describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtobufList, ProtobufListError } from '../../src/cluster/list-protobuf.js';
import { RawConfigMapWriter, RawWriteError } from '../../src/cluster/raw-configmap-writer.js';

// ---- a small protobuf writer (the wire format of the module comment) ----

const varint = (n: number): number[] => {
  const out: number[] = [];
  while (n > 127) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
};
const bytes = (field: number, content: number[] | Buffer): number[] => [
  ...varint(field * 8 + 2),
  ...varint(content.length),
  ...content,
];
const str = (field: number, s: string): number[] => bytes(field, Buffer.from(s, 'utf8'));
const int = (field: number, n: number): number[] => [...varint(field * 8), ...varint(n)];
const entry = (field: number, k: string, v: string): number[] => bytes(field, [...str(1, k), ...str(2, v)]);
/** one unknown field of every wire type a server may add (varint, 64-bit, length-delimited, 32-bit) */
const unknown = (): number[] => [
  ...int(90, 300),
  ...varint(91 * 8 + 1),
  ...[1, 2, 3, 4, 5, 6, 7, 8],
  ...str(92, 'ignored'),
  ...varint(93 * 8 + 5),
  ...[1, 2, 3, 4],
];
const envelope = (kind: string, list: number[]): Buffer =>
  Buffer.from([
    0x6b,
    0x38,
    0x73,
    0x00,
    ...bytes(1, [...str(1, 'v1'), ...str(2, kind)]),
    // the object last: every shorter prefix of the answer is incomplete
    ...bytes(2, list),
  ]);

const meta = (o: { name: string; namespace: string; rv: string; uid?: string }, extra: number[] = []): number[] =>
  bytes(1, [
    ...str(1, o.name),
    ...str(3, o.namespace),
    ...(o.uid !== undefined ? str(5, o.uid) : []),
    ...str(6, o.rv),
    ...unknown(),
    ...extra,
  ]);

const configMapList = (): Buffer =>
  envelope('ConfigMapList', [
    ...bytes(1, [...str(2, '4711'), ...str(3, 'next-page'), ...int(4, 9), ...unknown()]),
    ...bytes(2, [
      ...meta({ name: 'mindx-dl-deviceinfo-node-1', namespace: 'kube-system', rv: '12', uid: 'u-1' }, [
        ...entry(11, 'mx-consumer-cim', 'true'),
        ...entry(12, 'note', '节点'),
      ]),
      ...entry(2, 'DeviceInfoCfg', '{"DeviceInfo":{}}'),
      ...entry(2, '__proto__', 'kept'),
      ...entry(2, 'empty', ''),
      ...unknown(),
    ]),
    ...bytes(2, [...meta({ name: 'bare', namespace: 'default', rv: '13' })]),
    ...unknown(),
  ]);

describe('issue [P] 6 protobuf lists of ConfigMaps and Pods', () => {
  test('[P] 6 a ConfigMap list decodes to what JSON.parse gives of it: list metadata, object metadata, labels, annotations, data', () => {
    const got = decodeProtobufList(configMapList(), 'ConfigMap');
    const data: Record<string, string> = { DeviceInfoCfg: '{"DeviceInfo":{}}', empty: '' };
    Object.defineProperty(data, '__proto__', { value: 'kept', enumerable: true, writable: true, configurable: true });
    expect(got).toEqual({
      metadata: { resourceVersion: '4711', continue: 'next-page' },
      items: [
        {
          metadata: {
            name: 'mindx-dl-deviceinfo-node-1',
            namespace: 'kube-system',
            uid: 'u-1',
            resourceVersion: '12',
            labels: { 'mx-consumer-cim': 'true' },
            annotations: { note: '节点' },
          },
          data,
        },
        { metadata: { name: 'bare', namespace: 'default', resourceVersion: '13' } },
      ],
    });
  });

  test('[P] 6 a data key named __proto__ is an own key, as JSON.parse makes it, and leaves the prototype alone', () => {
    const item = decodeProtobufList(configMapList(), 'ConfigMap').items[0] as { data: Record<string, string> };
    expect([Object.keys(item.data), Object.getPrototypeOf(item.data) === Object.prototype]).toEqual([
      ['DeviceInfoCfg', '__proto__', 'empty'],
      true,
    ]);
  });

  test('[P] 6 data keys named like Object.prototype members are own keys with their values, as JSON.parse makes them', () => {
    const keys = ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf'];
    const list = envelope('ConfigMapList', [
      ...bytes(2, [
        ...meta({ name: 'odd', namespace: 'default', rv: '1' }),
        ...keys.flatMap((k) => entry(2, k, `v-${k}`)),
      ]),
    ]);
    const data = (decodeProtobufList(list, 'ConfigMap').items[0] as { data: Record<string, string> }).data;
    const parsed = JSON.parse(`{${keys.map((k) => `"${k}":"v-${k}"`).join(',')}}`) as Record<string, string>;
    expect(Object.entries(data)).toEqual(Object.entries(parsed));
    expect(keys.every((k) => Object.prototype.hasOwnProperty.call(data, k))).toBe(true);
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
  });

  test('[P] 6 a Pod list decodes the metadata, owner references and spec.nodeName; the rest of spec and status is skipped', () => {
    const owner = (uid: string, controller?: boolean): number[] =>
      bytes(13, [
        ...str(1, 'Job'),
        ...str(3, `job-${uid}`),
        ...str(4, uid),
        ...str(5, 'batch/v1'),
        ...(controller !== undefined ? int(6, controller ? 1 : 0) : []),
        ...int(7, 1),
      ]);
    const list = envelope('PodList', [
      ...bytes(1, [...str(2, '99')]),
      ...bytes(2, [
        ...meta({ name: 'p-1', namespace: 'default', rv: '5', uid: 'pod-uid' }, [
          ...entry(12, 'ascend.kubectl.kubernetes.io/ascend-910-configuration', '{"devices":[]}'),
          ...owner('a', true),
          ...owner('b', false),
          ...owner('c'),
        ]),
        ...bytes(2, [...str(1, 'volume'), ...str(10, 'node-7'), ...unknown(), ...bytes(2, str(1, 'container'))]),
        ...bytes(3, [...str(1, 'Running'), ...unknown()]),
      ]),
      ...bytes(2, [...meta({ name: 'p-2', namespace: 'default', rv: '6' }), ...bytes(2, [])]),
    ]);
    const jobOwner = (uid: string) => ({ kind: 'Job', name: `job-${uid}`, uid, apiVersion: 'batch/v1' });
    expect(decodeProtobufList(list, 'Pod')).toEqual({
      metadata: { resourceVersion: '99' },
      items: [
        {
          metadata: {
            name: 'p-1',
            namespace: 'default',
            uid: 'pod-uid',
            resourceVersion: '5',
            annotations: { 'ascend.kubectl.kubernetes.io/ascend-910-configuration': '{"devices":[]}' },
            ownerReferences: [
              { ...jobOwner('a'), controller: true },
              { ...jobOwner('b'), controller: false },
              jobOwner('c'),
            ],
          },
          spec: { nodeName: 'node-7' },
        },
        { metadata: { name: 'p-2', namespace: 'default', resourceVersion: '6' }, spec: {} },
      ],
    });
  });

  test('[P] 6 a PartialObjectMetadataList (the Nodes) decodes to the metadata of each object alone, an empty namespace left out as JSON leaves it', () => {
    const list = envelope('PartialObjectMetadataList', [
      ...bytes(1, [...str(2, '7')]),
      ...bytes(2, [
        ...meta({ name: 'node-1', namespace: '', rv: '3' }, [...entry(12, 'product-serial-number', 'SN-1')]),
        ...unknown(),
      ]),
    ]);
    expect(decodeProtobufList(list, 'Metadata')).toEqual({
      metadata: { resourceVersion: '7' },
      items: [
        {
          metadata: {
            name: 'node-1',
            resourceVersion: '3',
            annotations: { 'product-serial-number': 'SN-1' },
          },
        },
      ],
    });
  });

  test('[P] 6 every truncation of an answer is refused with a ProtobufListError, never a shorter list', () => {
    const full = configMapList();
    const outcomes = new Set<string>();
    for (let n = 0; n < full.length; n++) {
      try {
        decodeProtobufList(full.subarray(0, n), 'ConfigMap');
        outcomes.add(`decoded at ${n}`);
      } catch (e) {
        outcomes.add(e instanceof ProtobufListError ? 'refused' : `other error at ${n}: ${String(e)}`);
      }
    }
    expect([...outcomes]).toEqual(['refused']);
  });

  test('[P] 6 an answer without the envelope, with a group field, or with an overlong varint is refused, naming the problem', () => {
    const refusal = (b: Buffer): string => {
      try {
        decodeProtobufList(b, 'Pod');
        return 'decoded';
      } catch (e) {
        return e instanceof ProtobufListError ? e.message : `other: ${String(e)}`;
      }
    };
    expect([
      refusal(Buffer.from('{"kind":"PodList"}')),
      refusal(envelope('PodList', [...varint(5 * 8 + 3)])),
      refusal(envelope('PodList', [...varint(5 * 8), ...Array<number>(11).fill(0xff)])),
      refusal(envelope('PodList', [...varint(2 * 8 + 2), ...varint(1000), 1, 2])),
      refusal(Buffer.from([0x6b, 0x38, 0x73, 0x00, ...bytes(1, str(1, 'v1'))])),
    ]).toEqual([
      expect.stringMatching(/^PodList: the answer does not start with the protobuf envelope/),
      expect.stringMatching(/^PodList\.raw: wire type 3 at byte/),
      expect.stringMatching(/^PodList\.raw: varint longer than 10 bytes/),
      expect.stringMatching(/^PodList\.raw: length 1000 past the end of the message/),
      'PodList: the envelope holds no object',
    ]);
  });

  test('[P] 6 the writer asks for protobuf (metadata only for Nodes), decodes a protobuf answer, reads a JSON answer as JSON, names a corrupt one, and reads a protobuf error Status', async () => {
    const accepts: string[] = [];
    const server = http.createServer((req, res) => {
      accepts.push(String(req.headers.accept));
      if (req.url!.startsWith('/json')) {
        res.setHeader('Content-Type', 'application/json');
        res.end('{"metadata":{"resourceVersion":"1"},"items":[]}');
      } else if (req.url!.startsWith('/forbidden')) {
        res.statusCode = 403;
        res.setHeader('Content-Type', 'application/vnd.kubernetes.protobuf');
        res.end(
          envelope('Status', [
            ...str(2, 'Failure'),
            ...str(3, 'pods is forbidden: cannot list'),
            ...str(4, 'Forbidden'),
            ...int(6, 403),
          ]),
        );
      } else if (req.url!.startsWith('/bad')) {
        res.setHeader('Content-Type', 'application/vnd.kubernetes.protobuf');
        res.end(configMapList().subarray(0, 40));
      } else {
        res.setHeader('Content-Type', 'application/vnd.kubernetes.protobuf');
        res.end(configMapList());
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [
        { name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
      ],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const w = new RawConfigMapWriter(kc, 5000);
    try {
      const pb = (await w.getList('/pb', 'ConfigMap')) as { items: unknown[] };
      const json = await w.getList('/json', 'ConfigMap');
      const bad = await w.getList('/bad', 'ConfigMap').catch((e: unknown) => e);
      await w.getList('/pb-nodes', 'Metadata');
      const forbidden = await w.getList('/forbidden', 'Pod').catch((e: unknown) => e);
      expect([
        pb.items.length,
        json,
        bad instanceof RawWriteError ? bad.message : bad,
        forbidden instanceof RawWriteError ? [forbidden.code, forbidden.message] : forbidden,
        accepts,
      ]).toEqual([
        2,
        { metadata: { resourceVersion: '1' }, items: [] },
        expect.stringMatching(/^GET \/bad: ConfigMapList: length \d+ past the end of the message at byte \d+$/),
        [403, 'HTTP 403: pods is forbidden: cannot list'],
        [
          ...Array<string>(3).fill('application/vnd.kubernetes.protobuf, application/json'),
          'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, ' +
            'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json',
          'application/vnd.kubernetes.protobuf, application/json',
        ],
      ]);
    } finally {
      w.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
