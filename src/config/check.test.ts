import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  checkConfigFile,
  deploymentChecks,
  environmentValues,
  readinessProblems,
  setValues,
} from './check.js';
import { loadConfig } from './load.js';

const examples = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../config');

/** Every directory tmpFile made, removed after the file's tests. */
const tmpDirs: string[] = [];
afterAll(() => {
  for (const dir of tmpDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tmpFile(name: string, content: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-check-'));
  tmpDirs.push(dir);
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

/** `NAME=value` lines of an env file, secrets' `_FILE` paths replaced by real files here. */
function envOf(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!match) continue;
    const [, name, value] = match as unknown as [string, string, string];
    if (!name.startsWith('DOCSTREAM_')) continue;
    if (name === 'DOCSTREAM_CONFIG') env[name] = path.join(examples, path.basename(value));
    else if (name.endsWith('_FILE')) {
      env[name] = tmpFile('secret', name.includes('WEBHOOKS') ? 'whsec_dGVzdC1zZWNyZXQtMQ==\n' : 's3cret\n');
    } else env[name] = value;
  }
  return env;
}

describe('the example configurations in config/', () => {
  const files = fs.readdirSync(examples).filter((f) => f.endsWith('.json') || f.endsWith('.env'));

  it('are there: production (JSON + environment) and the sandbox', () => {
    expect(files.sort()).toEqual(['production.env', 'production.json', 'sandbox.json']);
  });

  it.each(files)('%s passes config check', (file) => {
    const result = checkConfigFile(path.join(examples, file));
    expect(result.errors).toEqual([]);
    expect(result.keys).toBeGreaterThan(3);
    // The only secret written into an example is the sandbox's public webhook secret.
    expect(result.warnings).toEqual(
      file === 'sandbox.json' ? [expect.stringMatching(/webhooks\.secrets is a secret/)] : [],
    );
  });

  it('sandbox.json loads and points at this machine', () => {
    const config = loadConfig({ env: {}, files: [path.join(examples, 'sandbox.json')] });
    expect(config.kafka.brokers).toEqual(['localhost:9092']);
    expect(config.blobs.s3Endpoint).toBe('http://localhost:9002');
    expect(config.webhooks.secrets).toHaveLength(1);
  });

  it('production.env with production.json loads: a cell, TLS + SASL, every secret from a file', () => {
    const config = loadConfig({ env: envOf(path.join(examples, 'production.env')) });
    expect(config.api.cell).toBe('eu-1');
    expect(config.kafka.ssl).toBe(true);
    expect(config.kafka.saslMechanism).toBe('scram-sha-512');
    expect(config.kafka.saslPassword).toBe('s3cret');
    expect(config.registry.password).toBe('s3cret');
    expect(config.api.clientSecret).toBe('s3cret');
    expect(config.webhooks.secrets).toEqual(['whsec_dGVzdC1zZWNyZXQtMQ==']);
    expect(config.blobs.s3Buckets.length).toBeGreaterThan(0);
  });
});

describe('checkConfigFile', () => {
  it('names every wrong key at once, with the closest known one', () => {
    const file = tmpFile(
      'bad.json',
      JSON.stringify({
        kafka: { brokerz: ['x'], ssl: 'yes' },
        topic: {},
        connector: { maxInFlight: 0 },
      }),
    );
    const { errors } = checkConfigFile(file);
    expect(errors).toEqual([
      expect.stringMatching(/unknown configuration key 'kafka\.brokerz' \(did you mean 'kafka\.brokers'\?\)/),
      expect.stringMatching(/kafka\.ssl: expected true or false/),
      expect.stringMatching(/unknown configuration section 'topic' \(did you mean 'topics'\?\)/),
      expect.stringMatching(/connector\.maxInFlight: expected a number between 1 and/),
    ]);
  });

  it('refuses a cell without an address and SASL without a user', () => {
    const file = tmpFile(
      'c.json',
      JSON.stringify({ api: { cell: 'us-1' }, kafka: { saslMechanism: 'plain' } }),
    );
    const { errors } = checkConfigFile(file);
    expect(errors).toEqual([
      expect.stringMatching(/api\.cell: cell "us-1" has no configured address/),
      expect.stringMatching(/kafka\.saslMechanism is plain but kafka\.saslUsername is not set/),
    ]);
  });

  it('refuses oauthbearer without its token endpoint and client, and a certificate without its key', () => {
    const file = tmpFile(
      'o.json',
      JSON.stringify({
        kafka: { saslMechanism: 'oauthbearer', sslCertFile: '/etc/docstream/client.pem' },
        registry: { keyFile: '/etc/docstream/registry.key' },
      }),
    );
    expect(checkConfigFile(file).errors).toEqual([
      expect.stringMatching(/kafka\.saslMechanism is oauthbearer but kafka\.oauthTokenUrl is not set/),
      expect.stringMatching(/kafka\.saslMechanism is oauthbearer but kafka\.oauthClientId is not set/),
      expect.stringMatching(/kafka\.sslCertFile and kafka\.sslKeyFile go together/),
      expect.stringMatching(/registry\.certFile and registry\.keyFile go together/),
    ]);
  });

  it('reports invalid JSON and an unreadable file', () => {
    expect(checkConfigFile(tmpFile('c.json', '{"kafka": ')).errors).toEqual([
      expect.stringMatching(/invalid JSON/),
    ]);
    expect(checkConfigFile('/nonexistent/docstream.json').errors).toEqual([
      expect.stringMatching(/cannot read \(ENOENT\)/),
    ]);
  });

  it('checks .env files: unknown variables, values, secret paths; other variables pass', () => {
    const file = tmpFile(
      'prod.env',
      [
        '# comment',
        'NODE_EXTRA_CA_CERTS=/etc/ca.pem',
        'DOCSTREAM_KAFKA_BROKERZ=a:1',
        'export DOCSTREAM_CONNECTOR_MAX_IN_FLIGHT=many',
        'DOCSTREAM_API_CLIENT_SECRET_FILE=secrets/api',
        'DOCSTREAM_REGISTRY_PASSWORD=hunter2',
        'not a variable',
      ].join('\n'),
    );
    const { errors, warnings } = checkConfigFile(file);
    expect(errors).toEqual([
      expect.stringMatching(
        /:3: unknown configuration variable DOCSTREAM_KAFKA_BROKERZ \(did you mean 'DOCSTREAM_KAFKA_BROKERS'\?\)/,
      ),
      expect.stringMatching(/:4: DOCSTREAM_CONNECTOR_MAX_IN_FLIGHT: expected an integer/),
      expect.stringMatching(/:5: DOCSTREAM_API_CLIENT_SECRET_FILE: expected an absolute path/),
      expect.stringMatching(/:7: expected NAME=value/),
    ]);
    expect(warnings).toEqual([expect.stringMatching(/DOCSTREAM_REGISTRY_PASSWORD holds a secret/)]);
    // A warning names the variable, never the secret's value.
    expect(warnings.join(' ')).not.toContain('hunter2');
  });

  it('relates the heartbeat to the session: refused at or above it, a warning above a third', () => {
    const at = checkConfigFile(
      tmpFile('at.json', JSON.stringify({ kafka: { sessionTimeoutMs: 9000, heartbeatIntervalMs: 9000 } })),
    );
    expect(at.errors).toEqual([
      expect.stringMatching(
        /kafka\.heartbeatIntervalMs \(9000\) must be below kafka\.sessionTimeoutMs \(9000\)/,
      ),
    ]);
    // The session's default (30 s) applies when only the heartbeat is set.
    const over = checkConfigFile(
      tmpFile('over.json', JSON.stringify({ kafka: { heartbeatIntervalMs: 12000 } })),
    );
    expect(over.errors).toEqual([]);
    expect(over.warnings).toEqual([
      expect.stringMatching(
        /kafka\.heartbeatIntervalMs \(12000\) is over a third of kafka\.sessionTimeoutMs \(30000\)/,
      ),
    ]);
    const fine = checkConfigFile(
      tmpFile(
        'fine.env',
        'DOCSTREAM_KAFKA_SESSION_TIMEOUT_MS=9000\nDOCSTREAM_KAFKA_HEARTBEAT_INTERVAL_MS=3000\n',
      ),
    );
    expect(fine).toMatchObject({ errors: [], warnings: [] });
  });
  it('refuses a start position it cannot use, a remote plaintext broker and the sandbox secret sent elsewhere', () => {
    const file = tmpFile(
      'notready.json',
      JSON.stringify({
        connector: { startFrom: 'yesterday' },
        kafka: { brokers: ['localhost:9092', 'kafka-1.internal:9092'] },
        api: { baseUrl: 'https://document-analysis.eu-1.example.com', clientSecret: 'sandbox-secret' },
      }),
    );
    expect(checkConfigFile(file).errors).toEqual([
      expect.stringMatching(/connector\.startFrom: expected earliest, latest or an ISO-8601 timestamp/),
      expect.stringMatching(
        /kafka\.brokers: kafka-1\.internal:9092 is not on this machine and the connection is plaintext/,
      ),
      expect.stringMatching(
        /api\.clientSecret is the sandbox's public secret but api\.baseUrl .* is not the local sandbox/,
      ),
    ]);
    const ready = tmpFile(
      'ready.json',
      JSON.stringify({
        connector: { startFrom: '2026-01-31T00:00:00Z' },
        kafka: { brokers: ['kafka-1.internal:9093'], sslCaFile: '/etc/docstream/ca.pem' },
        api: { baseUrl: 'http://localhost:8080', clientSecret: 'sandbox-secret' },
      }),
    );
    expect(checkConfigFile(ready).errors).toEqual([]);
  });

  it('checks the effective configuration here: files it names, a plaintext remote broker, the sandbox secret', () => {
    const ca = tmpFile('ca.pem', '-----BEGIN CERTIFICATE-----\n');
    const settings = {
      kafka: {
        brokers: ['kafka-1.internal:9093'],
        ssl: false,
        sslCaFile: ca,
        sslCertFile: '',
        sslKeyFile: '',
      },
      registry: { caFile: '/nonexistent/registry-ca.pem', certFile: '', keyFile: '' },
      api: { baseUrl: 'https://document-analysis.eu-1.example.com', clientSecret: 'sandbox-secret' },
    };
    expect(readinessProblems(settings)).toEqual([
      'registry.caFile: /nonexistent/registry-ca.pem does not exist on this machine',
      expect.stringMatching(
        /^api\.clientSecret: the sandbox's public secret is sent to https:\/\/document-analysis/,
      ),
    ]);
    expect(
      readinessProblems({
        ...settings,
        kafka: { ...settings.kafka, sslCaFile: '' },
        registry: { caFile: '', certFile: '', keyFile: '' },
        api: { baseUrl: 'http://127.0.0.1:8080', clientSecret: 'sandbox-secret' },
      }),
    ).toEqual([expect.stringMatching(/^kafka\.brokers: kafka-1\.internal:9093 is not on this machine/)]);
  });
});

describe('what a deployment lacks or risks, across its files (deploymentChecks)', () => {
  const production = () => {
    const together = new Map<string, unknown>();
    for (const file of ['production.json', 'production.env']) {
      for (const [k, v] of checkConfigFile(path.join(examples, file)).values ?? []) together.set(k, v);
    }
    return together;
  };

  it('passes config/production.json and production.env together', () => {
    expect(deploymentChecks(production(), { secretsElsewhere: true })).toEqual({ errors: [], warnings: [] });
  });

  it('refuses a required key left at its default against a remote cluster, naming it', () => {
    const values = production();
    values.delete('registry.url');
    values.delete('blobs.fileRoots');
    values.delete('blobs.httpHosts');
    values.delete('blobs.s3Buckets');
    const { errors } = deploymentChecks(values);
    expect(errors).toEqual([
      expect.stringMatching(
        /^registry\.url is required against a cluster off this machine \(kafka-1\.internal:9093\) and not set \(its default: points at the local stack’s registry\)/,
      ),
      expect.stringMatching(/^one of blobs\.fileRoots, blobs\.httpHosts, blobs\.s3Buckets is required/),
    ]);
  });

  it('takes an unset secret of files for a warning: it may come from a _FILE variable where docstream runs', () => {
    const values = production();
    values.delete('api.clientSecret');
    expect(deploymentChecks(values, { secretsElsewhere: true })).toEqual({
      errors: [],
      warnings: [
        expect.stringMatching(
          /^api\.clientSecret is required .*DOCSTREAM_API_CLIENT_SECRET_FILE where docstream runs/,
        ),
      ],
    });
    expect(deploymentChecks(values).errors).toEqual([
      expect.stringMatching(/^api\.clientSecret is required/),
    ]);
  });

  it('warns on replication factor 1 against several brokers, or the count a connected check found', () => {
    const values = production();
    values.set('topics.replicationFactor', 1);
    expect(deploymentChecks(values).warnings).toEqual([
      expect.stringMatching(/^topics\.replicationFactor is 1 against a cluster \(kafka-1\.internal:9093,/),
    ]);
    const local = new Map<string, unknown>([['kafka.brokers', ['localhost:9092']]]);
    expect(deploymentChecks(local).warnings).toEqual([]);
    expect(deploymentChecks(local, { brokerCount: 3 }).warnings).toEqual([
      expect.stringMatching(/^topics\.replicationFactor is 1 against a cluster of 3 brokers/),
    ]);
  });

  it('warns on a registry or API on this machine with a remote cluster', () => {
    const values = production();
    values.set('registry.url', 'http://localhost:8081/apis/ccompat/v7');
    values.set('api.cell', '');
    values.set('api.baseUrl', 'http://127.0.0.1:8080');
    expect(deploymentChecks(values).warnings).toEqual([
      expect.stringMatching(
        /^registry\.url \(http:\/\/localhost:8081\/apis\/ccompat\/v7\) is on this machine while kafka\.brokers/,
      ),
      expect.stringMatching(/^api\.baseUrl \(http:\/\/127\.0\.0\.1:8080\) is on this machine/),
    ]);
  });

  it('reads what a loaded configuration and the environment set', () => {
    const config = loadConfig({ env: { DOCSTREAM_KAFKA_BROKERS: 'kafka.example:9093' }, files: [] });
    expect([...setValues(config).keys()]).toEqual(['kafka.brokers']);
    expect(
      environmentValues({
        DOCSTREAM_API_CLIENT_SECRET_FILE: '/run/secrets/x',
        DOCSTREAM_TOPICS_REPLICATION_FACTOR: '3',
      }),
    ).toEqual(
      new Map<string, unknown>([
        ['topics.replicationFactor', 3],
        ['api.clientSecret', '(from file)'],
      ]),
    );
  });
});
