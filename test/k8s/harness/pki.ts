/**
 * Keys, certificates and tokens of one test cluster, made fresh for every run: a CA and the apiserver's serving
 * certificate (openssl, EC P-256: fast to make), the service-account signing key (node:crypto) and the bearer
 * tokens of the static token file (`--token-auth-file`).
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** One line of kube-apiserver's `--token-auth-file`. */
export interface StaticUser {
  readonly token: string;
  readonly name: string;
  readonly groups: readonly string[];
}

/** The files and secrets of a cluster's PKI (all under `dir`, mode 0600). */
export interface Pki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly servingCert: string;
  readonly servingKey: string;
  /** PEM of the CA certificate (for kubeconfigs and https clients). */
  readonly caPem: string;
  /** Service-account signing key (private). */
  readonly serviceAccountKey: string;
  /** Its public half (`--service-account-key-file`). */
  readonly serviceAccountPublicKey: string;
  readonly tokenFile: string;
  readonly users: readonly StaticUser[];
}

function openssl(args: readonly string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`openssl ${args[0]} failed${stderr ? `: ${stderr}` : ''}`, { cause: err });
  }
}

/** 32 random bytes as hex: a bearer token. */
export function randomToken(): string {
  return crypto.randomBytes(32).toString('hex');
}

/**
 * Makes the PKI in `dir`: the serving certificate names 127.0.0.1, localhost and the in-cluster names of the
 * `kubernetes` Service (first address of `serviceIp`).
 */
export function makePki(dir: string, users: readonly StaticUser[], serviceIp: string): Pki {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const f = (name: string): string => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-subj',
    '/CN=npu-test-ca',
    '-days',
    '2',
  ]);
  openssl(['req', ...ec, '-keyout', f('apiserver.key'), '-out', f('apiserver.csr'), '-subj', '/CN=kube-apiserver']);
  const san = [
    'IP:127.0.0.1',
    `IP:${serviceIp}`,
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local',
  ];
  fs.writeFileSync(f('apiserver.ext'), `subjectAltName=${san.join(',')}\nextendedKeyUsage=serverAuth\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    f('apiserver.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('apiserver.crt'),
    '-days',
    '2',
    '-extfile',
    f('apiserver.ext'),
  ]);
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  fs.writeFileSync(f('sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  // kube-apiserver reads public keys from a PKCS#8 private key file only for RSA: the public half on its own
  fs.writeFileSync(f('sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const lines = users.map((u) => `${u.token},${u.name},${u.name},"${u.groups.join(',')}"`);
  fs.writeFileSync(f('tokens.csv'), `${lines.join('\n')}\n`, { mode: 0o600 });
  for (const name of fs.readdirSync(dir)) fs.chmodSync(f(name), 0o600);
  return {
    dir,
    caCert: f('ca.crt'),
    caKey: f('ca.key'),
    servingCert: f('apiserver.crt'),
    servingKey: f('apiserver.key'),
    caPem: fs.readFileSync(f('ca.crt'), 'utf8'),
    serviceAccountKey: f('sa.key'),
    serviceAccountPublicKey: f('sa.pub'),
    tokenFile: f('tokens.csv'),
    users,
  };
}

/** A kubeconfig (JSON, which every client reads as YAML) for `server` with a bearer token. */
export function kubeconfigText(server: string, caPem: string, token: string, user = 'user'): string {
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'test',
          cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
        },
      ],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: 'test', context: { cluster: 'test', user } }],
      'current-context': 'test',
    },
    null,
    2,
  );
}
