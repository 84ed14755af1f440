/**
 * A member the coordinator forgot, whose next join fails, on the real broker: it must join again
 * rather than fetch on its old assignment for good. The coordinator forgets it by a LeaveGroup sent
 * for it (as when its session expired), so its next heartbeat gets UNKNOWN_MEMBER_ID; kafkajs then
 * clears its member id and joins, and that one join fails (its coordinator cannot be found). Checked:
 * the member joins the group again, and a record produced after it is consumed.
 */
import { kafkajsInternal } from '../../src/kafka/kafkajs-internals.js';
import type { GroupJoin } from '../../src/kafka/consumer.js';
import { adminAndProducer, kafkaClient, uniqueName, waitFor } from './helpers.js';

interface Coordinator {
  leaveGroup(request: { groupId: string; memberId: string }): Promise<unknown>;
}

interface GroupMember {
  groupId: string;
  memberId: string | null;
  coordinator: Coordinator | null;
  cluster: { findGroupCoordinator?: (request: { groupId: string }) => Promise<unknown> };
  joinAndSync(): Promise<void>;
}

describe('a forgotten member whose rejoin fails', () => {
  const client = kafkaClient();
  const { admin, producer, created } = adminAndProducer(client);
  const proto = kafkajsInternal<{ prototype: GroupMember }>('consumer/consumerGroup.js').prototype;
  const joinAndSync = proto.joinAndSync;
  afterAll(() => {
    proto.joinAndSync = joinAndSync;
  });

  it('joins its group again and goes on consuming', async () => {
    const topic = uniqueName('rejoin');
    const groupId = uniqueName('rejoin-group');
    created.push(topic);
    await admin.ensureTopics([{ topic, numPartitions: 2 }]);

    // The group members kafkajs made for this group (one per consumer start), and a join armed to fail once.
    let failNextJoin = false;
    let failedJoins = 0;
    const members = new Set<GroupMember>();
    proto.joinAndSync = function (this: GroupMember) {
      if (this.groupId === groupId) members.add(this);
      if (this.groupId === groupId && failNextJoin) {
        failNextJoin = false;
        const cluster = this.cluster;
        cluster.findGroupCoordinator = () => {
          delete cluster.findGroupCoordinator;
          failedJoins += 1;
          return Promise.reject(new Error('the test made the coordinator unreachable for this join'));
        };
      }
      return joinAndSync.call(this);
    };

    const consumer = client.consumer({
      groupId,
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 500,
      maxWaitTimeMs: 200,
    });
    const joins: GroupJoin[] = [];
    const values: string[] = [];
    consumer.onGroupJoin((j) => joins.push(j));
    await consumer.connect();
    try {
      await consumer.subscribe([topic], { fromBeginning: true });
      await consumer.run(async (batch, control) => {
        for (const m of batch.messages) {
          values.push(m.value?.toString() ?? '');
          control.resolveOffset(m.offset);
        }
      });
      await waitFor('the first join', () => joins.length === 1);
      expect(members.size).toBe(1);
      const [member] = [...members];
      const { memberId, coordinator } = member!;
      failNextJoin = true;
      await coordinator!.leaveGroup({ groupId, memberId: memberId! });

      await waitFor('the failed join', () => failedJoins === 1, 20_000);
      await waitFor('a join after the failed one', () => joins.length >= 2, 20_000);
      await producer.send(topic, [{ key: 'k', value: 'after the rejoin' }]);
      await waitFor(
        'the record produced after the rejoin',
        () => values.includes('after the rejoin'),
        20_000,
      );
    } finally {
      await consumer.disconnect();
    }
  }, 90_000);
});
