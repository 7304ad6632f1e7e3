/**
 * Issue 17 item 4: 310P mixed insert (`-use310PMixedInsert=true`) with the agent as a child process on the mock
 * library (`scenarios/310p-mixed.json`: 300V Pro, 300V, 2 × 300I Pro), the kubelet simulator and the API stand-in.
 * Spec B.3 (per-product-type resources), A.1 (the product-type rule and the cross-flag rules), C.1, C.3, H.3.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import type { ServiceError } from '@grpc/grpc-js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { AgentSandbox, deviceList, runAgentOnce } from '../helpers/agent-process.js';

const SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '310p-mixed.json');
const V = 'huawei.com/Ascend310P-V';
const VPRO = 'huawei.com/Ascend310P-VPro';
const IPRO = 'huawei.com/Ascend310P-IPro';
const SEPARATE_CODE = '80E3A201';

let sb: AgentSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

async function mixedAgent(): Promise<AgentSandbox> {
  sb = await AgentSandbox.create(SCENARIO);
  await sb.start(['-use310PMixedInsert=true'], { ASCEND_DOCKER_RUNTIME: 'True' }, { resource: IPRO });
  for (const r of [V, VPRO]) await sb.kubelet.waitForRegistration(r, 0, 20_000);
  return sb;
}

describe('issue 17 item 4: 310P mixed insert, agent as a child process', () => {
  test('B.3 one resource per product type, each with its chips as <type>-<phy>', async () => {
    const s = await mixedAgent();
    expect(s.kubelet.devices(VPRO)!.map((d) => d.ID)).toEqual(['Ascend310P-VPro-0']);
    expect(s.kubelet.devices(V)!.map((d) => d.ID)).toEqual(['Ascend310P-V-1']);
    expect(s.kubelet.devices(IPRO)!.map((d) => d.ID)).toEqual(['Ascend310P-IPro-2', 'Ascend310P-IPro-3']);
    expect(s.kubelet.devices('huawei.com/Ascend310P')).toBeUndefined();
  });

  test('C.3 Allocate on each resource maps to its chip; a chip of another type is refused', async () => {
    const s = await mixedAgent();
    const r = await s.kubelet.allocate(IPRO, [['Ascend310P-IPro-3']]);
    expect(r.containerResponses[0]!.envs.ASCEND_VISIBLE_DEVICES).toBe('3');
    const err = await s.kubelet.allocate(V, [['Ascend310P-IPro-2']]).then(
      () => undefined,
      (e: unknown) => e as ServiceError,
    );
    expect(err?.details).toContain(`unknown device ID "Ascend310P-IPro-2" for ${V}`);
  });

  test('C.1/H.3 a fault on the 300V chip: Unhealthy on huawei.com/Ascend310P-V only, named so in the ConfigMap', async () => {
    const s = await mixedAgent();
    await s.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'occur' });
    await s.kubelet.waitForDevices(V, (d) => d[0]?.health === 'Unhealthy', 'Ascend310P-V-1 Unhealthy', 20_000);
    expect(s.kubelet.devices(IPRO)!.every((d) => d.health === 'Healthy')).toBe(true);
    const list = await s.until(() => {
      const l = deviceList(s);
      return l?.['huawei.com/Ascend310P-Unhealthy'] === 'Ascend310P-V-1' ? l : undefined;
    }, 'Ascend310P-V-1 in -Unhealthy');
    expect(list['huawei.com/Ascend310P']).toBe('');
  });

  test('A.1 a product type that cannot be mixed (Atlas 300I Duo) exits 2 naming it', async () => {
    sb = await AgentSandbox.create(SCENARIO);
    const doc = JSON.parse(fs.readFileSync(SCENARIO, 'utf8')) as { cards: { productType?: string }[] };
    doc.cards[3]!.productType = 'Atlas 300I Duo';
    const bad = path.join(sb.dir, 'duo.json');
    fs.writeFileSync(bad, JSON.stringify(doc));
    const r = await runAgentOnce(sb.flags(['-use310PMixedInsert=true']), { ...sb.env(), ASCEND_MOCK_SCENARIO: bad });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('-use310PMixedInsert=true: product type "Atlas 300I Duo"');
  });

  test('A.1 mixed insert on a 910B node exits 2', async () => {
    sb = await AgentSandbox.create();
    const r = await runAgentOnce(sb.flags(['-use310PMixedInsert=true']), sb.env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('-use310PMixedInsert=true needs an Ascend310P node');
  });

  test('A.1 mixed insert with -volcanoType exits 2 naming the rule', async () => {
    sb = await AgentSandbox.create(SCENARIO);
    const r = await runAgentOnce(sb.flags(['-use310PMixedInsert=true', '-volcanoType']), sb.env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('-use310PMixedInsert=true requires -volcanoType=false');
  });
});
