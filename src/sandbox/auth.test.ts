import { AuthServer, OAuthError, type AuthClient, type ClientDirectory } from './auth.js';
import { defaultConfig } from './config.js';
import { hasScope } from './server.js';

const config = defaultConfig();
const acme: AuthClient = {
  clientId: 'acme-app',
  clientSecret: 'acme-secret',
  scopes: ['documents.submissions.read', 'documents.submissions.write'],
  tenantId: 'acme',
};

/** Cell eu-1 knows acme; initech-app lives in us-1. */
const directory: ClientDirectory = {
  find: (id) => (id === acme.clientId ? acme : undefined),
  elsewhere: (id) => (id === 'initech-app' ? 'us-1' : null),
};

function form(id: string, secret: string): URLSearchParams {
  return new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret });
}

describe("a cell's token endpoint", () => {
  const auth = new AuthServer(() => config, directory, 'eu-1');

  test("issues tokens for its own cell's applications, carrying tenant and cell", async () => {
    const { body, grant } = await auth.issue(form('acme-app', 'acme-secret'), undefined, []);
    expect(grant).toMatchObject({ clientId: 'acme-app', tenantId: 'acme', cell: 'eu-1' });
    expect(auth.lookup(body.access_token)).toMatchObject({ tenantId: 'acme', cell: 'eu-1' });
    const other = new AuthServer(() => config, directory, 'us-1');
    expect(other.lookup(body.access_token)).toBeNull();
  });

  test('refuses a client of another cell with invalid_client naming that cell', async () => {
    const refused = auth.issue(form('initech-app', 'whatever'), undefined, []);
    await expect(refused).rejects.toBeInstanceOf(OAuthError);
    await expect(refused).rejects.toMatchObject({
      status: 401,
      error: 'invalid_client',
      message: expect.stringMatching(/initech-app is not registered in cell eu-1.*cell us-1/),
    });
    // An unknown client gets the message it always got, and nothing about cells.
    await expect(auth.issue(form('nobody', 'x'), undefined, [])).rejects.toMatchObject({
      message: 'client_id/client_secret: unknown client or wrong secret',
    });
  });
});

test("an application's documents.* scopes grant the API's scopes of the same name", () => {
  expect(hasScope(['documents.submissions.read'], 'submissions.read')).toBe(true);
  expect(hasScope(['submissions.write'], 'submissions.write')).toBe(true);
  expect(hasScope(['documents.submissions.read'], 'submissions.write')).toBe(false);
  expect(hasScope(['submissions.read.extra'], 'submissions.read')).toBe(false);
});
