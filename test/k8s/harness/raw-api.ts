/**
 * One HTTP request to an API server with a bearer token, answered with the status and the `Status` fields (reason,
 * message, causes): what the suites compare between the real kube-apiserver and the stand-in (src/sim/kube-api.ts),
 * which must answer the same request the same way.
 */
import http from 'node:http';
import https from 'node:https';

/** Where a request goes: the real apiserver (`https`, the cluster CA) or the stand-in (`http`). */
export interface ApiTarget {
  readonly server: string;
  /** PEM of the CA (https only). */
  readonly ca?: string;
}

/** The answer. */
export interface RawAnswer {
  readonly status: number;
  /** `reason` of a `Status` answer ('' otherwise). */
  readonly reason: string;
  /** `message` of a `Status` answer ('' otherwise). */
  readonly message: string;
  /** `details.causes` of a `Status` answer. */
  readonly causes: readonly { reason?: string; message?: string; field?: string }[];
  /** The parsed body (undefined when it was not JSON). */
  readonly body: unknown;
  /** The body as text (the first 4 KiB). */
  readonly text: string;
}

/** Accepts a Cluster (its `server` and `pki.caPem`) or an explicit target. */
function targetOf(t: ApiTarget | { server: string; pki?: { caPem: string } }): ApiTarget {
  if ('pki' in t && t.pki !== undefined) return { server: t.server, ca: t.pki.caPem };
  return t;
}

/** Sends one request (`body` JSON-encoded unless a string or Buffer); resolves with whatever the server answered. */
export function rawRequest(
  to: ApiTarget | { server: string; pki?: { caPem: string } },
  token: string,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<RawAnswer> {
  const t = targetOf(to);
  const url = new URL(path, t.server);
  const payload =
    body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(
      url,
      {
        method,
        timeout: 30_000,
        ...(t.ca !== undefined ? { ca: t.ca } : {}),
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(payload !== undefined ? { 'content-type': contentType } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          const st = (parsed ?? {}) as { kind?: string; reason?: string; message?: string; details?: { causes?: [] } };
          const isStatus = st.kind === 'Status';
          resolve({
            status: res.statusCode ?? 0,
            reason: isStatus ? (st.reason ?? '') : '',
            message: isStatus ? (st.message ?? '') : '',
            causes: isStatus ? (st.details?.causes ?? []) : [],
            body: parsed,
            text: text.slice(0, 4096),
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timeout`)));
    req.on('error', reject);
    req.end(payload);
  });
}
