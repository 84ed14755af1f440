/**
 * The client checks (./check.ts) on @platformatic/kafka (pure JavaScript), loaded from its own
 * install (.cache/platformatic-floor; not a dependency of docstream). Its consumer is a stream per
 * consume() call; offsets are bigints; keys, values and header keys are Buffers by default.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, fetchToken, NotSupported, readSettings, runChecks, sleep, waitFor } from './check.js';

const s = readSettings();
/* eslint-disable @typescript-eslint/no-explicit-any -- the package's own types are in its own install */
type Any = any;
const plt: Any = await import(pathToFileURL(s.module as string).href);
const version = (
  JSON.parse(fs.readFileSync(path.join(path.dirname(s.module as string), '../package.json'), 'utf8')) as {
    version: string;
  }
).version;
const {
  AclOperations,
  AclPermissionTypes,
  Admin,
  ConfigResourceTypes,
  Consumer,
  FetchIsolationLevels,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  ProduceAcks,
  Producer,
  ResourcePatternTypes,
  ResourceTypes,
} = plt;

const base = { clientId: 'client-checks', bootstrapBrokers: s.brokers };
const created: string[] = [];
const open: Array<{ close(): Promise<void> }> = [];
let admin: Any;

function track<T extends { close(): Promise<void> }>(client: T): T {
  open.push(client);
  return client;
}

async function closeAll(): Promise<void> {
  for (const c of open.splice(0).reverse()) await c.close().catch(() => undefined);
}

async function topic(name: string, partitions = 1, configs?: Array<{ name: string; value: string }>) {
  const full = `${s.prefix}${name}`;
  await admin.createTopics({ topics: [full], partitions, replicas: 1, ...(configs ? { configs } : {}) });
  created.push(full);
  await sleep(300);
  return full;
}

function producer(options: object = {}): Any {
  return track(new Producer({ ...base, ...options }));
}

function consumer(groupId: string, options: object = {}): Any {
  return track(new Consumer({ ...base, groupId, maxWaitTime: 200, ...options }));
}

/** A stream of the topic from the beginning, its records gathered. */
async function stream(c: Any, topics: string[], options: object = {}) {
  const records: Any[] = [];
  const st = track(
    await c.consume({
      topics,
      mode: MessagesStreamModes.COMMITTED,
      fallbackMode: MessagesStreamFallbackModes.EARLIEST,
      ...options,
    }),
  ) as Any;
  st.on('data', (m: Any) => records.push(m));
  st.on('error', () => undefined);
  return { st, records };
}

async function readAll(name: string, count: number, options: object = {}) {
  const c = consumer(`${s.prefix}reader-${name}-${Date.now()}`, { autocommit: false });
  const { records } = await stream(c, [name], options);
  await waitFor(`${count} records on ${name}`, () => records.length >= count, s.checkTimeoutMs - 2000);
  return records;
}

function joined(c: Any, when: (payload: Any) => boolean = () => true): Promise<Any> {
  return new Promise((resolve) => {
    const on = (payload: Any) => {
      if (!when(payload)) return;
      c.off('consumer:group:join', on);
      resolve(payload);
    };
    c.on('consumer:group:join', on);
  });
}

async function roundTrip(codec: string) {
  const t = await topic(`compression-${codec}`);
  const p = producer({ compression: codec });
  const value = Buffer.from('docstream '.repeat(200));
  await p.send({
    messages: [
      { topic: t, value },
      { topic: t, value },
    ],
  });
  const records = await readAll(t, 2);
  expect(
    records.every((r) => Buffer.from(r.value).equals(value)),
    'a record read back differs from the one written',
  );
  await closeAll();
}

async function securedRoundTrip(options: object, name: string) {
  const t = await topic(name);
  const p = producer({ ...options, bootstrapBrokers: (options as Any).bootstrapBrokers });
  await p.send({ messages: [{ topic: t, value: Buffer.from('secured') }] });
  const securedAdmin = track(new Admin({ ...base, ...options }));
  const [listed] = await securedAdmin.listOffsets({
    topics: [{ name: t, partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
  });
  const high = listed?.partitions[0]?.offset;
  expect(high === 1n, `high watermark ${high}, expected 1`);
  await closeAll();
}

const ca = () => fs.readFileSync(s.secure.caFile);

async function main() {
  admin = new Admin(base);
  await runChecks(
    'platformatic',
    version,
    s,
    {
      'group.assignor': async () => {
        const t = await topic('assignor', 4);
        const group = `${s.prefix}assignor`;
        const userDataSeen: string[] = [];
        // Contiguous ranges by member id, reading each member's subscription user data.
        const partitionAssigner = (
          _leader: string,
          members: Map<string, Any>,
          topics: Set<string>,
          metadata: Any,
        ) => {
          const ids = [...members.keys()].sort();
          for (const m of members.values()) userDataSeen.push(Buffer.from(m.metadata ?? []).toString('utf8'));
          const name = [...topics][0] as string;
          const count = metadata.topics.get(name)?.partitionsCount ?? 0;
          const per = Math.ceil(count / ids.length);
          return ids.map((memberId, i) => ({
            memberId,
            assignments: new Map([
              [
                name,
                {
                  topic: name,
                  partitions: Array.from({ length: count }, (_, p) => p).slice(i * per, (i + 1) * per),
                },
              ],
            ]),
          }));
        };
        const options = {
          partitionAssigner,
          protocols: [{ name: 'check-contiguous', version: 1 }],
          protocolsMetadata: () => Buffer.from('previous'),
        };
        const a = consumer(group, options);
        const aJoined = joined(a);
        await stream(a, [t]);
        await aJoined;
        const b = consumer(group, options);
        await stream(b, [t]);
        await waitFor(
          'two members holding two partitions each',
          () =>
            [a, b].every(
              (c) => (c.assignments ?? []).reduce((n: number, x: Any) => n + x.partitions.length, 0) === 2,
            ),
          30_000,
        );
        const shares = [a, b].map((c) => c.assignments.flatMap((x: Any) => x.partitions).sort());
        expect(shares.flat().sort().join() === '0,1,2,3', `assignment ${JSON.stringify(shares)}`);
        expect(
          userDataSeen.includes('previous'),
          `the assignor saw user data ${JSON.stringify(userDataSeen)}`,
        );
        await closeAll();
        return 'custom assignor with user data (classic protocol); cooperativeStickyAssigner exported, not tried';
      },
      'group.rebalance-hold': async () => {
        const t = await topic('hold', 2);
        const group = `${s.prefix}hold`;
        let joins = 0;
        let released = 0;
        // protocolsMetadata runs before each JoinGroup and may answer a promise: hold the rejoin on it.
        const a = consumer(group, {
          protocolsMetadata: async () => {
            joins += 1;
            if (joins > 1) {
              await sleep(3000);
              released = Date.now();
            }
            return Buffer.alloc(0);
          },
        });
        const aJoined = joined(a);
        await stream(a, [t]);
        await aJoined;
        const b = consumer(group);
        let assignedAt = 0;
        b.on('consumer:group:join', (p: Any) => {
          if ((p.assignments ?? []).some((x: Any) => x.partitions.length > 0) && !assignedAt)
            assignedAt = Date.now();
        });
        await stream(b, [t]);
        await waitFor('the second member assigned', () => assignedAt > 0, 30_000);
        expect(joins > 1, 'the first member never rejoined');
        expect(
          released > 0 && assignedAt >= released,
          'the second member was assigned before the hold was released',
        );
        await closeAll();
        return 'protocolsMetadata (awaited before each JoinGroup) held the rejoin 3 s; no revoke listener as such';
      },
      'pause-resume': async () => {
        throw new NotSupported(
          `@platformatic/kafka ${version}: MessagesStream.pause()/resume() stop and restart the whole ` +
            'stream, with no partition argument; the consumer has no pause of its own',
        );
      },
      'txn.offsets': async () => {
        const input = await topic('txn-in');
        const output = await topic('txn-out');
        const group = `${s.prefix}txn-group`;
        await producer().send({
          messages: ['a', 'b', 'c'].map((v) => ({ topic: input, value: Buffer.from(v) })),
        });
        const c = consumer(group, { autocommit: false });
        const { records: got } = await stream(c, [input]);
        await waitFor('the input read', () => got.length === 3, 20_000);
        const txp = producer({ idempotent: true, transactionalId: `${s.prefix}txn`, acks: ProduceAcks.ALL });
        const txn = await txp.beginTransaction();
        await txn.addConsumer(c);
        await txn.send({ messages: ['A', 'B', 'C'].map((v) => ({ topic: output, value: Buffer.from(v) })) });
        for (const m of got) await txn.addOffset(m);
        await txn.commit();
        const aborted = await txp.beginTransaction();
        await aborted.send({ messages: [{ topic: output, value: Buffer.from('aborted') }] });
        await aborted.abort();
        const [offsets] = await admin.listConsumerGroupOffsets({ groups: [group] });
        const committed = offsets?.topics.find((x: Any) => x.name === input)?.partitions[0]?.committedOffset;
        expect(committed === 3n, `group offset ${committed}`);
        const records = await readAll(output, 3, { isolationLevel: FetchIsolationLevels.READ_COMMITTED });
        await sleep(1000);
        expect(
          records.length === 3 && !records.some((r) => String(r.value) === 'aborted'),
          `read_committed saw ${records.length} records`,
        );
        await closeAll();
        return 'offsets added with the consumer (its group generation and member id)';
      },
      'txn.fencing': async () => {
        const t = await topic('fencing');
        const id = `${s.prefix}fenced`;
        const zombie = producer({ idempotent: true, transactionalId: id, acks: ProduceAcks.ALL });
        const old = await zombie.beginTransaction();
        await old.send({ messages: [{ topic: t, value: Buffer.from('zombie') }] });
        const fresh = producer({ idempotent: true, transactionalId: id, acks: ProduceAcks.ALL });
        const txn = await fresh.beginTransaction();
        await txn.send({ messages: [{ topic: t, value: Buffer.from('fresh') }] });
        let fenced = '';
        try {
          await old.send({ messages: [{ topic: t, value: Buffer.from('zombie again') }] });
          await old.commit();
        } catch (err) {
          const e = err as Any;
          fenced = [e.code, e.message, ...(e.errors ?? []).map((x: Any) => x.apiCode ?? x.message)].join(' ');
        }
        await txn.commit();
        const records = await readAll(t, 1, { isolationLevel: FetchIsolationLevels.READ_COMMITTED });
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
        const p = producer({ idempotent: true, acks: ProduceAcks.ALL });
        for (let i = 0; i < 4; i++)
          await p.send({
            messages: Array.from({ length: 5 }, (_, j) => ({
              topic: t,
              partition: 0,
              value: Buffer.from(String(i * 5 + j)),
            })),
          });
        const records = await readAll(t, 20);
        await sleep(500);
        expect(
          records.map((r) => String(r.value)).join() === Array.from({ length: 20 }, (_, i) => i).join(),
          'records not once each in order',
        );
        await closeAll();
      },
      headers: async () => {
        const t = await topic('headers');
        const binary = Buffer.from([0, 255, 1, 128]);
        await producer().send({
          messages: [
            {
              topic: t,
              value: Buffer.from('h'),
              headers: new Map([
                [Buffer.from('event_id'), Buffer.from('e-1')],
                [Buffer.from('binary'), binary],
              ]),
            },
          ],
        });
        const [r] = await readAll(t, 1);
        const h = new Map<string, Buffer>(
          [...(r.headers as Map<Buffer, Buffer>)].map(([k, v]) => [String(k), v]),
        );
        expect(String(h.get('event_id')) === 'e-1', 'event_id header lost');
        expect(Buffer.from(h.get('binary') ?? []).equals(binary), 'binary header changed');
        await closeAll();
        return 'a repeated key cannot be written (headers are a Map or an object)';
      },
      'compression.gzip': () => roundTrip('gzip'),
      'compression.snappy': () => roundTrip('snappy'),
      'compression.lz4': () => roundTrip('lz4'),
      'compression.zstd': () => roundTrip('zstd'),
      'admin.topics': async () => {
        const names = [`${s.prefix}admin-a`, `${s.prefix}admin-b`];
        await admin.createTopics({ topics: names, partitions: 2, replicas: 1 });
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
        const t0 = BigInt(Date.now() - 60_000);
        await producer().send({
          messages: [0, 1, 2].map((i) => ({
            topic: t,
            partition: 0,
            value: Buffer.from(String(i)),
            timestamp: t0 + BigInt(i * 1000),
          })),
        });
        const at = async (timestamp: bigint) =>
          (
            await admin.listOffsets({ topics: [{ name: t, partitions: [{ partitionIndex: 0, timestamp }] }] })
          )[0]?.partitions[0]?.offset;
        const [low, high, byTime] = [await at(-2n), await at(-1n), await at(t0 + 1000n)];
        expect(low === 0n && high === 3n, `low ${low} high ${high}`);
        expect(byTime === 1n, `offset at a time ${byTime}, expected 1`);
        await closeAll();
      },
      'admin.groups': async () => {
        const t = await topic('groups');
        const group = `${s.prefix}described`;
        const c = consumer(group);
        const join = joined(c);
        await stream(c, [t]);
        await join;
        const groups: Map<string, Any> = await admin.listGroups();
        expect(groups.has(group), 'group not listed');
        const d: Map<string, Any> = await admin.describeGroups({ groups: [group] });
        const g = d.get(group);
        expect(g?.members.size === 1, `described members ${g?.members.size}`);
        await closeAll();
        return `state ${g?.state}`;
      },
      'admin.group-offsets': async () => {
        const t = await topic('group-offsets');
        const group = `${s.prefix}reset`;
        await producer().send({
          messages: ['0', '1', '2'].map((v) => ({ topic: t, partition: 0, value: Buffer.from(v) })),
        });
        const committed = async () =>
          (await admin.listConsumerGroupOffsets({ groups: [group] }))[0]?.topics.find(
            (x: Any) => x.name === t,
          )?.partitions[0]?.committedOffset;
        await admin.alterConsumerGroupOffsets({
          groupId: group,
          topics: [{ name: t, partitionOffsets: [{ partition: 0, offset: 2n }] }],
        });
        const set = await committed();
        expect(set === 2n, `offset after set ${set}`);
        await admin.alterConsumerGroupOffsets({
          groupId: group,
          topics: [{ name: t, partitionOffsets: [{ partition: 0, offset: 0n }] }],
        });
        const reset = await committed();
        expect(reset === 0n, `offset after reset ${reset}`);
        await closeAll();
        return 'reset to earliest is an alter to the offset listOffsets gives (no reset helper)';
      },
      'admin.configs': async () => {
        const t = await topic('configs', 1, [{ name: 'cleanup.policy', value: 'compact' }]);
        const [d] = await admin.describeConfigs({
          resources: [
            {
              resourceType: ConfigResourceTypes.TOPIC,
              resourceName: t,
              configurationKeys: ['cleanup.policy'],
            },
          ],
        });
        const v = d?.configs.find((e: Any) => e.name === 'cleanup.policy')?.value;
        expect(v === 'compact', `cleanup.policy ${v}`);
      },
      'admin.acls': async () => {
        if (!s.aclBrokers) throw new Error('no broker with an authorizer was started (run.ts --no-acls)');
        const aclAdmin = track(new Admin({ ...base, bootstrapBrokers: s.aclBrokers }));
        const acl = {
          resourceType: ResourceTypes.TOPIC,
          resourceName: `${s.prefix}acl`,
          resourcePatternType: ResourcePatternTypes.LITERAL,
          principal: 'User:client-check',
          host: '*',
          operation: AclOperations.READ,
          permissionType: AclPermissionTypes.ALLOW,
        };
        await aclAdmin.createAcls({ creations: [acl] });
        const found = await aclAdmin.describeAcls({
          filter: {
            ...acl,
            operation: AclOperations.ANY,
            permissionType: AclPermissionTypes.ANY,
            principal: null,
            host: null,
          },
        });
        await aclAdmin.deleteAcls({ filters: [acl] });
        expect(
          found.some((r: Any) => r.acls.some((a: Any) => a.principal === 'User:client-check')),
          'the ACL created was not described',
        );
        await closeAll();
      },
      'sasl.scram-tls': () =>
        securedRoundTrip(
          {
            bootstrapBrokers: [s.secure.scramTls.bootstrap],
            tls: { ca: ca() },
            sasl: {
              mechanism: 'SCRAM-SHA-512',
              username: s.secure.scramTls.username,
              password: s.secure.scramTls.password,
            },
          },
          'scram',
        ),
      'tls.mutual': () =>
        securedRoundTrip(
          {
            bootstrapBrokers: [s.secure.mtls.bootstrap],
            tls: {
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
            bootstrapBrokers: [s.secure.oauth.bootstrap],
            tls: { ca: ca() },
            sasl: {
              mechanism: 'OAUTHBEARER',
              token: async () => {
                tokens += 1;
                return (await fetchToken(s)).value;
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
      const existing: string[] = await admin.listTopics();
      const toDelete = [...new Set(created)].filter((t) => existing.includes(t));
      if (toDelete.length) await admin.deleteTopics({ topics: toDelete });
      await admin.close();
    },
  );
}

void main().catch((err: unknown) => {
  process.stderr.write(`platformatic checks failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
