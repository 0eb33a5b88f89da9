// What a Grafana dashboard's PromQL asks of the metrics: each metric name a panel's query (or a
// template variable's label_values) selects, with the label names it filters or groups on. Pure;
// a reader of the expressions Argo CD's dashboard has (selectors, aggregations with by (...),
// ranges, template variables), not a PromQL parser.

export interface MetricUse {
  metric: string;
  labels: string[];
}

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'and',
  'or',
  'unless',
]);

interface Dashboard {
  panels?: Panel[];
  templating?: { list?: { name?: string; query?: unknown; type?: string; options?: { value?: string }[] }[] };
}
interface Panel {
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every panel's query (rows' panels too), and every template variable's label_values query. */
export function dashboardQueries(d: Dashboard): string[] {
  const out: string[] = [];
  const walk = (panels: Panel[] | undefined) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) if (typeof t.expr === 'string' && t.expr.trim() !== '') out.push(t.expr);
      walk(p.panels);
    }
  };
  walk(d.panels);
  for (const v of d.templating?.list ?? []) {
    const q = typeof v.query === 'string' ? v.query : (v.query as { query?: unknown } | undefined)?.query;
    if (typeof q === 'string' && q.startsWith('label_values(')) out.push(q);
  }
  return out;
}

/** The custom variables' values (e.g. $grouping: namespace,name,project), for `by ($grouping)`. */
export function customVariables(d: Dashboard): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const v of d.templating?.list ?? [])
    if (v.type === 'custom' && v.name && typeof v.query === 'string')
      out[v.name] = v.query
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
  return out;
}

/** The metrics one expression selects, each with the labels the expression uses (matchers and grouping). */
export function metricUses(expr: string, vars: Record<string, string[]> = {}): MetricUse[] {
  const lv = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$/.exec(expr.trim());
  if (lv) return [{ metric: lv[1] as string, labels: [lv[2] as string] }];
  // Ranges and durations go; string literals are kept inside selectors (their matchers need them).
  const text = expr.replace(/\[[^\]]*\]/g, '');
  const grouping: string[] = [];
  for (const g of text.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g))
    for (const raw of (g[1] as string).split(',')) {
      const name = raw.trim();
      if (name === '') continue;
      if (name.startsWith('$')) grouping.push(...(vars[name.slice(1)] ?? []));
      else grouping.push(name);
    }
  const uses: MetricUse[] = [];
  const withoutGroups = text.replace(/\b(?:by|without)\s*\([^)]*\)/g, ' ');
  // Selectors with matchers, then bare names (not a function: not followed by `(`).
  const selector = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{((?:[^}"]|"(?:[^"\\]|\\.)*")*)\}/g;
  for (const m of withoutGroups.matchAll(selector)) {
    const matchers = [...(m[2] as string).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map(
      (x) => x[1] as string,
    );
    uses.push({ metric: m[1] as string, labels: [...new Set([...matchers, ...grouping])] });
  }
  const bare = withoutGroups.replace(selector, ' ').replace(/"(?:[^"\\]|\\.)*"/g, ' ');
  for (const m of bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?/g)) {
    const name = m[1] as string;
    if (m[2] || KEYWORDS.has(name) || /^\d/.test(name)) continue;
    uses.push({ metric: name, labels: [...new Set(grouping)] });
  }
  return uses;
}
