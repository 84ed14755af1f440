/**
 * What every client's check program shares: the list of checks (what docstream needs from a Kafka
 * client), how one check runs (a time bound, its outcome: pass, fail or not supported with the
 * reason), the settings the runner hands each program, and the report it prints.
 *
 * A program is started by ./run.ts with one argument, a JSON file of CheckSettings; it prints one
 * line per check on stderr as it goes and, last, one line of JSON (a ClientReport) on stdout.
 */
import fs from 'node:fs';
import type { SecureListeners } from '../../src/stack/secure.js';

/** The checks, in the table's order: the id and what it shows. */
export const CHECKS = [
  ['group.assignor', 'consumer group with a custom or cooperative-sticky assignor'],
  ['group.rebalance-hold', 'a rebalance listener that holds the rejoin until its work is done'],
  ['pause-resume', 'pause and resume one partition of a topic'],
  ['txn.offsets', 'transaction with the consumer offsets sent in it (read_committed sees it)'],
  ['txn.fencing', 'a zombie fenced by a new producer of the same transactional id'],
  ['idempotent', 'idempotent producer'],
  ['headers', 'record headers, binary values and a repeated key'],
  ['compression.gzip', 'gzip batches written and read'],
  ['compression.snappy', 'snappy batches written and read'],
  ['compression.lz4', 'lz4 batches written and read'],
  ['compression.zstd', 'zstd batches written and read'],
  ['admin.topics', 'create and delete topics'],
  ['admin.list-offsets', 'list earliest, latest and by-time offsets'],
  ['admin.groups', 'list and describe groups'],
  ['admin.group-offsets', 'fetch and reset a group’s offsets'],
  ['admin.configs', 'describe a topic’s configs'],
  ['admin.acls', 'create and describe ACLs (a broker with an authorizer)'],
  ['sasl.scram-tls', 'SASL SCRAM-SHA-512 over TLS with a private CA'],
  ['tls.mutual', 'mutual TLS with a client certificate'],
  ['sasl.oauthbearer', 'OAUTHBEARER with a token provider (OIDC client credentials)'],
] as const;

export type CheckId = (typeof CHECKS)[number][0];
export type Status = 'pass' | 'fail' | 'not supported';

export interface CheckResult {
  id: CheckId;
  status: Status;
  reason: string;
  ms: number;
}

export interface ClientReport {
  client: string;
  version: string;
  results: CheckResult[];
}

export interface CheckSettings {
  /** The plain listener of the local stack. */
  brokers: string[];
  /** A broker with Kafka's authorizer on (its plain listener a super user's); absent: not run. */
  aclBrokers?: string[];
  /** Every topic and group a program makes starts with this (the runner deletes what is left). */
  prefix: string;
  secure: SecureListeners;
  /** The OIDC token endpoint for OAUTHBEARER (client credentials: secure.oauth's client). */
  tokenUrl: string;
  /** The bound of one check. */
  checkTimeoutMs: number;
  /** The client's installed package, for the clients that are not docstream's dependencies. */
  module?: string;
  /** Run only these checks (the others are reported as not run, a fail). */
  only?: string[];
}

/** A check's answer that the client cannot do it: the reason says what is missing. */
export class NotSupported extends Error {}

/** A failed expectation inside a check. */
export function expect(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

export function readSettings(): CheckSettings {
  return JSON.parse(fs.readFileSync(process.argv[2] as string, 'utf8')) as CheckSettings;
}

/** The error's message on one line, with anything that looks like a secret of the settings hidden. */
function reasonOf(err: unknown, s: CheckSettings): string {
  let text = err instanceof Error ? err.message || err.name : String(err);
  // Errors that gather the broker's answers (AggregateError and the like) name them.
  const inner = (err as { errors?: unknown[] }).errors;
  if (Array.isArray(inner) && inner.length)
    text += `: ${inner.map((e) => (e as { apiId?: string; message?: string }).apiId ?? (e as Error).message).join(', ')}`;
  for (const secret of [
    s.secure.scramTls.password,
    s.secure.oauth.clientSecret,
    s.secure.scramTls.operator?.password,
  ])
    if (secret) text = text.split(secret).join('<redacted>');
  return text.replace(/\s+/g, ' ').slice(0, 300);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `ready` is true, at most `ms`. */
export async function waitFor(what: string, ready: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** An access token for OAUTHBEARER from the stack's OIDC endpoint (client credentials). */
export async function fetchToken(s: CheckSettings): Promise<{ value: string; expiresInS: number }> {
  const basic = Buffer.from(`${s.secure.oauth.clientId}:${s.secure.oauth.clientSecret}`).toString('base64');
  const reply = await fetch(s.tokenUrl, {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=kafka',
  });
  if (!reply.ok) throw new Error(`token endpoint answered ${reply.status}`);
  const body = (await reply.json()) as { access_token: string; expires_in: number };
  return { value: body.access_token, expiresInS: body.expires_in };
}

/**
 * Runs each check with its bound, in CHECKS's order, then `cleanup` (bounded too), prints the
 * report and exits. A check missing from `checks` is reported as not written, a fail.
 */
export async function runChecks(
  client: string,
  version: string,
  s: CheckSettings,
  checks: Partial<Record<CheckId, () => Promise<string | void>>>,
  cleanup: () => Promise<void>,
): Promise<never> {
  const results: CheckResult[] = [];
  for (const [id] of CHECKS) {
    const started = Date.now();
    const check = checks[id];
    let result: Omit<CheckResult, 'ms'>;
    if (s.only && !s.only.includes(id)) result = { id, status: 'fail', reason: 'not run (--only)' };
    else if (!check) result = { id, status: 'fail', reason: 'no check written for this client' };
    else {
      let timer: NodeJS.Timeout | undefined;
      try {
        const note = await Promise.race([
          check(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`timed out after ${s.checkTimeoutMs / 1000} s`)),
              s.checkTimeoutMs,
            );
          }),
        ]);
        result = { id, status: 'pass', reason: note ?? '' };
      } catch (err) {
        result = {
          id,
          status: err instanceof NotSupported ? 'not supported' : 'fail',
          reason: reasonOf(err, s),
        };
      } finally {
        clearTimeout(timer);
      }
    }
    results.push({ ...result, ms: Date.now() - started });
    process.stderr.write(`${client} ${id}: ${result.status}${result.reason ? ` (${result.reason})` : ''}\n`);
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    cleanup().catch((err: unknown) => process.stderr.write(`${client} cleanup: ${reasonOf(err, s)}\n`)),
    new Promise((resolve) => (timer = setTimeout(resolve, s.checkTimeoutMs))),
  ]);
  clearTimeout(timer);
  process.stdout.write(`${JSON.stringify({ client, version, results } satisfies ClientReport)}\n`);
  process.exit(0);
}
