/**
 * A real Kubernetes for tests (issue [R] item 3): etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a
 * fake CRI and a kubelet, built by test/k8s/build.ts into test/k8s/bin/, each a child process of this one on
 * 127.0.0.1 with free ports, fresh keys and tokens, logs in the run dir. The verified facts and pitfalls behind the
 * flags are in the design note real-cluster.md; docs/testing.md ("A real cluster") describes the harness.
 *
 * Must run inside the private mount namespace of `npm run test:cluster` (see host-view.ts): kubelet's
 * device-plugin folder `/var/lib/kubelet/device-plugins` and `/var/log/containers` are shadowed by sandbox folders.
 *
 * `controlPlaneOnly` starts etcd and kube-apiserver alone, outside any mount namespace (benches of API clients).
 *
 * ```ts
 * const cluster = await Cluster.start();          // node Ready, default ServiceAccount and root CA published
 * cluster.core();                                 // client-node CoreV1Api as the admin
 * await cluster.kubectl(['get', 'nodes']);        // kubectl as the admin
 * await cluster.restartKubelet();                 // same flags, same root dir; waits until healthy again
 * await cluster.stop();                           // everything stopped, unmounted and removed
 * ```
 */
import { execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import { Component, freePort, PollAbort, pollUntil, type ComponentSpec } from './component.js';
import { HostView, mountsUnder, unmount } from './host-view.js';
import { kubeconfigText, makePki, randomToken, type Pki } from './pki.js';

/** Where test/k8s/build.ts puts the binaries. */
export const K8S_BIN_DIR = path.join(PROJECT_ROOT, 'test', 'k8s', 'bin');
/** The version the binaries are built at (test/k8s/go.mod). */
export const K8S_VERSION = 'v1.37.2';
/** kubelet's device-plugin folder: compiled in (`k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1.DevicePluginPath`). */
export const DEVICE_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';
/** kubelet's folder of legacy container-log links: compiled in, created at start. */
export const CONTAINER_LOGS_DIR = '/var/log/containers';
/** Where test/k8s/run.ts asks the suites to put their run dirs (removed by the runner afterwards). */
export const RUN_ROOT_ENV = 'ASCEND_K8S_RUN_ROOT';

const SERVICE_CIDR = '10.96.0.0/24';
const SERVICE_IP = '10.96.0.1';
const ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** Options of {@link Cluster.start} (all optional). */
export interface ClusterOptions {
  /** The node's name (default `npu-node`). */
  readonly nodeName?: string;
  /** Fields merged over the harness's KubeletConfiguration (e.g. `{ nodeStatusUpdateFrequency: '10s' }`). */
  readonly kubeletConfig?: Record<string, unknown>;
  /** Extra kube-apiserver flags (`--name=value`), appended. */
  readonly apiserverFlags?: readonly string[];
  /** How long to wait for the whole cluster (default 60 s). */
  readonly startTimeoutMs?: number;
  /** kubelet's `--v` (default 2). */
  readonly kubeletVerbosity?: number;
  /**
   * etcd and kube-apiserver only (benches of API clients, issue [P] item 6): no controller-manager, scheduler, CRI
   * or kubelet, so no node, no default ServiceAccount and no `kube-root-ca.crt` (create what you need), and no host
   * view, so no private mount namespace and no root needed. `kubeletConfig`, `nodeName` and the kubelet methods do
   * not apply.
   */
  readonly controlPlaneOnly?: boolean;
  /** Extra etcd flags (`--name=value`), appended (e.g. `--quota-backend-bytes` for a large bench). */
  readonly etcdFlags?: readonly string[];
}

/** Options of {@link Cluster.createToken}. */
export interface TokenOptions {
  /** Bind the token to this pod (it must exist; the token then carries the pod's node). */
  readonly pod?: { readonly name: string; readonly uid: string };
  readonly expirationSeconds?: number;
  readonly audiences?: readonly string[];
}

/** Thrown when the binaries are missing. */
export class BinariesMissingError extends Error {
  constructor(missing: readonly string[]) {
    super(
      `the Kubernetes binaries are not built (${missing.join(', ')} missing in test/k8s/bin): run npm run test:cluster`,
    );
    this.name = 'BinariesMissingError';
  }
}

/** The programs the harness runs, as named in test/k8s/bin. */
export const BINARIES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kubectl',
  'fake-cri',
] as const;

function bin(name: (typeof BINARIES)[number]): string {
  return path.join(K8S_BIN_DIR, name);
}

/** GET over HTTP(S); resolves with status and body (bounded), rejects on connection errors. */
function get(
  url: string,
  opts: { ca?: string; token?: string; timeoutMs?: number } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(
      u,
      {
        method: 'GET',
        timeout: opts.timeoutMs ?? 2000,
        ...(opts.ca ? { ca: opts.ca } : {}),
        headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (body.length < 65536) body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)));
    req.on('error', reject);
    req.end();
  });
}

/** Gives up a wait (see {@link pollUntil}) when `c` has exited. */
function alive(c: Component | undefined): void {
  if (c?.exit) throw new PollAbort(`${c.name} exited (code ${c.exit.code}, signal ${c.exit.signal})`);
}

/** Whether a Node has condition Ready=True. */
export function nodeReady(node: k8s.V1Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** A running test cluster. */
export class Cluster {
  readonly nodeName: string;
  /** The run dir (logs, PKI, etcd data, kubelet root, sandboxes); removed by {@link stop}. */
  readonly runDir: string;
  /** `https://127.0.0.1:<port>`. */
  server = '';
  readonly adminToken = randomToken();
  readonly nodeToken = randomToken();
  /** kubeconfig file of the admin (`system:masters`). */
  readonly adminKubeconfig: string;
  /** kubeconfig file of the node (`system:node:<name>`, group `system:nodes`): kubelet's. */
  readonly nodeKubeconfig: string;
  /** kubelet's `--root-dir`. */
  readonly kubeletRootDir: string;
  /** kubelet's pod-resources socket (it follows `--root-dir`). */
  readonly podResourcesSocket: string;
  /** The sandbox folder shown at {@link DEVICE_PLUGIN_DIR} inside the suite's mount namespace. */
  readonly devicePluginSandbox: string;
  /** etcd's client URL (`http://127.0.0.1:<port>`), e.g. for a compaction through its gateway. */
  etcdUrl = '';
  /** kubelet's healthz URL. */
  kubeletHealthz = '';
  pki: Pki | undefined;

  readonly #opts: ClusterOptions;
  readonly #components = new Map<string, Component>();
  readonly #owned = new Set<ChildProcess>();
  /** undefined with `controlPlaneOnly` (nothing of the host is shadowed) */
  readonly #view: HostView | undefined;
  #kubeletSpec: ComponentSpec | undefined;
  #stopped = false;
  /** Last resort when the test process exits without stop() (an uncaught error): kill, unmount, remove. */
  readonly #onExit = (): void => this.#abandon();

  private constructor(runDir: string, opts: ClusterOptions) {
    this.#opts = opts;
    this.runDir = runDir;
    this.nodeName = opts.nodeName ?? 'npu-node';
    this.adminKubeconfig = path.join(runDir, 'admin.kubeconfig');
    this.nodeKubeconfig = path.join(runDir, 'node.kubeconfig');
    this.kubeletRootDir = path.join(runDir, 'kubelet');
    this.podResourcesSocket = path.join(this.kubeletRootDir, 'pod-resources', 'kubelet.sock');
    this.devicePluginSandbox = path.join(runDir, 'device-plugins');
    this.#view = opts.controlPlaneOnly ? undefined : new HostView(path.join(runDir, 'host-view'));
    process.on('exit', this.#onExit);
  }

  /** Synchronous clean-up for process exit: SIGKILL to everything, then the mounts and the run dir. */
  #abandon(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const child of this.#owned) child.kill('SIGKILL');
    for (const c of this.#components.values()) if (!c.exit) c.child.kill('SIGKILL');
    this.#view?.release();
    for (const m of mountsUnder(this.runDir)) {
      try {
        unmount(m);
      } catch {
        // best effort: the namespace of test/k8s/run.ts ends with the process anyway
      }
    }
    fs.rmSync(this.runDir, { recursive: true, force: true });
  }

  /** Starts everything and waits until the node is Ready and pods can be created; stops what it started on failure. */
  static async start(opts: ClusterOptions = {}): Promise<Cluster> {
    const needed = opts.controlPlaneOnly ? (['etcd', 'kube-apiserver', 'kubectl'] as const) : BINARIES;
    const missing = needed.filter((b) => !fs.existsSync(bin(b)));
    if (missing.length > 0) throw new BinariesMissingError(missing);
    const root = process.env[RUN_ROOT_ENV] ?? os.tmpdir();
    fs.mkdirSync(root, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(root, 'npu-k8s-'));
    let cluster: Cluster | undefined;
    try {
      cluster = new Cluster(runDir, opts);
      await cluster.#start();
      return cluster;
    } catch (err) {
      if (cluster) {
        await cluster.stop().catch(() => undefined);
      } else {
        fs.rmSync(runDir, { recursive: true, force: true });
      }
      throw err;
    }
  }

  async #start(): Promise<void> {
    const timeout = this.#opts.startTimeoutMs ?? 60_000;
    for (const d of ['logs', 'cwd', 'home', 'etcd', 'manifests', 'pod-logs', 'volume-plugins', 'container-logs']) {
      fs.mkdirSync(path.join(this.runDir, d), { recursive: true, mode: 0o700 });
    }
    this.#view?.shadow(DEVICE_PLUGIN_DIR, this.devicePluginSandbox);
    this.#view?.shadow(CONTAINER_LOGS_DIR, path.join(this.runDir, 'container-logs'));

    const [etcdPort, peerPort, apiPort, kubeletPort, healthzPort] = await Promise.all(
      Array.from({ length: 5 }, () => freePort()),
    );
    this.pki = makePki(
      path.join(this.runDir, 'pki'),
      [
        { token: this.adminToken, name: 'admin', groups: ['system:masters'] },
        { token: this.nodeToken, name: `system:node:${this.nodeName}`, groups: ['system:nodes'] },
      ],
      SERVICE_IP,
    );
    const pki = this.pki;
    this.server = `https://127.0.0.1:${apiPort}`;
    this.etcdUrl = `http://127.0.0.1:${etcdPort}`;
    this.kubeletHealthz = `http://127.0.0.1:${healthzPort}/healthz`;
    fs.writeFileSync(this.adminKubeconfig, kubeconfigText(this.server, pki.caPem, this.adminToken, 'admin'), {
      mode: 0o600,
    });
    fs.writeFileSync(this.nodeKubeconfig, kubeconfigText(this.server, pki.caPem, this.nodeToken, 'node'), {
      mode: 0o600,
    });

    const peer = `http://127.0.0.1:${peerPort}`;
    const etcd = this.#run('etcd', [
      '--name=default',
      `--data-dir=${path.join(this.runDir, 'etcd')}`,
      `--listen-client-urls=${this.etcdUrl}`,
      `--advertise-client-urls=${this.etcdUrl}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=default=${peer}`,
      '--unsafe-no-fsync', // a test cluster: durability of its data is not wanted
      '--log-level=warn',
      ...(this.#opts.etcdFlags ?? []),
    ]);
    await pollUntil(
      async () => {
        alive(etcd);
        return (await get(`${this.etcdUrl}/health`)).body.includes('"health":"true"');
      },
      'etcd healthy',
      timeout,
      () => this.#context(etcd),
    );

    const apiserver = this.#run('kube-apiserver', [
      `--etcd-servers=${this.etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--cert-dir=${path.join(this.runDir, 'pki')}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--token-auth-file=${pki.tokenFile}`,
      '--authorization-mode=Node,RBAC',
      // the default is false, which refuses every privileged container (the agent's DaemonSet is one); kubeadm,
      // kind and the other installers set it
      '--allow-privileged=true',
      // added to the default admission plugins (which stay on)
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-issuer=${ISSUER}`,
      `--service-account-key-file=${pki.serviceAccountPublicKey}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--endpoint-reconciler-type=none',
      '--profiling=false',
      ...(this.#opts.apiserverFlags ?? []),
    ]);
    await pollUntil(
      async () => {
        alive(apiserver);
        const r = await get(`${this.server}/readyz`, { ca: pki.caPem, token: this.adminToken });
        return r.status === 200;
      },
      'kube-apiserver ready',
      timeout,
      () => this.#context(apiserver),
      200,
    );

    if (this.#opts.controlPlaneOnly) return;
    this.#run('kube-controller-manager', [
      `--kubeconfig=${this.adminKubeconfig}`,
      '--leader-elect=false',
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      // default /usr/libexec/kubernetes/kubelet-plugins/volume/exec/, which it creates
      `--flex-volume-plugin-dir=${path.join(this.runDir, 'volume-plugins')}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
    ]);
    this.#run('kube-scheduler', [
      `--kubeconfig=${this.adminKubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      '--secure-port=0',
    ]);
    const criSocket = path.join(this.runDir, 'cri.sock');
    const cri = this.#run('fake-cri', [`-endpoint=unix://${criSocket}`]);
    await pollUntil(
      () => fs.existsSync(criSocket),
      'the fake CRI socket',
      timeout,
      () => this.#context(cri),
    );

    const kubeletConfig = path.join(this.runDir, 'kubelet-config.json');
    fs.writeFileSync(kubeletConfig, JSON.stringify(this.#kubeletConfiguration(criSocket, kubeletPort!, healthzPort!)));
    this.#kubeletSpec = this.#spec('kubelet', [
      `--config=${kubeletConfig}`,
      `--kubeconfig=${this.nodeKubeconfig}`,
      `--root-dir=${this.kubeletRootDir}`,
      `--cert-dir=${path.join(this.kubeletRootDir, 'pki')}`,
      `--hostname-override=${this.nodeName}`,
      '--node-ip=127.0.0.1',
      `--v=${this.#opts.kubeletVerbosity ?? 2}`,
    ]);
    this.startKubelet();
    await this.#waitKubeletHealthy(timeout);
    await this.waitNodeReady(timeout);
    // Pods need the default ServiceAccount (ServiceAccount admission) and kube-root-ca.crt (their projected token
    // volume): both are made by controllers, a moment after the namespace exists.
    const core = this.core();
    await pollUntil(
      async () =>
        (await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' })) &&
        (await core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'default' })),
      'the default ServiceAccount and kube-root-ca.crt in namespace default',
      timeout,
      () => this.#context(this.#components.get('kube-controller-manager')),
      200,
    );
  }

  /** The KubeletConfiguration (real-cluster.md: what works on this machine kind), with the test's overrides. */
  #kubeletConfiguration(criSocket: string, port: number, healthzPort: number): Record<string, unknown> {
    return {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: '127.0.0.1',
      port,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort,
      containerRuntimeEndpoint: `unix://${criSocket}`,
      staticPodPath: path.join(this.runDir, 'manifests'),
      podLogsDir: path.join(this.runDir, 'pod-logs'),
      volumePluginDir: path.join(this.runDir, 'volume-plugins'),
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupsPerQOS: false,
      enforceNodeAllocatable: [],
      failSwapOn: false,
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      clusterDomain: 'cluster.local',
      resolvConf: '',
      // Node status every 2 s instead of 10 s, so that a capacity change shows sooner; reported only on change.
      nodeStatusUpdateFrequency: '2s',
      fileCheckFrequency: '2s',
      ...this.#opts.kubeletConfig,
    };
  }

  #spec(name: string, args: readonly string[]): ComponentSpec {
    return {
      name,
      bin: bin(name as (typeof BINARIES)[number]),
      args,
      // kubelet and the fake CRI delete `*` in their working directory when they garbage-collect a container
      // (the fake reports an empty log path): an empty folder of their own.
      cwd: path.join(this.runDir, 'cwd'),
      logFile: path.join(this.runDir, 'logs', `${name}.log`),
      // a HOME of the run: nothing in the real one (kubectl's cache, …)
      env: { PATH: process.env.PATH, HOME: path.join(this.runDir, 'home') },
    };
  }

  #run(name: string, args: readonly string[]): Component {
    const c = new Component(this.#spec(name, args));
    this.#components.set(name, c);
    return c;
  }

  #context(c: Component | undefined): string {
    if (!c) return '';
    const exit = c.exit ? ` (exited: code ${c.exit.code}, signal ${c.exit.signal})` : '';
    return `--- ${c.name}${exit}, last lines of ${c.spec.logFile}:\n${c.tail(25)}`;
  }

  /** The log file of a component (`etcd`, `kube-apiserver`, …, `kubelet`, `fake-cri`). */
  logFile(name: string): string {
    return path.join(this.runDir, 'logs', `${name}.log`);
  }

  /** The process id of a running component (`etcd`, `kube-apiserver`, …), e.g. for its CPU time in a bench. */
  pid(name: string): number | undefined {
    const c = this.#components.get(name);
    return c === undefined || c.exit ? undefined : c.child.pid;
  }

  /** The last lines of a component's log (for failure messages). */
  tail(name: string, lines = 40): string {
    return this.#components.get(name)?.tail(lines) ?? '(not started)';
  }

  /** A client-node KubeConfig for the API server with `token` (default: the admin's). */
  kubeConfig(token = this.adminToken): k8s.KubeConfig {
    const kc = new k8s.KubeConfig();
    kc.loadFromString(kubeconfigText(this.server, this.pki!.caPem, token));
    return kc;
  }

  /** CoreV1Api as the admin. */
  core(): k8s.CoreV1Api {
    return this.kubeConfig().makeApiClient(k8s.CoreV1Api);
  }

  /** Writes a kubeconfig file for `token` (mode 0600), for the apiserver or another `server` (a proxy of it). */
  writeKubeconfig(file: string, token = this.adminToken, server = this.server): string {
    fs.writeFileSync(file, kubeconfigText(server, this.pki!.caPem, token), { mode: 0o600 });
    return file;
  }

  /** Runs kubectl as the admin, or with another `kubeconfig`; resolves with stdout, rejects with stderr. */
  async kubectl(args: readonly string[], input?: string, kubeconfig = this.adminKubeconfig): Promise<string> {
    const r = await this.kubectlRun(args, input, kubeconfig);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr || `exit code ${r.code}`}`);
    return r.stdout;
  }

  /**
   * Runs kubectl and resolves with its exit code, stdout and stderr, whatever they are (some commands report a
   * refusal on stderr and exit 0: `kubectl cordon`).
   */
  kubectlRun(
    args: readonly string[],
    input?: string,
    kubeconfig = this.adminKubeconfig,
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        bin('kubectl'),
        // --cache-dir: not the discovery cache in ~/.kube
        [`--kubeconfig=${kubeconfig}`, `--cache-dir=${path.join(this.runDir, 'kubectl-cache')}`, ...args],
        {
          timeout: 30_000,
          maxBuffer: 16 * 1024 * 1024,
          env: { PATH: process.env.PATH, HOME: path.join(this.runDir, 'home') },
        },
        (err, stdout, stderr) => {
          const code = (err as { code?: unknown } | null)?.code;
          if (err !== null && typeof code !== 'number') {
            reject(new Error(`kubectl ${args.join(' ')}: ${err.message}`, { cause: err }));
          } else resolve({ code: typeof code === 'number' ? code : 0, stdout, stderr });
        },
      );
      if (input !== undefined) child.stdin?.end(input);
    });
  }

  /**
   * A ServiceAccount token from the TokenRequest API, optionally bound to a pod (then its user carries
   * `extra["authentication.kubernetes.io/node-name"]` of the pod's node).
   */
  async createToken(namespace: string, serviceAccount: string, o: TokenOptions = {}): Promise<string> {
    const res = await this.core().createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace,
      body: {
        spec: {
          audiences: [...(o.audiences ?? [])],
          expirationSeconds: o.expirationSeconds ?? 3600,
          ...(o.pod ? { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: o.pod.name, uid: o.pod.uid } } : {}),
        },
      },
    });
    const token = res.status?.token;
    if (!token) throw new Error(`TokenRequest for ${namespace}/${serviceAccount} returned no token`);
    return token;
  }

  /** The Node object. */
  node(): Promise<k8s.V1Node> {
    return this.core().readNode({ name: this.nodeName });
  }

  /** Waits until the node is Ready. */
  async waitNodeReady(timeoutMs = 60_000): Promise<k8s.V1Node> {
    return pollUntil(
      async () => {
        const n = await this.node();
        return nodeReady(n) ? n : undefined;
      },
      `node ${this.nodeName} Ready`,
      timeoutMs,
      () => this.#context(this.#components.get('kubelet')),
      250,
    );
  }

  async #waitKubeletHealthy(timeoutMs: number): Promise<void> {
    const kubelet = this.#components.get('kubelet');
    await pollUntil(
      async () => {
        alive(kubelet);
        return (await get(this.kubeletHealthz)).status === 200;
      },
      'kubelet healthz',
      timeoutMs,
      () => this.#context(kubelet),
      200,
    );
  }

  /** Whether kubelet runs. */
  get kubeletRunning(): boolean {
    const k = this.#components.get('kubelet');
    return k !== undefined && k.exit === undefined;
  }

  /** Starts kubelet (with the flags of the first start) unless it runs; does not wait. */
  startKubelet(): void {
    if (this.kubeletRunning) return;
    if (!this.#kubeletSpec) throw new Error('the cluster has not configured kubelet');
    this.#components.set('kubelet', new Component(this.#kubeletSpec));
  }

  /** Stops kubelet (SIGTERM, SIGKILL after 10 s); the pods on the fake CRI keep "running". */
  async stopKubelet(): Promise<void> {
    await this.#components.get('kubelet')?.stop(10_000);
  }

  /** Stops and starts kubelet; resolves when the new kubelet answers healthz and the node is Ready. */
  async restartKubelet(timeoutMs = 60_000): Promise<void> {
    await this.stopKubelet();
    this.startKubelet();
    await this.#waitKubeletHealthy(timeoutMs);
    await this.waitNodeReady(timeoutMs);
  }

  /** Registers a process started by a test (an agent) so that {@link stop} ends it first. */
  own(child: ChildProcess): ChildProcess {
    this.#owned.add(child);
    child.once('exit', () => this.#owned.delete(child));
    return child;
  }

  /**
   * Stops everything it started (owned processes, kubelet, fake CRI, scheduler, controller-manager, apiserver,
   * etcd), undoes the host view, unmounts what kubelet mounted under the run dir (deepest first) and removes the
   * run dir. Throws, after doing all it can, when something could not be undone.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    process.off('exit', this.#onExit);
    const problems: string[] = [];
    await Promise.all(
      [...this.#owned].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    for (const name of ['kubelet', 'fake-cri', 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
      const c = this.#components.get(name);
      if (c) await c.stop(name === 'kubelet' ? 10_000 : 5000);
    }
    problems.push(...(this.#view?.release() ?? []));
    for (const m of mountsUnder(this.runDir)) {
      try {
        unmount(m);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    try {
      fs.rmSync(this.runDir, { recursive: true, force: true, maxRetries: 3 });
    } catch (err) {
      problems.push(`removing ${this.runDir}: ${(err as Error).message}`);
    }
    if (problems.length > 0) throw new Error(`cluster stop left something behind:\n${problems.join('\n')}`);
  }
}
