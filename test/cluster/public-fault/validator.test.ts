import { describe, expect, test } from '@jest/globals';
import {
  validateMessage,
  type FaultRejection,
  type MessageRejection,
  type ValidationContext,
} from '../../../src/cluster/public-fault/validator.js';
import type { PublicFault, PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';
import { fault, message, shippedConfig, T0_MS } from './fixtures.js';

const SERIALS = new Map([['2102313ABCD', 'node-7']]);
const ctx: ValidationContext = { config: shippedConfig(), nodeBySerial: (sn) => SERIALS.get(sn) };

function rejection(m: PublicFaultMessage): { reason: MessageRejection; detail: string } | 'accepted' {
  const r = validateMessage(m, ctx);
  return r.ok ? 'accepted' : { reason: r.reason, detail: r.detail };
}

/** The reason a single bad fault next to a good one is dropped for, or 'kept'. */
function faultVerdict(f: PublicFault): FaultRejection | 'kept' {
  const r = validateMessage(message({}, [f, fault({ faultId: 'fault-good' })]), ctx);
  if (!r.ok) throw new Error(`message rejected: ${r.detail}`);
  return r.dropped.find((d) => d.index === 0)?.reason ?? 'kept';
}

describe('§2.5 message-level rules', () => {
  const rows: [string, Partial<PublicFaultMessage>, MessageRejection | 'accepted'][] = [
    ['§2.5 rule 1 id of 8 allowed characters passes', { id: 'aZ09-_.x' }, 'accepted'],
    ['§2.5 rule 1 id of 128 characters passes', { id: 'a'.repeat(128) }, 'accepted'],
    ['§2.5 rule 1 id of 7 characters fails', { id: 'abcdefg' }, 'invalid-id'],
    ['§2.5 rule 1 id of 129 characters fails', { id: 'a'.repeat(129) }, 'invalid-id'],
    ['§2.5 rule 1 id with a space fails', { id: 'msg 0001x' }, 'invalid-id'],
    ['§2.5 rule 1 id with a non-ASCII letter fails', { id: 'msgé00001' }, 'invalid-id'],
    ['§2.5 rule 1 empty id fails', { id: '' }, 'invalid-id'],
    ['§2.5 rule 2 timestamp of 12 digits fails', { timestamp: 999_999_999_999 }, 'invalid-timestamp'],
    ['§2.5 rule 2 timestamp of 14 digits fails', { timestamp: 10_000_000_000_000 }, 'invalid-timestamp'],
    ['§2.5 rule 2 negative timestamp fails', { timestamp: -1_772_330_400_000 }, 'invalid-timestamp'],
    ['§2.5 rule 2 missing timestamp (0) fails', { timestamp: 0 }, 'invalid-timestamp'],
    ['§2.5 rule 2 13-digit timestamp before 2025 fails', { timestamp: 1_735_689_599_999 }, 'timestamp-before-2025'],
    ['§2.5 rule 2 timestamp exactly 2025-01-01 passes', { timestamp: 1_735_689_600_000 }, 'accepted'],
    ['§2.5 rule 2 the largest 13-digit timestamp (future) passes', { timestamp: 9_999_999_999_999 }, 'accepted'],
    ['§2.5 rule 3 version "1.1" fails', { version: '1.1' }, 'invalid-version'],
    ['§2.5 rule 3 missing version fails', { version: '' }, 'invalid-version'],
    ['§2.5 rule 4 unknown resource fails', { resource: 'nobody' }, 'invalid-resource'],
    ['§2.5 rule 4 resource is case-sensitive', { resource: 'ccae' }, 'invalid-resource'],
    ['§2.5 rule 4 dtfsStorage is a shipped sender (§2.12 item 1)', { resource: 'dtfsStorage' }, 'accepted'],
    ['§2.5 rule 5 no faults fails', { faults: [] }, 'invalid-faults-length'],
    [
      '§2.5 rule 5 101 faults fail',
      { faults: Array.from({ length: 101 }, (_, i) => fault({ faultId: `fault-${1000 + i}` })) },
      'invalid-faults-length',
    ],
    [
      '§2.5 rule 5 100 faults pass',
      { faults: Array.from({ length: 100 }, (_, i) => fault({ faultId: `fault-${1000 + i}` })) },
      'accepted',
    ],
    [
      '[K] item 2 §2.5 rule 5 a list the decoder did not build (faultsSent 1,300,000) fails',
      { faults: [], faultsSent: 1_300_000 },
      'invalid-faults-length',
    ],
    ['§2.5 rule 6 no valid fault left fails', { faults: [fault({ faultType: 'Disk' })] }, 'no-valid-fault'],
  ];
  test.each(rows)('%s', (_name, over, expected) => {
    const r = rejection(message(over));
    expect(r === 'accepted' ? r : r.reason).toBe(expected);
  });

  test('[K] item 2 §2.5 a list the decoder did not build still fails after rules 1-4 (version first)', () => {
    expect(rejection(message({ version: '2', faults: [], faultsSent: 101 }))).toMatchObject({
      reason: 'invalid-version',
    });
  });

  test('§2.5 the first failing message rule wins (id before version)', () => {
    expect(rejection(message({ id: 'x', version: '2' }))).toEqual({ reason: 'invalid-id', detail: 'invalid id' });
  });

  test('§2.5 rule 2 detail of a pre-2025 timestamp is upstream text', () => {
    expect(rejection(message({ timestamp: 1_700_000_000_000 }))).toEqual({
      reason: 'timestamp-before-2025',
      detail: 'invalid timestamp, can not before 2025/01/01T00:00:00Z',
    });
  });
});

describe('§2.5 fault-level rules (a bad fault is dropped, the rest kept)', () => {
  const inf = (over: Partial<PublicFault['influence'][number]>): PublicFault['influence'] => [
    { nodeName: 'node-1', nodeSN: '', deviceIds: [0], ...over },
  ];
  const rows: [string, Partial<PublicFault>, FaultRejection | 'kept'][] = [
    ['§2.5 faultId of 7 characters is dropped', { faultId: 'f-00001' }, 'invalid-fault-id'],
    ['§2.5 faultId with "/" is dropped', { faultId: 'fault/0001' }, 'invalid-fault-id'],
    ['§2.5 faultType NPU is kept', { faultType: 'NPU' }, 'kept'],
    ['§2.5 faultType Node is kept', { faultType: 'Node' }, 'kept'],
    ['§2.5 faultType Network is kept', { faultType: 'Network' }, 'kept'],
    ['§2.5 faultType is case-sensitive', { faultType: 'storage' }, 'invalid-fault-type'],
    ['§2.5 faultCode of 8 bytes is dropped', { faultCode: '22000100' }, 'invalid-fault-code'],
    ['§2.5 faultCode of 10 bytes is dropped', { faultCode: '2200010011' }, 'invalid-fault-code'],
    ['§2.5 faultCode of 9 characters but 10 bytes is dropped', { faultCode: 'é22000100' }, 'invalid-fault-code'],
    ['§2.5 faultCode not configured is dropped', { faultCode: '999999999' }, 'unknown-fault-code'],
    ['§2.5 a NotHandleFault code is kept', { faultCode: '200001006' }, 'kept'],
    ['§2.5 a PreSeparateNPU code is kept', { faultCode: '110001022' }, 'kept'],
    ['§2.5 faultTime of 12 digits is dropped', { faultTime: 177_233_040_000 }, 'invalid-fault-time'],
    ['§2.5 faultTime of 0 is dropped', { faultTime: 0 }, 'invalid-fault-time'],
    ['§2.5 faultTime before 2025 is dropped', { faultTime: 1_735_689_599_999 }, 'fault-time-before-2025'],
    ['§2.5 faultTime in the future is kept', { faultTime: T0_MS + 86_400_000 }, 'kept'],
    ['§2.5 assertion "Occur" is dropped', { assertion: 'Occur' }, 'invalid-assertion'],
    ['§2.5 assertion "" is dropped', { assertion: '' }, 'invalid-assertion'],
    ['§2.5 assertion once is kept', { assertion: 'once' }, 'kept'],
    ['§2.5 assertion recover is kept', { assertion: 'recover' }, 'kept'],
    [
      '§2.5 faultLocation with 10 entries is kept',
      { faultLocation: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'v'])) },
      'kept',
    ],
    [
      '§2.5 faultLocation with 12 entries is dropped',
      { faultLocation: Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, 'v'])) },
      'invalid-fault-location',
    ],
    ['§2.5 faultLocation key of 16 bytes is kept', { faultLocation: { ['k'.repeat(16)]: 'v' } }, 'kept'],
    [
      '§2.5 faultLocation key of 17 bytes is dropped',
      { faultLocation: { ['k'.repeat(17)]: 'v' } },
      'invalid-fault-location',
    ],
    [
      '§2.5 faultLocation key of 9 characters but 18 bytes is dropped',
      { faultLocation: { ['é'.repeat(9)]: 'v' } },
      'invalid-fault-location',
    ],
    ['§2.5 faultLocation value of 128 bytes is kept', { faultLocation: { ip: 'v'.repeat(128) } }, 'kept'],
    [
      '§2.5 faultLocation value of 129 bytes is dropped',
      { faultLocation: { ip: 'v'.repeat(129) } },
      'invalid-fault-location',
    ],
    ['§2.5 influence missing is dropped', { influence: [] }, 'invalid-influence-length'],
    [
      '§2.5 1001 influences are dropped',
      { influence: Array.from({ length: 1001 }, () => ({ nodeName: 'node-1', nodeSN: '', deviceIds: [0] })) },
      'invalid-influence-length',
    ],
    ['§2.5 influence with a known nodeSN is kept', { influence: inf({ nodeName: '', nodeSN: '2102313ABCD' }) }, 'kept'],
    [
      '§2.5 influence with an unknown nodeSN is dropped',
      { influence: inf({ nodeName: '', nodeSN: 'NOPE' }) },
      'unknown-node-sn',
    ],
    ['§2.5 influence with neither nodeName nor nodeSN is dropped', { influence: inf({ nodeName: '' }) }, 'no-node'],
    ['§2.5 nodeName "err name~~" is dropped', { influence: inf({ nodeName: 'err name~~' }) }, 'invalid-node-name'],
    ['§2.5 nodeName with upper case is dropped', { influence: inf({ nodeName: 'Node-1' }) }, 'invalid-node-name'],
    ['§2.5 nodeName ending in "-" is dropped', { influence: inf({ nodeName: 'node-' }) }, 'invalid-node-name'],
    ['§2.5 nodeName of 253 characters is kept', { influence: inf({ nodeName: 'a'.repeat(253) }) }, 'kept'],
    [
      '§2.5 nodeName of 254 characters is dropped',
      { influence: inf({ nodeName: 'a'.repeat(254) }) },
      'invalid-node-name',
    ],
    [
      '§2.5 a non-empty nodeName wins over an unknown nodeSN (not looked up)',
      { influence: inf({ nodeName: 'node-9', nodeSN: 'NOPE' }) },
      'kept',
    ],
    ['§2.5 an unknown nodeName is kept (existence not checked)', { influence: inf({ nodeName: 'ghost' }) }, 'kept'],
    ['§2.5 no deviceIds is dropped', { influence: inf({ deviceIds: [] }) }, 'invalid-device-ids-length'],
    ['§2.5 32 deviceIds are kept', { influence: inf({ deviceIds: Array.from({ length: 32 }, (_, i) => i) }) }, 'kept'],
    [
      '§2.5 33 deviceIds are dropped',
      { influence: inf({ deviceIds: Array.from({ length: 33 }, (_, i) => i % 32) }) },
      'invalid-device-ids-length',
    ],
    ['§2.5 deviceId 66 is dropped', { influence: inf({ deviceIds: [66] }) }, 'device-id-out-of-range'],
    ['§2.5 deviceId 32 is dropped', { influence: inf({ deviceIds: [32] }) }, 'device-id-out-of-range'],
    ['§2.5 deviceId -1 is dropped', { influence: inf({ deviceIds: [-1] }) }, 'device-id-out-of-range'],
    ['§2.5 duplicate deviceIds are dropped', { influence: inf({ deviceIds: [3, 3] }) }, 'duplicate-device-id'],
    [
      '§2.5 one bad influence drops the whole fault',
      { influence: [...inf({}), { nodeName: 'node-2', nodeSN: '', deviceIds: [] }] },
      'invalid-device-ids-length',
    ],
    ['§2.5 description of 512 characters is kept', { description: 'd'.repeat(512) }, 'kept'],
    ['§2.5 description of 512 CJK characters (1536 bytes) is kept', { description: '故'.repeat(512) }, 'kept'],
    ['§2.5 description of 513 characters is dropped', { description: 'd'.repeat(513) }, 'invalid-description'],
    ['§2.5 description with a tab is dropped', { description: 'a\tb' }, 'invalid-description'],
    ['§2.5 description with a newline is dropped', { description: 'a\nb' }, 'invalid-description'],
    ['§2.5 description with a carriage return is dropped', { description: 'a\rb' }, 'invalid-description'],
    ['§2.5 description with a form feed is dropped', { description: 'a\fb' }, 'invalid-description'],
    ['§2.5 description with a vertical tab is kept (Go \\s lacks VT)', { description: 'a\vb' }, 'kept'],
    ['§2.5 description with spaces is kept', { description: 'storage latency high' }, 'kept'],
  ];
  test.each(rows)('%s', (_name, over, expected) => {
    expect(faultVerdict(fault(over))).toBe(expected);
  });

  test('§2.5 fault rules run in order: faultId is reported before faultType', () => {
    expect(faultVerdict(fault({ faultId: 'x', faultType: 'x' }))).toBe('invalid-fault-id');
  });

  test('§2.5 an accepted message keeps the valid faults and lists the dropped ones', () => {
    const r = validateMessage(message({}, [fault({ faultId: 'fault-bad!' }), fault()]), ctx);
    expect(r.ok && [r.faults.map((f) => f.fault.faultId), r.dropped.map((d) => d.index)]).toEqual([
      ['fault-0001'],
      [0],
    ]);
  });

  test('§2.5 a nodeSN influence resolves to the annotated node', () => {
    const r = validateMessage(
      message({}, [fault({ influence: [{ nodeName: '', nodeSN: '2102313ABCD', deviceIds: [7] }] })]),
      ctx,
    );
    expect(r.ok && r.faults[0]!.targets).toEqual([{ node: 'node-7', deviceIds: [7] }]);
  });

  test('§2.3 the level is the configured one (SeparateNPU for 220001001)', () => {
    const r = validateMessage(message(), ctx);
    expect(r.ok && r.faults[0]!.level).toBe('SeparateNPU');
  });
});

describe('§4.2 TestPubFaultInfoChecker', () => {
  test('§4.2 a valid message passes', () => {
    expect(rejection(message())).toBe('accepted');
  });

  test('§4.2 a fault without faultLocation and description passes', () => {
    expect(faultVerdict(fault({ faultLocation: null, description: '' }))).toBe('kept');
  });

  test('§4.2 the documented example message (§3) passes with both influences', () => {
    const r = validateMessage(
      message({}, [
        fault({
          faultCode: '010001001',
          faultLocation: { npuIp: '10.0.0.1' },
          influence: [
            { nodeName: 'node-1', nodeSN: '', deviceIds: [0, 1] },
            { nodeName: '', nodeSN: '2102313ABCD', deviceIds: [7] },
          ],
          description: 'storage latency high',
        }),
      ]),
      ctx,
    );
    expect(r.ok && r.faults[0]!.targets.map((t) => t.node)).toEqual(['node-1', 'node-7']);
  });
});
