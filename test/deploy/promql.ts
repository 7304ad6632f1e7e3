/**
 * Just enough PromQL and Prometheus text format for test/deploy/monitoring.test.ts: the series selectors of an
 * expression (metric name and label matchers), the labels its grouping clauses name, and the series and labels of a
 * `/metrics` page. A tokenizer and one linear pass, not a parser: it does not check that an expression is valid
 * (promtool does, for the rules), only what it reads.
 */

/** One label matcher of a selector: `chip=~"$chip"`. */
export interface Matcher {
  readonly label: string;
  readonly op: '=' | '!=' | '=~' | '!~';
  readonly value: string;
}

/** A series selector: `ascend_npu_agent_chip_health{node=~"$node"}`. */
export interface Selector {
  readonly metric: string;
  readonly matchers: readonly Matcher[];
}

/** What an expression reads. */
export interface ExprUse {
  readonly selectors: readonly Selector[];
  /** Labels of `by`, `without`, `on`, `ignoring`, `group_left`, `group_right`. */
  readonly groupLabels: readonly string[];
}

type Tok =
  | { readonly k: 'id'; readonly v: string }
  | { readonly k: 'str'; readonly v: string }
  | { readonly k: 'p'; readonly v: string };

const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan']);

/** Longest expression read (the dashboard's and rules' are a few hundred characters). */
const MAX_EXPR_CHARS = 10_000;

function tokens(expr: string): Tok[] {
  if (expr.length > MAX_EXPR_CHARS) throw new Error(`expression of ${expr.length} characters: over ${MAX_EXPR_CHARS}`);
  const out: Tok[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (/\s/.test(c)) i++;
    else if (c === '#') while (i < expr.length && expr[i] !== '\n') i++;
    else if (c === '"' || c === "'" || c === '`') {
      let v = '';
      i++;
      while (i < expr.length && expr[i] !== c) {
        if (expr[i] === '\\' && c !== '`') i++;
        v += expr[i] ?? '';
        i++;
      }
      if (i >= expr.length) throw new Error(`unterminated string in ${expr}`);
      i++;
      out.push({ k: 'str', v });
    } else if (c === '[') {
      // a range or subquery ([5m], [$__rate_interval], [1h:5m]): nothing in it names a series
      const end = expr.indexOf(']', i);
      if (end < 0) throw new Error(`unterminated [ in ${expr}`);
      i = end + 1;
    } else if (/[A-Za-z_:]/.test(c)) {
      const m = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(expr.slice(i))![0];
      out.push({ k: 'id', v: m });
      i += m.length;
    } else if (/[0-9.]/.test(c)) {
      // a number or a duration (offset 5m): skipped
      i += /^[0-9.][0-9A-Za-z.+-]*/.exec(expr.slice(i))![0].length;
    } else if (c === '$') {
      // a Grafana variable outside a string ($__interval): skipped
      i += /^\$\{?[A-Za-z0-9_]*\}?/.exec(expr.slice(i))![0].length;
    } else {
      const two = expr.slice(i, i + 2);
      const op = ['==', '!=', '=~', '!~', '>=', '<='].includes(two) ? two : c;
      out.push({ k: 'p', v: op });
      i += op.length;
    }
  }
  return out;
}

/** The selectors and grouping labels of a PromQL expression. */
export function exprUse(expr: string): ExprUse {
  const t = tokens(expr);
  const selectors: Selector[] = [];
  const groupLabels: string[] = [];
  const isP = (j: number, v: string): boolean => t[j]?.k === 'p' && t[j].v === v;
  /** Reads `{ label op "value", ... }` from `j` (at the `{`); returns the matchers and the index after `}`. */
  const matchersAt = (j: number): [Matcher[], number] => {
    const ms: Matcher[] = [];
    let k = j + 1;
    while (k < t.length && !isP(k, '}')) {
      const label = t[k];
      const op = t[k + 1];
      const value = t[k + 2];
      if (label?.k !== 'id' || op?.k !== 'p' || value?.k !== 'str' || !['=', '!=', '=~', '!~'].includes(op.v)) {
        throw new Error(`unreadable label matcher at token ${k} of ${expr}`);
      }
      ms.push({ label: label.v, op: op.v as Matcher['op'], value: value.v });
      k += 3;
      if (isP(k, ',')) k++;
    }
    return [ms, k + 1];
  };
  for (let i = 0; i < t.length;) {
    const tok = t[i]!;
    if (tok.k === 'id') {
      const word = tok.v.toLowerCase();
      if (GROUPING.has(word)) {
        i++;
        if (isP(i, '(')) {
          i++;
          while (i < t.length && !isP(i, ')')) {
            if (t[i]!.k === 'id') groupLabels.push(t[i]!.v);
            i++;
          }
          i++;
        }
        continue;
      }
      if (KEYWORDS.has(word) || AGGREGATIONS.has(word) || isP(i + 1, '(')) {
        i++; // an operator, an aggregation or a function: not a series
        continue;
      }
      if (isP(i + 1, '{')) {
        const [matchers, next] = matchersAt(i + 1);
        selectors.push({ metric: tok.v, matchers });
        i = next;
      } else {
        selectors.push({ metric: tok.v, matchers: [] });
        i++;
      }
      continue;
    }
    if (tok.k === 'p' && tok.v === '{') {
      const [matchers, next] = matchersAt(i);
      const name = matchers.find((m) => m.label === '__name__' && m.op === '=');
      if (name === undefined) throw new Error(`a selector without a metric name in ${expr}: not checkable`);
      selectors.push({ metric: name.value, matchers: matchers.filter((m) => m !== name) });
      i = next;
      continue;
    }
    i++;
  }
  return { selectors, groupLabels };
}

/** The series of a `/metrics` page: sample name → the label names seen on its samples. */
export interface Exposition {
  /** Every name the page declares (`# TYPE`) or has samples of (histograms: `_bucket`, `_sum`, `_count` too). */
  readonly names: ReadonlySet<string>;
  /** Sample name → union of its samples' label names (absent: no sample on the page). */
  readonly labels: ReadonlyMap<string, ReadonlySet<string>>;
}

const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+\S+(\s+\S+)?$/;
const LABEL_PAIR = /\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

/** Reads a Prometheus text-format page. */
export function parseExposition(text: string): Exposition {
  const names = new Set<string>();
  const labels = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      if (name === undefined) continue;
      names.add(name);
      if (type === 'histogram' || type === 'summary')
        for (const s of ['_sum', '_count', '_bucket']) names.add(name + s);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unreadable /metrics line: ${line.slice(0, 200)}`);
    const name = m[1]!;
    names.add(name);
    const set = labels.get(name) ?? new Set<string>();
    labels.set(name, set);
    const body = m[3] ?? '';
    LABEL_PAIR.lastIndex = 0;
    while (LABEL_PAIR.lastIndex < body.length) {
      const p = LABEL_PAIR.exec(body);
      if (!p) throw new Error(`unreadable labels in /metrics line: ${line.slice(0, 200)}`);
      set.add(p[1]!);
    }
  }
  return { names, labels };
}
