/**
 * The client checks (./check.ts) on @confluentinc/kafka-javascript (librdkafka), through its
 * KafkaJS-compatible API, loaded from its own install (.cache/rdkafka-floor; not a dependency of
 * docstream). What that API lacks is looked for on the instance, so that a later version that adds
 * it is tried instead of assumed absent.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { expect, fetchToken, NotSupported, readSettings, runChecks, sleep, waitFor } from './check.js';

const s = readSettings();
const require = createRequire(import.meta.url);

/* eslint-disable @typescript-eslint/no-explicit-any -- the package's own types are in its own install */
type Any = any;
const { KafkaJS } = require(s.module as string) as { KafkaJS: Any };
const version = (require(path.join(s.module as string, 'package.json')) as { version: string }).version;
const { CompressionTypes, PartitionAssigners, logLevel } = KafkaJS;

const base = { clientId: 'client-checks', brokers: s.brokers, logLevel: logLevel.NOTHING };
const kafka = new KafkaJS.Kafka({ kafkaJS: base });
const created: string[] = [];
const open: Array<{ disconnect(): Promise<void> }> = [];
let admin: Any;

/** librdkafka's rebalance codes, as the rebalance callback's error carries them. */
const ASSIGN = -175;
const REVOKE = -174;

async function topic(name: string, partitions = 1, configEntries?: Array<{ name: string; value: string }>) {
  const full = `${s.prefix}${name}`;
  await admin.createTopics({
    topics: [{ topic: full, numPartitions: partitions, replicationFactor: 1, configEntries }],
  });
  created.push(full);
  await sleep(500);
  return full;
}

function track<T extends { disconnect(): Promise<void> }>(client: T): T {
  open.push(client);
  return client;
}

async function closeAll(): Promise<void> {
  for (const c of open.splice(0)) await c.disconnect().catch(() => undefined);
}

function consumer(groupId: string, kafkaJS: object = {}, outer: object = {}): Any {
  return track(kafka.consumer({ kafkaJS: { groupId, fromBeginning: true, ...kafkaJS }, ...outer }));
}

async function readAll(name: string, count: number) {
  const c = consumer(`${s.prefix}reader-${name}-${Date.now()}`);
  const records: Any[] = [];
  await c.connect();
  await c.subscribe({ topics: [name] });
  void c.run({
    eachMessage: async ({ message, partition }: Any) => void records.push({ ...message, partition }),
  });
  await waitFor(`${count} records on ${name}`, () => records.length >= count, s.checkTimeoutMs - 2000);
  return { records, consumer: c };
}

function missing(object: Any, method: string, what: string): void {
  if (typeof object[method] !== 'function')
    throw new NotSupported(`the KafkaJS API's ${what} has no ${method} (${version})`);
}

async function roundTrip(codec: string, name: string) {
  const t = await topic(`compression-${name}`);
  const producer = track(kafka.producer({ kafkaJS: { compression: codec } }));
  await producer.connect();
  const value = Buffer.from('docstream '.repeat(200));
  await producer.send({ topic: t, messages: [{ value }, { value }] });
  const { records } = await readAll(t, 2);
  expect(
    records.every((r) => Buffer.from(r.value).equals(value)),
    'a record read back differs from the one written',
  );
  await closeAll();
}

async function securedRoundTrip(kafkaJS: object, outer: object, name: string) {
  const t = await topic(name);
  const secured = new KafkaJS.Kafka({ kafkaJS: { ...base, ...kafkaJS }, ...outer });
  const producer = track(secured.producer());
  const securedAdmin = track(secured.admin());
  await producer.connect();
  await producer.send({ topic: t, messages: [{ value: 'secured' }] });
  await securedAdmin.connect();
  let offsets: Any;
  try {
    offsets = await securedAdmin.fetchTopicOffsets(t);
  } catch (err) {
    // Tell a call made too early from one that cannot work: the same call after a listTopics.
    await securedAdmin.listTopics();
    offsets = await securedAdmin.fetchTopicOffsets(t);
    throw new Error(
      `the admin's first call, fetchTopicOffsets, failed (${(err as Error).message}); after a listTopics it answered`,
    );
  }
  expect(offsets[0]?.high === '1', `high watermark ${offsets[0]?.high}, expected 1`);
  await closeAll();
}

/** Each member's rebalance callback events, with when they came. */
function rebalanceLog(hold: (code: number) => Promise<void> = async () => undefined) {
  const events: Array<{ code: number; partitions: number[]; at: number }> = [];
  return {
    events,
    rebalance_cb: async (err: Any, assignment: Any[]) => {
      await hold(err.code);
      events.push({ code: err.code, partitions: assignment.map((a) => a.partition).sort(), at: Date.now() });
    },
  };
}

const held = (events: Array<{ code: number; partitions: number[] }>) => {
  const owned = new Set<number>();
  for (const e of events)
    for (const p of e.partitions) {
      if (e.code === ASSIGN) owned.add(p);
      else owned.delete(p);
    }
  return [...owned].sort();
};

async function main() {
  admin = kafka.admin();
  await admin.connect();
  await runChecks(
    'confluent',
    version,
    s,
    {
      'group.assignor': async () => {
        const t = await topic('assignor', 4);
        const group = `${s.prefix}assignor`;
        const logs = [rebalanceLog(), rebalanceLog()];
        const members = logs.map((l) =>
          consumer(
            group,
            { partitionAssigners: [PartitionAssigners.cooperativeSticky] },
            { rebalance_cb: l.rebalance_cb },
          ),
        );
        await members[0].connect();
        await members[0].subscribe({ topics: [t] });
        void members[0].run({ eachMessage: async () => undefined });
        await waitFor('the first member holding all four', () => held(logs[0]!.events).length === 4, 20_000);
        await members[1].connect();
        await members[1].subscribe({ topics: [t] });
        void members[1].run({ eachMessage: async () => undefined });
        await waitFor(
          'both members holding two',
          () => held(logs[0]!.events).length === 2 && held(logs[1]!.events).length === 2,
          30_000,
        );
        const revoked = logs[0]!.events.filter((e) => e.code === REVOKE).flatMap((e) => e.partitions);
        expect(revoked.length === 2, `the first member gave up ${revoked.length} partitions, expected 2`);
        await closeAll();
        return 'cooperative-sticky: the first member gave up only the two that moved; custom assignors are not supported';
      },
      'group.rebalance-hold': async () => {
        const t = await topic('hold', 2);
        const group = `${s.prefix}hold`;
        let released = 0;
        const first = rebalanceLog(async (code) => {
          if (code !== REVOKE) return;
          await sleep(3000);
          released = Date.now();
        });
        const second = rebalanceLog();
        const a = consumer(group, {}, { rebalance_cb: first.rebalance_cb });
        await a.connect();
        await a.subscribe({ topics: [t] });
        void a.run({ eachMessage: async () => undefined });
        await waitFor('the first member assigned', () => held(first.events).length === 2, 20_000);
        const b = consumer(group, {}, { rebalance_cb: second.rebalance_cb });
        await b.connect();
        await b.subscribe({ topics: [t] });
        void b.run({ eachMessage: async () => undefined });
        await waitFor('the second member assigned', () => held(second.events).length > 0, 30_000);
        const assignedAt = second.events.find((e) => e.code === ASSIGN && e.partitions.length > 0)?.at ?? 0;
        expect(
          released > 0 && assignedAt >= released,
          'the second member was assigned before the hold was released',
        );
        await closeAll();
        return 'an async rebalance callback held the revoke 3 s; the new member was assigned after it';
      },
      'pause-resume': async () => {
        const t = await topic('pause', 2);
        const c = consumer(`${s.prefix}pause`);
        const seen: number[] = [];
        await c.connect();
        await c.subscribe({ topics: [t] });
        void c.run({ eachMessage: async ({ partition }: Any) => void seen.push(partition) });
        await waitFor('the assignment', () => c.assignment().length === 2, 20_000);
        c.pause([{ topic: t, partitions: [0] }]);
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
        c.resume([{ topic: t, partitions: [0] }]);
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
        const c = consumer(group, { autoCommit: false });
        const got: Any[] = [];
        await c.connect();
        await c.subscribe({ topics: [input] });
        void c.run({ eachMessage: async ({ message }: Any) => void got.push(message) });
        await waitFor('the input read', () => got.length === 3, 20_000);
        const txp = track(
          kafka.producer({
            kafkaJS: { transactionalId: `${s.prefix}txn`, idempotent: true, maxInFlightRequests: 1 },
          }),
        );
        await txp.connect();
        const txn = await txp.transaction();
        await txn.send({ topic: output, messages: [{ value: 'A' }, { value: 'B' }, { value: 'C' }] });
        await txn.sendOffsets({
          consumer: c,
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
          records.length === 3 && !records.some((r) => String(r.value) === 'aborted'),
          `read_committed saw ${records.length} records`,
        );
        await closeAll();
        return 'offsets sent with the consumer (KIP-447 group metadata)';
      },
      'txn.fencing': async () => {
        const t = await topic('fencing');
        const id = `${s.prefix}fenced`;
        const settings = { kafkaJS: { transactionalId: id, idempotent: true, maxInFlightRequests: 1 } };
        const zombie = track(kafka.producer(settings));
        await zombie.connect();
        const old = await zombie.transaction();
        await old.send({ topic: t, messages: [{ value: 'zombie' }] });
        const fresh = track(kafka.producer(settings));
        await fresh.connect();
        // The new producer's first transaction: its InitProducerId has bumped the epoch by now.
        const txn = await fresh.transaction();
        await txn.send({ topic: t, messages: [{ value: 'fresh' }] });
        let fenced = '';
        try {
          await old.send({ topic: t, messages: [{ value: 'zombie again' }] });
          await old.commit();
        } catch (err) {
          fenced = `${(err as Any).type ?? ''} ${(err as Error).message}`.trim();
        }
        await txn.commit();
        const { records } = await readAll(t, 1);
        await sleep(1000);
        const seen = records.map((r) => String(r.value)).join();
        expect(seen === 'fresh', `read_committed saw ${seen}`);
        expect(
          /FENCED|EPOCH/i.test(fenced),
          `the zombie's commit was not refused as fenced (${fenced || 'it succeeded'})`,
        );
        await closeAll();
        return `zombie refused: ${fenced.slice(0, 120)}`;
      },
      idempotent: async () => {
        const t = await topic('idempotent');
        const producer = track(
          kafka.producer({ kafkaJS: { idempotent: true, maxInFlightRequests: 1, acks: -1 } }),
        );
        await producer.connect();
        for (let i = 0; i < 4; i++)
          await producer.send({
            topic: t,
            messages: Array.from({ length: 5 }, (_, j) => ({ value: String(i * 5 + j) })),
          });
        const { records } = await readAll(t, 20);
        await sleep(500);
        expect(
          records.map((r) => String(r.value)).join() === Array.from({ length: 20 }, (_, i) => i).join(),
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
        expect(Buffer.from(h.binary ?? []).equals(binary), 'binary header changed');
        await closeAll();
        const repeated = Array.isArray(h.repeated) ? h.repeated.map(String).join(',') : String(h.repeated);
        return `a repeated key read back as ${repeated === 'one,two' ? 'both values' : repeated}`;
      },
      'compression.gzip': () => roundTrip(CompressionTypes.GZIP, 'gzip'),
      'compression.snappy': () => roundTrip(CompressionTypes.SNAPPY, 'snappy'),
      'compression.lz4': () => roundTrip(CompressionTypes.LZ4, 'lz4'),
      'compression.zstd': () => roundTrip(CompressionTypes.ZSTD, 'zstd'),
      'admin.topics': async () => {
        const names = [`${s.prefix}admin-a`, `${s.prefix}admin-b`];
        await admin.createTopics({ topics: names.map((t) => ({ topic: t, numPartitions: 2 })) });
        created.push(...names);
        const listed: string[] = await admin.listTopics();
        expect(
          names.every((n) => listed.includes(n)),
          'created topics not listed',
        );
        await admin.deleteTopics({ topics: names });
        for (let i = 0; i < 50; i++) {
          const now: string[] = await admin.listTopics();
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
        missing(admin, 'fetchTopicOffsetsByTimestamp', 'admin');
        const [byTime] = await admin.fetchTopicOffsetsByTimestamp(t, t0 + 1000);
        expect(byTime?.offset === '1', `offset at a time ${byTime?.offset}, expected 1`);
        await closeAll();
      },
      'admin.groups': async () => {
        const t = await topic('groups');
        const group = `${s.prefix}described`;
        const c = consumer(group);
        await c.connect();
        await c.subscribe({ topics: [t] });
        void c.run({ eachMessage: async () => undefined });
        await waitFor('the assignment', () => c.assignment().length === 1, 20_000);
        const { groups } = await admin.listGroups();
        expect(
          groups.some((g: Any) => g.groupId === group),
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
        const fetched = await admin.fetchOffsets({ groupId: group, topics: [t] });
        expect(Array.isArray(fetched), 'fetchOffsets answered nothing');
        missing(admin, 'setOffsets', 'admin');
        missing(admin, 'resetOffsets', 'admin');
        await admin.setOffsets({ groupId: group, topic: t, partitions: [{ partition: 0, offset: '2' }] });
        const set = await admin.fetchOffsets({ groupId: group, topics: [t] });
        expect(set[0]?.partitions[0]?.offset === '2', `offset after set ${set[0]?.partitions[0]?.offset}`);
        await closeAll();
      },
      'admin.configs': async () => {
        const t = await topic('configs', 1, [{ name: 'cleanup.policy', value: 'compact' }]);
        missing(admin, 'describeConfigs', 'admin');
        const d = await admin.describeConfigs({
          resources: [{ type: 2, name: t, configNames: ['cleanup.policy'] }],
        });
        const v = d.resources[0]?.configEntries.find(
          (e: Any) => e.configName === 'cleanup.policy',
        )?.configValue;
        expect(v === 'compact', `cleanup.policy ${v}`);
      },
      'admin.acls': async () => {
        missing(admin, 'createAcls', 'admin');
        missing(admin, 'describeAcls', 'admin');
        throw new Error('createAcls exists but this check does not call it yet');
      },
      'sasl.scram-tls': () =>
        securedRoundTrip(
          {
            brokers: [s.secure.scramTls.bootstrap],
            ssl: true,
            sasl: {
              mechanism: 'scram-sha-512',
              username: s.secure.scramTls.username,
              password: s.secure.scramTls.password,
            },
          },
          { 'ssl.ca.location': s.secure.caFile },
          'scram',
        ),
      'tls.mutual': () =>
        securedRoundTrip(
          { brokers: [s.secure.mtls.bootstrap], ssl: true },
          {
            'ssl.ca.location': s.secure.caFile,
            'ssl.certificate.location': s.secure.mtls.certFile,
            'ssl.key.location': s.secure.mtls.keyFile,
          },
          'mtls',
        ),
      'sasl.oauthbearer': async () => {
        let tokens = 0;
        await securedRoundTrip(
          {
            brokers: [s.secure.oauth.bootstrap],
            ssl: true,
            sasl: {
              mechanism: 'oauthbearer',
              oauthBearerProvider: async () => {
                tokens += 1;
                const token = await fetchToken(s);
                return {
                  value: token.value,
                  lifetime: Date.now() + token.expiresInS * 1000,
                  principal: s.secure.oauth.clientId,
                };
              },
            },
          },
          { 'ssl.ca.location': s.secure.caFile },
          'oauth',
        );
        expect(tokens >= 1, 'the token provider was never called');
        return `${tokens} token(s) asked for`;
      },
    },
    async () => {
      await closeAll();
      const existing: string[] = await admin.listTopics();
      const toDelete = [...new Set(created)].filter((t) => existing.includes(t));
      if (toDelete.length) await admin.deleteTopics({ topics: toDelete });
      await admin.disconnect();
    },
  );
}

void main().catch((err: unknown) => {
  process.stderr.write(`confluent checks failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
