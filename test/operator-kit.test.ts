/**
 * The operator kit in deploy/: every metric the Grafana dashboard and the Prometheus alert rules
 * query must exist in the /metrics of a live `docstream run`, so a renamed metric cannot leave an
 * empty panel or an alert that never fires. promtool (Debian's `prometheus` package) also checks
 * the rules, runs their unit tests and parses every dashboard query, when it is installed.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sampleBytes } from '../src/demo/corpus.js';
import { E2E, arrival, waitFor } from './harness/e2e.js';

const DASHBOARD = path.resolve('deploy/grafana/docstream-dashboard.json');
const RULES = path.resolve('deploy/prometheus/docstream.rules.yml');
const RULES_TESTS = path.resolve('deploy/prometheus/docstream.rules.test.yml');

/** Series Prometheus makes itself rather than scraping them. */
const SYNTHETIC = new Set(['up']);

interface Panel {
  title?: string;
  type?: string;
  targets?: Array<{ expr?: string }>;
  panels?: Panel[];
}

function dashboardQueries(): { panel: string; expr: string }[] {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
    panels: Panel[];
    templating: { list: Array<{ name: string; definition?: string }> };
  };
  const out: { panel: string; expr: string }[] = [];
  const visit = (panels: Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        if (target.expr) out.push({ panel: panel.title ?? '?', expr: target.expr });
      }
      visit(panel.panels ?? []);
    }
  };
  visit(dashboard.panels);
  for (const variable of dashboard.templating.list) {
    const match = /^label_values\(([^,]+),/.exec(variable.definition ?? '');
    if (match) out.push({ panel: `variable ${variable.name}`, expr: match[1]!.trim() });
  }
  return out;
}

/** Each rule's expression; the file keeps every `expr:` on one line for this. */
function ruleQueries(): { alert: string; expr: string }[] {
  const out: { alert: string; expr: string }[] = [];
  let alert = '?';
  for (const line of fs.readFileSync(RULES, 'utf8').split('\n')) {
    const name = /^\s*- alert:\s*(\S+)/.exec(line);
    if (name) alert = name[1]!;
    const expr = /^\s*expr:\s*(.+)$/.exec(line);
    if (expr) out.push({ alert, expr: expr[1]!.trim() });
  }
  return out;
}

const NOT_METRICS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or']);

/** Metric names in a PromQL expression: identifiers that are not functions, keywords or labels. */
function metricNames(expr: string): string[] {
  const cleaned = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const match of cleaned.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = cleaned.slice(match.index + match[0].length).trimStart();
    if (after.startsWith('(') || NOT_METRICS.has(match[0]) || /^\d/.test(match[0])) continue;
    names.add(match[0]);
  }
  return [...names];
}

/** A metric is exposed if it has a sample, or is declared (`# TYPE`) with no labelled child yet. */
function exposed(scrape: string, name: string): boolean {
  if (new RegExp(`^${name}[{ ]`, 'm').test(scrape)) return true;
  return new RegExp(`^# TYPE ${name} `, 'm').test(scrape);
}

function promtool(args: string[], cwd?: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { cwd, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const hasPromtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('operator kit: dashboard and alert rules', () => {
  it('extracts metric names from PromQL (the check below relies on it)', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (stage, le) (rate(a_bucket{stage="x",instance=~"$i"}[$__rate_interval]))) / on (instance) group_left b_total and c > 0',
      ).sort(),
    ).toEqual(['a_bucket', 'b_total', 'c']);
  });

  it('covers what operators asked for', () => {
    const dashboard = new Set(dashboardQueries().flatMap((q) => metricNames(q.expr)));
    for (const name of [
      'docstream_documents_completed_total',
      'docstream_documents_in_flight',
      'docstream_consumer_lag',
      'docstream_stage_duration_seconds_bucket',
      'docstream_api_calls_total',
      'docstream_api_rate_limited_total',
      'docstream_api_limiter_rate',
      'docstream_documents_failed_total',
      'docstream_webhooks_received_total',
    ]) {
      expect([name, dashboard.has(name)]).toEqual([name, true]);
    }
    expect(ruleQueries().map((r) => r.alert)).toEqual([
      'DocstreamDown',
      'DocstreamNotReady',
      'DocstreamConsumerLagGrowing',
      'DocstreamDeadLetterRateHigh',
      'DocstreamApiRateLimited',
      'DocstreamInFlightAtLimit',
    ]);
  });

  describe('against a live docstream run', () => {
    const env = new E2E();
    let scrape = '';

    beforeAll(async () => {
      await env.start({ processing: { distribution: 'fixed', meanMs: 200 } });
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      env.spawnConnector({ http: { port } });
      let ready = false;
      await waitFor(
        'the ready endpoint',
        () => {
          void fetch(`${url}/readyz`)
            .then((r) => (ready = r.status === 200))
            .catch(() => undefined);
          return ready;
        },
        60_000,
      );
      // One document through and one dead-lettered, so labelled series have samples.
      const good = await env.writeFile('a.pdf', await sampleBytes('clean-pdf'));
      await env.produce([arrival('kit-1', good), '{ not json']);
      await waitFor(
        'a completed and a dead-lettered document in /metrics',
        () => {
          void fetch(`${url}/metrics`)
            .then((r) => r.text())
            .then((t) => (scrape = t))
            .catch(() => undefined);
          return (
            /^docstream_documents_completed_total\{outcome="done"\} 1$/m.test(scrape) &&
            /^docstream_documents_failed_total\{[^}]*\} 1$/m.test(scrape)
          );
        },
        90_000,
      );
      // The lag gauge refreshes every 5 s; wait until it has a sample too.
      await waitFor(
        'the consumer lag gauge',
        () => {
          void fetch(`${url}/metrics`)
            .then((r) => r.text())
            .then((t) => (scrape = t))
            .catch(() => undefined);
          return /^docstream_consumer_lag\{/m.test(scrape);
        },
        30_000,
      );
    });
    afterAll(async () => {
      await env.stop();
    });

    it('every metric the dashboard queries is in /metrics', () => {
      const missing = dashboardQueries().flatMap(({ panel, expr }) =>
        metricNames(expr)
          .filter((name) => !exposed(scrape, name))
          .map((name) => `${panel}: ${name}`),
      );
      expect(missing).toEqual([]);
    });

    it('every metric the alert rules query is in /metrics', () => {
      const missing = ruleQueries().flatMap(({ alert, expr }) =>
        metricNames(expr)
          .filter((name) => !SYNTHETIC.has(name) && !exposed(scrape, name))
          .map((name) => `${alert}: ${name}`),
      );
      expect(missing).toEqual([]);
      // The live values the alerts compare: ready, and an in-flight limit to compare with.
      expect(scrape).toMatch(/^docstream_ready 1$/m);
      expect(scrape).toMatch(/^docstream_documents_in_flight_limit 500$/m);
    });
  });

  it('promtool accepts the rules, their unit tests pass, and it parses every dashboard query', () => {
    if (!hasPromtool) {
      // promtool is optional (apt-get install prometheus); without it the checks above still hold.
      expect(ruleQueries().length).toBeGreaterThan(0);
      return;
    }
    const check = promtool(['check', 'rules', RULES]);
    expect([check.status, check.output]).toEqual([0, expect.stringContaining('SUCCESS: 6 rules found')]);
    const unit = promtool(['test', 'rules', path.basename(RULES_TESTS)], path.dirname(RULES_TESTS));
    expect([unit.status, unit.output]).toEqual([0, expect.stringContaining('SUCCESS')]);

    // Grafana's variables replaced by values Prometheus accepts; one recording rule per query.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-kit-'));
    const file = path.join(dir, 'dashboard.rules.yml');
    const rules = dashboardQueries().map(
      ({ expr }, i) =>
        `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(
          expr
            .replaceAll('$__rate_interval', '5m')
            .replaceAll('$__range', '1h')
            .replaceAll('$instance', '.*'),
        )}`,
    );
    fs.writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
    const queries = promtool(['check', 'rules', file]);
    fs.rmSync(dir, { recursive: true, force: true });
    expect([queries.status, queries.output]).toEqual([0, expect.stringContaining('SUCCESS')]);
  });
});
