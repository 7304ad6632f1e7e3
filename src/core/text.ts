/**
 * Bounded text: log lines, Event messages and problems quote values that may be up to 1 MiB (hand-edited
 * ConfigMap keys), so every quoted text is cut to a byte budget first (house style: bounded log and Event text).
 */

/**
 * `text` cut to at most `maxBytes` UTF-8 bytes on a character boundary, the cut marked with the full length. With
 * `asJson`, the bytes counted are those of the text inside a JSON string (escapes included: what a JSON log line
 * holds). Looks at no more of `text` than it keeps (plus one length check), so a 1 MiB text costs next to nothing.
 */
export function boundedText(text: string, maxBytes: number, asJson = false): string {
  const cost = asJson
    ? (t: string): number => Buffer.byteLength(JSON.stringify(t), 'utf8') - 2
    : (t: string): number => Buffer.byteLength(t, 'utf8');
  if (text.length * (asJson ? 6 : 3) <= maxBytes || cost(text) <= maxBytes) return text;
  const tail = `…(${text.length} chars)`;
  const budget = maxBytes - cost(tail);
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    const b = cost(ch);
    if (bytes + b > budget) break;
    bytes += b;
    end += ch.length;
  }
  return text.slice(0, end) + tail;
}
