/**
 * `connector.startFrom`: where a group starts on input partitions it never committed (the connector's
 * first contact with a topic's history, `connector/first-contact.ts`). Parsed here so that
 * `config check` refuses a value the connector could not use.
 */

export type StartFrom =
  | { kind: 'guarded'; limit: number }
  | { kind: 'earliest' }
  | { kind: 'latest' }
  | { kind: 'timestamp'; at: number };

/** Reads `connector.startFrom` and `connector.firstStartBacklogLimit`; throws on a value it cannot use. */
export function parseStartFrom(value: string, limit: number): StartFrom {
  const v = value.trim();
  if (v === '') return { kind: 'guarded', limit };
  if (v === 'earliest' || v === 'latest') return { kind: v };
  // A date alone or a date and time; Date.parse takes more shapes than ISO-8601, so the shape is checked.
  const at = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(at))
    throw new Error(
      `connector.startFrom: expected earliest, latest or an ISO-8601 timestamp (2026-01-31T00:00:00Z), got '${v}'`,
    );
  return { kind: 'timestamp', at };
}
