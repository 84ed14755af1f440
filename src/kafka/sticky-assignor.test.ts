import fc from 'fast-check';
import kafkajs from 'kafkajs';
import type { Cluster } from 'kafkajs';
import {
  assignSticky,
  decodeClaim,
  encodeClaim,
  leavingOf,
  minimumMoves,
  STICKY_PROTOCOL,
  stickyAssigner,
  type StickyMember,
  type TopicPartitions,
} from './sticky-assignor.js';

const { AssignerProtocol } = kafkajs;
const IN = 'in';
const FB = 'fb';
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const ids = (n: number, from = 0) => range(n).map((i) => `m-${String(from + i).padStart(3, '0')}`);

/** Owner of each partition number of `assignment` (per member), read from the input topic. */
function owners(assignment: Map<string, TopicPartitions>, topic = IN): Map<number, string> {
  const out = new Map<number, string>();
  for (const [memberId, a] of assignment) for (const p of a[topic] ?? []) out.set(p, memberId);
  return out;
}

/** Members holding what `owner` gives them, each claim made at `at`. */
function membersFrom(memberIds: string[], owner: Map<number, string>, at = 1000): StickyMember[] {
  return memberIds.map((memberId) => {
    const mine = [...owner].filter(([, o]) => o === memberId).map(([p]) => p);
    return {
      memberId,
      topics: [IN, FB],
      claim: mine.length > 0 ? { assignedAt: at, assignment: { [IN]: mine, [FB]: mine } } : null,
    };
  });
}

function moved(before: Map<number, string>, after: Map<number, string>): number {
  let n = 0;
  for (const [p, o] of before) if (after.get(p) !== o) n += 1;
  return n;
}

/** Every partition of every topic exactly once, co-partitioned, balanced within one. */
function expectValid(
  result: Map<string, TopicPartitions>,
  partitionsOf: Record<string, number[]>,
  memberCount: number,
): void {
  for (const [topic, partitions] of Object.entries(partitionsOf)) {
    const seen = [...result.values()].flatMap((a) => a[topic] ?? []).sort((a, b) => a - b);
    expect(seen).toEqual([...partitions].sort((a, b) => a - b));
  }
  const units = new Set(Object.values(partitionsOf).flat());
  const counts = [...result.values()].map((a) => new Set(Object.values(a).flat()).size);
  expect(counts).toHaveLength(memberCount);
  expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  expect(counts.reduce((a, b) => a + b, 0)).toBe(units.size);
  const topics = Object.keys(partitionsOf);
  for (const p of units) {
    const holders = new Set(
      [...result].filter(([, a]) => topics.some((t) => a[t]?.includes(p))).map(([m]) => m),
    );
    expect(holders.size).toBe(1);
  }
}

describe('assignSticky', () => {
  it('3 → 4 members on 12 partitions moves 3 partitions (round-robin moved 9)', () => {
    const partitionsOf = { [IN]: range(12), [FB]: range(12) };
    const first = assignSticky(membersFrom(ids(3), new Map()), partitionsOf);
    const before = owners(first);
    const after = owners(assignSticky(membersFrom(ids(4), before), partitionsOf));
    expect(moved(before, after)).toBe(3);
    expect(minimumMoves(before, ids(4), range(12))).toBe(3);
    // Nobody lost a partition except to the newcomer.
    for (const [p, o] of after) if (o !== 'm-003') expect(before.get(p)).toBe(o);
  });

  it('co-partitions topics of different sizes: number p of each goes to one member', () => {
    const partitionsOf = { [IN]: range(7), [FB]: range(3) };
    const result = assignSticky(membersFrom(ids(3), new Map()), partitionsOf);
    expectValid(result, partitionsOf, 3);
    for (const a of result.values()) {
      for (const p of a[FB] ?? []) expect(a[IN]).toContain(p);
    }
  });

  it('a stale claim loses to a more recent one on the same partition', () => {
    const partitionsOf = { [IN]: range(4) };
    const members: StickyMember[] = [
      { memberId: 'a', topics: [IN], claim: { assignedAt: 100, assignment: { [IN]: [0, 1] } } },
      { memberId: 'b', topics: [IN], claim: { assignedAt: 200, assignment: { [IN]: [1, 2] } } },
    ];
    const result = owners(assignSticky(members, partitionsOf));
    expect(result.get(1)).toBe('b');
    expect(result.get(0)).toBe('a');
    expect(result.get(2)).toBe('b');
    // Newer for a: a keeps 1.
    members[0]!.claim!.assignedAt = 300;
    expect(owners(assignSticky(members, partitionsOf)).get(1)).toBe('a');
  });

  it('ignores claims on partitions or topics that no longer exist', () => {
    const members: StickyMember[] = [
      { memberId: 'a', topics: [IN], claim: { assignedAt: 1, assignment: { [IN]: [5, 9], gone: [0] } } },
      { memberId: 'b', topics: [IN], claim: null },
    ];
    const result = assignSticky(members, { [IN]: range(6) });
    expectValid(result, { [IN]: range(6) }, 2);
    expect(result.get('a')![IN]).toContain(5);
  });

  it('gives a topic only to members subscribed to it', () => {
    const members: StickyMember[] = [
      { memberId: 'a', topics: [IN], claim: null },
      { memberId: 'b', topics: [IN, FB], claim: null },
    ];
    const result = assignSticky(members, { [IN]: range(4), [FB]: range(4) });
    expect(result.get('a')![FB]).toBeUndefined();
    expect(result.get('b')![FB]).toEqual(range(4));
    expect(result.get('a')![IN]).toHaveLength(2);
  });

  it('handles no members and no partitions', () => {
    expect(assignSticky([], { [IN]: range(3) }).size).toBe(0);
    expect(assignSticky(membersFrom(ids(2), new Map()), { [IN]: [] }).get('m-000')).toEqual({});
  });

  /** A random previous ownership of `units` partition numbers among some of `pool` (some gone now). */
  const scenario = fc
    .record({
      units: fc.integer({ min: 0, max: 80 }),
      members: fc.integer({ min: 1, max: 20 }),
      seed: fc.array(fc.integer({ min: -1, max: 25 }), { minLength: 80, maxLength: 80 }),
      fb: fc.integer({ min: 0, max: 80 }),
      order: fc.array(fc.nat(), { minLength: 20, maxLength: 20 }),
    })
    .map(({ units, members, seed, fb, order }) => {
      const memberIds = ids(members);
      const before = new Map<number, string>();
      // -1: nobody held it; beyond the current members: a member that left.
      for (const p of range(units)) if (seed[p]! >= 0) before.set(p, `m-${String(seed[p]).padStart(3, '0')}`);
      const shuffled = memberIds
        .map((m, i) => [m, order[i]!] as const)
        .sort((a, b) => a[1] - b[1])
        .map(([m]) => m);
      return {
        memberIds,
        shuffled,
        before,
        partitionsOf: { [IN]: range(units), [FB]: range(Math.min(fb, units)) },
      };
    });

  it('property: every partition once, co-partitioned, balanced within one, moves = the minimum', () => {
    fc.assert(
      fc.property(scenario, ({ memberIds, before, partitionsOf }) => {
        const result = assignSticky(membersFrom(memberIds, before), partitionsOf);
        expectValid(result, partitionsOf, memberIds.length);
        const after = owners(result);
        expect(moved(before, after)).toBe(minimumMoves(before, memberIds, partitionsOf[IN]));
      }),
      { numRuns: 300 },
    );
  });

  it('property: the result does not depend on the order members are listed in', () => {
    fc.assert(
      fc.property(scenario, ({ memberIds, shuffled, before, partitionsOf }) => {
        const a = assignSticky(membersFrom(memberIds, before), partitionsOf);
        const b = assignSticky(membersFrom(shuffled, before), partitionsOf);
        expect(Object.fromEntries(b)).toEqual(Object.fromEntries(a));
      }),
      { numRuns: 200 },
    );
  });

  it('property: one member joining N → N+1 moves at most ⌈U/(N+1)⌉, the minimum', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 0, max: 29 }),
        (n, units, slot) => {
          const partitionsOf = { [IN]: range(units), [FB]: range(units) };
          const memberIds = ids(n);
          const before = owners(assignSticky(membersFrom(memberIds, new Map()), partitionsOf));
          // The newcomer's id falls anywhere in the order.
          const joined = [...memberIds, `m-${String(slot).padStart(3, '0')}x`];
          const after = owners(assignSticky(membersFrom(joined, before), partitionsOf));
          const moves = moved(before, after);
          expect(moves).toBe(minimumMoves(before, joined, range(units)));
          expect(moves).toBeLessThanOrEqual(Math.ceil(units / (n + 1)));
          expect(moves).toBeGreaterThanOrEqual(Math.floor(units / (n + 1)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: a member leaving moves only its own partitions', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 30 }),
        fc.integer({ min: 0, max: 200 }),
        fc.nat(),
        fc.array(fc.constantFrom<'join' | 'leave'>('join', 'leave'), { maxLength: 6 }),
        (n, units, which, history) => {
          const partitionsOf = { [IN]: range(units) };
          // A balanced assignment reached through some joins and leaves, not only a fresh one.
          let memberIds = ids(n);
          let owner = owners(assignSticky(membersFrom(memberIds, new Map()), partitionsOf));
          let next = n;
          for (const step of history) {
            if (step === 'leave' && memberIds.length > 2) memberIds = memberIds.slice(1);
            else memberIds = [...memberIds, ...ids(1, next++)];
            owner = owners(assignSticky(membersFrom(memberIds, owner), partitionsOf));
          }
          const leaver = memberIds[which % memberIds.length]!;
          const rest = memberIds.filter((m) => m !== leaver);
          const after = owners(assignSticky(membersFrom(rest, owner), partitionsOf));
          for (const [p, o] of owner) if (o !== leaver) expect(after.get(p)).toBe(o);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('minimumMoves', () => {
  it('counts the partitions of members gone and what balance takes from the others', () => {
    const before = new Map([
      [0, 'a'],
      [1, 'a'],
      [2, 'a'],
      [3, 'b'],
      [4, 'gone'],
    ]);
    // 5 among a, b, c: quotas 2, 2, 1; a keeps 2, b keeps 1: 5 owned - 3 kept.
    expect(minimumMoves(before, ['a', 'b', 'c'], range(5))).toBe(2);
    expect(minimumMoves(new Map(), ['a'], range(5))).toBe(0);
  });
});

describe('claims in the member metadata', () => {
  it('round-trips, and anything unreadable is no claim', () => {
    const claim = { assignedAt: 1764086400000, assignment: { [IN]: [0, 3], [FB]: [0, 3] } };
    expect(decodeClaim(encodeClaim(claim))).toEqual(claim);
    expect(decodeClaim(encodeClaim(null))).toBeNull();
    for (const bad of [
      '{',
      '[]',
      '{"v":2,"at":1,"a":{}}',
      '{"v":1,"at":"x","a":{}}',
      '{"v":1,"at":1,"a":{"t":5}}',
    ]) {
      expect(decodeClaim(Buffer.from(bad))).toBeNull();
    }
  });
});

describe('stickyAssigner (the kafkajs side)', () => {
  const cluster = {
    findTopicPartitionMetadata: (topic: string) =>
      range(topic === IN ? 6 : 2).map((partitionId) => ({ partitionId })),
  } as unknown as Cluster;
  const create = (held: TopicPartitions | null, at = 5) =>
    stickyAssigner(() => (held ? { assignedAt: at, assignment: held } : null))({
      cluster,
      groupId: 'g',
      logger: undefined as never,
    });

  it('announces its claim at join and the leader keeps it, in kafkajs’ own encoding', async () => {
    const a = create({ [IN]: [0, 1, 4], [FB]: [0, 1] });
    const b = create(null);
    const pa = a.protocol({ topics: [IN, FB] });
    expect(pa.name).toBe(STICKY_PROTOCOL);
    expect(AssignerProtocol.MemberMetadata.decode(pa.metadata)?.topics).toEqual([IN, FB]);
    const members = [
      { memberId: 'b', memberMetadata: b.protocol({ topics: [IN, FB] }).metadata },
      { memberId: 'a', memberMetadata: pa.metadata },
    ];
    const result = await a.assign({ members, topics: [IN, FB] });
    const decoded = Object.fromEntries(
      result.map((r) => [
        r.memberId,
        AssignerProtocol.MemberAssignment.decode(r.memberAssignment)!.assignment,
      ]),
    );
    expect(decoded).toEqual({ a: { [IN]: [0, 1, 4], [FB]: [0, 1] }, b: { [IN]: [2, 3, 5] } });
  });

  it('treats a member whose metadata it cannot read as holding nothing', async () => {
    const a = create({ [IN]: range(6), [FB]: [0, 1] });
    const members = [
      { memberId: 'a', memberMetadata: a.protocol({ topics: [IN, FB] }).metadata },
      { memberId: 'z', memberMetadata: Buffer.from([0, 1]) },
    ];
    const result = await a.assign({ members, topics: [IN, FB] });
    const counts = result.map(
      (r) => AssignerProtocol.MemberAssignment.decode(r.memberAssignment)!.assignment[IN]!.length,
    );
    expect(counts).toEqual([3, 3]);
  });
  it('gives a stopping member nothing, its partitions to the others, in kafkajs’ own encoding', async () => {
    const held = { [IN]: [0, 1, 4], [FB]: [0, 1] };
    const stopping = stickyAssigner(
      () => ({ assignedAt: 5, assignment: held }),
      () => null,
      undefined,
      () => true,
    )({ cluster, groupId: 'g', logger: undefined as never });
    const b = create({ [IN]: [2, 3, 5] });
    const members = [
      { memberId: 'a', memberMetadata: stopping.protocol({ topics: [IN, FB] }).metadata },
      { memberId: 'b', memberMetadata: b.protocol({ topics: [IN, FB] }).metadata },
    ];
    const result = await b.assign({ members, topics: [IN, FB] });
    const decoded = Object.fromEntries(
      result.map((r) => [
        r.memberId,
        AssignerProtocol.MemberAssignment.decode(r.memberAssignment)!.assignment,
      ]),
    );
    expect(decoded).toEqual({ a: {}, b: { [IN]: range(6), [FB]: [0, 1] } });
  });
});

describe('a stopping member (leaving)', () => {
  it('is announced in the user data, with or without a claim, and read back', () => {
    const claim = { assignedAt: 7, assignment: { [IN]: [1] } };
    expect(leavingOf(encodeClaim(claim, null, true))).toBe(true);
    expect(decodeClaim(encodeClaim(claim, null, true))).toEqual(claim);
    expect(leavingOf(encodeClaim(null, null, true))).toBe(true);
    expect(decodeClaim(encodeClaim(null, null, true))).toBeNull();
    expect(leavingOf(encodeClaim(claim, '127.0.0.1:1'))).toBe(false);
    expect(leavingOf(Buffer.from([0, 1]))).toBe(false);
  });

  it('takes no partition while another member stays; the others stay balanced and sticky', () => {
    const before = new Map(range(12).map((p) => [p, ids(3)[p % 3]!]));
    const members = membersFrom(ids(3), before).map((m, i) => (i === 1 ? { ...m, leaving: true } : m));
    const after = assignSticky(members, { [IN]: range(12), [FB]: range(12) });
    expect(after.get(ids(3)[1]!)).toEqual({});
    const counts = [ids(3)[0]!, ids(3)[2]!].map((id) => after.get(id)![IN]!.length);
    expect(counts).toEqual([6, 6]);
    // Only the leaving member's four partitions moved.
    expect(moved(before, owners(after))).toBe(4);
  });

  it('still holds partitions when every member is stopping: someone must', () => {
    const members = membersFrom(ids(2), new Map()).map((m) => ({ ...m, leaving: true }));
    const after = assignSticky(members, { [IN]: range(4) });
    expect([...after.values()].map((a) => a[IN]!.length)).toEqual([2, 2]);
  });
});
