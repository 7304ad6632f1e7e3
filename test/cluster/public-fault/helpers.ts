/**
 * Waiting helpers for the tests that talk to the Kubernetes API stand-in (asynchronous by nature).
 */

/** Resolves when `cond()` holds; rejects after `timeoutMs` (a missing event fails the test, it is not a timing assert). */
export async function until(cond: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
