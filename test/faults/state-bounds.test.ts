/**
 * Issue 12 item 5 ("state that only grows"): after a configuration swap the engine holds code spellings (E.3) only
 * for what the current configuration names, what its chips carry and what its reasons reference, so loading a huge
 * legal table once and reverting gives the engine and the exported state back their baseline size.
 */
import { describe, expect, test } from '@jest/globals';
import {
  FaultEngine,
  MAX_CONFIG_BYTES,
  exportEngineState,
  importEngineState,
  parsePolicy,
  type FaultPolicy,
} from '../../src/faults/index.js';
import { Harness, policyOf, shippedPolicy, shippedTexts } from './helpers.js';

const SEP = 0x80e18402; // SeparateNPU in the shipped table
const FREQ = 0x80b78000; // shipped FaultFrequency: 2 in 24 h -> ManuallySeparateNPU

/** faultCode.json text of at most `bytes` naming as many distinct codes (from 0x10000000 up) as fit. */
export function hugeFaultCodeText(bytes: number): string {
  const codes: string[] = [];
  let len = '{"NotHandleFaultCodes":[]}'.length;
  for (let n = 0x10000000; len + 11 <= bytes; n++) {
    codes.push(n.toString(16));
    len += 11;
  }
  return JSON.stringify({ NotHandleFaultCodes: codes });
}

function hugePolicy(): FaultPolicy {
  const text = hugeFaultCodeText(MAX_CONFIG_BYTES);
  const p = parsePolicy(text, shippedTexts().customization);
  if (!p.policy) throw new Error('huge policy unusable');
  return p.policy;
}

/** An engine with a fault, an escalation and a half-reached count, as a node in service has. */
function busy(): Harness {
  const h = new Harness(shippedPolicy());
  h.occur(0, 1, SEP);
  h.occur(1000, 2, FREQ);
  h.recover(2000, 2, FREQ);
  h.occur(3000, 2, FREQ); // second occurrence: ManuallySeparateNPU
  h.occur(4000, 3, FREQ); // one short of the threshold
  return h;
}

const exported = (e: FaultEngine): string => JSON.stringify(exportEngineState(e));
/** Code spellings the engine holds (its E.3 format table). */
const spellings = (e: FaultEngine): number => e.formats.entries().length;

describe('issue 12 item 5: engine state bounded by the current configuration', () => {
  test('a huge legal table loaded once and reverted leaves the engine and the exported state at their baseline size', () => {
    const h = busy();
    const baseline = { formats: spellings(h.engine), bytes: exported(h.engine).length };
    const huge = hugePolicy();
    h.engine.setPolicy(huge);
    h.cycle(5000);
    const loaded = spellings(h.engine);
    h.engine.setPolicy(shippedPolicy());
    h.cycle(6000);
    expect([loaded > 90_000, spellings(h.engine), exported(h.engine).length]).toEqual([
      true,
      baseline.formats,
      baseline.bytes,
    ]);
  });

  test('the exported state does not grow with the configuration: the configuration gives its spellings again', () => {
    const h = busy();
    const baseline = exported(h.engine).length;
    h.engine.setPolicy(hugePolicy());
    h.cycle(5000);
    expect(exported(h.engine).length).toBe(baseline);
  });

  test('the revert keeps the escalation state: the separation and the half-reached count', () => {
    const h = busy();
    h.engine.setPolicy(hugePolicy());
    h.cycle(5000);
    h.engine.setPolicy(shippedPolicy());
    h.cycle(6000);
    h.occur(7000, 3, FREQ);
    expect(h.engine.manuallySeparated()).toEqual([2, 3]);
  });

  test('a code a chip carries keeps its spelling after a swap that no longer names it', () => {
    const h = new Harness(policyOf({ SeparateNPUCodes: ['080E18402'] }));
    h.occur(0, 1, SEP);
    h.engine.setPolicy(policyOf({ SeparateNPUCodes: ['80E3A201'] }));
    h.cycle(1000);
    expect(h.view(1).faultCodes).toEqual(['080E18402']);
  });

  test('the spelling goes once no chip carries the code and the configuration does not name it', () => {
    const h = new Harness(policyOf({ SeparateNPUCodes: ['080E18402'] }));
    h.occur(0, 1, SEP);
    h.recover(1000, 1, SEP);
    h.engine.setPolicy(policyOf({ SeparateNPUCodes: ['80E3A201'] }));
    expect([spellings(h.engine), h.engine.formatCode(SEP)]).toEqual([1, '80E18402']);
  });

  test('E.3 while a chip carries a code, a new configuration that spells it differently does not change its text', () => {
    const h = new Harness(policyOf({ SeparateNPUCodes: ['080E18402'] }));
    h.occur(0, 1, SEP);
    h.engine.setPolicy(policyOf({ SeparateNPUCodes: ['80e18402'] }));
    h.cycle(1000);
    expect([h.engine.formatCode(SEP), h.view(1).faultCodes]).toEqual(['080E18402', ['080E18402']]);
  });

  test('a code nothing uses takes the spelling of the configuration in use (deviation from E.3)', () => {
    const h = new Harness(policyOf({ SeparateNPUCodes: ['080E18402'] }));
    h.engine.setPolicy(policyOf({ SeparateNPUCodes: ['80e18402'] }));
    expect(h.engine.formatCode(SEP)).toBe('80E18402');
  });

  test('E.3 within one configuration the first spelling of a value wins (faultCode.json before FaultFrequency)', () => {
    const custom = {
      FaultFrequency: [{ EventId: ['80E18402'], TimeWindow: 86400, Times: 2, FaultHandling: 'ManuallySeparateNPU' }],
    };
    const h = new Harness(policyOf({ SeparateNPUCodes: ['080E18402'] }, custom));
    expect(h.engine.formatCode(SEP)).toBe('080E18402');
  });

  test('a spelling kept for a code in use survives export and import under the new configuration', () => {
    const h = new Harness(policyOf({ SeparateNPUCodes: ['080E18402'] }));
    h.occur(0, 1, SEP);
    const next = policyOf({ SeparateNPUCodes: ['80e18402'] });
    h.engine.setPolicy(next);
    const fresh = new Harness(next);
    importEngineState(fresh.engine, JSON.parse(JSON.stringify(exportEngineState(h.engine))));
    fresh.cycle(1000);
    expect(fresh.view(1).faultCodes).toEqual(['080E18402']);
  });

  test('a reason keeps the spelling of its code while it exists', () => {
    const custom = {
      FaultFrequency: [{ EventId: ['080B78000'], TimeWindow: 86400, Times: 1, FaultHandling: 'ManuallySeparateNPU' }],
    };
    const h = new Harness(policyOf({ RestartNPUCodes: ['080B78000'] }, custom));
    h.occur(0, 2, FREQ);
    h.recover(1000, 2, FREQ);
    // Same rule, the table no longer names the code: the reason (and its spelling) stays.
    h.engine.setPolicy(policyOf({}, custom));
    h.cycle(2000);
    expect([h.view(2).reasons.map((r) => r.fault_code), h.engine.formatCode(FREQ)]).toEqual([
      ['080b78000'],
      '080B78000',
    ]);
  });

  test('a state exported under a huge table and imported under the shipped one brings no stale spellings', () => {
    const h = busy();
    const baseline = spellings(h.engine);
    h.engine.setPolicy(hugePolicy());
    const doc = exportEngineState(h.engine);
    const fresh = new Harness(shippedPolicy());
    const r = importEngineState(fresh.engine, JSON.parse(JSON.stringify(doc)));
    expect([r.ok, spellings(fresh.engine)]).toEqual([true, baseline]);
  });
});
