/**
 * Issue [DRA] item 1: the ResourceClaim reader NodePrepare uses — a small cache by uid with a GET fallback, bounded
 * in time, and every answer of the API server checked (uid, allocation, shape).
 */
import { describe, expect, test } from '@jest/globals';
import { CachedClaimReader, ClaimReadError } from '../../src/dra/claims.js';
import type { ResourceClaim } from '../../src/dra/dra-types.js';
import { FakeClock } from '../health/fake-clock.js';
import { claimObject, FakeClaimApi, result } from './helpers.js';

const REF = { namespace: 'default', name: 'c', uid: 'u-1' };

function rig(ttlMs = 30_000) {
  const api = new FakeClaimApi();
  api.set(claimObject('u-1', 'c', [result('ascend910-0', 'n')]));
  const clock = new FakeClock();
  return { api, clock, reader: new CachedClaimReader({ api, clock, ttlMs, timeoutMs: 1000 }) };
}

describe('issue [DRA] item 1: the cached claim reader', () => {
  test('a claim read once is served from the cache within its time; after it, read again', async () => {
    const { api, clock, reader } = rig();
    await reader.read(REF);
    await reader.read(REF);
    expect(api.reads).toBe(1);
    await clock.advance(30_001);
    await reader.read(REF);
    expect(api.reads).toBe(2);
  });

  test('forget(uid) drops it (an unprepared claim of that uid is read again)', async () => {
    const { api, reader } = rig();
    await reader.read(REF);
    reader.forget('u-1');
    await reader.read(REF);
    expect(api.reads).toBe(2);
  });

  test('two reads of one claim at once send one GET', async () => {
    const { api, reader } = rig();
    await Promise.all([reader.read(REF), reader.read(REF)]);
    expect(api.reads).toBe(1);
  });

  test('an API server that does not answer: ClaimReadError after the bound, not a hang', async () => {
    const { api, clock, reader } = rig();
    api.readResourceClaim = () => new Promise(() => undefined);
    const refused = expect(reader.read(REF)).rejects.toThrow(
      new ClaimReadError('ResourceClaim default/c: the API server did not answer within 1000 ms'),
    );
    await clock.advance(1000);
    await refused;
  });

  test('an answer that is not a claim, a claim of another uid, one not allocated: each named', async () => {
    const { api, reader } = rig();
    api.readResourceClaim = () => Promise.resolve('<html>' as unknown as ResourceClaim);
    await expect(reader.read(REF)).rejects.toThrow(/the API server's answer is not a ResourceClaim/);
    api.readResourceClaim = () => Promise.resolve(claimObject('u-2', 'c', [result('ascend910-0', 'n')]));
    await expect(reader.read(REF)).rejects.toThrow(/has uid u-2, kubelet asked for u-1 \(replaced\)/);
    api.readResourceClaim = () => Promise.resolve(claimObject('u-1', 'c', undefined));
    await expect(reader.read(REF)).rejects.toThrow('ResourceClaim default/c is not allocated');
  });

  test('a refusal of the API server keeps its status (403 is not "not found")', async () => {
    const { api, reader } = rig();
    api.claims.set('default/c', Object.assign(new Error('forbidden'), { code: 403 }));
    await expect(reader.read(REF)).rejects.toMatchObject({
      status: 403,
      message: 'ResourceClaim default/c cannot be read: forbidden',
    });
  });
});
