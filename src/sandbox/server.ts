/**
 * The sandbox's HTTP server. Every API request is handled in one fixed order: faults (latency,
 * dropped connection), authenticate (401), throttle (429), injected 5xx, authorise the route's
 * scope (403), then the route validates (400/415/413) and answers (404/409/2xx).
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
import { formatRetryAfter } from './rate-limit.js';
import { registerControlRoutes, type ControlActions } from './routes/control.js';
import { registerResultRoutes } from './routes/results.js';
import { registerSubmissionRoutes } from './routes/submissions.js';
import { registerTenantRoutes } from './routes/tenants.js';
import { registerTokenRoute } from './routes/token.js';
import { registerUploadRoute } from './routes/upload.js';

/** Matched against the route the router chose, never the raw URL (which may percent-encode the prefix). */
const API_ROUTE = /^\/v[02](\/|$)/;

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
    const message = match
      ? 'Authorization: access token is invalid or expired'
      : 'Authorization: a Bearer access token is required';
    reply.header('www-authenticate', match ? 'Bearer error="invalid_token"' : 'Bearer');
    return reply.code(401).send({ message });
  }
  request.grant = grant;

  const now = Date.now();
  if (now < ctx.stormUntil)
    return tooMany(ctx, reply, ctx.stormUntil - now, 'too many requests (simulated 429 storm)');
  if (config.rateLimit) {
    const wait = ctx.limiter.take(grant.clientId, config.rateLimit, now);
    if (wait > 0) {
      return tooMany(
        ctx,
        reply,
        wait,
        `too many requests: client ${grant.clientId} is limited to ${config.rateLimit.ratePerSecond}/s`,
      );
    }
  }
  if (chance(ctx.random(), config.faults.errorRate)) {
    return reply.code(503).send({ message: 'simulated server error (faults.errorRate)' });
  }
  const scope = request.routeOptions.config.scope;
  if (scope && !grant.scopes.includes(scope)) {
    return reply.code(403).send({ message: `Authorization: the access token lacks scope ${scope}` });
  }
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
