/** `POST /oauth2/token`: the authorization server's token endpoint. */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PATHS } from '../../api/schemas.js';
import { OAuthError } from '../auth.js';
import type { SandboxContext } from '../context.js';
import { mediaType } from '../http.js';

const MAX_FORM_BYTES = 64 * 1024;

async function readForm(request: FastifyRequest): Promise<URLSearchParams> {
  if (mediaType(request) !== 'application/x-www-form-urlencoded') {
    throw new OAuthError(400, 'invalid_request', 'Content-Type: must be application/x-www-form-urlencoded');
  }
  const stream = request.body instanceof Readable ? request.body : request.raw;
  let text = '';
  for await (const chunk of stream) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > MAX_FORM_BYTES) throw new OAuthError(400, 'invalid_request', '(body): too large');
  }
  return new URLSearchParams(text);
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * The audiences a client assertion may name: the token URL as the sandbox prints it, the same
 * URL with the other loopback spellings, and the configured `tokenUrls`. Never the Host header:
 * the caller chooses that, so it would let an assertion made for another server be replayed here.
 */
function tokenAudiences(ctx: SandboxContext): string[] {
  const own = new URL(`${ctx.baseUrl()}${PATHS.token}`);
  const audiences = [own.href];
  if (LOOPBACK_HOSTS.has(own.hostname)) {
    for (const host of LOOPBACK_HOSTS) {
      const alias = new URL(own.href);
      alias.hostname = host;
      audiences.push(alias.href);
    }
  }
  return [...new Set([...audiences, ...ctx.tokenUrls()])];
}

export function registerTokenRoute(app: FastifyInstance, ctx: SandboxContext): void {
  app.post(PATHS.token, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    try {
      const form = await readForm(request);
      const { body, grant } = await ctx.auth.issue(form, request.headers.authorization, tokenAudiences(ctx));
      request.recordClient = { clientId: grant.clientId, tenantId: grant.tenantId };
      return reply.code(200).send(body);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      if (err.status === 401 && request.headers.authorization?.toLowerCase().startsWith('basic ')) {
        reply.header('www-authenticate', 'Basic realm="docstream-sandbox"');
      }
      return reply
        .code(err.status)
        .send({ error: err.error, error_description: err.message, message: err.message });
    }
  });
}
