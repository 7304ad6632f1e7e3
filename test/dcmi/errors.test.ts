/**
 * DCMI return codes (dcmi-abi.md §2.1).
 */
import { describe, expect, test } from '@jest/globals';
import { DcmiError, describeDcmiCode, toDcmiError } from '../../src/dcmi/errors.js';

describe('dcmi-abi §2.1 return codes', () => {
  test.each([
    [-8012, /not ready/],
    [-8015, /reset failed/],
    [-8255, /not supported/],
    [-99998, /symbol missing/],
    [-99999, /failed to load/],
    [-4242, /unknown DCMI error code/],
  ])('%i means %s', (code, meaning) => {
    expect(describeDcmiCode(code)).toMatch(meaning);
  });

  test('a DcmiError names the function, the code and its meaning', () => {
    const e = new DcmiError(-8012, 'dcmi_get_device_health', 'card 3');
    expect(e.message).toBe(
      'dcmi_get_device_health failed with -8012 (not ready yet, try again (card dropped)): card 3',
    );
    expect(e.isCardDrop).toBe(true);
    expect(e.isUnsupported).toBe(false);
  });

  test('-8255 and a missing symbol are both "unsupported"', () => {
    expect(new DcmiError(-8255, 'f').isUnsupported).toBe(true);
    expect(new DcmiError(-99998, 'f').isUnsupported).toBe(true);
  });

  test('a native error with a numeric code becomes a DcmiError keeping the cause', () => {
    const native = Object.assign(new Error('boom'), { code: -8005, fn: 'dcmi_init' });
    const e = toDcmiError(native, 'fallback');
    expect(e).toBeInstanceOf(DcmiError);
    expect(e).toMatchObject({ code: -8005, fn: 'dcmi_init', cause: native });
  });

  test('a TypeError passes through unchanged', () => {
    const t = new TypeError('bad argument');
    expect(toDcmiError(t, 'f')).toBe(t);
  });
});
