/**
 * `-getPodFromKubelet` (spec A.1, I.6): the node's pods read from the kubelet's `/pods` instead of the API server —
 * `GET https://<HOST_IP>:<KUBELET_PORT>/pods` with the service-account bearer token, TLS 1.3 without certificate
 * verification (upstream's client), the body limited to 10 MiB, polled every 5 s and diffed into the same cache the
 * API-server watch fills. Writes (the `predicate-time` patch) still go to the API server.
 *
 * Upstream's fallback, kept: a failed poll is logged and the cache stays as it was (the last good list); the first
 * successful poll marks the cache synced. An invalid `KUBELET_PORT` falls back to 10250; an invalid `HOST_IP` is an
 * error of every poll (upstream: "host ip is invalid").
 */
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import { errorMessage } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { PodCache, PodView } from '../core/pods.js';
import { devicesInUseOf, markAllocatedIn, podViewOf, type CachedPod } from './pod-cache-watcher.js';

/** Spec I.6 / K.4: the kubelet pod poll. */
export const KUBELET_POD_POLL_MS = 5000;
/** Spec I.6: the response body limit. */
export const KUBELET_PODS_MAX_BYTES = 10 * 1024 * 1024;
/** Spec A.1: the kubelet port when `KUBELET_PORT` is absent or invalid. */
export const DEFAULT_KUBELET_PORT = 10250;
/** Bound of one `/pods` request. */
export const KUBELET_REQUEST_TIMEOUT_MS = 10_000;
/** A token file larger than this is not a token. */
const MAX_TOKEN_BYTES = 64 * 1024;

/** A failed `/pods` read: what went wrong, bounded. */
export class KubeletPodsError extends Error {
  override readonly name = 'KubeletPodsError';
}

/** Spec A.1 / I.6: `https://<HOST_IP>:<KUBELET_PORT>/pods`; throws {@link KubeletPodsError} for a bad `HOST_IP`. */
export function kubeletPodsUrl(env: Readonly<Record<string, string | undefined>>): string {
  const ip = env.HOST_IP ?? '';
  if (net.isIP(ip) === 0) {
    throw new KubeletPodsError(`HOST_IP ${JSON.stringify(ip.slice(0, 64))} is not an IP address (spec A.1)`);
  }
  const raw = env.KUBELET_PORT ?? '';
  const n = /^[0-9]{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  const port = Number.isInteger(n) && n >= 0 && n <= 65535 ? n : DEFAULT_KUBELET_PORT;
  return `https://${net.isIPv6(ip) ? `[${ip}]` : ip}:${port}/pods`;
}

/** Options of {@link KubeletPodCache}. */
export interface KubeletPodCacheOptions {
  /** The `/pods` URL ({@link kubeletPodsUrl}), or the error that makes every poll fail. */
  readonly url: string | Error;
  /** The bearer token (the service account's): a value, or a file read at each poll (rotated tokens). */
  readonly token: { readonly value: string } | { readonly file: string } | undefined;
  /** Writes go to the API server (upstream: the kubelet's `/pods` is read-only). */
  readonly api: Pick<k8s.CoreV1Api, 'patchNamespacedPod'>;
  readonly nodeName: string;
  /** Spec I.5 limit (default 10 000 pods). */
  readonly maxPods?: number;
  readonly pollMs?: number;
  readonly onChange?: () => void;
  readonly logger?: Logger;
}

/** The pod cache over the kubelet's `/pods` (same surface as the API-server {@link PodCacheWatcher}). */
export class KubeletPodCache implements PodCache {
  readonly #o: KubeletPodCacheOptions;
  readonly #log: Logger;
  #pods = new Map<string, CachedPod>();
  #raw = new Map<string, string>();
  #synced = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #failing = false;

  constructor(o: KubeletPodCacheOptions) {
    this.#o = o;
    this.#log = o.logger ?? NOOP_LOGGER;
  }

  /** The first poll, then one every 5 s; resolves after the first attempt. */
  async start(): Promise<void> {
    await this.#poll();
    if (this.#stopped) return;
    this.#timer = setInterval(() => void this.#poll(), this.#o.pollMs ?? KUBELET_POD_POLL_MS);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  /** True once a poll succeeded. */
  get synced(): boolean {
    return this.#synced;
  }

  pods(): readonly CachedPod[] {
    return [...this.#pods.values()];
  }

  /** A fresh read of `/pods` (the volcano pick's live list). */
  async listLive(): Promise<readonly PodView[]> {
    return (await this.#fetch()).map(podViewOf);
  }

  async markAllocated(pod: PodView): Promise<void> {
    await markAllocatedIn(this.#o.api, this.#pods, pod);
  }

  /** Device names listed by active pods (spec I.4), as the API-server cache computes them. */
  devicesInUse(deviceType: string): Set<string> {
    return devicesInUseOf(this.#pods.values(), deviceType);
  }

  async #poll(): Promise<void> {
    let items: k8s.V1Pod[];
    try {
      items = await this.#fetch();
    } catch (err) {
      // upstream: the poll fails, the cache keeps the last good list; logged once per outage
      if (!this.#failing) {
        this.#log.error(
          { error: errorMessage(err).slice(0, 512) },
          'kubelet pod poll failed; pod cache kept as it was',
        );
      }
      this.#failing = true;
      return;
    }
    if (this.#stopped) return;
    if (this.#failing) this.#log.info({ pods: items.length }, 'kubelet pod poll works again');
    this.#failing = false;
    const pods = new Map<string, CachedPod>();
    const raw = new Map<string, string>();
    for (const p of items) {
      const v = podViewOf(p);
      if (v.uid === '') continue;
      pods.set(v.uid, v);
      raw.set(v.uid, JSON.stringify(v));
    }
    const changed =
      !this.#synced || raw.size !== this.#raw.size || [...raw].some(([uid, text]) => this.#raw.get(uid) !== text);
    this.#pods = pods;
    this.#raw = raw;
    this.#synced = true;
    if (changed) this.#o.onChange?.();
  }

  /** One GET of `/pods`: the node's pods (other nodes' skipped, as upstream), bounded in size and count. */
  #fetch(): Promise<k8s.V1Pod[]> {
    const url = this.#o.url;
    if (url instanceof Error) return Promise.reject(url);
    let token: string | undefined;
    try {
      token = this.#token();
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new KubeletPodsError(String(err)));
    }
    return new Promise((resolve, reject) => {
      const req = https.get(
        url,
        {
          rejectUnauthorized: false, // spec I.6: TLS verification disabled (upstream InsecureSkipVerify)
          minVersion: 'TLSv1.3',
          timeout: KUBELET_REQUEST_TIMEOUT_MS,
          headers: { accept: 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) },
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new KubeletPodsError(`${url}: HTTP ${res.statusCode ?? 0}, expected 200`));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > KUBELET_PODS_MAX_BYTES) {
              req.destroy(new KubeletPodsError(`${url}: response larger than ${KUBELET_PODS_MAX_BYTES} bytes`));
              return;
            }
            chunks.push(c);
          });
          res.on('error', reject);
          res.on('end', () => {
            try {
              resolve(this.#items(Buffer.concat(chunks).toString('utf8')));
            } catch (err) {
              reject(err instanceof Error ? err : new KubeletPodsError(String(err)));
            }
          });
        },
      );
      req.on('timeout', () =>
        req.destroy(new KubeletPodsError(`${url}: no answer within ${KUBELET_REQUEST_TIMEOUT_MS} ms`)),
      );
      req.on('error', reject);
    });
  }

  #items(body: string): k8s.V1Pod[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch (err) {
      throw new KubeletPodsError(`/pods: not JSON: ${errorMessage(err).slice(0, 200)}`);
    }
    const items = (parsed as { items?: unknown } | null)?.items;
    if (items === null || items === undefined) return []; // Go: a PodList without items
    if (!Array.isArray(items)) throw new KubeletPodsError('/pods: "items" is not an array');
    const max = this.#o.maxPods ?? 10_000;
    const mine = (items as k8s.V1Pod[]).filter(
      (p) => typeof p === 'object' && p !== null && (!p.spec?.nodeName || p.spec.nodeName === this.#o.nodeName),
    );
    if (mine.length >= max) throw new KubeletPodsError(`/pods: ${mine.length} pods, the limit is ${max} (spec I.5)`);
    return mine;
  }

  #token(): string | undefined {
    const t = this.#o.token;
    if (t === undefined) return undefined;
    if ('value' in t) return t.value;
    const st = fs.statSync(t.file);
    if (st.size > MAX_TOKEN_BYTES)
      throw new KubeletPodsError(`token file ${t.file} is larger than ${MAX_TOKEN_BYTES} bytes`);
    return fs.readFileSync(t.file, 'utf8').trim();
  }
}
