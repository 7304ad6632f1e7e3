/**
 * An API client with every call's outcome observed: the agent's wiring reads the outcome of each request (the
 * shared `ApiRecovery`, the ConfigMap write counters) without the kube layer knowing.
 */

/**
 * `target` whose every method call returning a promise calls `settled` once it settles (`err` when it rejected),
 * with the method's name (or what `nameOf` makes of the name and the arguments: a generic call's verb).
 */
export function observeCalls<T extends object>(
  target: T,
  settled: (ok: boolean, err: unknown, method: string) => void,
  nameOf: (method: string, args: readonly unknown[]) => string = (m) => m,
): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v: unknown = Reflect.get(t, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]): unknown => {
        const r: unknown = (v as (...a: unknown[]) => unknown).apply(t, args);
        if (r instanceof Promise) {
          const name = nameOf(String(prop), args);
          r.then(
            () => settled(true, undefined, name),
            (err: unknown) => settled(false, err, name),
          );
        }
        return r;
      };
    },
  });
}
