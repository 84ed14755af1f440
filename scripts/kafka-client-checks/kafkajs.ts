/**
 * The client checks (./check.ts) on kafkajs 2.2.4, the project's own, bare: none of docstream's
 * patches or additions (src/kafka) are applied, except where a check says it tried them after the
 * bare client could not (the compression codecs).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import type { Admin, Consumer, KafkaConfig, KafkaMessage, PartitionAssigner } from 'kafkajs';
import { installCompressionCodecs } from '../../src/kafka/compression.js';
import { expect, fetchToken, NotSupported, readSettings, runChecks, sleep, waitFor } from './check.js';

const {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  AssignerProtocol,
  CompressionCodecs,
  CompressionTypes,
  ConfigResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} = kafkajs;

const s = readSettings();
const version = (createRequire(import.meta.url)('kafkajs/package.json') as { version: string }).version;
const base: KafkaConfig = { clientId: 'client-checks', brokers: s.brokers, logLevel: logLevel.NOTHING };
const kafka = new Kafka(base);
const created: string[] = [];
const open: Array<{ disconnect(): Promise<void> }> = [];
let admin: Admin;

async function topic(name: string, partitions = 1, configEntries?: Array<{ name: string; value: string }>) {
  const full = `${s.prefix}${name}`;
  await admin.createTopics({
    topics: [{ topic: full, numPartitions: partitions, replicationFactor: 1, configEntries }],
    waitForLeaders: true,
  });
  created.push(full);
  return full;
}

function track<T extends { disconnect(): Promise<void> }>(client: T): T {
  open.push(client);
  return client;
}

async function closeAll(): Promise<void> {
  for (const c of open.splice(0)) await c.disconnect().catch(() => undefined);
}

/** Reads a topic from the beginning until `count` records have come (or the check's bound). */
async function readAll(name: string, count: number, config: { readUncommitted?: boolean } = {}) {
  const consumer = track(kafka.consumer({ groupId: `${s.prefix}reader-${name}-${Date.now()}`, ...config }));
  const records: Array<KafkaMessage & { partition: number }> = [];
  await consumer.connect();
  await consumer.subscribe({ topic: name, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message, partition }) => void records.push({ ...message, partition }),
  });
  await waitFor(`${count} records on ${name}`, () => records.length >= count, s.checkTimeoutMs - 2000);
  return { records, consumer };
}

function joined(consumer: Consumer): Promise<Record<string, number[]>> {
  return new Promise((resolve) =>
    consumer.on(consumer.events.GROUP_JOIN, (e) => resolve(e.payload.memberAssignment)),
  );
}

/** A custom assignor: contiguous ranges of partitions by member id, with the members' user data read. */
const userDataSeen: string[] = [];
const ContiguousAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'check-contiguous',
  version: 1,
  async assign({ members, topics }) {
    const ids = members.map((m) => m.memberId).sort();
    for (const m of members) {
      const meta = AssignerProtocol.MemberMetadata.decode(m.memberMetadata);
      userDataSeen.push(meta?.userData.toString('utf8') ?? '');
    }
    const t = topics[0] as string;
    const partitions = cluster
      .findTopicPartitionMetadata(t)
      .map((p) => p.partitionId)
      .sort((a, b) => a - b);
    const per = Math.ceil(partitions.length / ids.length);
    return ids.map((memberId, i) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({
        version: 1,
        assignment: { [t]: partitions.slice(i * per, (i + 1) * per) },
        userData: Buffer.alloc(0),
      }),
    }));
  },
  protocol({ topics }) {
    return {
      name: 'check-contiguous',
      metadata: AssignerProtocol.MemberMetadata.encode({
        version: 1,
        topics,
        userData: Buffer.from('previous'),
      }),
    };
  },
});

async function roundTrip(codec: number, name: string) {
  const t = await topic(`compression-${name}`);
  const producer = track(kafka.producer());
  await producer.connect();
  const value = Buffer.from('docstream '.repeat(200));
  await producer.send({ topic: t, compression: codec, messages: [{ value }, { value }] });
  const { records } = await readAll(t, 2);
  expect(
    records.every((r) => r.value?.equals(value)),
    'a record read back differs from the one written',
  );
  await closeAll();
}

/**
 * kafkajs's own codec table, copied before docstream's codecs may be installed: a type it lacks
 * throws "not implemented" when its entry is called.
 */
const bareCodecs = { ...CompressionCodecs };

function bareSupports(type: number): boolean {
  try {
    (bareCodecs as Record<number, () => unknown>)[type]?.();
    return true;
  } catch {
    return false;
  }
}

function compression(type: number, name: string) {
  return async () => {
    if (bareSupports(type)) return roundTrip(type, name);
    installCompressionCodecs();
    let withDocstream = 'written and read';
    try {
      await roundTrip(type, name);
    } catch (err) {
      withDocstream = `failed: ${(err as Error).message}`;
    }
    throw new NotSupported(
      `kafkajs ${version} has no ${name} codec; with docstream's src/kafka/compression.ts installed: ${withDocstream}`,
    );
  };
}

async function securedRoundTrip(config: KafkaConfig, name: string) {
  const t = await topic(name);
  const secured = new Kafka({ ...base, ...config });
  const producer = track(secured.producer());
  const securedAdmin = track(secured.admin());
  await producer.connect();
  await producer.send({ topic: t, messages: [{ value: 'secured' }] });
  await securedAdmin.connect();
  const offsets = await securedAdmin.fetchTopicOffsets(t);
  expect(offsets[0]?.high === '1', `high watermark ${offsets[0]?.high}, expected 1`);
  await closeAll();
}

const ca = () => [fs.readFileSync(s.secure.caFile)];

async function main() {
  admin = kafka.admin();
  await admin.connect();
  await runChecks(
    'kafkajs',
    version,
    s,
    {
      'group.assignor': async () => {
        const t = await topic('assignor', 4);
        const group = `${s.prefix}assignor`;
        const members = [0, 1].map(() =>
          track(kafka.consumer({ groupId: group, partitionAssigners: [ContiguousAssigner] })),
        );
        const assignments = members.map(joined);
        for (const m of members) {
          await m.connect();
          await m.subscribe({ topic: t });
          await m.run({ eachMessage: async () => undefined });
        }
        // The first member joins alone; wait until both hold a share.
        const got = await Promise.all(assignments);
        let shares: number[][] = [];
        for (let i = 0; i < 100; i++) {
          const d = await admin.describeGroups([group]);
          const ms = d.groups[0]?.members ?? [];
          shares = ms.map(
            (m) => AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[t] ?? [],
          );
          if (shares.length === 2 && shares.every((x) => x.length === 2)) break;
          await sleep(200);
        }
        expect(got.length === 2, 'a member never joined');
        expect(
          shares.length === 2 && shares.flat().sort().join() === '0,1,2,3',
          `assignment ${JSON.stringify(shares)}, expected 0-3 split between two members`,
        );
        expect(userDataSeen.includes('previous'), 'the assignor never saw the members’ user data');
        await closeAll();
        return 'custom assignor with user data (eager protocol only; no cooperative-sticky)';
      },
      'group.rebalance-hold': async () => {
        throw new NotSupported(
          `kafkajs ${version} has no listener before partitions are revoked (GROUP_JOIN comes after the ` +
            'rejoin); docstream patches a barrier in (docs/decisions/0008-rejoin-barrier.md)',
        );
      },
      'pause-resume': async () => {
        const t = await topic('pause', 2);
        const consumer = track(kafka.consumer({ groupId: `${s.prefix}pause` }));
        const seen: number[] = [];
        const join = joined(consumer);
        await consumer.connect();
        await consumer.subscribe({ topic: t, fromBeginning: true });
        await consumer.run({ eachMessage: async ({ partition }) => void seen.push(partition) });
        await join;
        consumer.pause([{ topic: t, partitions: [0] }]);
        const producer = track(kafka.producer());
        await producer.connect();
        await producer.send({
          topic: t,
          messages: [
            { value: 'p0', partition: 0 },
            { value: 'p1', partition: 1 },
          ],
        });
        await waitFor('the record of the running partition', () => seen.includes(1), 15_000);
        await sleep(2000);
        expect(!seen.includes(0), 'the paused partition delivered a record');
        consumer.resume([{ topic: t, partitions: [0] }]);
        await waitFor('the record of the resumed partition', () => seen.includes(0), 15_000);
        await closeAll();
      },
      'txn.offsets': async () => {
        const input = await topic('txn-in');
        const output = await topic('txn-out');
        const group = `${s.prefix}txn-group`;
        const producer = track(kafka.producer());
        await producer.connect();
        await producer.send({ topic: input, messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] });
        const txp = track(
          kafka.producer({ transactionalId: `${s.prefix}txn`, idempotent: true, maxInFlightRequests: 1 }),
        );
        await txp.connect();
        const txn = await txp.transaction();
        await txn.send({ topic: output, messages: [{ value: 'A' }, { value: 'B' }, { value: 'C' }] });
        await txn.sendOffsets({
          consumerGroupId: group,
          topics: [{ topic: input, partitions: [{ partition: 0, offset: '3' }] }],
        });
        await txn.commit();
        const aborted = await txp.transaction();
        await aborted.send({ topic: output, messages: [{ value: 'aborted' }] });
        await aborted.abort();
        const committed = await admin.fetchOffsets({ groupId: group, topics: [input] });
        expect(
          committed[0]?.partitions[0]?.offset === '3',
          `group offset ${committed[0]?.partitions[0]?.offset}`,
        );
        const { records } = await readAll(output, 3);
        await sleep(1000);
        expect(
          records.length === 3 && !records.some((r) => r.value?.toString() === 'aborted'),
          `read_committed saw ${records.length} records`,
        );
        await closeAll();
        return 'offsets by group id only (no KIP-447 group generation)';
      },
      'txn.fencing': async () => {
        const t = await topic('fencing');
        const id = `${s.prefix}fenced`;
        const zombie = track(
          kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1 }),
        );
        await zombie.connect();
        const old = await zombie.transaction();
        await old.send({ topic: t, messages: [{ value: 'zombie' }] });
        const fresh = track(
          kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1 }),
        );
        await fresh.connect();
        // The new producer's first transaction: its InitProducerId has bumped the epoch by now.
        const txn = await fresh.transaction();
        await txn.send({ topic: t, messages: [{ value: 'fresh' }] });
        let fenced = '';
        try {
          await old.send({ topic: t, messages: [{ value: 'zombie again' }] });
          await old.commit();
        } catch (err) {
          fenced = (err as { type?: string }).type ?? (err as Error).message;
        }
        await txn.commit();
        const { records } = await readAll(t, 1);
        await sleep(1000);
        const seen = records.map((r) => r.value?.toString()).join();
        expect(seen === 'fresh', `read_committed saw ${seen}`);
        expect(
          /FENCED|EPOCH/i.test(fenced),
          `the zombie's commit was not refused as fenced (${fenced || 'it succeeded'})`,
        );
        await closeAll();
        return `zombie refused: ${fenced}`;
      },
      idempotent: async () => {
        const t = await topic('idempotent');
        const producer = track(kafka.producer({ idempotent: true, maxInFlightRequests: 1 }));
        await producer.connect();
        for (let i = 0; i < 4; i++)
          await producer.send({
            topic: t,
            acks: -1,
            messages: Array.from({ length: 5 }, (_, j) => ({ value: String(i * 5 + j) })),
          });
        const { records } = await readAll(t, 20);
        await sleep(500);
        expect(
          records.map((r) => r.value?.toString()).join() === Array.from({ length: 20 }, (_, i) => i).join(),
          'records not once each in order',
        );
        await closeAll();
      },
      headers: async () => {
        const t = await topic('headers');
        const producer = track(kafka.producer());
        await producer.connect();
        const binary = Buffer.from([0, 255, 1, 128]);
        await producer.send({
          topic: t,
          messages: [{ value: 'h', headers: { event_id: 'e-1', binary, repeated: ['one', 'two'] } }],
        });
        const { records } = await readAll(t, 1);
        const h = records[0]?.headers ?? {};
        expect(String(h.event_id) === 'e-1', 'event_id header lost');
        expect(Buffer.isBuffer(h.binary) && h.binary.equals(binary), 'binary header changed');
        await closeAll();
        const repeated = Array.isArray(h.repeated) ? h.repeated.map(String).join(',') : String(h.repeated);
        return `a repeated key read back as ${repeated === 'one,two' ? 'both values' : repeated}`;
      },
      'compression.gzip': compression(CompressionTypes.GZIP, 'gzip'),
      'compression.snappy': compression(CompressionTypes.Snappy, 'snappy'),
      'compression.lz4': compression(CompressionTypes.LZ4, 'lz4'),
      'compression.zstd': compression(CompressionTypes.ZSTD, 'zstd'),
      'admin.topics': async () => {
        const names = [`${s.prefix}admin-a`, `${s.prefix}admin-b`];
        await admin.createTopics({
          topics: names.map((topic) => ({ topic, numPartitions: 2 })),
          waitForLeaders: true,
        });
        created.push(...names);
        const listed = await admin.listTopics();
        expect(
          names.every((n) => listed.includes(n)),
          'created topics not listed',
        );
        await admin.deleteTopics({ topics: names });
        for (let i = 0; i < 50; i++) {
          const now = await admin.listTopics();
          if (!names.some((n) => now.includes(n))) return;
          await sleep(200);
        }
        throw new Error('deleted topics still listed');
      },
      'admin.list-offsets': async () => {
        const t = await topic('offsets');
        const producer = track(kafka.producer());
        await producer.connect();
        const t0 = Date.now() - 60_000;
        await producer.send({
          topic: t,
          messages: [0, 1, 2].map((i) => ({ value: String(i), timestamp: String(t0 + i * 1000) })),
        });
        const [p] = await admin.fetchTopicOffsets(t);
        expect(p?.low === '0' && p?.high === '3', `low ${p?.low} high ${p?.high}`);
        const [byTime] = await admin.fetchTopicOffsetsByTimestamp(t, t0 + 1000);
        expect(byTime?.offset === '1', `offset at a time ${byTime?.offset}, expected 1`);
        await closeAll();
      },
      'admin.groups': async () => {
        const t = await topic('groups');
        const group = `${s.prefix}described`;
        const consumer = track(kafka.consumer({ groupId: group }));
        const join = joined(consumer);
        await consumer.connect();
        await consumer.subscribe({ topic: t });
        await consumer.run({ eachMessage: async () => undefined });
        await join;
        const { groups } = await admin.listGroups();
        expect(
          groups.some((g) => g.groupId === group),
          'group not listed',
        );
        const d = await admin.describeGroups([group]);
        expect(d.groups[0]?.members.length === 1, `described members ${d.groups[0]?.members.length}`);
        await closeAll();
        return `state ${d.groups[0]?.state}`;
      },
      'admin.group-offsets': async () => {
        const t = await topic('group-offsets');
        const group = `${s.prefix}reset`;
        const producer = track(kafka.producer());
        await producer.connect();
        await producer.send({ topic: t, messages: [{ value: '0' }, { value: '1' }, { value: '2' }] });
        await admin.setOffsets({ groupId: group, topic: t, partitions: [{ partition: 0, offset: '2' }] });
        const set = await admin.fetchOffsets({ groupId: group, topics: [t] });
        expect(set[0]?.partitions[0]?.offset === '2', `offset after set ${set[0]?.partitions[0]?.offset}`);
        await admin.resetOffsets({ groupId: group, topic: t, earliest: true });
        const reset = await admin.fetchOffsets({ groupId: group, topics: [t] });
        const o = reset[0]?.partitions[0]?.offset;
        expect(o === '0' || o === '-2', `offset after reset to earliest ${o}`);
        await closeAll();
      },
      'admin.configs': async () => {
        const t = await topic('configs', 1, [{ name: 'cleanup.policy', value: 'compact' }]);
        const d = await admin.describeConfigs({
          resources: [{ type: ConfigResourceTypes.TOPIC, name: t, configNames: ['cleanup.policy'] }],
          includeSynonyms: false,
        });
        const v = d.resources[0]?.configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue;
        expect(v === 'compact', `cleanup.policy ${v}`);
      },
      'admin.acls': async () => {
        if (!s.aclBrokers) throw new Error('no broker with an authorizer was started (run.ts --no-acls)');
        const aclAdmin = track(new Kafka({ ...base, brokers: s.aclBrokers }).admin());
        await aclAdmin.connect();
        const acl = {
          resourceType: AclResourceTypes.TOPIC,
          resourceName: `${s.prefix}acl`,
          resourcePatternType: ResourcePatternTypes.LITERAL,
          principal: 'User:client-check',
          host: '*',
          operation: AclOperationTypes.READ,
          permissionType: AclPermissionTypes.ALLOW,
        };
        await aclAdmin.createAcls({ acl: [acl] });
        const found = await aclAdmin.describeAcls({
          resourceType: AclResourceTypes.TOPIC,
          resourceName: acl.resourceName,
          resourcePatternType: ResourcePatternTypes.LITERAL,
          operation: AclOperationTypes.ANY,
          permissionType: AclPermissionTypes.ANY,
        });
        await aclAdmin.deleteAcls({ filters: [acl] });
        expect(
          found.resources.some((r) => r.acls.some((a) => a.principal === 'User:client-check')),
          'the ACL created was not described',
        );
        await closeAll();
      },
      'sasl.scram-tls': () =>
        securedRoundTrip(
          {
            brokers: [s.secure.scramTls.bootstrap],
            ssl: { ca: ca() },
            sasl: {
              mechanism: 'scram-sha-512',
              username: s.secure.scramTls.username,
              password: s.secure.scramTls.password,
            },
          },
          'scram',
        ),
      'tls.mutual': () =>
        securedRoundTrip(
          {
            brokers: [s.secure.mtls.bootstrap],
            ssl: {
              ca: ca(),
              cert: fs.readFileSync(s.secure.mtls.certFile),
              key: fs.readFileSync(s.secure.mtls.keyFile),
            },
          },
          'mtls',
        ),
      'sasl.oauthbearer': async () => {
        let tokens = 0;
        await securedRoundTrip(
          {
            brokers: [s.secure.oauth.bootstrap],
            ssl: { ca: ca() },
            sasl: {
              mechanism: 'oauthbearer',
              oauthBearerProvider: async () => {
                tokens += 1;
                return { value: (await fetchToken(s)).value };
              },
            },
          },
          'oauth',
        );
        expect(tokens >= 1, 'the token provider was never called');
        return `${tokens} token(s) asked for`;
      },
    },
    async () => {
      await closeAll();
      const left = created.filter((t, i) => created.indexOf(t) === i);
      const existing = await admin.listTopics();
      const toDelete = left.filter((t) => existing.includes(t));
      if (toDelete.length) await admin.deleteTopics({ topics: toDelete });
      await admin.disconnect();
    },
  );
}

void main().catch((err: unknown) => {
  process.stderr.write(`kafkajs checks failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
