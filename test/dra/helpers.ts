/**
 * Shared set-up of the DRA tests (issue [DRA]): character devices made with `mknod` (the CDI specs copy their
 * major/minor numbers, so a test needs real device nodes; `mknod` needs root or CAP_MKNOD, which the CI machines
 * and the image test have — a test fails naming the reason otherwise), ResourceClaims as the API server sends them,
 * and a fake claim API.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ClaimApi } from '../../src/dra/claims.js';
import type { DeviceRequestAllocationResult, ResourceClaim } from '../../src/dra/dra-types.js';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';

/** The device numbers the tests give the nodes (distinct from any real device's, so a copy is visible). */
export const MAJOR = { davinci: 241, manager: 242, svm: 243, hdc: 244, vdavinci: 245 } as const;

/** Makes character device `file` (mode 0666) with `major:minor`; throws naming why `mknod` failed. */
export function mknod(file: string, major: number, minor: number): void {
  fs.rmSync(file, { force: true });
  const r = spawnSync('mknod', ['-m', '0666', file, 'c', String(major), String(minor)], { encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(
      `mknod ${file} c ${major} ${minor} failed (needs root or CAP_MKNOD): ${r.stderr || r.error?.message}`,
    );
  }
}

/** A device folder with davinci0..n-1, davinci_manager, devmm_svm and hisi_hdc as character devices. */
export function makeCharDevices(devDir: string, chips = 8): void {
  fs.mkdirSync(devDir, { recursive: true });
  for (let i = 0; i < chips; i++) mknod(path.join(devDir, `davinci${i}`), MAJOR.davinci, i);
  mknod(path.join(devDir, 'davinci_manager'), MAJOR.manager, 0);
  mknod(path.join(devDir, 'devmm_svm'), MAJOR.svm, 0);
  mknod(path.join(devDir, 'hisi_hdc'), MAJOR.hdc, 0);
}

/** One allocation result of our driver from pool `pool`. */
export function result(
  device: string,
  pool: string,
  request = 'npu',
  extra: Partial<DeviceRequestAllocationResult> = {},
): DeviceRequestAllocationResult {
  return { request, driver: DRA_DRIVER, pool, device, ...extra };
}

/** A ResourceClaim with the given allocation results (undefined: not allocated). */
export function claimObject(
  uid: string,
  name: string,
  results: readonly DeviceRequestAllocationResult[] | undefined,
  namespace = 'default',
): ResourceClaim {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace, uid },
    spec: { devices: { requests: [{ name: 'npu', exactly: { deviceClassName: 'npu.huawei.com' } }] } },
    status: results ? { allocation: { devices: { results: [...results] } } } : {},
  };
}

/** A claim API over a map `namespace/name` → claim (or an error to throw), counting reads. */
export class FakeClaimApi implements ClaimApi {
  readonly claims = new Map<string, ResourceClaim | Error>();
  reads = 0;

  set(c: ResourceClaim): void {
    this.claims.set(`${c.metadata.namespace}/${c.metadata.name}`, c);
  }

  readResourceClaim(namespace: string, name: string): Promise<ResourceClaim> {
    this.reads++;
    const c = this.claims.get(`${namespace}/${name}`);
    if (c === undefined) return Promise.reject(Object.assign(new Error('not found'), { code: 404 }));
    if (c instanceof Error) return Promise.reject(c);
    return Promise.resolve(structuredClone(c));
  }
}
