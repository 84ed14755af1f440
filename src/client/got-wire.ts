/**
 * The plain way for the API client's requests: got, on the same keep-alive pool as `Wire`. Used only
 * when the own HTTP layer is switched off (`http-client-wire`, docs/optimisations.md), to measure
 * what `wire.ts` buys; it answers as `Wire` does (`WireResponse`, or a `WireError` with Node's code).
 */
import got, { RequestError } from 'got';
import type http from 'node:http';
import type https from 'node:https';
import {
  DEFAULT_MAX_SOCKETS,
  keepAliveAgents,
  WireError,
  type WireRequest,
  type WireResponse,
} from './wire.js';

export class GotWire {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(maxSockets = DEFAULT_MAX_SOCKETS) {
    ({ http: this.httpAgent, https: this.httpsAgent } = keepAliveAgents(maxSockets));
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  async exchange(request: WireRequest): Promise<WireResponse> {
    try {
      const response = await got(request.url, {
        method: request.method as 'GET',
        headers: request.headers,
        ...(request.searchParams !== undefined ? { searchParams: request.searchParams } : {}),
        ...(request.json !== undefined ? { json: request.json } : {}),
        ...(request.form !== undefined ? { form: request.form } : {}),
        ...(request.body !== undefined && request.json === undefined && request.form === undefined
          ? { body: request.body }
          : {}),
        // Retries, redirects and errors on status are the sender's, as with `Wire`.
        retry: { limit: 0 },
        followRedirect: false,
        throwHttpErrors: false,
        decompress: false,
        timeout: { request: request.timeoutMs },
        agent: { http: this.httpAgent, https: this.httpsAgent },
      });
      return {
        statusCode: response.statusCode,
        statusMessage: response.statusMessage ?? '',
        headers: response.headers,
        body: response.body,
      };
    } catch (error) {
      const code = error instanceof RequestError ? error.code : (error as NodeJS.ErrnoException)?.code;
      throw new WireError(error instanceof Error ? error.message : String(error), code, { cause: error });
    }
  }
}
