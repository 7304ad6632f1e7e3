/**
 * Issue [DRA] item 2: the DRA driver's prepared claims enter the store through one input (`setDraClaims`) and leave
 * it in the snapshot (`draClaims`), so every projection sees which chips DRA holds.
 */
import { describe, expect, test } from '@jest/globals';
import type { DraClaimHold, NodeState, StateChange } from '../../src/state/store.js';
import { testStore } from '../state/helpers.js';

const claim = (uid: string, logicId: number): DraClaimHold => ({
  uid,
  namespace: 'default',
  name: `claim-${uid}`,
  devices: [{ device: `Ascend910-${logicId}`, logicId }],
});

describe('issue [DRA] item 2: setDraClaims → NodeState.draClaims', () => {
  test('the set is published in one snapshot, in claim-uid order, frozen', () => {
    const { store } = testStore();
    const seen: [NodeState, StateChange][] = [];
    store.onChange((s, c) => seen.push([s, c]));
    store.setDraClaims([claim('b', 2), claim('a', 1)]);
    expect(seen).toHaveLength(1);
    const s = store.snapshot();
    expect(s.draClaims.map((c) => c.uid)).toEqual(['a', 'b']);
    expect(Object.isFrozen(s.draClaims) && Object.isFrozen(s.draClaims[0]!.devices)).toBe(true);
  });

  test('the same set again publishes nothing; a smaller set is published', () => {
    const { store } = testStore();
    store.setDraClaims([claim('a', 1)]);
    const seq = store.snapshot().seq;
    store.setDraClaims([claim('a', 1)]);
    expect(store.snapshot().seq).toBe(seq);
    store.setDraClaims([]);
    expect([store.snapshot().seq, store.snapshot().draClaims]).toEqual([seq + 1, []]);
  });

  test('a caller mutating its input afterwards does not change the snapshot', () => {
    const { store } = testStore();
    const input = [claim('a', 1)];
    store.setDraClaims(input);
    (input[0]!.devices as { device: string; logicId: number }[]).push({ device: 'Ascend910-3', logicId: 3 });
    expect(store.snapshot().draClaims[0]!.devices).toEqual([{ device: 'Ascend910-1', logicId: 1 }]);
  });
});
