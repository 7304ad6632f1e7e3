/** Bounded Event text (issue 12 item 4: a 1 MB value gave an Event the API server refused with 413). */
import { describe, expect, test } from '@jest/globals';
import { MAX_EVENT_MESSAGE_BYTES, rejectedInputEvent } from '../../src/kube/agent-events.js';
import { boundedText } from '../../src/core/text.js';

describe('bounded Event messages', () => {
  test('a short text is kept as it is', () => {
    expect(boundedText('ManuallySeparateNPU = "x"', 1024)).toBe('ManuallySeparateNPU = "x"');
  });

  test('a long text is cut within the byte budget and marked with its length', () => {
    const t = boundedText('a'.repeat(5000), 100);
    expect([Buffer.byteLength(t) <= 100, t.endsWith('…(5000 chars)')]).toEqual([true, true]);
  });

  test('a cut never splits a multi-byte character or a surrogate pair', () => {
    const t = boundedText('é😀'.repeat(1000), 101);
    expect([Buffer.byteLength(t) <= 101, t.includes('\uFFFD'), /^(é😀)+é?…/u.test(t)]).toEqual([true, false, true]);
  });

  test('asJson counts the bytes of the text inside a JSON string (escapes included)', () => {
    const t = boundedText('\u0001"\\'.repeat(10_000), 300, true);
    expect([Buffer.byteLength(JSON.stringify(t)) - 2 <= 300, t.endsWith('…(30000 chars)')]).toEqual([true, true]);
  });

  test('the rejection Event of a 1 MiB value with 1 MB of reasons stays within 1 KiB', () => {
    const e = rejectedInputEvent(
      'DeviceInfoEditRejected',
      'kube-system/cm',
      'ManuallySeparateNPU',
      '\u0001'.repeat(1 << 20),
      'w'.repeat(1_000_000),
    );
    expect([
      Buffer.byteLength(e.message) <= MAX_EVENT_MESSAGE_BYTES,
      e.message.startsWith('kube-system/cm: key ManuallySeparateNPU = "'),
    ]).toEqual([true, true]);
  });
});
