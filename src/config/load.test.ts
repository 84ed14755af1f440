import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, configReference, loadConfig, redactConfig } from './load.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function tmpFile(name: string, content: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-config-'));
  dirs.push(dir);
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

describe('loadConfig', () => {
  it('gives the documented defaults pointing at this machine', () => {
    const config = loadConfig({ env: {}, files: [] });
    expect(config.kafka.brokers).toEqual(['localhost:9092']);
    expect(config.registry.url).toBe('http://localhost:8081/apis/ccompat/v7');
    expect(config.api.baseUrl).toBe('http://localhost:8080');
    expect(config.api.clientId).toBe('sandbox-client');
  });

  it('opens no blob source by default: no file roots, no hosts, no buckets', () => {
    const { blobs } = loadConfig({ env: {}, files: [] });
    expect([blobs.fileRoots, blobs.httpHosts, blobs.s3Buckets, blobs.allowPrivateNetworks]).toEqual([
      [],
      [],
      [],
      false,
    ]);
  });

  it('reads files, then the environment, then overrides', () => {
    const file = tmpFile('c.json', JSON.stringify({ kafka: { groupId: 'from-file', brokers: ['a:1'] } }));
    const config = loadConfig({
      env: { DOCSTREAM_KAFKA_BROKERS: 'b:1, c:2', DOCSTREAM_CONNECTOR_MAX_IN_FLIGHT: '42' },
      files: [file],
      overrides: { connector: { withMetadata: true } },
    });
    expect(config.kafka.groupId).toBe('from-file');
    expect(config.kafka.brokers).toEqual(['b:1', 'c:2']);
    expect(config.connector.maxInFlight).toBe(42);
    expect(config.connector.withMetadata).toBe(true);
  });

  it('names an unknown key in a file', () => {
    const file = tmpFile('c.json', JSON.stringify({ kafka: { brokerz: ['x'] } }));
    expect(() => loadConfig({ env: {}, files: [file] })).toThrow(/unknown configuration key 'kafka.brokerz'/);
  });

  it('names an unknown section and an unknown variable', () => {
    const file = tmpFile('c.json', JSON.stringify({ kafkaa: {} }));
    expect(() => loadConfig({ env: {}, files: [file] })).toThrow(/unknown configuration section 'kafkaa'/);
    expect(() => loadConfig({ env: { DOCSTREAM_KAFKA_BROKER: 'x' }, files: [] })).toThrow(
      /unknown configuration variable DOCSTREAM_KAFKA_BROKER/,
    );
  });

  it('names a malformed value', () => {
    expect(() => loadConfig({ env: { DOCSTREAM_CONNECTOR_MAX_IN_FLIGHT: 'lots' }, files: [] })).toThrow(
      /DOCSTREAM_CONNECTOR_MAX_IN_FLIGHT: expected an integer/,
    );
    expect(() => loadConfig({ env: { DOCSTREAM_LOG_LEVEL: 'loud' }, files: [] })).toThrow(ConfigError);
    const bad = tmpFile('c.json', '{ not json');
    expect(() => loadConfig({ env: {}, files: [bad] })).toThrow(/invalid JSON/);
  });

  it('reads a secret from a file and never shows it', () => {
    const secretFile = tmpFile('secret', 'top-secret\n');
    const config = loadConfig({ env: { DOCSTREAM_API_CLIENT_SECRET_FILE: secretFile }, files: [] });
    expect(config.api.clientSecret).toBe('top-secret');
    expect(JSON.stringify(redactConfig(config))).not.toContain('top-secret');
  });

  it('never shows a secret given with the wrong type, nor a URL password in a wrong value', () => {
    const file = tmpFile(
      'wrong.json',
      JSON.stringify({
        api: { clientSecret: ['wrong-type-secret-1'] },
        kafka: { saslPassword: { p: 'x2' } },
      }),
    );
    expect(() => loadConfig({ env: {}, files: [file] })).toThrow(
      /api\.clientSecret: expected a string, got a list \(not shown: a secret\)$/,
    );
    const urls = tmpFile('urls.json', JSON.stringify({ registry: { url: ['http://u:url-pass-3@r'] } }));
    expect(() => loadConfig({ env: {}, files: [urls] })).toThrow(/got \["http:\/\/u:\[redacted\]@r"\]/);
  });

  it('refuses a webhook secret the sender cannot have made, naming which, without showing it', () => {
    const good = 'whsec_dGVzdC1zZWNyZXQtMQ==';
    expect(
      loadConfig({ env: { DOCSTREAM_WEBHOOKS_SECRETS: `${good},whsec_MTIzNDU2Nzg` }, files: [] }).webhooks
        .secrets,
    ).toHaveLength(2);
    for (const [bad, why] of [
      ['plain-text-secret', /secret 2 of 2 must start with whsec_/],
      ['whsec_not base64!', /secret 2 of 2 must be whsec_ followed by a base64 key/],
      ['whsec_abcde', /secret 2 of 2 must be whsec_ followed by a base64 key/],
    ] as const) {
      let message = '';
      try {
        loadConfig({ env: { DOCSTREAM_WEBHOOKS_SECRETS: `${good},${bad}` }, files: [] });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^DOCSTREAM_WEBHOOKS_SECRETS: /);
      expect(message).toMatch(why);
      expect(message).not.toContain(bad);
      expect(message).not.toContain(good);
    }
  });

  it('reads every Kafka and registry secret from a file and shows none', () => {
    const env: Record<string, string> = {};
    const secrets = {
      DOCSTREAM_KAFKA_SASL_PASSWORD: 'kafka-password-1',
      DOCSTREAM_KAFKA_SSL_KEY_PASSWORD: 'key-passphrase-2',
      DOCSTREAM_KAFKA_OAUTH_CLIENT_SECRET: 'oauth-secret-3',
      DOCSTREAM_REGISTRY_BEARER_TOKEN: 'registry-token-4',
      DOCSTREAM_REGISTRY_OAUTH_CLIENT_SECRET: 'registry-secret-5',
      DOCSTREAM_REGISTRY_KEY_PASSWORD: 'registry-passphrase-6',
    };
    for (const [name, value] of Object.entries(secrets)) env[`${name}_FILE`] = tmpFile(name, `${value}\n`);
    const config = loadConfig({ env, files: [] });
    expect(config.kafka.oauthClientSecret).toBe('oauth-secret-3');
    expect(config.registry.bearerToken).toBe('registry-token-4');
    const shown = JSON.stringify(redactConfig(config));
    for (const value of Object.values(secrets)) expect(shown).not.toContain(value);
  });

  it('redacts passwords embedded in URLs, in plain keys and inside JSON values', () => {
    const config = loadConfig({
      env: {
        DOCSTREAM_REGISTRY_URL: 'https://reg-user:reg-pass@registry.example:8081/apis/ccompat/v7',
        DOCSTREAM_API_CELLS: JSON.stringify({
          'eu-1': {
            baseUrl: 'https://cell-user:cell%40pass@eu.example',
            tokenUrl: 'https://:token-pass@auth.example/oauth2/token',
          },
        }),
        DOCSTREAM_KAFKA_BROKERS: 'broker.example:9092',
      },
      files: [],
    });
    const shown = JSON.stringify(redactConfig(config));
    for (const secret of ['reg-pass', 'cell%40pass', 'token-pass']) expect(shown).not.toContain(secret);
    const redacted = redactConfig(config);
    expect(redacted.registry!.url).toBe('https://reg-user:[redacted]@registry.example:8081/apis/ccompat/v7');
    expect(redacted.api!.cells).toEqual({
      'eu-1': {
        baseUrl: 'https://cell-user:[redacted]@eu.example',
        tokenUrl: 'https://:[redacted]@auth.example/oauth2/token',
      },
    });
    // URLs without a password are shown as they are.
    expect(redacted.api!.baseUrl).toBe('http://localhost:8080');
    expect(redacted.kafka!.brokers).toEqual(['broker.example:9092']);
  });

  it('refuses plain http API and token URLs outside loopback unless api.allowInsecureHttp', () => {
    const load = (env: Record<string, string>) => () => loadConfig({ env, files: [] });
    expect(load({ DOCSTREAM_API_BASE_URL: 'http://api.example.com' })).toThrow(
      /api\.baseUrl: http:\/\/api\.example\.com .*unencrypted.*api\.allowInsecureHttp/,
    );
    expect(load({ DOCSTREAM_API_TOKEN_URL: 'http://10.0.0.5/oauth2/token' })).toThrow(/api\.tokenUrl/);
    expect(
      load({
        DOCSTREAM_API_CELL: 'eu-1',
        DOCSTREAM_API_CELLS: JSON.stringify({
          'eu-1': { baseUrl: 'https://eu.example', tokenUrl: 'http://u:pw@auth.example/t' },
        }),
      }),
    ).toThrow(/api\.cells\.eu-1\.tokenUrl: http:\/\/auth\.example /);
    try {
      load({ DOCSTREAM_API_TOKEN_URL: 'http://u:pw@auth.example/t' })();
    } catch (error) {
      expect((error as Error).message).not.toContain('pw');
    }
    for (const url of [
      'http://localhost:8080',
      'http://127.0.0.2:9',
      'http://[::1]:8080',
      'https://api.example.com',
    ]) {
      expect(load({ DOCSTREAM_API_BASE_URL: url })).not.toThrow();
    }
    expect(
      load({ DOCSTREAM_API_BASE_URL: 'http://sandbox:8080', DOCSTREAM_API_ALLOW_INSECURE_HTTP: 'true' }),
    ).not.toThrow();
  });

  it('reads .env files among the files, in order, secrets from their …_FILE paths', () => {
    const secret = tmpFile('api-secret', 'from-the-file\n');
    const json = tmpFile(
      'c.json',
      JSON.stringify({ api: { clientId: 'json-client' }, kafka: { groupId: 'g1' } }),
    );
    const env = tmpFile(
      'prod.env',
      [
        '# settings of the environment',
        `export DOCSTREAM_API_CLIENT_SECRET_FILE=${secret}`,
        'DOCSTREAM_KAFKA_GROUP_ID="g2"',
        'DOCSTREAM_CONFIG=/ignored.json',
        'NODE_EXTRA_CA_CERTS=/passes/through.pem',
      ].join('\n'),
    );
    const later = tmpFile('later.json', JSON.stringify({ kafka: { groupId: 'g3' } }));
    const config = loadConfig({ env: {}, files: [json, env] });
    expect([config.api.clientId, config.api.clientSecret, config.kafka.groupId]).toEqual([
      'json-client',
      'from-the-file',
      'g2',
    ]);
    // Later files win; the environment wins over every file.
    expect(loadConfig({ env: {}, files: [json, env, later] }).kafka.groupId).toBe('g3');
    expect(
      loadConfig({ env: { DOCSTREAM_KAFKA_GROUP_ID: 'g4' }, files: [json, env, later] }).kafka.groupId,
    ).toBe('g4');
    expect(redactConfig(config).api!.clientSecret).not.toContain('from-the-file');
  });

  it('names the line of a wrong .env variable, and of a secret file it cannot read', () => {
    const typo = tmpFile('typo.env', '\nDOCSTREAM_KAFKA_BROKER=x\n');
    expect(() => loadConfig({ env: {}, files: [typo] })).toThrow(
      new RegExp(`unknown configuration variable ${typo}:2: DOCSTREAM_KAFKA_BROKER`),
    );
    const missing = tmpFile('missing.env', 'DOCSTREAM_API_CLIENT_SECRET_FILE=/nonexistent/secret');
    expect(() => loadConfig({ env: {}, files: [missing] })).toThrow(
      /missing\.env:1: .*cannot read the secret file \(ENOENT\)/,
    );
    const garbage = tmpFile('garbage.env', 'not a variable');
    expect(() => loadConfig({ env: {}, files: [garbage] })).toThrow(/garbage\.env:1: expected NAME=value/);
  });

  it('ignores reserved tooling variables', () => {
    expect(() =>
      loadConfig({ env: { DOCSTREAM_TEST_STACK: 'reuse', DOCSTREAM_CONFIG: '' }, files: [] }),
    ).not.toThrow();
  });

  it('documents every key with its variable', () => {
    const doc = configReference();
    expect(doc).toContain('`DOCSTREAM_KAFKA_BROKERS`');
    expect(doc).toContain('`connector.maxInFlight`');
  });
});
