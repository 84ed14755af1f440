/** Counters behind `GET /_sandbox/stats`; reset by `POST /_sandbox/reset`. */
export interface SandboxStats {
  submissionsCreated: number;
  uploads: number;
  /** Uploads whose bytes were inspected; an upload of bytes inspected before reuses their facts. */
  inspections: number;
  /** Keyed "METHOD /route/pattern STATUS", e.g. "GET /v2/submission/:id/fraud 200". */
  requests: Record<string, number>;
  rateLimited: number;
  webhooksSent: number;
  webhooksAcknowledged: number;
  droppedConnections: number;
  /** Submissions created per query_id (null query ids are not counted). */
  submissionsByQueryId: Record<string, number>;
}

/** Distinct query ids counted before further ones are ignored, to bound memory. */
const MAX_QUERY_IDS = 100_000;

export class StatsCollector {
  private stats: SandboxStats = StatsCollector.empty();
  private queryIds = 0;

  static empty(): SandboxStats {
    return {
      submissionsCreated: 0,
      uploads: 0,
      inspections: 0,
      requests: {},
      rateLimited: 0,
      webhooksSent: 0,
      webhooksAcknowledged: 0,
      droppedConnections: 0,
      submissionsByQueryId: {},
    };
  }

  submissionCreated(queryId: string | null): void {
    this.stats.submissionsCreated++;
    if (queryId === null) return;
    const counts = this.stats.submissionsByQueryId;
    if (counts[queryId] === undefined) {
      if (this.queryIds >= MAX_QUERY_IDS) return;
      this.queryIds++;
      counts[queryId] = 0;
    }
    counts[queryId]++;
  }

  request(key: string): void {
    this.stats.requests[key] = (this.stats.requests[key] ?? 0) + 1;
  }

  increment(
    counter:
      | 'uploads'
      | 'inspections'
      | 'rateLimited'
      | 'webhooksSent'
      | 'webhooksAcknowledged'
      | 'droppedConnections',
  ): void {
    this.stats[counter]++;
  }

  snapshot(): SandboxStats {
    return structuredClone(this.stats);
  }

  reset(): void {
    this.stats = StatsCollector.empty();
    this.queryIds = 0;
  }
}
