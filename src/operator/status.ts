/**
 * `docstream status`: what the connector's group is doing now. From Kafka: the group's members,
 * each member's input partitions and their lag (end offset minus the group's committed offset).
 * From each member's metrics endpoint, where reachable: documents in flight (and the limit), the
 * API share (`docstream_api_limiter_ceiling`), the limiter's current rate, readiness, and per tenant of
 * the tenant directory its documents in flight and its limiter's rate.
 *
 * How a member's endpoint is found: a member announces `http.host:http.port` in its join's user data
 * (`sticky-assignor.ts`, when `http.port` is fixed); a host of 0.0.0.0 or :: (listening everywhere)
 * is replaced by the address the broker sees the member connect from. `--metrics` names endpoints
 * instead, matched to members by host (for port-forwards or members that do not announce one).
 */
import type { Config } from '../config/index.js';
import type { KafkaAdmin } from '../kafka/admin.js';
import { table } from './dead-letter-report.js';

interface MemberMetrics {
  url: string;
  reachable: boolean;
  error?: string;
  in_flight?: number;
  in_flight_limit?: number;
  api_share_per_second?: number;
  limiter_rate_per_second?: number;
  /** The API's limit as the member found it at its last 429 (absent before one). */
  api_limit_found_per_second?: number;
  /** 1 while the API answers the member, 0 while it is unavailable (input paused). */
  api_available?: boolean;
  /** 429s the member was answered. */
  api_refused?: number;
  ready?: boolean;
  /** Per tenant of the tenant directory: its documents in flight and its limiter's rate. */
  tenants?: Record<string, { in_flight?: number; waiting?: number; limiter_rate_per_second?: number }>;
}

interface MemberStatus {
  member_id: string;
  client_id: string;
  host: string;
  partitions: number[];
  lag: number;
  metrics: MemberMetrics | null;
}

interface PartitionStatus {
  partition: number;
  owner: string | null;
  end: string;
  committed: string | null;
  lag: number;
}

export interface GroupStatus {
  group: string;
  topic: string;
  state: string;
  protocol: string;
  members: MemberStatus[];
  partitions: PartitionStatus[];
  unassigned: number[];
  total_lag: number;
}

/** The first sample of `name` (any labels) in a Prometheus text exposition, or undefined. */
export function promValue(text: string, name: string): number | undefined {
  const re = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'm');
  const m = re.exec(text);
  if (!m) return undefined;
  const v = Number(m[1]);
  return Number.isNaN(v) ? undefined : v;
}

export function metricsOf(url: string, text: string): MemberMetrics {
  const out: MemberMetrics = { url, reachable: true };
  const set = <K extends keyof MemberMetrics>(key: K, value: MemberMetrics[K] | undefined) => {
    if (value !== undefined) out[key] = value;
  };
  set('in_flight', promValue(text, 'docstream_documents_in_flight'));
  set('in_flight_limit', promValue(text, 'docstream_documents_in_flight_limit'));
  set('api_share_per_second', promValue(text, 'docstream_api_limiter_ceiling'));
  set('limiter_rate_per_second', promValue(text, 'docstream_api_limiter_rate'));
  const found = promValue(text, 'docstream_api_limit_found');
  if (found !== undefined && found > 0) out.api_limit_found_per_second = found;
  const available = promValue(text, 'docstream_api_available');
  if (available !== undefined) out.api_available = available === 1;
  set('api_refused', promValue(text, 'docstream_api_rate_limited_total'));
  const ready = promValue(text, 'docstream_ready');
  if (ready !== undefined) out.ready = ready === 1;
  const tenants: NonNullable<MemberMetrics['tenants']> = {};
  for (const [metric, key] of [
    ['docstream_tenant_documents_in_flight', 'in_flight'],
    ['docstream_tenant_documents_waiting', 'waiting'],
    ['docstream_tenant_limiter_rate', 'limiter_rate_per_second'],
  ] as const) {
    for (const m of text.matchAll(new RegExp(`^${metric}\\{tenant="([^"]*)"\\}\\s+(\\S+)`, 'gm'))) {
      const value = Number(m[2]);
      if (!Number.isNaN(value)) (tenants[m[1]!] ??= {})[key] = value;
    }
  }
  if (Object.keys(tenants).length > 0) out.tenants = tenants;
  return out;
}

/** The URL of a member's /metrics from what it announced, or null. */
export function metricsUrl(advertised: string | null, clientHost: string): string | null {
  if (!advertised) return null;
  const m = /^(.*):(\d+)$/.exec(advertised);
  if (!m) return null;
  let host = m[1]!.replace(/^\[|\]$/g, '');
  if (host === '' || host === '0.0.0.0' || host === '::') host = clientHost;
  return `http://${host.includes(':') ? `[${host}]` : host}:${m[2]}/metrics`;
}

async function scrape(url: string, timeoutMs: number): Promise<MemberMetrics> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return { url, reachable: false, error: `HTTP ${res.status}` };
    return metricsOf(url, await res.text());
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { url, reachable: false, error: cause ?? (err as Error).message };
  }
}

export async function groupStatus(
  admin: KafkaAdmin,
  config: Config,
  options: { metrics?: boolean; endpoints?: string[]; timeoutMs?: number } = {},
): Promise<GroupStatus> {
  const group = config.kafka.groupId;
  const topic = config.topics.arrived;
  const [members, ends, committed] = await Promise.all([
    admin.describeGroupMembers(group),
    admin.topicOffsets(topic),
    admin.groupOffsets(group, topic),
  ]);
  const ownerOf = new Map<number, string>();
  for (const m of members.members) for (const p of m.assignment[topic] ?? []) ownerOf.set(p, m.memberId);
  const partitions: PartitionStatus[] = ends.map((e) => {
    const at = committed.get(e.partition) ?? null;
    // No commit yet: the group starts at the log start (the connector reads from the beginning).
    const lag = Number(BigInt(e.high) - BigInt(at ?? e.low));
    return {
      partition: e.partition,
      owner: ownerOf.get(e.partition) ?? null,
      end: e.high,
      committed: at,
      lag: Math.max(0, lag),
    };
  });
  const lagOf = new Map(partitions.map((p) => [p.partition, p.lag]));
  const explicit = options.endpoints ?? [];
  const statuses = await Promise.all(
    members.members.map(async (m): Promise<MemberStatus> => {
      const mine = m.assignment[topic] ?? [];
      const given = explicit.find((e) => e.split(':')[0] === m.clientHost);
      const url = given ? `http://${given}/metrics` : metricsUrl(m.advertised, m.clientHost);
      const metrics =
        options.metrics === false || url === null ? null : await scrape(url, options.timeoutMs ?? 2000);
      return {
        member_id: m.memberId,
        client_id: m.clientId,
        host: m.clientHost,
        partitions: mine,
        lag: mine.reduce((sum, p) => sum + (lagOf.get(p) ?? 0), 0),
        metrics,
      };
    }),
  );
  return {
    group,
    topic,
    state: members.state,
    protocol: members.protocol,
    members: statuses,
    partitions,
    unassigned: partitions.filter((p) => p.owner === null).map((p) => p.partition),
    total_lag: partitions.reduce((sum, p) => sum + p.lag, 0),
  };
}

const num = (v: number | undefined, digits = 0) => (v === undefined ? '-' : v.toFixed(digits));

/** A compact list of partition numbers: 0-3,7. */
function ranges(list: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < list.length;) {
    let j = i;
    while (j + 1 < list.length && list[j + 1] === list[j]! + 1) j++;
    out.push(i === j ? String(list[i]) : `${list[i]}-${list[j]}`);
    i = j + 1;
  }
  return out.join(',') || '-';
}

export function formatStatus(s: GroupStatus): string {
  const lines = [
    `group ${s.group} on ${s.topic}: ${s.state}, ${s.members.length} member(s), protocol ${s.protocol || '-'}, lag ${s.total_lag}`,
  ];
  if (s.members.length > 0) {
    const rows = [
      [
        'member',
        'host',
        'partitions',
        'lag',
        'in flight',
        'api share/s',
        'limiter/s',
        'found/s',
        'api',
        'ready',
      ],
    ];
    for (const m of s.members) {
      const x = m.metrics;
      const unreachable = x && !x.reachable ? `unreachable (${x.error ?? '?'})` : null;
      rows.push([
        `${m.client_id} ${m.member_id.slice(-8)}`,
        m.host,
        ranges(m.partitions),
        String(m.lag),
        unreachable ?? (x ? `${num(x.in_flight)}/${num(x.in_flight_limit)}` : 'no endpoint'),
        unreachable ? '' : num(x?.api_share_per_second, 1),
        unreachable ? '' : num(x?.limiter_rate_per_second, 1),
        unreachable ? '' : num(x?.api_limit_found_per_second, 1),
        unreachable || !x || x.api_available === undefined ? '' : x.api_available ? 'up' : 'DOWN',
        unreachable || !x ? '' : x.ready === undefined ? '-' : x.ready ? 'yes' : 'NO',
      ]);
    }
    lines.push(table(rows));
    for (const m of s.members) {
      const tenants = m.metrics?.tenants;
      if (!tenants) continue;
      const each = Object.entries(tenants)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(
          ([name, t]) =>
            `${name} ${num(t.in_flight)} in flight${t.waiting ? `, ${num(t.waiting)} waiting for its share` : ''}, limiter ${num(t.limiter_rate_per_second, 1)}/s`,
        );
      lines.push(`tenants of ${m.client_id} ${m.member_id.slice(-8)}: ${each.join('; ')}`);
    }
  }
  lines.push(
    `partitions: ${s.partitions.map((p) => `${p.partition}:${p.lag}`).join(' ')} (partition:lag)` +
      (s.unassigned.length > 0 ? `; unassigned ${ranges(s.unassigned)}` : ''),
  );
  return lines.join('\n');
}
