/**
 * {@link JsonRequester} for a kubeconfig only client-node can serve (an `exec` or `auth-provider` user, `as`
 * impersonation, ...; src/kube/kube-client.ts `loadKubeAccess`): the request goes out through node's http(s) with
 * the TLS material and authorization of client-node's `KubeConfig.applyToHTTPSOptions`, taken on every call (an
 * exec token is renewed there), bounded and answered as {@link KubeClient}'s calls ({@link exchangeJson}).
 * client-node has no generic request, and its typed `ResourceV1Api` models drop fields newer than their release
 * (src/dra/dra-types.ts): the DRA calls use this on that path.
 */
import http from 'node:http';
import https from 'node:https';
import type * as k8s from '@kubernetes/client-node';
import { exchangeJson, type JsonRequester } from './kube-client.js';

/** Bounds of one request (default: those of {@link KubeClient}). */
export interface ClientNodeJsonOptions {
  readonly timeoutMs?: number;
  readonly maxBodyBytes?: number;
}

/** The requester over `kc`'s current cluster and user. */
export function clientNodeJsonRequester(kc: k8s.KubeConfig, o: ClientNodeJsonOptions = {}): JsonRequester {
  return {
    async requestJson<T>(
      method: string,
      path: string,
      options: { query?: Readonly<Record<string, string>>; body?: unknown; contentType?: string } = {},
    ): Promise<T> {
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw new Error('the kubeconfig has no current cluster');
      const url = new URL(cluster.server.replace(/\/+$/, '') + path);
      for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
      const payload = options.body !== undefined ? Buffer.from(JSON.stringify(options.body)) : undefined;
      const opts: https.RequestOptions = {
        method,
        headers: {
          accept: 'application/json',
          ...(payload ? { 'content-type': options.contentType ?? 'application/json' } : {}),
          ...(payload ? { 'content-length': payload.length } : {}),
        },
      };
      await kc.applyToHTTPSOptions(opts);
      const req = (url.protocol === 'https:' ? https : http).request(url, opts);
      return exchangeJson<T>(req, {
        method,
        url,
        payload,
        timeoutMs: o.timeoutMs ?? 30_000,
        maxBodyBytes: o.maxBodyBytes ?? 64 * 1024 * 1024,
      });
    },
  };
}
