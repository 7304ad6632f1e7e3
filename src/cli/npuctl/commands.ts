/**
 * Unknown `npuctl` commands (issue [J] item 6): the closest command and the list of every command, both taken from
 * the command tree the CLI builds (commander's `Command` objects), so they never disagree with what runs. Pure.
 */

/** A node of the command tree (a commander `Command` fits). */
export interface CommandNode {
  name(): string;
  readonly commands: readonly CommandNode[];
}

/** Words that are not commands of the tree but that the CLI answers anyway (commander's `help`). */
const BUILT_IN = new Set(['help']);

/** The runnable commands, as typed: `["config check", "policy replay", "status", ...]`, in the tree's order. */
export function commandPaths(root: CommandNode): string[] {
  const out: string[] = [];
  const walk = (node: CommandNode, prefix: string): void => {
    for (const c of node.commands) {
      const p = prefix === '' ? c.name() : `${prefix} ${c.name()}`;
      if (c.commands.length === 0) out.push(p);
      else walk(c, p);
    }
  };
  walk(root, '');
  return out;
}

/** Edit distance with adjacent transpositions counted as one edit (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** Longest word compared: longer ones are not commands, and the distance table stays small. */
const MAX_WORD_CHARS = 64;

/**
 * The command of `candidates` closest to `word`: a word of it (or the whole) within a distance of one edit per three
 * letters (at least one), or a word it starts with (`sep` → `separation list`); undefined when none is that close,
 * so that a word unlike every command gets the list alone rather than a guess.
 */
export function closestCommand(word: string, candidates: readonly string[]): string | undefined {
  if (word.length === 0 || word.length > MAX_WORD_CHARS) return undefined;
  const w = word.toLowerCase();
  const bound = Math.max(1, Math.floor(w.length / 3));
  let best: { path: string; score: number } | undefined;
  for (const path of candidates) {
    const words = path.split(' ');
    const score = Math.min(
      editDistance(w, path.replace(/ /g, '')),
      ...words.map((x) => (w.length >= 3 && x.startsWith(w) ? 0 : editDistance(w, x))),
    );
    if (score <= bound && (best === undefined || score < best.score)) best = { path, score };
  }
  return best?.path;
}

/**
 * The error text for `argv` when its leading words are not a command of `root` (two lines: the unknown command
 * with the closest one, then every command); undefined when they are one (or are options only).
 */
export function unknownCommandMessage(
  root: CommandNode,
  argv: readonly string[],
  program = 'npuctl',
): string | undefined {
  const list = `${program} commands: ${commandPaths(root).join(', ')} (${program} --help)`;
  let node = root;
  const typed: string[] = [];
  for (const word of argv) {
    if (word.startsWith('-') || node.commands.length === 0) return undefined;
    const next = node.commands.find((c) => c.name() === word);
    if (next === undefined) {
      if (node === root && BUILT_IN.has(word)) return undefined;
      const under = commandPaths(node);
      const closest = closestCommand(word, under);
      const prefix = typed.length === 0 ? '' : `${typed.join(' ')} `;
      const shown = `${prefix}${word}`.slice(0, MAX_WORD_CHARS + 40);
      const hint = closest === undefined ? '' : `; did you mean "${program} ${prefix}${closest}"?`;
      return `${program}: unknown command ${JSON.stringify(shown)}${hint}\n${list}\n`;
    }
    typed.push(word);
    node = next;
  }
  return undefined;
}
