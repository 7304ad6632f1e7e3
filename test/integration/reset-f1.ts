/**
 * Fixture F1 of hot-reset.md §6.2 around one {@link AgentSandbox}, shared by the child-process reset tests
 * (`reset.test.ts`, `reset-restart.test.ts`): the job's pod and reset ConfigMap, the ConfigMap writes the agent makes,
 * the training side ({@link TrainingSimulator}) reading the host file the agent lands under `-hostRoot` (§2.8).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Change } from '../../src/sim/kube-api.js';
import { MockControlClient, type MockReply, type MockState } from '../../src/sim/mock-control.js';
import { TrainingSimulator } from '../../src/sim/training-sim.js';
import { AgentSandbox, deviceList, NODE_NAME, RESOURCE } from '../helpers/agent-process.js';

/** RestartNPU (faultCode.json): task policy `reset`, the L5 flow (§3.7). */
export const RESTART_NPU = '8C03A000';
export const NS = 'default';
export const JOB = 'job1';
export const CM_NAME = `reset-config-${JOB}`;
export const POD_NAME = 'job1-w1';
export const ALL = [0, 1, 2, 3, 4, 5, 6, 7];
/** §2.9 (a): as created by the job author. */
export const INITIAL_RESET_JSON = '{"status":"initializing"}';
/** 5 %: WaitProcessReadCMTime 1.5 s, WaitNpuReadyTime 1.5 s, process wait 3 s, boot budget 150 × 50 ms. */
export const PERCENT = 5;

/** §2.9 (b) with `UpdateTime` replaced by `<T>`; statuses/policies substituted per write. */
export function expectedResetJson(status: string, policy: string, initial: string, retry: number): string {
  const ranks = ALL.map(
    (id) =>
      `{"RankId":${8 + id},"LogicId":${id},"Status":"${status}","Policy":"${policy}","InitialPolicy":"${initial}",` +
      `"ErrorCode":[],"ErrorCodeHex":"${id === 3 ? RESTART_NPU : ''}"}`,
  );
  return (
    `{"RankList":[${ranks.join(',')}],"UpdateTime":<T>,"RetryTime":${retry},"FaultFlushing":false,` +
    `"GracefulExit":0,"RestartFaultProcess":false}`
  );
}

export const withoutTime = (text: string): string => text.replace(/"UpdateTime":\d+/, '"UpdateTime":<T>');
export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export interface CmWrite {
  readonly at: number;
  readonly data: Record<string, string>;
}

/** The F1 fixture around one sandbox: pod, reset ConfigMap, the ConfigMap writes seen, the training side. */
export class F1 {
  readonly writes: CmWrite[] = [];
  readonly #unsubscribe: () => void;
  sim: TrainingSimulator | undefined;
  #control: MockControlClient | undefined;

  constructor(readonly sb: AgentSandbox) {
    this.#unsubscribe = sb.api.store.subscribe((c: Change) => {
      const m = c.object.metadata as { name?: string; namespace?: string } | undefined;
      if (c.type.plural !== 'configmaps' || m?.name !== CM_NAME || m.namespace !== NS) return;
      if (c.change !== 'MODIFIED') return;
      this.writes.push({ at: Date.now(), data: { ...((c.object as { data?: Record<string, string> }).data ?? {}) } });
    });
  }

  get hostDir(): string {
    return path.join(this.sb.dir, 'host', 'user/restore/reset', `${NS}.${CM_NAME}`);
  }

  /** `Status/Policy/InitialPolicy` of the first rank of each write so far (every rank of a write carries the same). */
  statuses(): string[] {
    return this.writes.map((w) => {
      const doc = JSON.parse(w.data['reset.json'] ?? '{}') as {
        RankList?: { Status: string; Policy: string; InitialPolicy: string }[];
      };
      const r = doc.RankList?.[0];
      return r ? `${r.Status}/${r.Policy}/${r.InitialPolicy}` : `ranks:${doc.RankList?.length ?? 'none'}`;
    });
  }

  /** Creates ConfigMap (a) and the pod, then waits until the file landing shows (a) on the host (§2.8). */
  async create(): Promise<void> {
    const core = this.sb.core();
    await core.createNamespacedConfigMap({
      namespace: NS,
      body: {
        metadata: { name: CM_NAME, namespace: NS, labels: { reset: 'true' } },
        data: { 'reset.json': INITIAL_RESET_JSON, checkCode: '' },
      },
    });
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: {
          name: POD_NAME,
          namespace: NS,
          labels: { 'volcano.sh/job-name': JOB },
          annotations: {
            'volcano.sh/job-name': JOB,
            'huawei.com/Ascend910': ALL.map((i) => `Ascend910-${i}`).join(','),
            'hccl/rankIndex': '1',
          },
        },
        spec: {
          nodeName: NODE_NAME,
          containers: [{ name: 'c0', image: 'x', resources: { limits: { [RESOURCE]: '8' } } }],
        },
      },
    });
    const file = path.join(this.hostDir, 'reset.json');
    await this.sb.until(() => readOr(file) === INITIAL_RESET_JSON, `${file} landed with ConfigMap (a)`);
  }

  /** The training side of F1 on chips 0–7 (processes 1 now); its control connection survives agent restarts. */
  async startTraining(opts: { ignoreResetFile?: boolean; stopAfterMs?: number } = {}): Promise<TrainingSimulator> {
    this.sim = new TrainingSimulator({
      hostRoot: path.join(this.sb.dir, 'host'),
      namespace: NS,
      job: JOB,
      logicIds: ALL,
      stopAfterMs: 300,
      pollMs: 50,
      control: (req) => this.#request(req),
      ...opts,
    });
    await this.sim.start();
    return this.sim;
  }

  /** One control request; a connection lost with a previous agent process is replaced once. */
  async #request(req: Record<string, unknown>): Promise<MockReply> {
    for (let attempt = 0; ; attempt++) {
      try {
        this.#control ??= await MockControlClient.connect(this.sb.control);
        return await this.#control.request(req);
      } catch (err) {
        this.#control?.close();
        this.#control = undefined;
        if (attempt >= 1) throw err;
      }
    }
  }

  async close(): Promise<void> {
    this.#unsubscribe();
    this.sim?.stop();
    await this.sim?.idle();
    this.#control?.close();
  }
}

export function readOr(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

export async function mockState(s: AgentSandbox): Promise<MockState> {
  return (await s.mock({ op: 'state' })) as unknown as MockState;
}

/** Kubelet health of chips 0–7, e.g. `['Healthy', …]`. */
export function healths(s: AgentSandbox): (string | undefined)[] {
  return ALL.map((i) => s.health(`Ascend910-${i}`));
}

/** The free chips of the device-info ConfigMap (`huawei.com/Ascend910`: Healthy and not held by a pod). */
export function schedulable(s: AgentSandbox): string[] | undefined {
  const l = deviceList(s);
  return l && (l[RESOURCE] ?? '').split(',').filter((n) => n !== '');
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
