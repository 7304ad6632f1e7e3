/** Listen addresses of the agent's HTTP endpoints (`-metricsAddress`). */

/** `host:port`, `:port`, `[v6]:port` → parts; undefined when malformed. Port 0 = any free port. */
export function parseListenAddress(address: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(address);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { host: m[1] ?? m[2] ?? '', port };
}
