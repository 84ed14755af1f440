import { effectiveConfig, kafkaTlsOn } from './effective.js';
import { loadConfig } from './load.js';

describe('the configuration in effect (config show)', () => {
  it('shows kafka.ssl true when a CA file turns TLS on, as the Kafka client does', () => {
    const config = loadConfig({ env: { DOCSTREAM_KAFKA_SSL_CA_FILE: '/etc/ca.pem' }, files: [] });
    expect(config.kafka.ssl).toBe(false);
    expect(effectiveConfig(config).kafka.ssl).toBe(true);
    expect(kafkaTlsOn({ ssl: false, sslCaFile: '', sslCertFile: '', sslKeyFile: '' })).toBe(false);
    expect(kafkaTlsOn({ ssl: false, sslCaFile: '', sslCertFile: '/etc/client.crt' })).toBe(true);
  });

  it('shows the API address a cell stands for, and the token URL beside a base URL', () => {
    const cells = { 'eu-1': { baseUrl: 'https://eu.example', tokenUrl: 'https://eu.example/oauth2/token' } };
    const byCell = loadConfig({ env: {}, files: [], overrides: { api: { cell: 'eu-1', cells } } });
    expect(effectiveConfig(byCell).api).toEqual(
      expect.objectContaining({ baseUrl: 'https://eu.example', tokenUrl: 'https://eu.example/oauth2/token' }),
    );
    const byUrl = loadConfig({
      env: {},
      files: [],
      overrides: { api: { baseUrl: 'http://127.0.0.1:8080' } },
    });
    expect(effectiveConfig(byUrl).api.tokenUrl).toBe('http://127.0.0.1:8080/oauth2/token');
  });

  it('shows the transactional id prefix with exactly-once', () => {
    const config = loadConfig({
      env: {},
      files: [],
      overrides: { connector: { delivery: 'exactly-once' }, kafka: { groupId: 'g' } },
    });
    expect(effectiveConfig(config).connector.transactionalIdPrefix).toBe('g-documents.arrived');
  });
});
