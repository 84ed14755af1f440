/**
 * Kafka with its authorizer on (a broker of this file's own, `startPrivateKafka({ authorizer: true })`):
 * the plain listener is the admin's, and the two SCRAM principals of the secured listener,
 * User:docstream and User:docstream-operator, may do only what an ACL grants them. The ACLs that
 * `docstream topology` prints, granted as printed, are enough for `docstream run` (the connector's
 * principal, at-least-once and exactly-once) and for the operator's commands (send, inspect, status,
 * dlq, replay); with one of them taken away, the command that needs it fails with a message naming
 * the resource and the operation.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import kafkajs from 'kafkajs';
import { sampleBytes } from '../../src/demo/corpus.js';
import type { Topology } from '../../src/operator/provisioning.js';
import { E2E, exitOf, waitFor } from '../harness/e2e.js';
import { startPrivateKafka, type PrivateKafka } from '../harness/private-kafka.js';

const exec = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

/** The built CLI with no DOCSTREAM_* variable but the stack's. */
async function cli(args: string[]): Promise<Out> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('DOCSTREAM_') || k.startsWith('DOCSTREAM_STACK_'),
    ),
  );
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, ...args], { env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

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
      // No retry, so that a refusal shows at once; but a TLS + SCRAM connect on a loaded machine can
      // take longer than kafkajs's default 1 s (a CI run timed out there).
      retry: { retries: 0 },
      connectionTimeout: 10_000,
    });
  }

  it('a principal writes only where an ACL lets it; the admin on the plain listener grants it', async () => {
    const topic = `acl-${randomBytes(4).toString('hex')}`;
    const admin = new Kafka({
      brokers: kafka.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 10_000,
    }).admin();
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

  describe('the ACLs docstream topology prints', () => {
    let env: E2E;
    let admin: ReturnType<InstanceType<typeof Kafka>['admin']>;
    let connectorConfig: string;
    let operatorConfig: string;
    let topology: Topology;
    let pdf: string;
    const eventId = `acl-${randomBytes(4).toString('hex')}`;

    const RESOURCE = {
      Topic: AclResourceTypes.TOPIC,
      Group: AclResourceTypes.GROUP,
      TransactionalId: AclResourceTypes.TRANSACTIONAL_ID,
    } as const;
    const OPERATION = {
      Read: AclOperationTypes.READ,
      Write: AclOperationTypes.WRITE,
      Create: AclOperationTypes.CREATE,
      Describe: AclOperationTypes.DESCRIBE,
      DescribeConfigs: AclOperationTypes.DESCRIBE_CONFIGS,
    } as const;

    /** The printed ACLs as Kafka's AclBindings, one per operation. */
    function bindings(acls: Topology['acls']) {
      return acls.flatMap((a) =>
        a.operations.map((op) => ({
          resourceType: RESOURCE[a.resourceType],
          resourceName: a.name,
          resourcePatternType:
            a.pattern === 'PREFIXED' ? ResourcePatternTypes.PREFIXED : ResourcePatternTypes.LITERAL,
          principal: a.principal,
          host: '*',
          operation: OPERATION[op],
          permissionType: AclPermissionTypes.ALLOW,
        })),
      );
    }

    async function aclCount(): Promise<number> {
      const { resources } = await admin.describeAcls({
        resourceType: AclResourceTypes.ANY,
        resourcePatternType: ResourcePatternTypes.ANY,
        operation: AclOperationTypes.ANY,
        permissionType: AclPermissionTypes.ANY,
      });
      return resources.reduce((n, r) => n + r.acls.length, 0);
    }

    function scram(user: { username: string; password: string }) {
      return {
        brokers: [kafka.secure.scramTls.bootstrap],
        sslCaFile: kafka.secure.caFile,
        saslMechanism: 'scram-sha-512',
        saslUsername: user.username,
        saslPassword: user.password,
      };
    }

    beforeAll(async () => {
      env = await new E2E(1, { brokers: kafka.brokers }).start();
      admin = new Kafka({
        brokers: kafka.brokers,
        logLevel: logLevel.NOTHING,
        connectionTimeout: 10_000,
      }).admin();
      await admin.connect();
      connectorConfig = env.writeConfig({ kafka: scram(kafka.secure.scramTls) });
      operatorConfig = env.writeConfig({ kafka: scram(kafka.secure.scramTls.operator!) });
      pdf = await env.writeFile('invoice.pdf', await sampleBytes('clean-pdf'));
      const printed = await cli(['topology', '-c', connectorConfig, '--format', 'json']);
      expect({ code: printed.code, stderr: printed.stderr }).toEqual({ code: 0, stderr: '' });
      topology = JSON.parse(printed.stdout) as Topology;
      const before = await aclCount();
      const acl = bindings(topology.acls);
      await admin.createAcls({ acl });
      expect(await aclCount()).toBe(before + acl.length);
      await env.collect();
    });
    afterAll(async () => {
      await admin?.disconnect().catch(() => undefined);
      await env?.stop();
    });

    it('run carries a document as the connector; send, inspect, status, dlq list and replay work as the operator', async () => {
      const connector = env.spawnConnector({ kafka: scram(kafka.secure.scramTls) });
      const log = env.childLogs.at(-1)!;
      const sent = await cli([
        'send',
        '-c',
        operatorConfig,
        '--event-id',
        eventId,
        '--query-id',
        eventId,
        pdf,
        '--json',
      ]);
      expect({ code: sent.code, stderr: sent.stderr }).toEqual({ code: 0, stderr: '' });
      try {
        await env.waitForResults(eventId);
      } catch (error) {
        throw new Error(`${(error as Error).message}; run's log: ${log.join('').slice(-3000)}`);
      }
      expect(connector.exitCode).toBeNull();
      expect(await env.submissions(eventId)).toHaveLength(1);

      const found = await cli(['inspect', '-c', operatorConfig, eventId, '--json']);
      expect({ code: found.code, stderr: found.stderr }).toEqual({ code: 0, stderr: '' });
      expect((JSON.parse(found.stdout) as { matched: unknown }).matched).not.toBeNull();
      const status = await cli(['status', '-c', operatorConfig, '--no-metrics', '--json']);
      expect({ code: status.code, stderr: status.stderr }).toEqual({ code: 0, stderr: '' });

      await env.produce(['not json at all']);
      await waitFor('the dead letter', () => env.on('dlq').length > 0);
      const listed = await cli(['dlq', 'list', '-c', operatorConfig, '--json']);
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
      expect((JSON.parse(listed.stdout) as { matched: number }).matched).toBe(1);
      const redrive = await cli(['dlq', 'redrive', '-c', operatorConfig, '--all', '--dry-run', '--json']);
      expect({ code: redrive.code, stderr: redrive.stderr }).toEqual({ code: 0, stderr: '' });

      connector.kill('SIGTERM');
      expect(await exitOf(connector, 40_000)).toBe(0);
      const replayed = await cli(['replay', '-c', operatorConfig, '--to-earliest', '--json']);
      expect({ code: replayed.code, stderr: replayed.stderr }).toEqual({
        code: 0,
        stderr: expect.any(String),
      });
      expect((JSON.parse(replayed.stdout) as { applied: boolean }).applied).toBe(true);
    });

    it('one ACL less: the command that needs it fails naming the resource and the operation', async () => {
      /** Deletes the principal's ACL on the resource (one operation of it, or all), runs `attempt`, and grants it again. */
      const without = async <T>(
        role: 'connector' | 'operator',
        resourceType: 'Topic' | 'Group',
        name: string,
        attempt: () => Promise<T>,
        operation?: 'Write',
      ): Promise<T> => {
        const acl = topology.acls.find(
          (a) => a.role === role && a.resourceType === resourceType && a.name === name,
        )!;
        const filters = bindings([{ ...acl, operations: operation ? [operation] : acl.operations }]);
        await admin.deleteAcls({ filters });
        try {
          return await attempt();
        } finally {
          await admin.createAcls({ acl: filters });
        }
      };

      // Without Read (so without Describe) on the dead-letter topic, Kafka does not list it: not
      // "does not exist" but the ACL.
      const listed = await without('operator', 'Topic', env.topics.dlq, () =>
        cli(['dlq', 'list', '-c', operatorConfig]),
      );
      expect(listed.code).toBe(1);
      expect(listed.stderr).toContain(
        `topic ${env.topics.dlq} (topics.dlq): not authorized (TOPIC_AUTHORIZATION_FAILED): Kafka's ACLs do not give this principal Describe (Read or Write) on it`,
      );

      // Without Describe on the input, send names it; with Describe (Read) but not Write, the produce
      // is refused and the message names Write.
      const hidden = await without('operator', 'Topic', env.topics.arrived, () =>
        cli(['send', '-c', operatorConfig, '--event-id', `${eventId}-hidden`, pdf]),
      );
      expect(hidden.code).toBe(1);
      expect(hidden.stderr).toContain(`topic ${env.topics.arrived} (topics.arrived): not authorized`);
      const refused = await without(
        'operator',
        'Topic',
        env.topics.arrived,
        () => cli(['send', '-c', operatorConfig, '--event-id', `${eventId}-refused`, pdf]),
        'Write',
      );
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `producing to ${env.topics.arrived}: not authorized (TOPIC_AUTHORIZATION_FAILED): Kafka's ACLs do not give this principal Write on the topic`,
      );

      // Without Read on the state topic, inspect says so instead of finding the document stateless.
      const inspected = await without('operator', 'Topic', env.topics.state, () =>
        cli(['inspect', '-c', operatorConfig, eventId]),
      );
      expect(inspected.code).toBe(1);
      expect(inspected.stderr).toContain(`topic ${env.topics.state} (topics.state): not authorized`);

      // Without Read on its group, run stops at start naming the group and the ACL.
      const run = await without('connector', 'Group', `${env.id}-group`, async () => {
        const child = env.spawnConnector({ kafka: scram(kafka.secure.scramTls) });
        return { code: await exitOf(child, 60_000), log: env.childLogs.at(-1)!.join('') };
      });
      expect(run.code).toBe(1);
      expect(run.log).toContain(`group ${env.id}-group`);
      expect(run.log).toMatch(/grant it Read on the group/);
    });

    it('exactly-once: the topology of an exactly-once configuration adds the transactional ids, and run carries a document', async () => {
      const groupId = `${env.id}-exactly-once`;
      const settings = {
        kafka: { ...scram(kafka.secure.scramTls), groupId },
        connector: { delivery: 'exactly-once' },
      };
      const printed = await cli(['topology', '-c', env.writeConfig(settings), '--format', 'json']);
      expect(printed.code).toBe(0);
      const exactlyOnce = JSON.parse(printed.stdout) as Topology;
      expect(exactlyOnce.acls.filter((a) => a.resourceType === 'TransactionalId')).toMatchObject([
        {
          principal: 'User:docstream',
          name: `${groupId}-${env.topics.arrived}-`,
          pattern: 'PREFIXED',
          operations: ['Write'],
        },
      ]);
      await admin.createAcls({ acl: bindings(exactlyOnce.acls) });
      const connector = env.spawnConnector(settings);
      const log = env.childLogs.at(-1)!;
      const id = `${eventId}-exactly-once`;
      const sent = await cli(['send', '-c', operatorConfig, '--event-id', id, '--query-id', id, pdf]);
      expect({ code: sent.code, stderr: sent.stderr }).toEqual({ code: 0, stderr: '' });
      try {
        await env.waitForResults(id);
      } catch (error) {
        throw new Error(`${(error as Error).message}; run's log: ${log.join('').slice(-3000)}`);
      }
      expect(await env.submissions(id)).toHaveLength(1);
      connector.kill('SIGTERM');
      expect(await exitOf(connector, 40_000)).toBe(0);
    });
  });
});
