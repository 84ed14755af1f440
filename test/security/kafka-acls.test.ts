/**
 * Kafka with its authorizer on (a broker of this file's own, `startPrivateKafka({ authorizer: true })`):
 * the plain listener is the admin's, and the two SCRAM principals of the secured listener,
 * User:docstream and User:docstream-operator, may do only what an ACL grants them.
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import kafkajs from 'kafkajs';
import { startPrivateKafka, type PrivateKafka } from '../harness/private-kafka.js';

const { Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } =
  kafkajs;

describe('a broker with the authorizer on', () => {
  let kafka: PrivateKafka;

  beforeAll(async () => {
    kafka = await startPrivateKafka({ authorizer: true });
  });
  afterAll(async () => {
    await kafka?.remove();
  });

  function client(user: { username: string; password: string }) {
    return new Kafka({
      clientId: 'acl-test',
      brokers: [kafka.secure.scramTls.bootstrap],
      ssl: { ca: [fs.readFileSync(kafka.secure.caFile, 'utf8')] },
      sasl: { mechanism: 'scram-sha-512', username: user.username, password: user.password },
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
  }

  it('a principal writes only where an ACL lets it; the admin on the plain listener grants it', async () => {
    const topic = `acl-${randomBytes(4).toString('hex')}`;
    const admin = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const connector = client(kafka.secure.scramTls).producer();
    const operator = client(kafka.secure.scramTls.operator!).producer();
    try {
      await admin.createTopics({ topics: [{ topic }] });
      await Promise.all([connector.connect(), operator.connect()]);
      const send = (p: typeof connector) => p.send({ topic, messages: [{ value: 'x' }] });
      await expect(send(connector)).rejects.toThrow(/Topic authorization failed/);

      await admin.createAcls({
        acl: [
          {
            resourceType: AclResourceTypes.TOPIC,
            resourceName: topic,
            resourcePatternType: ResourcePatternTypes.LITERAL,
            principal: `User:${kafka.secure.scramTls.username}`,
            host: '*',
            operation: AclOperationTypes.WRITE,
            permissionType: AclPermissionTypes.ALLOW,
          },
        ],
      });
      // The broker applies a new ACL from its metadata log: a bounded wait, not a sleep.
      let sent = false;
      for (let i = 0; i < 50 && !sent; i++) {
        sent = await send(connector).then(
          () => true,
          () => false,
        );
        if (!sent) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(sent).toBe(true);
      await expect(send(operator)).rejects.toThrow(/Topic authorization failed/);
    } finally {
      await Promise.all([connector.disconnect(), operator.disconnect(), admin.disconnect()]);
    }
  });
});
