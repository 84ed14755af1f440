/**
 * The plain way for the API client's requests: got, on the same keep-alive pool as `Wire`. Used only
 * when the own HTTP layer is switched off (`http-client-wire`, docs/optimisations.md), to measure
 * what `wire.ts` buys; it answers as `Wire` does (`WireResponse`, or a `WireError` with Node's code).
 */
import got, { RequestError } from 'got';
import type https from 'node:https';
import {
  DEFAULT_MAX_SOCKETS,
  EgressAgents,
  type Egress,
  WireError,
  type WireRequest,
  type WireResponse,
} from './wire.js';

export class GotWire {
  private readonly agents: EgressAgents;

  constructor(maxSockets = DEFAULT_MAX_SOCKETS, egress?: Egress) {
    this.agents = new EgressAgents(maxSockets, egress);
  }

  close(): void {
    this.agents.destroy();
  }

  async exchange(request: WireRequest): Promise<WireResponse> {
    try {
      const agent = this.agents.agentFor(new URL(request.url));
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
        // A tunnelling agent serves both schemes; got types its https agent as node's.
        agent: { http: agent, https: agent as https.Agent },
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
