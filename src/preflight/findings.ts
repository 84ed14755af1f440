/**
 * What `docstream config check --connect` found, one finding per check: ok, missing (the connector
 * would fail or misbehave: the command exits non-zero) or warning (works, but risky). Each finding
 * names the part and the thing checked, and a missing one says what to change.
 */

export type FindingStatus = 'ok' | 'missing' | 'warning';

export type Part = 'config' | 'files' | 'kafka' | 'topics' | 'acls' | 'registry' | 'api' | 'blobs';

export interface Finding {
  part: Part;
  /** What was checked: a broker list, a topic, `Write on topic documents.fraud`, a subject. */
  subject: string;
  status: FindingStatus;
  /** What works, or what is missing and how to fix it. */
  detail: string;
}

export class Findings {
  readonly all: Finding[] = [];

  ok(part: Part, subject: string, detail: string): void {
    this.all.push({ part, subject, status: 'ok', detail });
  }

  missing(part: Part, subject: string, detail: string): void {
    this.all.push({ part, subject, status: 'missing', detail });
  }

  warning(part: Part, subject: string, detail: string): void {
    this.all.push({ part, subject, status: 'warning', detail });
  }

  get failed(): boolean {
    return this.all.some((f) => f.status === 'missing');
  }
}

/** One line per finding: `ok      topics    documents.fraud: 3 partitions, 3 replicas`. */
export function findingLines(findings: readonly Finding[]): string[] {
  return findings.map((f) => `${f.status.padEnd(8)}${f.part.padEnd(10)}${f.subject}: ${f.detail}`);
}

/** How many findings of each status, as the summary line says it. */
export function summaryOf(findings: readonly Finding[]): Record<FindingStatus, number> {
  const counts: Record<FindingStatus, number> = { ok: 0, missing: 0, warning: 0 };
  for (const f of findings) counts[f.status] += 1;
  return counts;
}

/** Resolves with `work`'s value, or rejects naming `what` once `ms` have passed without an answer. */
export async function bounded<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  work.catch(() => undefined);
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new NoAnswerError(what, ms)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export class NoAnswerError extends Error {
  override name = 'NoAnswerError';
  constructor(what: string, ms: number) {
    super(`${what}: no answer within ${Math.round(ms / 100) / 10} s`);
  }
}
