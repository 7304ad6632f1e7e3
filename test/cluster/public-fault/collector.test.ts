import { describe, expect, test } from '@jest/globals';
import { PublicFaultCache } from '../../../src/cluster/public-fault/cache.js';
import { PublicFaultCollector } from '../../../src/cluster/public-fault/collector.js';
import { parsePublicFaultConfig } from '../../../src/cluster/public-fault/config.js';
import { noopPublicFaultMetrics, type PublicFaultMetrics } from '../../../src/cluster/public-fault/metrics.js';
import { fault, manualClock, message, recordingLogger, shippedConfig } from './fixtures.js';

function setup(cap?: number) {
  const clock = manualClock();
  const cache = new PublicFaultCache(cap !== undefined ? { cap } : {});
  const logger = recordingLogger();
  const counted: string[] = [];
  const metrics: PublicFaultMetrics = {
    ...noopPublicFaultMetrics,
    rejection: (source, reason) => void counted.push(`${source}:${reason}`),
    droppedFault: (reason, n = 1) => void counted.push(`dropped:${reason}x${n}`),
  };
  const collector = new PublicFaultCollector({
    cache,
    clock: { monotonic: clock.now },
    logger,
    metrics,
    nodeBySerial: () => undefined,
    config: shippedConfig(),
  });
  return { clock, cache, logger, counted, collector };
}

describe('§2.2 collector', () => {
  test('§2.6 a null request gets 409 "req is nil"', () => {
    expect(setup().collector.collect(null, 'grpc')).toEqual({ code: 409, info: 'req is nil', reason: 'nil-request' });
  });

  test('§4.2 TestPubFaultCollector: a limiter error gives exactly "limiter work by resource failed"', () => {
    expect(setup().collector.collect(message({ resource: 'x' }), 'configmap').info).toBe(
      'limiter work by resource failed',
    );
  });

  test('§4.2 TestPubFaultCollector: a check error is wrapped', () => {
    expect(setup().collector.collect(message({ id: 'x' }), 'grpc').info).toBe(
      'check public fault info failed, error: invalid id',
    );
  });

  test('issue [G] item 3: a rejection is logged with its reason', () => {
    const s = setup();
    s.collector.collect(message({ id: 'x' }), 'grpc');
    expect(s.logger.lines.filter((l) => l.level === 'warn').map((l) => (l.obj as { reason: string }).reason)).toEqual([
      'invalid-id',
    ]);
  });

  test('issue [G] item 3: a rejection is counted by reason', () => {
    const s = setup();
    s.collector.collect(message({ resource: 'x' }), 'grpc');
    expect(s.counted).toEqual(['grpc:unknown-sender']);
  });

  test('§2.5 a dropped fault of an accepted message is logged and counted', () => {
    const s = setup();
    s.collector.collect(message({}, [fault(), fault({ faultId: 'fault-0002', assertion: 'maybe' })]), 'grpc');
    expect([s.counted, s.logger.lines.some((l) => l.msg.startsWith('public fault dropped'))]).toEqual([
      ['dropped:invalid-assertionx1'],
      true,
    ]);
  });

  test('§2.2 the record time is faultTime in seconds (floor)', () => {
    const s = setup();
    s.collector.collect(message({}, [fault({ faultTime: 1_772_330_390_999 })]), 'grpc');
    expect(s.cache.get('node-1', 'CCAEfault-0001')?.faultTime).toBe(1_772_330_390);
  });

  test('§2.8 entries over the cap still answer 0, and are counted and logged', () => {
    const s = setup(1);
    const r = s.collector.collect(
      message({}, [
        fault({
          influence: [
            { nodeName: 'node-1', nodeSN: '', deviceIds: [0] },
            { nodeName: 'node-2', nodeSN: '', deviceIds: [0] },
          ],
        }),
      ]),
      'grpc',
    );
    expect([r.code, s.cache.size, s.counted]).toEqual([0, 1, ['dropped:capx1']]);
  });

  test('§2.3 a configuration swap refills the sender buckets', () => {
    const s = setup();
    for (let i = 0; i < 100; i++) s.collector.collect(message({ version: 'x' }), 'grpc');
    s.collector.setConfig(shippedConfig());
    expect(s.collector.collect(message(), 'grpc').code).toBe(0);
  });

  test('§2.3 a sender removed by a configuration swap gets 410', () => {
    const s = setup();
    s.collector.setConfig(
      parsePublicFaultConfig(
        '{"publicFaultCode":{"SeparateNPUCodes":["220001001"]},"publicFaultResource":["pingmesh"]}',
      ),
    );
    expect(s.collector.collect(message(), 'grpc').code).toBe(410);
  });

  test('§2.3 config changes are not retroactive: a stored fault keeps its level', () => {
    const s = setup();
    s.collector.collect(message(), 'grpc');
    s.collector.setConfig(
      parsePublicFaultConfig(
        '{"publicFaultCode":{"SubHealthFaultCodes":["220001001"]},"publicFaultResource":["CCAE"]}',
      ),
    );
    expect(s.cache.get('node-1', 'CCAEfault-0001')?.level).toBe('SeparateNPU');
  });
});
