/** Result endpoints (fraud, quality, classification, content), Adaptive Decision and the report. */
import type { FastifyInstance } from 'fastify';
import { RESULT_KINDS, RESULT_STATUSES, SCOPES, type ResultKind } from '../../api/schemas.js';
import { withoutIndicatorMetadata } from '../analysis/rules.js';
import type { SandboxContext } from '../context.js';
import { booleanQuery, HttpError, requestBaseUrl, requireJsonIfBody } from '../http.js';
import { renderReport } from '../report.js';
import { ADAPTIVE_DECISION_VERSION, type Json, type Submission } from '../submissions.js';
import { findSubmission, ID } from './submissions.js';

const DECISION_INPUTS = ['fraud'] as const;

function readyResult(s: Submission, kind: ResultKind, now = Date.now()): Json | null {
  const result = s.results[kind];
  return result && result.readyAt <= now ? result.body : null;
}

function decisionBody(s: Submission, embed: readonly string[]): Json | null {
  const d = s.decision;
  if (!d || d.readyAt > Date.now()) return null;
  const fraud = s.results.fraud?.body ?? null;
  const inputs = {
    fraud: { url: `/v2/submission/${s.id}/fraud`, data: embed.includes('fraud') ? fraud : null },
  };
  const body: Json = { status: d.status, adaptive_decision_version: ADAPTIVE_DECISION_VERSION };
  if (d.message) body.message = d.message;
  if (d.decision) body.decision = d.decision;
  body.decision_inputs = inputs;
  body.reason = d.reason;
  body.query_id = s.queryId;
  return body;
}

export function registerResultRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  for (const kind of RESULT_KINDS) {
    app.get(`${ID}/${kind}`, { config: { scope: SCOPES.read } }, async (request) => {
      // The spec lists no 415 for classification, so only the others police a stray body.
      if (kind !== 'classification') requireJsonIfBody(request);
      const query = request.query as Record<string, unknown>;
      const withMetadata = kind === 'fraud' ? booleanQuery(query, 'with_metadata') : false;
      const submission = findSubmission(ctx, request);
      const body = readyResult(submission, kind);
      if (!body) throw new HttpError(404, `${kind} result of submission ${submission.id} is not ready yet`);
      return withMetadata ? body : withoutIndicatorMetadata(body);
    });
  }

  app.get(`${ID}/decision`, { config: { scope: SCOPES.read } }, async (request) => {
    requireJsonIfBody(request);
    const raw = (request.query as Record<string, unknown>).embed;
    if (raw !== undefined && typeof raw !== 'string') throw new HttpError(400, 'embed: must be given once');
    const embed = raw
      ? raw
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : [];
    const unknown = embed.filter((name) => !(DECISION_INPUTS as readonly string[]).includes(name));
    if (unknown.length > 0) {
      throw new HttpError(
        400,
        `embed: unknown decision input ${unknown.join(', ')}; known: ${DECISION_INPUTS.join(', ')}`,
      );
    }
    const submission = findSubmission(ctx, request);
    if (!submission.enableDecision) {
      throw new HttpError(400, `decision: submission ${submission.id} was created without enable_decision`);
    }
    const body = decisionBody(submission, embed);
    if (!body) throw new HttpError(404, `decision for submission ${submission.id} is not ready yet`);
    return body;
  });

  app.get(`${ID}/report`, { config: { scope: SCOPES.read } }, async (request) => {
    const includeDecision = booleanQuery(request.query as Record<string, unknown>, 'include_decision');
    const s = findSubmission(ctx, request);
    if (includeDecision && !s.enableDecision) {
      throw new HttpError(400, `include_decision: submission ${s.id} was created without enable_decision`);
    }
    const fraud = readyResult(s, 'fraud');
    if (!fraud) throw new HttpError(409, `report: fraud analysis of submission ${s.id} has not completed`);
    if (fraud.status !== RESULT_STATUSES.success) {
      throw new HttpError(409, `report: fraud analysis of submission ${s.id} ended ${String(fraud.status)}`);
    }
    if (s.enableDecision) {
      const decision = decisionBody(s, []);
      if (!decision)
        throw new HttpError(409, `report: Adaptive Decision of submission ${s.id} has not completed`);
      if (decision.status !== RESULT_STATUSES.success) {
        throw new HttpError(
          409,
          `report: Adaptive Decision of submission ${s.id} ended ${String(decision.status)}`,
        );
      }
    }
    const ttl = ctx.config().reportUrlTtlSeconds;
    const { expires, sig } = ctx.signer.sign('report', `${s.id}:${includeDecision ? 1 : 0}`, ttl);
    return {
      report_url: `${requestBaseUrl(ctx, request)}/_report/${s.id}?include_decision=${includeDecision}&expires=${expires}&sig=${sig}`,
      expires_at: new Date(expires * 1000).toISOString(),
    };
  });

  app.get('/_report/:id', async (request, reply) => {
    const { id } = request.params as { id: string };
    const query = request.query as Record<string, unknown>;
    const includeDecision = query.include_decision === 'true';
    const check = ctx.signer.check('report', `${id}:${includeDecision ? 1 : 0}`, query.expires, query.sig);
    if (check !== 'ok')
      throw new HttpError(403, `report URL is ${check === 'expired' ? 'expired' : 'not validly signed'}`);
    const found = ctx.submissions.get(id);
    const s = found?.cell === ctx.cell ? found : undefined;
    const fraud = s ? readyResult(s, 'fraud') : null;
    if (!s || !fraud) throw new HttpError(404, `submission ${id} does not exist`);
    const pdf = await renderReport({
      submissionId: s.id,
      queryId: s.queryId,
      fraud,
      decision: includeDecision ? decisionBody(s, []) : null,
    });
    return reply
      .type('application/pdf')
      .header('content-disposition', `attachment; filename="report-${s.id}.pdf"`)
      .send(Buffer.from(pdf));
  });
}
