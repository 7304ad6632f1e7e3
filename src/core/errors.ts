/**
 * What a thrown value tells, for logs and retries: its message and, for an error of the Kubernetes API clients, its
 * HTTP status.
 */

/** The message of an `Error`, or any other thrown value as text. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * HTTP status of an API error (`code` of client-node's `ApiException` and of the project's kube client, `statusCode`
 * of a watch that could not start), or undefined for a network error.
 */
export function statusOf(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const e = error as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}
