/** `/_sandbox/*`: inspection and control for tests; no auth, loopback callers only. */
import type { FastifyInstance } from 'fastify';
import { redactConfig } from '../config.js';
import type { SandboxContext } from '../context.js';
import { HttpError, readJson } from '../http.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

export interface ControlActions {
  configure(patch: unknown): void;
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
      const queryId = (request.query as Record<string, unknown>).query_id;
      if (queryId !== undefined && typeof queryId !== 'string')
        throw new HttpError(400, 'query_id: must be given once');
      const now = Date.now();
      const items = [];
      for (const s of ctx.submissions.all()) {
        if (queryId !== undefined && s.queryId !== queryId) continue;
        items.push({
          id: s.id,
          query_id: s.queryId,
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

    scope.get('/_sandbox/config', async () => redactConfig(ctx.config()));

    scope.post('/_sandbox/config', async (request) => {
      actions.configure((await readJson(request, true)) as unknown);
      return redactConfig(ctx.config());
    });

    scope.post('/_sandbox/reset', async (_request, reply) => {
      ctx.stats.reset();
      return reply.code(204).send();
    });
  });
}
