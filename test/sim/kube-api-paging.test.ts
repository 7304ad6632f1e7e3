/**
 * Paged lists of the API stand-in, against the Kubernetes API concepts "Retrieving large results sets in chunks"
 * (`limit`, `continue`, `remainingItemCount`, 410 `Expired`).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  ApiError,
  CONFIGMAPS,
  CONTINUE_INCONSISTENT_MESSAGE,
  KubeApiStandIn,
  type KubeObject,
} from '../../src/sim/kube-api.js';

const CHUNKING = 'Kubernetes API: list chunking';
const PATH = '/api/v1/namespaces/kube-system/configmaps';
const NAMES = ['cm-0', 'cm-1', 'cm-2', 'cm-3', 'cm-4', 'cm-5', 'cm-6'];

let api: KubeApiStandIn | undefined;
const others: KubeApiStandIn[] = [];

afterEach(async () => {
  await api?.stop();
  api = undefined;
  for (const o of others.splice(0)) await o.stop();
});

interface ListBody {
  kind: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubeObject[];
}

/** A stand-in with the seven ConfigMaps of {@link NAMES} in kube-system; even ones labelled `even=true`. */
async function seeded(options: Parameters<typeof KubeApiStandIn.start>[0] = {}): Promise<KubeApiStandIn> {
  const s = await KubeApiStandIn.start(options);
  NAMES.forEach((name, i) =>
    s.store.create(CONFIGMAPS, 'kube-system', {
      metadata: { name, ...(i % 2 === 0 ? { labels: { even: 'true' } } : {}) },
      data: { v: String(i) },
    }),
  );
  return s;
}

async function get(
  s: KubeApiStandIn,
  query: Record<string, string>,
  path = PATH,
): Promise<{ code: number; body: any }> {
  const r = await fetch(`${s.url}${path}?${new URLSearchParams(query).toString()}`);
  return { code: r.status, body: await r.json() };
}

async function page(s: KubeApiStandIn, query: Record<string, string>, path = PATH): Promise<ListBody> {
  const r = await get(s, query, path);
  if (r.code !== 200) throw new Error(`list answered ${r.code}: ${JSON.stringify(r.body)}`);
  return r.body as ListBody;
}

/** Every page of a list, following `continue`. */
async function allPages(s: KubeApiStandIn, query: Record<string, string>, path = PATH): Promise<ListBody[]> {
  const pages: ListBody[] = [];
  let token: string | undefined;
  do {
    const p = await page(s, { ...query, ...(token !== undefined ? { continue: token } : {}) }, path);
    pages.push(p);
    token = p.metadata.continue;
  } while (token !== undefined);
  return pages;
}

const names = (items: readonly KubeObject[]): string[] => items.map((o) => o.metadata!.name!);

describe(`${CHUNKING}: pages`, () => {
  test('the pages of limit=3 concatenate to the whole list in key order', async () => {
    api = await seeded();
    const pages = await allPages(api, { limit: '3' });
    expect([pages.map((p) => p.items.length), pages.flatMap((p) => names(p.items))]).toEqual([[3, 3, 1], NAMES]);
  });

  test('remainingItemCount is the number of items after each page when no selector is given', async () => {
    api = await seeded();
    const pages = await allPages(api, { limit: '3' });
    expect(pages.slice(0, -1).map((p) => p.metadata.remainingItemCount)).toEqual([4, 1]);
  });

  test('remainingItemCount is absent with a label selector (continue is still given)', async () => {
    api = await seeded();
    const first = await page(api, { limit: '2', labelSelector: 'even=true' });
    expect([first.metadata.remainingItemCount, typeof first.metadata.continue]).toEqual([undefined, 'string']);
  });

  test('a label-selected list pages through the selected objects only', async () => {
    api = await seeded();
    const pages = await allPages(api, { limit: '2', labelSelector: 'even=true' });
    expect(pages.flatMap((p) => names(p.items))).toEqual(['cm-0', 'cm-2', 'cm-4', 'cm-6']);
  });

  test('the last page has neither continue nor remainingItemCount', async () => {
    api = await seeded();
    const last = (await allPages(api, { limit: '3' })).at(-1)!;
    expect([Object.keys(last.metadata), last.items.length]).toEqual([['resourceVersion'], 1]);
  });

  test('a list no longer than limit is one page without continue', async () => {
    api = await seeded();
    const only = await page(api, { limit: '7' });
    expect([names(only.items), only.metadata.continue]).toEqual([NAMES, undefined]);
  });

  test('limit=0 returns the whole list', async () => {
    api = await seeded();
    const whole = await page(api, { limit: '0' });
    expect([names(whole.items), whole.metadata.continue]).toEqual([NAMES, undefined]);
  });

  test('a negative limit returns the whole list, as the real server (it pages only when limit > 0)', async () => {
    api = await seeded();
    const whole = await page(api, { limit: '-2' });
    expect([names(whole.items), whole.metadata.continue]).toEqual([NAMES, undefined]);
  });

  test('a non-integer limit is 400 BadRequest naming the value', async () => {
    api = await seeded();
    const r = await get(api, { limit: '2.5' });
    expect([r.code, r.body.reason, r.body.message]).toEqual([
      400,
      'BadRequest',
      'strconv.ParseInt: parsing "2.5": invalid syntax',
    ]);
  });

  test('a limit beyond 64 bits is 400 BadRequest', async () => {
    api = await seeded();
    const r = await get(api, { limit: '9223372036854775808' });
    expect([r.code, r.body.message]).toEqual([
      400,
      'strconv.ParseInt: parsing "9223372036854775808": value out of range',
    ]);
  });

  test('a list across all namespaces pages too', async () => {
    api = await seeded();
    api.store.create(CONFIGMAPS, 'default', { metadata: { name: 'cm-d' } });
    const pages = await allPages(api, { limit: '4' }, '/api/v1/configmaps');
    expect(pages.flatMap((p) => names(p.items))).toEqual(['cm-d', ...NAMES]);
  });
});

describe(`${CHUNKING}: every page is consistent at the first page's resourceVersion`, () => {
  test('every page carries the first page resourceVersion although objects changed in between', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    api.store.create(CONFIGMAPS, 'kube-system', { metadata: { name: 'cm-new' } });
    const second = await page(api, { limit: '3', continue: first.metadata.continue! });
    api.store.delete(CONFIGMAPS, 'kube-system', 'cm-6');
    const third = await page(api, { limit: '3', continue: second.metadata.continue! });
    expect([second.metadata.resourceVersion, third.metadata.resourceVersion]).toEqual([
      first.metadata.resourceVersion,
      first.metadata.resourceVersion,
    ]);
  });

  test('an object created after the first page does not show in later pages', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    api.store.create(CONFIGMAPS, 'kube-system', { metadata: { name: 'cm-5a' } });
    const rest = await allPages(api, { limit: '3', continue: first.metadata.continue! });
    expect(rest.flatMap((p) => names(p.items))).toEqual(NAMES.slice(3));
  });

  test('an object deleted after the first page still shows in later pages', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    api.store.delete(CONFIGMAPS, 'kube-system', 'cm-4');
    const rest = await allPages(api, { limit: '3', continue: first.metadata.continue! });
    expect(rest.flatMap((p) => names(p.items))).toEqual(NAMES.slice(3));
  });

  test('an object changed after the first page shows as it was (merge patch, update, JSON patch)', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    api.store.patch(CONFIGMAPS, 'kube-system', 'cm-4', 'application/merge-patch+json', { data: { v: 'patched' } });
    api.store.update(CONFIGMAPS, 'kube-system', 'cm-5', { metadata: { name: 'cm-5' }, data: { v: 'replaced' } });
    api.store.patch(CONFIGMAPS, 'kube-system', 'cm-6', 'application/json-patch+json', [
      { op: 'replace', path: '/data/v', value: 'json' },
    ]);
    const rest = await allPages(api, { limit: '3', continue: first.metadata.continue! });
    expect(rest.flatMap((p) => p.items.map((o) => (o.data as Record<string, string>).v))).toEqual(['3', '4', '5', '6']);
  });

  test('the limit may change between pages of one list', async () => {
    api = await seeded();
    const first = await page(api, { limit: '2' });
    const second = await page(api, { limit: '4', continue: first.metadata.continue! });
    expect([names(second.items), second.metadata.remainingItemCount]).toEqual([NAMES.slice(2, 6), 1]);
  });

  test('a watch from the pages resourceVersion delivers the changes made while paging', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    api.store.create(CONFIGMAPS, 'kube-system', { metadata: { name: 'cm-late' } });
    await allPages(api, { limit: '3', continue: first.metadata.continue! });
    const ac = new AbortController();
    const r = await fetch(`${api.url}${PATH}?watch=true&resourceVersion=${first.metadata.resourceVersion}`, {
      signal: ac.signal,
    });
    const reader = r.body!.getReader();
    const { value } = await reader.read();
    ac.abort();
    const event = JSON.parse(Buffer.from(value).toString('utf8').split('\n')[0]!) as {
      type: string;
      object: KubeObject;
    };
    expect([event.type, event.object.metadata?.name]).toEqual(['ADDED', 'cm-late']);
  });
});

describe(`${CHUNKING}: bad and expired continue tokens`, () => {
  test('a malformed continue token is 400 BadRequest "continue key is not valid"', async () => {
    api = await seeded();
    const r = await get(api, { limit: '3', continue: 'not a token!' });
    expect([r.code, r.body]).toEqual([
      400,
      {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'invalid continue token: continue key is not valid: not unpadded base64url',
        reason: 'BadRequest',
        code: 400,
      },
    ]);
  });

  test('a well-formed token of another stand-in is 400 (not issued by this server)', async () => {
    api = await seeded();
    const other = await seeded();
    others.push(other);
    const foreign = (await page(other, { limit: '3' })).metadata.continue!;
    const r = await get(api, { limit: '3', continue: foreign });
    expect([r.code, r.body.message]).toEqual([
      400,
      'invalid continue token: continue key is not valid: it was not issued by this server',
    ]);
  });

  test('base64url of something that is not the token object is 400', async () => {
    api = await seeded();
    const r = await get(api, { limit: '3', continue: Buffer.from('[1,2]').toString('base64url') });
    expect([r.code, r.body.message]).toEqual([
      400,
      'invalid continue token: continue key is not valid: not an encoded JSON object',
    ]);
  });

  test('a token used with another label selector is 400', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    const r = await get(api, { limit: '3', continue: first.metadata.continue!, labelSelector: 'even=true' });
    expect([r.code, r.body.message]).toEqual([
      400,
      'invalid continue token: continue key is not valid: it was issued for another list (the path or a selector differs)',
    ]);
  });

  test('continue with a resourceVersion is 400, as the real server', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    const r = await get(api, {
      limit: '3',
      continue: first.metadata.continue!,
      resourceVersion: first.metadata.resourceVersion,
    });
    expect([r.code, r.body.reason, r.body.message]).toEqual([
      400,
      'BadRequest',
      'specifying resource version is not allowed when using continue',
    ]);
  });

  test('continue with resourceVersion=0 is accepted, as the real server', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    const r = await get(api, { limit: '3', continue: first.metadata.continue!, resourceVersion: '0' });
    expect([r.code, names((r.body as ListBody).items)]).toEqual([200, NAMES.slice(3, 6)]);
  });

  test('after compactLists() the next page is 410 Expired', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    expect(api.compactLists()).toBe(1);
    const r = await get(api, { limit: '3', continue: first.metadata.continue! });
    expect([r.code, r.body]).toEqual([
      410,
      {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: { continue: expect.any(String) },
        status: 'Failure',
        message: CONTINUE_INCONSISTENT_MESSAGE,
        reason: 'Expired',
        code: 410,
      },
    ]);
  });

  test('the token of a 410 continues after the last item served, from the latest state', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    api.store.delete(CONFIGMAPS, 'kube-system', 'cm-4');
    api.store.create(CONFIGMAPS, 'kube-system', { metadata: { name: 'cm-5a' } });
    api.store.create(CONFIGMAPS, 'kube-system', { metadata: { name: 'cm-1a' } });
    api.compactLists();
    const gone = await get(api, { limit: '3', continue: first.metadata.continue! });
    const rest = await allPages(api, { limit: '3', continue: gone.body.metadata.continue as string });
    expect(rest.flatMap((p) => names(p.items))).toEqual(['cm-3', 'cm-5', 'cm-5a', 'cm-6']);
  });

  test('the pages after the token of a 410 are consistent at the resourceVersion of their first page', async () => {
    api = await seeded();
    const first = await page(api, { limit: '2' });
    api.compactLists();
    const gone = await get(api, { limit: '2', continue: first.metadata.continue! });
    const resumed = await page(api, { limit: '2', continue: gone.body.metadata.continue as string });
    const rv = api.store.resourceVersion;
    api.store.create(CONFIGMAPS, 'kube-system', { metadata: { name: 'cm-9' } });
    const rest = await allPages(api, { limit: '2', continue: resumed.metadata.continue! });
    expect([
      [resumed, ...rest].map((p) => p.metadata.resourceVersion),
      [resumed, ...rest].flatMap((p) => names(p.items)),
    ]).toEqual([[rv, rv, rv], NAMES.slice(2)]);
  });

  test('a 410 token used with another selector is 400', async () => {
    api = await seeded();
    const first = await page(api, { limit: '3' });
    api.compactLists();
    const gone = await get(api, { limit: '3', continue: first.metadata.continue! });
    const r = await get(api, { limit: '3', continue: gone.body.metadata.continue as string, fieldSelector: 'a=b' });
    expect([r.code, r.body.reason]).toEqual([400, 'BadRequest']);
  });

  test('a snapshot the change history no longer reaches back to is 410 Expired', async () => {
    api = await seeded({ historyLimit: 3 });
    const first = await page(api, { limit: '3' });
    for (const v of ['a', 'b', 'c', 'd']) {
      api.store.patch(CONFIGMAPS, 'kube-system', 'cm-0', 'application/merge-patch+json', { data: { v } });
    }
    const r = await get(api, { limit: '3', continue: first.metadata.continue! });
    expect([r.code, r.body.reason]).toEqual([410, 'Expired']);
  });

  test('a snapshot the history still reaches back to serves its next page', async () => {
    api = await seeded({ historyLimit: 3 });
    const first = await page(api, { limit: '3' });
    for (const v of ['a', 'b', 'c']) {
      api.store.patch(CONFIGMAPS, 'kube-system', 'cm-0', 'application/merge-patch+json', { data: { v } });
    }
    const r = await get(api, { limit: '3', continue: first.metadata.continue! });
    expect([r.code, names((r.body as ListBody).items)]).toEqual([200, NAMES.slice(3, 6)]);
  });

  test('a snapshot older than listSnapshotTtlMs is 410 Expired', async () => {
    let clock = 1_000_000;
    api = await seeded({ now: () => clock, listSnapshotTtlMs: 60_000 });
    const first = await page(api, { limit: '3' });
    clock += 60_001;
    const r = await get(api, { limit: '3', continue: first.metadata.continue! });
    expect([r.code, r.body.reason]).toEqual([410, 'Expired']);
  });

  test('at most listSnapshotLimit paged lists are kept; the oldest expires first', async () => {
    api = await seeded({ listSnapshotLimit: 2 });
    const tokens: string[] = [];
    for (let i = 0; i < 3; i++) tokens.push((await page(api, { limit: '3' })).metadata.continue!);
    const codes = [];
    for (const t of tokens) codes.push((await get(api, { limit: '3', continue: t })).code);
    expect([codes, api.pagedLists]).toEqual([[410, 200, 200], 2]);
  });

  test('a finished list keeps no snapshot', async () => {
    api = await seeded();
    await allPages(api, { limit: '3' });
    expect(api.pagedLists).toBe(0);
  });
});

describe(`${CHUNKING}: plumbing`, () => {
  test('page requests pass the gate and are logged as verb list with their status', async () => {
    const admitted: string[] = [];
    api = await seeded({ gate: { admit: (_m, url) => void admitted.push(url.searchParams.get('limit') ?? '') } });
    await allPages(api, { limit: '3' });
    expect([admitted, api.requests({ verb: 'list' }).map((r) => r.status)]).toEqual([
      ['3', '3', '3'],
      [200, 200, 200],
    ]);
  });

  test('a page request refused by the gate gets its answer and serves nothing', async () => {
    api = await seeded({
      gate: {
        admit: (_m, url) => {
          if (url.searchParams.has('continue')) throw new ApiError(403, 'Forbidden', 'refused');
        },
      },
    });
    const first = await page(api, { limit: '3' });
    const r = await get(api, { limit: '3', continue: first.metadata.continue! });
    expect([r.code, api.pagedLists]).toEqual([403, 1]);
  });

  test('client-node listNamespacedConfigMap({ limit, _continue }) pages round trip', async () => {
    api = await seeded();
    const core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    const seen: string[] = [];
    const remaining: (number | undefined)[] = [];
    let token: string | undefined;
    do {
      const l = await core.listNamespacedConfigMap({ namespace: 'kube-system', limit: 3, _continue: token });
      seen.push(...l.items.map((o) => o.metadata!.name!));
      remaining.push(l.metadata?.remainingItemCount);
      token = l.metadata?._continue;
    } while (token !== undefined);
    expect([seen, remaining]).toEqual([NAMES, [4, 1, undefined]]);
  });

  test('KubeStore.list still returns copies: changing one changes nothing stored', async () => {
    api = await seeded();
    const [o] = api.store.list(CONFIGMAPS, 'kube-system');
    (o!.data as Record<string, string>).v = 'changed';
    expect((await page(api, { limit: '1' })).items[0]!.data).toEqual({ v: '0' });
  });
});
