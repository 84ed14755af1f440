/**
 * `/_sandbox/*`: inspection and control for tests; no auth, loopback callers only. Every listener
 * serves the same organisation-wide view (all cells' submissions, tenants and calls).
 */
import type { FastifyInstance } from 'fastify';
import type { Application } from '../../api/schemas.js';
import type { CallFilter } from '../call-record.js';
import { redactConfig } from '../config.js';
import type { SandboxContext } from '../context.js';
import { HttpError, readJson } from '../http.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

export interface ControlActions {
  configure(patch: unknown): void;
  /** Registers an application's credentials or rate limit; throws HttpError 400/404. */
  setApplication(clientId: string, patch: unknown): Application;
}

/** A query parameter given at most once, as a string. */
function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value !== undefined && typeof value !== 'string')
    throw new HttpError(400, `${name}: must be given once`);
  return value;
}

export function registerControlRoutes(
  app: FastifyInstance,
  ctx: SandboxContext,
  actions: ControlActions,
): void {
  app.register(async (scope) => {
    scope.addHook('onRequest', async (request) => {
      if (!LOOPBACK.has(request.socket.remoteAddress ?? '')) {
        throw new HttpError(403, '/_sandbox is only served to loopback clients');
      }
    });

    scope.get('/_sandbox/stats', async () => ctx.stats.snapshot());

    scope.get('/_sandbox/submissions', async (request) => {
      const query = request.query as Record<string, unknown>;
      const queryId = single(query, 'query_id');
      const tenantId = single(query, 'tenant_id');
      const cell = single(query, 'cell');
      const now = Date.now();
      const items = [];
      for (const s of ctx.submissions.all()) {
        if (queryId !== undefined && s.queryId !== queryId) continue;
        if (tenantId !== undefined && s.tenantId !== tenantId) continue;
        if (cell !== undefined && s.cell !== cell) continue;
        items.push({
          id: s.id,
          query_id: s.queryId,
          cell: s.cell,
          tenant_id: s.tenantId,
          client_id: s.clientId,
          created: new Date(s.created).toISOString(),
          state: ctx.submissions.state(s, now),
          sha256: s.sha256,
          pipeline_configuration: s.pipeline,
          enable_decision: s.enableDecision,
          // When each result is (or will be) final, for latency measurements from outside.
          ready_at: Object.fromEntries(
            Object.entries(s.results).map(([kind, r]) => [
              kind,
              r ? new Date(r.readyAt).toISOString() : null,
            ]),
          ),
          decision_ready_at: s.decision ? new Date(s.decision.readyAt).toISOString() : null,
        });
      }
      return { count: items.length, items };
    });

    scope.get('/_sandbox/calls', async (request) => {
      const query = request.query as Record<string, unknown>;
      const filter: CallFilter = {};
      const cell = single(query, 'cell');
      const tenantId = single(query, 'tenant_id');
      const clientId = single(query, 'client_id');
      const submissionId = single(query, 'submission_id');
      if (cell !== undefined) filter.cell = cell;
      if (tenantId !== undefined) filter.tenantId = tenantId;
      if (clientId !== undefined) filter.clientId = clientId;
      if (submissionId !== undefined) filter.submissionId = submissionId;
      return ctx.calls.list(filter);
    });

    scope.get('/_sandbox/tenants', async () => {
      const items = ctx.tenants.all().map((t) => ({
        id: t.id,
        name: t.name,
        cell: t.cell,
        applications: t.applications.map((a) => ({
          client_id: a.clientId,
          scopes: a.scopes,
          // What is registered, never the secret itself.
          client_secret: a.clientSecret !== undefined,
          kid: a.publicKeyPem === undefined ? null : a.kid,
          rate_limit: a.rateLimit === undefined ? 'default' : a.rateLimit,
        })),
      }));
      return { count: items.length, items };
    });

    scope.put('/_sandbox/applications/:clientId', async (request) => {
      const { clientId } = request.params as { clientId: string };
      return actions.setApplication(clientId, await readJson(request, true));
    });

    scope.get('/_sandbox/config', async () => redactConfig(ctx.config()));

    scope.post('/_sandbox/config', async (request) => {
      actions.configure((await readJson(request, true)) as unknown);
      return redactConfig(ctx.config());
    });

    scope.post('/_sandbox/reset', async (_request, reply) => {
      ctx.stats.reset();
      ctx.calls.reset();
      return reply.code(204).send();
    });
  });
}
