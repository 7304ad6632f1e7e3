/**
 * The plain-text tables of npuctl's human-readable output.
 */

/**
 * A table of left-aligned columns two spaces apart, each as wide as its widest cell; the last column is not padded
 * and no line ends in spaces. One `\n` after every line, the header first.
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  // a loop, not Math.max(...rows): a value of 200 000 names would overflow the stack as arguments
  const widths = header.map((h, i) => {
    let w = h.length;
    for (const r of rows) w = Math.max(w, (r[i] ?? '').length);
    return w;
  });
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].map((l) => `${l}\n`).join('');
}
