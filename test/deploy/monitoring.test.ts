/**
 * Issue [J] item 5, deploy/components/monitoring: the Grafana dashboard and the alert rules read only series that
 * exist. The real agent (dist/cli/agent.js on the mock DCMI library, kubelet simulator, API stand-in) and the real
 * fault center run as child processes; their `/metrics` pages are scraped after a fault, and every selector of every
 * PromQL expression of the dashboard (panels, variables) and of the rules — metric name, label matchers, the labels of
 * `by`/`on`/`group_left`..., of legends and of alert annotations — is checked against them. Labels that Prometheus
 * adds at scrape time are the PodMonitor's and ServiceMonitor's target labels (the operator's defaults plus their
 * relabelings). Also: `promtool check rules` on the rules file, the PrometheusRule is the rules file, the dashboard
 * ConfigMap is the dashboard file, and the monitoring objects reach the pods and ports they scrape.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { FaultCenterMetrics } from '../../src/cluster/metrics.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import {
  AgentProcess,
  AgentSandbox,
  SEPARATE_CODE,
  UNHEALTHY_KEY,
  deviceList,
  listed,
} from '../helpers/agent-process.js';
import { exprUse, parseExposition, type Exposition } from './promql.js';

type Obj = Record<string, any>;

const MONITORING = path.join(PROJECT_ROOT, 'deploy', 'components', 'monitoring');
const RULES_FILE = path.join(MONITORING, 'alert-rules.yaml');
const DASHBOARD_FILE = path.join(MONITORING, 'ascend-npu.json');
const FAULT_CENTER_JS = path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

const read = (f: string): string => fs.readFileSync(f, 'utf8');
const docsOf = (file: string): Obj[] =>
  yaml.loadAll(read(path.join(PROJECT_ROOT, file))).filter((d): d is Obj => typeof d === 'object' && d !== null);
const dashboard = JSON.parse(read(DASHBOARD_FILE)) as Obj;
const rules = yaml.load(read(RULES_FILE)) as { groups: { name: string; rules: Obj[] }[] };
const monitoring = docsOf('deploy/rendered/monitoring.yaml');
const one = (kind: string, docs: Obj[] = monitoring): Obj => {
  const found = docs.filter((d) => d.kind === kind);
  expect(found).toHaveLength(1);
  return found[0]!;
};

/** One PromQL expression of the dashboard or the rules, and the labels its text shows beside it. */
interface Use {
  readonly where: string;
  readonly expr: string;
  /** Labels of legends (`{{chip}}`), annotations (`$labels.chip`), `label_values(…, chip)`. */
  readonly shown: readonly string[];
}

const legendLabels = (s: unknown): string[] =>
  typeof s === 'string' ? [...s.matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g)].map((m) => m[1]!) : [];
const templateLabels = (s: unknown): string[] =>
  typeof s === 'string' ? [...s.matchAll(/\$labels\.([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!) : [];

function dashboardUses(d: Obj): Use[] {
  const out: Use[] = [];
  const walk = (panels: Obj[] | undefined): void => {
    for (const p of panels ?? []) {
      for (const t of (p.targets ?? []) as Obj[]) {
        if (typeof t.expr === 'string') {
          out.push({ where: `dashboard "${p.title}" ${t.refId}`, expr: t.expr, shown: legendLabels(t.legendFormat) });
        }
      }
      walk(p.panels);
    }
  };
  walk(d.panels);
  for (const v of (d.templating?.list ?? []) as Obj[]) {
    if (v.type !== 'query') continue;
    const q = String(typeof v.query === 'string' ? v.query : v.query?.query);
    const m = /^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$/.exec(q);
    if (!m) throw new Error(`dashboard variable ${v.name}: only label_values(series, label) is checked, got ${q}`);
    out.push({ where: `dashboard variable $${v.name}`, expr: m[1]!, shown: [m[2]!] });
  }
  return out;
}

function ruleUses(r: typeof rules): Use[] {
  return r.groups.flatMap((g) =>
    g.rules.map((rule) => ({
      where: `rule ${g.name}/${rule.alert ?? rule.record}`,
      expr: String(rule.expr),
      shown: [...Object.values(rule.annotations ?? {}), ...Object.values(rule.labels ?? {})].flatMap(templateLabels),
    })),
  );
}

/** A scraped program: its page, the labels Prometheus adds to its series, the labels it declares for a family. */
interface Source {
  readonly name: string;
  readonly page: Exposition;
  readonly targetLabels: ReadonlySet<string>;
  /** Label names of a family without samples on the page (undefined: not known). */
  readonly declared: (metric: string) => ReadonlySet<string> | undefined;
}

/** The target labels the Prometheus Operator gives every series of a PodMonitor / ServiceMonitor, and relabelings'. */
function targetLabelsOf(monitor: Obj): Set<string> {
  const base = ['job', 'instance', 'namespace', 'pod', 'container', 'endpoint'];
  if (monitor.kind === 'ServiceMonitor') base.push('service');
  const endpoints = (monitor.spec.podMetricsEndpoints ?? monitor.spec.endpoints) as Obj[];
  const relabeled = endpoints.flatMap((e) => ((e.relabelings ?? []) as Obj[]).map((r) => String(r.targetLabel)));
  return new Set([...base, ...relabeled]);
}

/** Every problem of `uses` against the sources: a missing series, or a label a series does not have. */
function problemsOf(uses: readonly Use[], sourceOf: (metric: string) => Source): string[] {
  const problems: string[] = [];
  for (const u of uses) {
    const { selectors, groupLabels } = exprUse(u.expr);
    const labelsOn = (metric: string): ReadonlySet<string> | undefined => {
      const s = sourceOf(metric);
      const seen = s.page.labels.get(metric) ?? s.declared(metric);
      return seen === undefined ? undefined : new Set([...seen, ...s.targetLabels]);
    };
    for (const sel of selectors) {
      const s = sourceOf(sel.metric);
      if (!s.page.names.has(sel.metric)) {
        problems.push(`${u.where}: series ${sel.metric} is not on the ${s.name}'s /metrics`);
        continue;
      }
      const labels = labelsOn(sel.metric);
      for (const m of sel.matchers) {
        if (labels === undefined) {
          problems.push(`${u.where}: ${sel.metric} has no sample on the ${s.name}'s /metrics to show label ${m.label}`);
        } else if (!labels.has(m.label)) {
          problems.push(`${u.where}: ${sel.metric} has no label ${m.label} (it has ${[...labels].sort().join(', ')})`);
        }
      }
    }
    // labels of the result: on one of the series that exist (a missing series is reported above, not again here)
    const present = selectors.filter((sel) => sourceOf(sel.metric).page.names.has(sel.metric));
    if (present.length === 0 && selectors.length > 0) continue;
    for (const label of new Set([...groupLabels, ...u.shown])) {
      if (!present.some((sel) => labelsOn(sel.metric)?.has(label))) {
        problems.push(`${u.where}: label ${label} is on none of ${selectors.map((s) => s.metric).join(', ')}`);
      }
    }
  }
  return problems;
}

describe('issue [J] 5 the PromQL reader of this test (so the series check does check)', () => {
  test('selectors, matchers and grouping labels; functions, aggregations, ranges and numbers are not series', () => {
    const u = exprUse(
      'sum by (node, code) (rate(x_total{node=~"$node", a!="b"}[$__rate_interval])) > 0 ' +
        'unless on (pod) group_left(level) y == 1 or vector(0) offset 5m',
    );
    expect(u.selectors).toEqual([
      {
        metric: 'x_total',
        matchers: [
          { label: 'node', op: '=~', value: '$node' },
          { label: 'a', op: '!=', value: 'b' },
        ],
      },
      { metric: 'y', matchers: [] },
    ]);
    expect(u.groupLabels).toEqual(['node', 'code', 'pod', 'level']);
  });

  test('a missing series, a missing label and a label shown but absent are all reported', () => {
    const page = parseExposition('# TYPE a gauge\na{chip="x"} 1\n# TYPE h histogram\nh_bucket{le="1"} 0\n');
    const src: Source = { name: 'p', page, targetLabels: new Set(['node']), declared: () => undefined };
    expect(
      problemsOf(
        [
          { where: 'w1', expr: 'a{chip="1", node="n"} + h_count', shown: ['chip'] },
          { where: 'w2', expr: 'b{chip="1"}', shown: [] },
          { where: 'w3', expr: 'sum by (code) (a{phy="1"})', shown: ['level'] },
        ],
        () => src,
      ),
    ).toEqual([
      "w2: series b is not on the p's /metrics",
      'w3: a has no label phy (it has chip, node)',
      'w3: label code is on none of a',
      'w3: label level is on none of a',
    ]);
  });
});

describe('issue [J] 5 the alert rules', () => {
  /** Runs promtool; fails with the reason when it is not installed. */
  async function promtool(args: string[]): Promise<{ code: unknown; out: string }> {
    const r = await new Promise<{ code: unknown; out: string }>((resolve) =>
      execFile(PROMTOOL, args, { timeout: 60_000, cwd: MONITORING }, (err, stdout, stderr) =>
        resolve({ code: err ? (err as { code?: unknown }).code : 0, out: `${stdout}${stderr}` }),
      ),
    );
    if (r.code === 'ENOENT') {
      throw new Error(`${PROMTOOL} is not installed (Debian: apt-get install prometheus; or PROMTOOL=<path>)`);
    }
    return r;
  }

  test('promtool check rules accepts the rules file', async () => {
    const r = await promtool(['check', 'rules', RULES_FILE]);
    expect([r.code, r.out]).toEqual([0, expect.stringContaining('SUCCESS')]);
  });

  test('promtool test rules: each alert fires on its case, with its labels and annotations, and not on the next case', async () => {
    const r = await promtool(['test', 'rules', path.join(MONITORING, 'alert-rules.test.yaml')]);
    expect([r.code, r.out]).toEqual([0, expect.stringContaining('SUCCESS')]);
    // every alert of the rules file has a case
    const tested = (yaml.load(read(path.join(MONITORING, 'alert-rules.test.yaml'))) as { tests: Obj[] }).tests
      .flatMap((t) => (t.alert_rule_test as Obj[]).filter((a) => (a.exp_alerts as Obj[]).length > 0))
      .map((a) => String(a.alertname));
    const alerts = rules.groups.flatMap((g) => g.rules.map((x) => String(x.alert)));
    expect([...new Set(tested)].sort()).toEqual([...alerts].sort());
  });

  test('the alerts of issue [J] 5: chip Unhealthy for > N min, manually separated, not registered, ConfigMap writes failing, no leader', () => {
    const alerts = new Map(rules.groups.flatMap((g) => g.rules.map((r) => [String(r.alert), r] as const)));
    expect([...alerts.keys()].sort()).toEqual(
      expect.arrayContaining([
        'AscendAgentNotRegistered',
        'AscendChipManuallySeparated',
        'AscendChipUnhealthy',
        'AscendConfigMapWritesFailing',
        'AscendFaultCenterNoLeader',
      ]),
    );
    expect(exprUse(String(alerts.get('AscendChipUnhealthy')!.expr)).selectors[0]!.metric).toBe(
      'ascend_npu_agent_chip_health',
    );
    expect(String(alerts.get('AscendChipUnhealthy')!.for)).toMatch(/^\d+m$/);
    for (const r of alerts.values()) expect(r.annotations?.summary).toEqual(expect.any(String));
  });

  test('the PrometheusRule is the rules file (else run deploy/render.sh)', () => {
    expect(one('PrometheusRule').spec).toEqual(rules);
  });
});

describe('issue [J] 5 the monitoring objects reach what they scrape', () => {
  const agentDs = one('DaemonSet', docsOf('deploy/rendered/910.yaml'));
  const center = one('Deployment', docsOf('deploy/rendered/fault-center.yaml'));

  test('the PodMonitor selects the agent pods of every pool in their namespace, on the container port it names', () => {
    const pm = one('PodMonitor');
    expect(pm.spec.namespaceSelector.matchNames).toEqual([agentDs.metadata.namespace]);
    for (const o of ['910', '310p', 'volcano', '310p-volcano']) {
      const ds = one('DaemonSet', docsOf(`deploy/rendered/${o}.yaml`));
      expect(ds.spec.template.metadata.labels).toMatchObject(pm.spec.selector.matchLabels);
    }
    const ports = (agentDs.spec.template.spec.containers[0].ports as Obj[]).map((p) => p.name);
    for (const e of pm.spec.podMetricsEndpoints as Obj[]) expect(ports).toContain(e.port);
  });

  test('the ServiceMonitor selects the metrics Service, which reaches every fault-center pod, Ready or not', () => {
    const sm = one('ServiceMonitor');
    const svc = monitoring.find((d) => d.kind === 'Service' && d.metadata.name === 'ascend-fault-center-metrics')!;
    expect(svc.metadata.labels).toMatchObject(sm.spec.selector.matchLabels);
    expect(sm.spec.namespaceSelector.matchNames).toEqual([svc.metadata.namespace]);
    expect(svc.metadata.namespace).toBe(center.metadata.namespace);
    expect(center.spec.template.metadata.labels).toMatchObject(svc.spec.selector);
    expect(svc.spec.publishNotReadyAddresses).toBe(true); // a standby is never Ready (docs/fault-center.md)
    const ports = (center.spec.template.spec.containers[0].ports as Obj[]).map((p) => p.name);
    for (const p of svc.spec.ports as Obj[]) expect(ports).toContain(p.targetPort);
    for (const e of sm.spec.endpoints as Obj[]) expect((svc.spec.ports as Obj[]).map((p) => p.name)).toContain(e.port);
  });

  /**
   * The Prometheus Operator's fields these objects use (monitoring.coreos.com/v1 PodMonitor, ServiceMonitor,
   * PrometheusRule; kubernetes-models has no CRD schemas): a misspelt field would be dropped by the API server.
   */
  const CRD_FIELDS: Readonly<Record<string, readonly string[]>> = {
    PodMonitor: [
      'spec.selector.matchLabels',
      'spec.namespaceSelector.matchNames[]',
      'spec.podMetricsEndpoints[].port',
      'spec.podMetricsEndpoints[].path',
      'spec.podMetricsEndpoints[].interval',
      'spec.podMetricsEndpoints[].honorLabels',
      'spec.podMetricsEndpoints[].relabelings[].action',
      'spec.podMetricsEndpoints[].relabelings[].sourceLabels[]',
      'spec.podMetricsEndpoints[].relabelings[].targetLabel',
    ],
    ServiceMonitor: [
      'spec.selector.matchLabels',
      'spec.namespaceSelector.matchNames[]',
      'spec.endpoints[].port',
      'spec.endpoints[].path',
      'spec.endpoints[].interval',
    ],
    PrometheusRule: [
      'spec.groups[].name',
      'spec.groups[].rules[].alert',
      'spec.groups[].rules[].expr',
      'spec.groups[].rules[].for',
      'spec.groups[].rules[].labels',
      'spec.groups[].rules[].annotations',
    ],
  };
  const MAPS = new Set([
    'spec.selector.matchLabels',
    'spec.groups[].rules[].labels',
    'spec.groups[].rules[].annotations',
  ]);

  function fieldPaths(v: unknown, at: string): string[] {
    if (MAPS.has(at)) return [at];
    if (Array.isArray(v)) return v.flatMap((x) => fieldPaths(x, `${at}[]`));
    if (typeof v === 'object' && v !== null) {
      return Object.entries(v).flatMap(([k, x]) => fieldPaths(x, at === '' ? k : `${at}.${k}`));
    }
    return [at];
  }

  test.each(Object.keys(CRD_FIELDS).map((k) => [k]))(
    '%s: only the fields of monitoring.coreos.com/v1 it should have',
    (kind) => {
      const d = one(kind);
      expect(d.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(Object.keys(d.metadata).sort()).toEqual(['labels', 'name', 'namespace']);
      const unknown = fieldPaths(d.spec, 'spec').filter((p) => !CRD_FIELDS[kind]!.includes(p));
      expect(unknown).toEqual([]);
    },
  );

  test('the dashboard ConfigMap is the dashboard file, labelled for the Grafana sidecar', () => {
    const cm = monitoring.find((d) => d.kind === 'ConfigMap')!;
    expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(JSON.parse(String(cm.data['ascend-npu.json']))).toEqual(dashboard);
  });

  test('the dashboard has a node overview and per-chip panels (series by chip)', () => {
    const rows = (dashboard.panels as Obj[]).filter((p) => p.type === 'row').map((p) => p.title);
    expect(rows).toEqual(expect.arrayContaining(['Nodes', 'Chips']));
    const perChip = dashboardUses(dashboard).filter((u) =>
      exprUse(u.expr).selectors.some((s) => s.matchers.some((m) => m.label === 'chip')),
    );
    expect(perChip.length).toBeGreaterThan(0);
  });
});

describe('issue [J] 5 every series and label of the dashboard and the rules is on the real /metrics pages', () => {
  let sb: AgentSandbox;
  let center: AgentProcess | undefined;
  let agentPage: Exposition;
  let centerPage: Exposition;

  beforeAll(async () => {
    sb = await AgentSandbox.create(undefined, { prefix: 'npu-it-monitoring-' });
    await sb.start();
    // a fault, so that the per-chip fault series exist, and the ConfigMap write that follows it
    await sb.mock({ op: 'fault', logicId: 3, eventId: SEPARATE_CODE, assertion: 'occur' });
    await sb.until(
      () => listed(deviceList(sb)?.[UNHEALTHY_KEY], 'Ascend910-3'),
      'Ascend910-3 Unhealthy in the ConfigMap',
    );
    agentPage = parseExposition(await sb.metrics());
    center = new AgentProcess(
      spawn(
        process.execPath,
        [
          FAULT_CENTER_JS,
          `-kubeconfig=${sb.kubeconfig}`,
          '-metricsAddress=127.0.0.1:0',
          '-grpcAddress=127.0.0.1:0',
          `-stateDir=${path.join(sb.dir, 'fault-center')}`,
          '-identity=it-monitoring',
        ],
        { env: { PATH: process.env.PATH } },
      ),
    );
    const c = center;
    const line = await sb.until(
      () => c.logs().find((l) => l.msg === 'metrics listening'),
      `the fault center serving /metrics (${c.stderr})`,
      20_000,
    );
    const res = await fetch(`http://127.0.0.1:${String(line.port)}/metrics`, { signal: AbortSignal.timeout(10_000) });
    centerPage = parseExposition(await res.text());
  }, 90_000);

  afterAll(async () => {
    await center?.kill();
    await sb?.close();
  });

  function sources(): (metric: string) => Source {
    const pm = one('PodMonitor');
    const sm = one('ServiceMonitor');
    // the fault center's families without a sample yet (a counter never incremented): the labels it registers
    const registry = new Registry();
    new FaultCenterMetrics(registry);
    const declared = new Map(
      registry.getMetricsAsArray().map((m) => [m.name, new Set((m as unknown as { labelNames: string[] }).labelNames)]),
    );
    const agent: Source = {
      name: 'agent',
      page: agentPage,
      targetLabels: targetLabelsOf(pm),
      declared: () => undefined,
    };
    const fc: Source = {
      name: 'fault center',
      page: centerPage,
      targetLabels: targetLabelsOf(sm),
      declared: (m) => declared.get(m) ?? declared.get(m.replace(/_total$/, '')),
    };
    return (metric) => (metric.startsWith('ascend_fault_center_') ? fc : agent);
  }

  test('the dashboard: every panel query and variable', () => {
    const uses = dashboardUses(dashboard);
    expect(uses.length).toBeGreaterThan(10);
    expect(problemsOf(uses, sources())).toEqual([]);
  });

  test('the alert rules: every expression, and the labels their annotations show', () => {
    const uses = ruleUses(rules);
    expect(uses.length).toBe(rules.groups.flatMap((g) => g.rules).length);
    expect(problemsOf(uses, sources())).toEqual([]);
  });
});
