/**
 * The sandbox's HTTP server, one per listener (the sandbox's own address, each served cell). Every
 * API request is handled in one fixed order: faults (latency, dropped connection), authenticate
 * with a token of this cell (401), throttle by the application's bucket (429), injected 5xx,
 * authorise the route's scope (403), then the route validates (400/415/413) and answers
 * (404/409/2xx). Each API, token and upload call is written to the call record.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { SandboxConfigError } from './config.js';
import type { SandboxContext } from './context.js';
import { capMessage, HttpError } from './http.js';
import { chance } from './random.js';
import { PATHS } from '../api/schemas.js';
import { formatRetryAfter } from './rate-limit.js';
import { registerControlRoutes, type ControlActions } from './routes/control.js';
import { registerResultRoutes } from './routes/results.js';
import { registerSubmissionRoutes } from './routes/submissions.js';
import { registerTenantRoutes } from './routes/tenants.js';
import { registerTokenRoute } from './routes/token.js';
import { registerUploadRoute } from './routes/upload.js';

/** Matched against the route the router chose, never the raw URL (which may percent-encode the prefix). */
const API_ROUTE = /^\/v[02](\/|$)/;
/** Routes written to the call record besides the API's: the token endpoint and the uploads. */
const RECORDED_ROUTES = new Set<string>([PATHS.token, '/_upload/:id']);

/**
 * A scope the route needs is granted by itself or by its name among an application's scopes,
 * which the spec spells with a `documents.` prefix (`documents.submissions.read`).
 */
export function hasScope(granted: readonly string[], scope: string): boolean {
  return granted.includes(scope) || granted.includes(`documents.${scope}`);
}

function tooMany(ctx: SandboxContext, reply: FastifyReply, waitMs: number, why: string): FastifyReply {
  ctx.stats.increment('rateLimited');
  return reply
    .code(429)
    .header('retry-after', formatRetryAfter(waitMs, ctx.config().retryAfterFormat))
    .send({ message: why });
}

async function gate(
  ctx: SandboxContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | void> {
  // `/%762/submission` reaches the `/v2/submission` route: the router decodes the path, so the
  // decision whether a request needs a token must be taken on the route it matched.
  const route = request.routeOptions.url;
  if (route === undefined || !API_ROUTE.test(route)) return;
  const config = ctx.config();
  if (config.faults.extraLatencyMs > 0) await sleep(config.faults.extraLatencyMs);
  if (chance(ctx.random(), config.faults.dropRate)) {
    ctx.stats.increment('droppedConnections');
    reply.hijack();
    request.raw.socket.destroy();
    return reply;
  }

  const header = request.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const grant = match ? ctx.auth.lookup(match[1] as string) : null;
  if (!grant) {
    const issuer = match ? ctx.cells.issuerOf(match[1] as string, ctx.cell) : null;
    const message = !match
      ? 'Authorization: a Bearer access token is required'
      : issuer
        ? `Authorization: the access token was issued by the token endpoint of cell ${issuer}; ` +
          `it is not valid in cell ${ctx.cell}`
        : 'Authorization: access token is invalid or expired';
    reply.header('www-authenticate', match ? 'Bearer error="invalid_token"' : 'Bearer');
    return reply.code(401).send({ message });
  }
  request.grant = grant;

  const now = Date.now();
  if (now < ctx.storm.until)
    return tooMany(ctx, reply, ctx.storm.until - now, 'too many requests (simulated 429 storm)');
  const limit = ctx.rateLimitOf(grant.clientId);
  if (limit) {
    const wait = ctx.limiter.take(grant.clientId, limit, now);
    if (wait > 0) {
      return tooMany(
        ctx,
        reply,
        wait,
        `too many requests: client ${grant.clientId} is limited to ${limit.ratePerSecond}/s`,
      );
    }
  }
  if (chance(ctx.random(), config.faults.errorRate)) {
    return reply.code(503).send({ message: 'simulated server error (faults.errorRate)' });
  }
  const scope = request.routeOptions.config.scope;
  if (scope && !hasScope(grant.scopes, scope)) {
    return reply.code(403).send({ message: `Authorization: the access token lacks scope ${scope}` });
  }
}

function record(ctx: SandboxContext, request: FastifyRequest, status: number): void {
  const route = request.routeOptions.url;
  const recorded =
    route === undefined
      ? API_ROUTE.test(request.url.split('?')[0] ?? '')
      : API_ROUTE.test(route) || RECORDED_ROUTES.has(route);
  if (!recorded) return;
  const who = request.grant ?? request.recordClient ?? null;
  const params = request.params as { id?: unknown } | undefined;
  const named = typeof params?.id === 'string' && route?.startsWith('/v2/') ? params.id : undefined;
  const upload = route === '/_upload/:id' && typeof params?.id === 'string' ? params.id : undefined;
  ctx.calls.add({
    at: new Date().toISOString(),
    cell: ctx.cell,
    tenant_id: who?.tenantId ?? null,
    client_id: who?.clientId ?? null,
    method: request.method,
    route: route ?? '(unmatched)',
    status,
    submission_id: request.recordSubmissionId ?? named ?? upload ?? null,
  });
}

function onError(ctx: SandboxContext) {
  return (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof HttpError) {
      return reply.code(error.status).headers(error.headers).send({ message: error.message });
    }
    if (error instanceof SandboxConfigError) {
      return reply.code(400).send({ message: capMessage(error.message) });
    }
    const status = (error as FastifyError).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return reply.code(status).send({ message: capMessage(error.message) });
    }
    ctx.logger.error(
      { err: error, method: request.method, route: request.routeOptions.url },
      'sandbox request failed',
    );
    return reply.code(500).send({ message: 'internal sandbox error' });
  };
}

export function buildServer(ctx: SandboxContext, actions: ControlActions): FastifyInstance {
  const app = Fastify({ logger: false, forceCloseConnections: true, routerOptions: { maxParamLength: 200 } });
  // Bodies are read by the routes themselves, after authentication and in the spec's order.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.addHook('onRequest', (request, reply) => gate(ctx, request, reply));
  app.addHook('onResponse', async (request, reply) => {
    ctx.stats.request(`${request.method} ${request.routeOptions.url ?? '(unmatched)'} ${reply.statusCode}`);
    record(ctx, request, reply.statusCode);
  });
  app.setErrorHandler(onError(ctx));
  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ message: capMessage(`no route ${request.method} ${request.url.split('?')[0]}`) }),
  );

  registerTokenRoute(app, ctx);
  registerSubmissionRoutes(app, ctx);
  registerResultRoutes(app, ctx);
  registerTenantRoutes(app, ctx);
  registerUploadRoute(app, ctx);
  registerControlRoutes(app, ctx, actions);
  return app;
}
