/** Reading a program's /metrics (Prometheus text format) in the suites. */

/** The text of `http://<address>/metrics`. */
export async function scrape(address: string): Promise<string> {
  const res = await fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`GET http://${address}/metrics: ${res.status}`);
  return res.text();
}

/** The samples of `name` whose labels include `labels`: each with its labels and value. */
export function samples(
  text: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (m === null || m[1] !== name) continue;
    const ls: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) ls[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => ls[k] === v)) out.push({ labels: ls, value: Number(m[3]) });
  }
  return out;
}

/** The sum of {@link samples} (0 when there is none). */
export function sum(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  return samples(text, name, labels).reduce((a, s) => a + s.value, 0);
}
