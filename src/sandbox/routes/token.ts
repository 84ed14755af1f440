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

export function registerTokenRoute(app: FastifyInstance, ctx: SandboxContext): void {
  app.post(PATHS.token, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    try {
      const form = await readForm(request);
      // The assertion audience may name the token URL as printed or as reached (Host header).
      const reached = `${request.protocol}://${request.headers.host ?? ''}${PATHS.token}`;
      const body = await ctx.auth.issue(form, request.headers.authorization, [
        `${ctx.baseUrl()}${PATHS.token}`,
        reached,
      ]);
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
