/**
 * The API part of `config check --connect`: a real token request for each configured credential
 * (the submission client's secret; the tenant-admin client's private-key JWT when `tenant.clientId`
 * is set), and one GET with the submission client's token that the API answers 404.
 */
import { AuthenticationError, PermissionError, type ApiError } from '../client/errors.js';
import { errorText } from '../observability/redact.js';
import { bounded, type Findings } from './findings.js';

/** A client whose credentials can be tried: `checkAccess` of the API clients. */
export interface AccessCheckable {
  checkAccess(): Promise<void>;
}

export interface ApiCredentials {
  /** The submission client of api.clientId, as `run` builds it; throws naming the setting at fault. */
  submissions: () => { client: AccessCheckable; baseUrl: string; tokenUrl: string };
  /** The tenant-admin client of tenant.clientId, when it is set. */
  tenants?: () => AccessCheckable;
}

function isTokenCall(error: ApiError): boolean {
  return /token/i.test(error.endpoint);
}

function fixOf(error: unknown, secretSetting: string): string {
  const text = errorText(error);
  if (error instanceof AuthenticationError) {
    return isTokenCall(error)
      ? `the token endpoint refused the credentials (${text}): check api.clientId and ${secretSetting}`
      : `the API refused the token (${text}): the token endpoint (api.tokenUrl) is not this API's (api.baseUrl or api.cell)`;
  }
  if (error instanceof PermissionError) {
    return `the token lacks a scope the API needs (${text}): ask the API's operator for submissions.read and submissions.write on api.clientId`;
  }
  return `${text}; check api.baseUrl or api.cell (and api.proxyUrl, api.caFile)`;
}

export async function checkApi(
  credentials: ApiCredentials,
  findings: Findings,
  timeoutMs: number,
): Promise<void> {
  let submissions: ReturnType<ApiCredentials['submissions']>;
  try {
    submissions = credentials.submissions();
  } catch (error) {
    findings.missing('api', 'api.clientId', errorText(error));
    return;
  }
  try {
    await bounded(submissions.client.checkAccess(), timeoutMs * 2, `the token and one API call`);
    findings.ok(
      'api',
      'api.clientId',
      `a token from ${submissions.tokenUrl}; ${submissions.baseUrl} accepts it`,
    );
  } catch (error) {
    findings.missing(
      'api',
      'api.clientId',
      fixOf(error, 'api.clientSecret (DOCSTREAM_API_CLIENT_SECRET_FILE)'),
    );
  }
  if (!credentials.tenants) return;
  try {
    await bounded(credentials.tenants().checkAccess(), timeoutMs, 'the tenant-admin token');
    findings.ok('api', 'tenant.clientId', 'a token for the tenant-admin client (private-key JWT)');
  } catch (error) {
    const fix =
      error instanceof AuthenticationError
        ? `the token endpoint refused the private-key JWT (${errorText(error)}): check tenant.clientId, tenant.kid and tenant.privateKey`
        : fixOf(error, 'tenant.privateKey');
    findings.missing('api', 'tenant.clientId', fix);
  }
}
