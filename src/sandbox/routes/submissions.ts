/** Creating, describing (characteristics), deleting submissions, and customer feedback. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  FeedbackRequest,
  PATHS,
  SCOPES,
  SubmissionCharacteristics,
  SubmissionRequest,
  type FeedbackResponse,
} from '../../api/schemas.js';
import type { SandboxContext } from '../context.js';
import { HttpError, readJson, requestBaseUrl, requireJsonIfBody, validate } from '../http.js';
import type { Submission } from '../submissions.js';

export const ID = '/v2/submission/:id';

/**
 * The submission the path names, if the caller may see it: created in this cell by an application
 * of the caller's tenant. Any other is 404, as if it did not exist (docs/sandbox.md says why not 403).
 */
export function findSubmission(ctx: SandboxContext, request: FastifyRequest): Submission {
  const { id } = request.params as { id: string };
  const submission = ctx.submissions.get(id);
  if (
    !submission ||
    submission.cell !== ctx.cell ||
    submission.tenantId !== (request.grant?.tenantId ?? null)
  ) {
    throw new HttpError(404, `submission ${id} does not exist`);
  }
  return submission;
}

function uploadUrl(ctx: SandboxContext, request: FastifyRequest, id: string): string {
  const { expires, sig } = ctx.signer.sign('upload', id, ctx.config().uploadUrlTtlSeconds);
  return `${requestBaseUrl(ctx, request)}/_upload/${id}?expires=${expires}&sig=${sig}`;
}

export function registerSubmissionRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  app.post(PATHS.submission, { config: { scope: SCOPES.write } }, async (request) => {
    const body = validate(SubmissionRequest, (await readJson(request, false)) ?? {});
    const submission = ctx.submissions.create(
      request.grant?.clientId ?? '',
      {
        queryId: body.query_id ?? null,
        pipeline: body.pipeline_configuration ?? 'FRAUD_ONLY',
        enableDecision: body.enable_decision ?? false,
        enableCharacteristics: body.enable_submission_characteristics ?? false,
      },
      { tenantId: request.grant?.tenantId ?? null, cell: ctx.cell },
    );
    request.recordSubmissionId = submission.id;
    ctx.stats.submissionCreated(submission.queryId);
    const response: Record<string, string> = {
      upload_url: uploadUrl(ctx, request, submission.id),
      submission_id: submission.id,
    };
    if (submission.enableCharacteristics) {
      // The spec allows a relative path here; the sandbox uses one so clients must resolve it.
      response.submission_characteristics_upload_url = PATHS.characteristics(submission.id);
    }
    return response;
  });

  app.put(`${ID}/characteristics`, { config: { scope: SCOPES.write } }, async (request, reply) => {
    validate(SubmissionCharacteristics, await readJson(request, true));
    const submission = findSubmission(ctx, request);
    if (!submission.enableCharacteristics) {
      throw new HttpError(
        400,
        `characteristics: submission ${submission.id} was created without enable_submission_characteristics`,
      );
    }
    if (submission.analysisStarted) {
      throw new HttpError(400, `characteristics: analysis of submission ${submission.id} already started`);
    }
    // Only the fact that they arrived is kept: the sandbox stores no personal data it does not need.
    ctx.submissions.characteristicsReceived(submission);
    return reply.code(204).send();
  });

  app.delete(ID, { config: { scope: SCOPES.write } }, async (request, reply) => {
    requireJsonIfBody(request);
    const submission = findSubmission(ctx, request);
    const state = ctx.submissions.state(submission);
    if (state === 'processing' || state === 'uploading') {
      throw new HttpError(409, `submission ${submission.id} is being processed; retry the delete later`);
    }
    ctx.submissions.delete(submission);
    return reply.code(204).send();
  });

  app.put(`${ID}/feedback`, { config: { scope: SCOPES.write } }, async (request) => {
    const body = validate(FeedbackRequest, await readJson(request, true));
    const submission = findSubmission(ctx, request);
    const feedback: FeedbackResponse = {
      submission_id: submission.id,
      outcome: body.outcome,
      comment: body.comment ?? null,
      labels: body.labels ?? [],
      updated: new Date().toISOString(),
    };
    submission.feedback = feedback;
    return feedback;
  });

  app.get(`${ID}/feedback`, { config: { scope: SCOPES.read } }, async (request) => {
    requireJsonIfBody(request);
    const submission = findSubmission(ctx, request);
    if (!submission.feedback)
      throw new HttpError(404, `feedback for submission ${submission.id} does not exist`);
    return submission.feedback;
  });
}
