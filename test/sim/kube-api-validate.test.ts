/**
 * The stand-in decodes timestamps as the real API server (issue [R] item 7: what the real server enforces, so that
 * the fast tests catch it): a MicroTime without six fractional digits and a metav1.Time that is not RFC 3339 are
 * refused, accepted values are stored in the server's form.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { KubeClient } from '../../src/kube/kube-client.js';

let api: KubeApiStandIn;

beforeAll(async () => {
  api = await KubeApiStandIn.start();
});
afterAll(async () => {
  await api.stop();
});

async function send(method: string, path: string, body: unknown, contentType = 'application/json') {
  const res = await fetch(api.url + path, {
    method,
    headers: { 'content-type': contentType, authorization: 'Bearer stand-in-token' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const event = (name: string, eventTime: unknown, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name, namespace: 'kube-system' },
  involvedObject: { kind: 'Pod', namespace: 'kube-system', name: 'p' },
  reason: 'R',
  message: 'm',
  eventTime,
  ...extra,
});

const lease = (name: string, renewTime: unknown) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name, namespace: 'cluster-system' },
  spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime },
});

describe('issue [R] item 1: MicroTime fields need six fractional digits', () => {
  test('Event eventTime with three digits (a JavaScript Date): 400 with the real message', async () => {
    const r = await send('POST', '/api/v1/namespaces/kube-system/events', event('e1', '2026-12-03T14:20:45.167Z'));
    expect([r.status, r.body.reason, r.body.message]).toEqual([
      400,
      'BadRequest',
      'Event in version "v1" cannot be handled as a Event: parsing time "2026-12-03T14:20:45.167Z" as ' +
        '"2006-01-02T15:04:05.000000Z07:00": cannot parse ".167Z" as ".000000"',
    ]);
    expect(api.store.list(api.resourceType('', 'events'), 'kube-system')).toEqual([]);
  });

  test('Event eventTime with six digits is stored as sent', async () => {
    const r = await send('POST', '/api/v1/namespaces/kube-system/events', event('e2', '2026-12-03T14:20:45.167000Z'));
    expect([r.status, r.body.eventTime]).toEqual([201, '2026-12-03T14:20:45.167000Z']);
  });

  test('events.k8s.io series.lastObservedTime with three digits: 400', async () => {
    const body = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'e3', namespace: 'kube-system' },
      eventTime: '2026-12-03T14:20:45.167000Z',
      series: { count: 2, lastObservedTime: '2026-12-03T14:20:46.5Z' },
      reportingController: 'c',
      reportingInstance: 'i',
      action: 'A',
      reason: 'R',
      regarding: { kind: 'Pod', namespace: 'kube-system', name: 'p' },
    };
    const r = await send('POST', '/apis/events.k8s.io/v1/namespaces/kube-system/events', body);
    expect([r.status, r.body.message]).toEqual([
      400,
      'Event in version "v1" cannot be handled as a Event: parsing time "2026-12-03T14:20:46.5Z" as ' +
        '"2006-01-02T15:04:05.000000Z07:00": cannot parse ".5Z" as ".000000"',
    ]);
  });

  test('Lease renewTime with three digits: 400 on create and on update', async () => {
    const bad = await send(
      'POST',
      '/apis/coordination.k8s.io/v1/namespaces/cluster-system/leases',
      lease('l1', '2026-12-03T14:20:45.167Z'),
    );
    expect([bad.status, bad.body.message]).toEqual([
      400,
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-12-03T14:20:45.167Z" as ' +
        '"2006-01-02T15:04:05.000000Z07:00": cannot parse ".167Z" as ".000000"',
    ]);
    const ok = await send(
      'POST',
      '/apis/coordination.k8s.io/v1/namespaces/cluster-system/leases',
      lease('l1', '2026-12-03T14:20:45.167000Z'),
    );
    expect(ok.status).toBe(201);
    const upd = await send(
      'PUT',
      '/apis/coordination.k8s.io/v1/namespaces/cluster-system/leases/l1',
      lease('l1', '2026-12-03T14:20:47Z'),
    );
    expect([upd.status, upd.body.reason]).toEqual([400, 'BadRequest']);
  });

  test('a patch that leaves a bad MicroTime: 422 Invalid on the field "patch"', async () => {
    await send(
      'POST',
      '/apis/coordination.k8s.io/v1/namespaces/cluster-system/leases',
      lease('l2', '2026-12-03T14:20:45.167000Z'),
    );
    const r = await send(
      'PATCH',
      '/apis/coordination.k8s.io/v1/namespaces/cluster-system/leases/l2',
      { spec: { renewTime: '2026-12-03T14:20:49.1Z' } },
      'application/merge-patch+json',
    );
    expect([r.status, r.body.reason]).toEqual([422, 'Invalid']);
    expect(String(r.body.message)).toMatch(
      /^ "" is invalid: patch: Invalid value: ".*": parsing time "2026-12-03T14:20:49.1Z"/,
    );
  });

  test('a MicroTime with an offset is stored in UTC, its six digits kept', async () => {
    const r = await send(
      'POST',
      '/apis/coordination.k8s.io/v1/namespaces/cluster-system/leases',
      lease('l3', '2026-12-03T22:20:45.167123+08:00'),
    );
    expect((r.body.spec as Record<string, unknown>).renewTime).toBe('2026-12-03T14:20:45.167123Z');
  });
});

describe('issue [R] item 1: metav1.Time fields', () => {
  test('firstTimestamp with a fraction is accepted and stored in whole seconds', async () => {
    const r = await send(
      'POST',
      '/api/v1/namespaces/kube-system/events',
      event('t1', null, { firstTimestamp: '2026-12-03T14:20:45.167Z', lastTimestamp: '2026-12-03T16:20:45+02:00' }),
    );
    expect([r.status, r.body.firstTimestamp, r.body.lastTimestamp]).toEqual([
      201,
      '2026-12-03T14:20:45Z',
      '2026-12-03T14:20:45Z',
    ]);
  });

  test('firstTimestamp that is not RFC 3339: 400', async () => {
    const r = await send(
      'POST',
      '/api/v1/namespaces/kube-system/events',
      event('t2', null, { firstTimestamp: '2026-12-03 14:20:45' }),
    );
    expect([r.status, String(r.body.message)]).toEqual([
      400,
      'Event in version "v1" cannot be handled as a Event: parsing time "2026-12-03 14:20:45" as "2006-01-02T15:04:05Z07:00": cannot parse " 14:20:45" as "T"',
    ]);
  });

  test('a number where a time belongs: 400 (Go cannot unmarshal a number into the time string)', async () => {
    const r = await send('POST', '/api/v1/namespaces/kube-system/events', event('t3', 1701612045));
    expect([r.status, String(r.body.message)]).toEqual([
      400,
      'Event in version "v1" cannot be handled as a Event: json: cannot unmarshal number into Go struct field Event.eventTime of type string',
    ]);
  });
});

describe('issue [R] item 1: the project client sends Dates of the writers as the server wants them', () => {
  test('a plain Date on a MicroTime field is refused through KubeClient (what the recorder sent before)', async () => {
    const client = new KubeClient({ server: api.url, token: 'stand-in-token' });
    const body = event('w1', new Date(Date.UTC(2026, 11, 3, 14, 20, 45, 167))) as never;
    await expect(client.createNamespacedEvent({ namespace: 'kube-system', body })).rejects.toMatchObject({ code: 400 });
  });
});
