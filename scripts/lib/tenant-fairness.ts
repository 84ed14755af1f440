/**
 * The arithmetic of `npm run bench -- --mode tenants`, kept free of I/O so that it is unit-tested:
 * delay after ready per result (its record's Kafka timestamp minus the sandbox's `ready_at` for it),
 * percentiles and the contended/baseline ratio, and the rate a saturated tenant's application got
 * from the API over the window in which it had a backlog, from the sandbox's call record.
 */
import { percentile, round } from './harness.js';

/** What `GET /_sandbox/submissions` says of one submission (the fields used here). */
export interface ListedSubmission {
  query_id: string | null;
  created: string;
  ready_at: Record<string, string | null>;
}

/** One entry of `GET /_sandbox/calls` (the fields used here). */
export interface RecordedCall {
  at: string;
  method: string;
  route: string;
  status: number;
}

export interface DelayStats {
  count: number;
  p50: number;
  p95: number;
  max: number;
}

/** p50, p95 and max of `values` (ms, rounded); null for none. */
export function delayStats(values: number[]): DelayStats | null {
  if (values.length === 0) return null;
  return {
    count: values.length,
    p50: Math.round(percentile(values, 50)),
    p95: Math.round(percentile(values, 95)),
    max: Math.round(Math.max(...values)),
  };
}

/** contended / baseline, two decimals; null when either is missing or the baseline is not positive. */
export function ratio(
  contended: number | null | undefined,
  baseline: number | null | undefined,
): number | null {
  if (contended === null || contended === undefined || baseline === null || baseline === undefined)
    return null;
  if (!(baseline > 0)) return null;
  return round(contended / baseline, 2);
}

/**
 * Per result out on Kafka: its record's timestamp minus the time the sandbox made it ready. `out`
 * maps an event id (the submission's query id) to each result kind's first record timestamp.
 * Also, per document with every one of `kinds` out: its event's production time to its last result
 * record (end to end), and to its submission's creation (how long it waited to be admitted).
 */
export function documentDelays(
  submissions: ListedSubmission[],
  out: ReadonlyMap<string, ReadonlyMap<string, number>>,
  producedAt: ReadonlyMap<string, number>,
  kinds: readonly string[],
): { afterReady: number[]; endToEnd: number[]; toCreate: number[]; done: number } {
  const afterReady: number[] = [];
  const endToEnd: number[] = [];
  const toCreate: number[] = [];
  let done = 0;
  for (const s of submissions) {
    if (s.query_id === null) continue;
    const records = out.get(s.query_id);
    const produced = producedAt.get(s.query_id);
    if (produced !== undefined) toCreate.push(Date.parse(s.created) - produced);
    if (!records) continue;
    let last = 0;
    let all = true;
    for (const kind of kinds) {
      const at = records.get(kind);
      const ready = s.ready_at[kind];
      if (at === undefined || !ready) {
        all = false;
        continue;
      }
      afterReady.push(at - Date.parse(ready));
      last = Math.max(last, at);
    }
    if (!all) continue;
    done += 1;
    if (produced !== undefined) endToEnd.push(last - produced);
  }
  return { afterReady, endToEnd, toCreate, done };
}

/** Calls that count against an application's limit: the API's routes (not the token endpoint, not uploads). */
export const isLimitedCall = (c: RecordedCall): boolean => /^\/v[02](\/|$)/.test(c.route);

/** A create that the API accepted. */
export const isCreate = (c: RecordedCall): boolean =>
  c.method === 'POST' && c.route === '/v2/submission' && c.status >= 200 && c.status < 300;

export interface BacklogWindow {
  /** Epoch ms. */
  from: number;
  to: number;
  /** Why it ends where it does. */
  end: 'backlog created' | 'measurement ended';
}

/**
 * The window in which the tenant had documents still to create, less its ramp-up: from its first
 * limited call plus `rampUpMs` (its token, its limiter settling, the bucket's initial burst) to its
 * last accepted create when it created its whole backlog (after that only the GETs of its last
 * documents remain: the ramp-down, left out), else to `endedAt`, when the measurement stopped with
 * creates still waiting. Null when no window of at least `minMs` remains.
 */
export function backlogWindow(
  calls: RecordedCall[],
  o: { backlog: number; endedAt: number; rampUpMs: number; minMs: number },
): BacklogWindow | null {
  const limited = calls.filter(isLimitedCall);
  if (limited.length === 0) return null;
  const first = Math.min(...limited.map((c) => Date.parse(c.at)));
  const creates = limited.filter(isCreate).map((c) => Date.parse(c.at));
  const createdAll = creates.length >= o.backlog;
  const to = createdAll ? Math.max(...creates) : o.endedAt;
  const from = first + o.rampUpMs;
  if (to - from < o.minMs) return null;
  return { from, to, end: createdAll ? 'backlog created' : 'measurement ended' };
}

export interface AchievedRate {
  seconds: number;
  /** Limited calls the API accepted (any status but 429: a 404 of a result not ready counts too). */
  acceptedPerS: number;
  createsPerS: number;
  /** Calls answered 429 in the window. */
  refused: number;
  /** acceptedPerS as a percentage of `limitPerS`. */
  percentOfLimit: number;
}

/** What the application got over `window` (calls answered within it) against its limit of `limitPerS`. */
export function achievedRate(calls: RecordedCall[], window: BacklogWindow, limitPerS: number): AchievedRate {
  let accepted = 0;
  let creates = 0;
  let refused = 0;
  for (const c of calls) {
    if (!isLimitedCall(c)) continue;
    const at = Date.parse(c.at);
    if (at < window.from || at > window.to) continue;
    if (c.status === 429) refused += 1;
    else accepted += 1;
    if (isCreate(c)) creates += 1;
  }
  const seconds = Math.max(0.001, (window.to - window.from) / 1000);
  return {
    seconds: round(seconds, 1),
    acceptedPerS: round(accepted / seconds, 2),
    createsPerS: round(creates / seconds, 3),
    refused,
    percentOfLimit: round((100 * accepted) / seconds / limitPerS, 1),
  };
}
