/**
 * A simulation of scale events beyond this machine (issue 22): the group's assignor
 * (`src/kafka/sticky-assignor.ts`) and its API-limit share (`src/connector/consumer/group-share.ts`, the real
 * class) for a large group (default 50 members, 600 input partitions) with skewed keys, members
 * joining, leaving and timing out at random. No Kafka: time is simulated, in milliseconds.
 *
 *   npm run sim:scale [-- --members 50 --partitions 600 --events 300 --seed 1 --json]
 *   npm run sim:scale -- --join-at-once     the share of partitions at every join, at once (before)
 *
 * Prints, per scale event, the partitions that changed owner against the least any balanced
 * assignment allows (and what kafkajs' round-robin would have moved), and checks that the members'
 * shares of the limit never add up to more than the whole. What is modelled, and what is not:
 * docs/performance.md, "The group's share in simulation".
 */
import { GroupShare } from '../src/connector/consumer/group-share.js';
import type { GroupCommit, PartitionOffsets } from '../src/kafka/admin.js';
import { assignSticky, minimumMoves, type StickyMember } from '../src/kafka/sticky-assignor.js';

interface Options {
  members: number;
  partitions: number;
  events: number;
  seed: number;
  /** Zipf exponent of the keys over partitions. */
  zipf: number;
  /** Documents per second into the whole input. */
  docsPerSecond: number;
  /** Mean time a document runs (admitted → last result), seconds. */
  runSeconds: number;
  /** Mean time between scale events, seconds. */
  gapSeconds: number;
  /** connector.groupShareIntervalMs. */
  readMs: number;
  /** Spread of the moments members get their assignment after a rebalance (SyncGroup, event loop). */
  syncSpreadMs: number;
  /** A reading's age when applied (the two admin requests). */
  readLatencyMs: [number, number];
  /** How long a member dropped by a session timeout goes on before it notices (heartbeat interval). */
  zombieMs: number;
  /** Bounds of the group's size while members come and go. */
  minMembers: number;
  maxMembers: number;
  /** The share of partitions at every join, at once (GroupShare without readings: before issue 22). */
  joinAtOnce: boolean;
  json: boolean;
}

function parse(argv: string[]): Options {
  const o: Options = {
    members: 50,
    partitions: 600,
    events: 300,
    seed: 1,
    zipf: 1.1,
    docsPerSecond: 300,
    runSeconds: 3,
    gapSeconds: 4,
    readMs: 500,
    syncSpreadMs: 100,
    readLatencyMs: [5, 60],
    zombieMs: 3000,
    minMembers: 30,
    maxMembers: 70,
    joinAtOnce: false,
    json: false,
  };
  const numeric: Record<string, keyof Options> = {
    '--members': 'members',
    '--partitions': 'partitions',
    '--events': 'events',
    '--seed': 'seed',
    '--zipf': 'zipf',
    '--docs-per-second': 'docsPerSecond',
    '--run-s': 'runSeconds',
    '--gap-s': 'gapSeconds',
    '--read-ms': 'readMs',
    '--sync-spread-ms': 'syncSpreadMs',
    '--zombie-ms': 'zombieMs',
    '--min-members': 'minMembers',
    '--max-members': 'maxMembers',
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json') o.json = true;
    else if (arg === '--join-at-once') o.joinAtOnce = true;
    else if (arg in numeric) {
      const value = Number(argv[++i]);
      if (!Number.isFinite(value) || value < 0) throw new Error(`${arg} needs a number >= 0`);
      (o as unknown as Record<string, number>)[numeric[arg]!] = value;
    } else throw new Error(`unknown option ${arg} (see the header of scripts/sim-scale.ts)`);
  }
  if (o.members < 1 || o.partitions < 1) throw new Error('--members and --partitions must be >= 1');
  o.minMembers = Math.min(o.minMembers, o.members);
  o.maxMembers = Math.max(o.maxMembers, o.members);
  return o;
}

/** mulberry32: a small seeded generator, so that a run can be repeated. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A min-heap of timed events. */
class Timeline<T> {
  private readonly items: Array<{ at: number; seq: number; item: T }> = [];
  private seq = 0;
  push(at: number, item: T): void {
    const h = this.items;
    h.push({ at, seq: this.seq++, item });
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }
  pop(): { at: number; item: T } | undefined {
    const h = this.items;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
  private less(a: { at: number; seq: number }, b: { at: number; seq: number }): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }
}

type Kind = 'join' | 'leave' | 'timeout' | 'rejoin' | 'join-burst' | 'leave-burst';

interface Member {
  id: string;
  /** What this member was last told it holds (input partitions), and when it heard it. */
  owned: number[];
  assignedAt: number;
  share: GroupShare;
  /** The fraction of the limit its limiter was last set to (owned / total). */
  fraction: number;
  /** In the group (false: left, or dropped by a timeout and not yet noticed). */
  live: boolean;
  /** Dropped by a session timeout, still spending its share until it notices. */
  zombie: boolean;
  /** Events of this member's own (readings, assignments) carry its incarnation; older ones are void. */
  incarnation: number;
}

type Event =
  | { type: 'arrive' }
  | { type: 'finish'; partition: number }
  | { type: 'read'; member: Member; incarnation: number }
  | { type: 'apply'; member: Member; incarnation: number; busy: Uint8Array }
  | { type: 'sync'; member: Member; incarnation: number; owned: number[]; generation: number }
  | { type: 'scale' }
  | { type: 'notice'; member: Member };

interface EventRow {
  event: number;
  at_s: number;
  kind: Kind;
  members_before: number;
  members_after: number;
  moved: number;
  minimum: number;
  round_robin: number;
}

function main(): void {
  const o = parse(process.argv.slice(2));
  const rand = random(o.seed);
  const P = o.partitions;
  const units = Array.from({ length: P }, (_, p) => p);

  // Keys: a Zipf-like weight per partition, ranks shuffled over the partition numbers.
  const ranks = [...units];
  for (let i = P - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [ranks[i], ranks[j]] = [ranks[j]!, ranks[i]!];
  }
  const weight = ranks.map((r) => 1 / (r + 1) ** o.zipf);
  const cumulative: number[] = [];
  let acc = 0;
  for (const w of weight) cumulative.push((acc += w));
  const pickPartition = () => {
    const x = rand() * acc;
    let lo = 0;
    let hi = P - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  const running: number[] = new Array<number>(P).fill(0);
  const busy = new Uint8Array(P);
  // The reading every member makes, as `GroupShare.onOffsets` takes it: a partition with records
  // past its committed offset is busy. Built from two constant rows per partition.
  const busyEnd = units.map((partition) => ({ partition, low: '0', high: '1' }));
  const idleEnd = units.map((partition) => ({ partition, low: '0', high: '0' }));
  const noCommits = new Map<number, GroupCommit>();
  const ends = (snapshot: Uint8Array): PartitionOffsets[] =>
    units.map((p) => (snapshot[p] ? busyEnd[p]! : idleEnd[p]!));

  const timeline = new Timeline<Event>();
  /** Simulated time before the first scale event (the first readings, a steady load). */
  const warmupMs = 30_000;
  let now = 0;
  let idCounter = 0;
  const members: Member[] = [];
  const newMember = (): Member => {
    // kafkajs member ids are the client id and a random uuid: their order is not the join order.
    const id = `docstream-${Math.floor(rand() * 0xffffffff)
      .toString(16)
      .padStart(8, '0')}-${idCounter++}`;
    const m: Member = {
      id,
      owned: [],
      assignedAt: 0,
      fraction: 0,
      live: true,
      zombie: false,
      incarnation: 0,
      share: undefined as unknown as GroupShare,
    };
    m.share = new GroupShare(
      {
        setShare: (owned, total) => {
          m.fraction = owned / total;
          shareChanged();
        },
      },
      () => P,
      !o.joinAtOnce,
    );
    members.push(m);
    scheduleRead(m, now + rand() * o.readMs);
    return m;
  };
  const scheduleRead = (m: Member, at: number) =>
    timeline.push(at, { type: 'read', member: m, incarnation: m.incarnation });

  // The round-robin assignment of the same member sets, for comparison.
  let rrOwner = new Map<number, string>();
  let generation = 0;
  /** Members that have not yet heard of the latest generation. */
  let pendingSync = 0;

  // The sum of the shares: time above the whole, by cause.
  let lastChange = 0;
  let sumNow = 0;
  let maxSum = 0;
  const above = { join: 0, reading: 0, zombie: 0 };
  const aboveCount = { join: 0, reading: 0, zombie: 0 };
  let wasAbove = false;
  let floorsMax = 0;
  const causeNow = (): keyof typeof above =>
    members.some((m) => m.zombie) ? 'zombie' : pendingSync > 0 ? 'join' : 'reading';
  /** What may hold the sum up since the last change: a member still spending after a timeout, a
   * rebalance not yet heard by every member, else the readings. */
  let intervalCause: keyof typeof above = 'reading';
  function shareChanged(): void {
    if (sumNow > 1 + 1e-9) above[intervalCause] += now - lastChange;
    lastChange = now;
    const cause = causeNow();
    intervalCause = cause;
    let sum = 0;
    let idle = 0;
    for (const m of members) {
      if (!m.live && !m.zombie) continue;
      sum += m.fraction;
      if (m.fraction === 0) idle += 1;
    }
    sumNow = sum;
    maxSum = Math.max(maxSum, sum);
    if (now >= warmupMs) floorsMax = Math.max(floorsMax, idle);
    const isAbove = sum > 1 + 1e-9;
    if (isAbove && !wasAbove) aboveCount[cause] += 1;
    wasAbove = isAbove;
  }

  const rows: EventRow[] = [];
  function rebalance(kind: Kind, before: number): void {
    const group = members.filter((m) => m.live);
    const claimants: StickyMember[] = group.map((m) => ({
      memberId: m.id,
      topics: ['in', 'fb'],
      claim:
        m.owned.length > 0 ? { assignedAt: m.assignedAt, assignment: { in: m.owned, fb: m.owned } } : null,
    }));
    const ids = group.map((m) => m.id);
    // Who holds each partition now: the most recent holder by what members were told (a rebalance
    // that came before every member heard of the previous one leaves some with older assignments).
    const owner = new Map<number, string>();
    const heardAt = new Map<number, number>();
    for (const m of members) {
      for (const p of m.owned) {
        if ((heardAt.get(p) ?? -1) < m.assignedAt) {
          heardAt.set(p, m.assignedAt);
          owner.set(p, m.id);
        }
      }
    }
    const minimum = minimumMoves(owner, ids, units);
    const result = assignSticky(claimants, { in: units, fb: units });
    const next = new Map<number, string>();
    for (const [id, a] of result) for (const p of a.in ?? []) next.set(p, id);
    let moved = 0;
    for (const [p, o2] of owner) if (next.get(p) !== o2) moved += 1;
    // kafkajs' RoundRobinAssigner: sorted member ids over the input's partitions, then the feedback's.
    const sortedIds = [...ids].sort();
    const rrNext = new Map<number, string>();
    for (const p of units) rrNext.set(p, sortedIds[p % sortedIds.length]!);
    let rrMoved = 0;
    for (const [p, o2] of rrOwner) if (rrNext.get(p) !== o2) rrMoved += 1;
    rrOwner = rrNext;
    generation += 1;
    rows.push({
      event: rows.length + 1,
      at_s: Math.round(now) / 1000,
      kind,
      members_before: before,
      members_after: group.length,
      moved,
      minimum,
      round_robin: rrMoved,
    });
    // Every member hears of its new assignment at its own moment.
    pendingSync = group.length;
    for (const m of group) {
      const owned = (result.get(m.id)?.in ?? []).slice();
      timeline.push(now + rand() * o.syncSpreadMs, {
        type: 'sync',
        member: m,
        incarnation: m.incarnation,
        owned,
        generation,
      });
    }
  }

  // The start: the members join together (not counted as a scale event).
  for (let i = 0; i < o.members; i++) newMember();
  {
    const group = members.filter((m) => m.live);
    const result = assignSticky(
      group.map((m) => ({ memberId: m.id, topics: ['in', 'fb'], claim: null })),
      { in: units, fb: units },
    );
    for (const m of group) {
      m.owned = result.get(m.id)?.in ?? [];
      m.assignedAt = 0;
      m.share.onJoin(m.owned);
    }
    const sortedIds = group.map((m) => m.id).sort();
    for (const p of units) rrOwner.set(p, sortedIds[p % sortedIds.length]!);
  }
  timeline.push(rand() * (1000 / o.docsPerSecond), { type: 'arrive' });
  timeline.push(warmupMs, { type: 'scale' });
  let scaleEvents = 0;

  const expo = (mean: number) => -Math.log(1 - rand()) * mean;
  for (;;) {
    const next = timeline.pop();
    if (!next) break;
    now = next.at;
    const e = next.item;
    switch (e.type) {
      case 'arrive': {
        const p = pickPartition();
        running[p] = running[p]! + 1;
        if (running[p] === 1) busy[p] = 1;
        timeline.push(now + 500 + expo(o.runSeconds * 1000 - 500), { type: 'finish', partition: p });
        if (scaleEvents < o.events) timeline.push(now + expo(1000 / o.docsPerSecond), { type: 'arrive' });
        break;
      }
      case 'finish':
        running[e.partition] = running[e.partition]! - 1;
        if (running[e.partition] === 0) busy[e.partition] = 0;
        break;
      case 'read':
        if (e.incarnation !== e.member.incarnation || !(e.member.live || e.member.zombie)) break;
        timeline.push(now + o.readLatencyMs[0] + rand() * (o.readLatencyMs[1] - o.readLatencyMs[0]), {
          type: 'apply',
          member: e.member,
          incarnation: e.incarnation,
          busy: busy.slice(),
        });
        scheduleRead(e.member, now + o.readMs);
        break;
      case 'apply':
        if (e.incarnation !== e.member.incarnation || !(e.member.live || e.member.zombie)) break;
        e.member.share.onOffsets(ends(e.busy), noCommits);
        break;
      case 'sync':
        // An assignment of a generation already replaced never reaches its member (Kafka answers
        // the SyncGroup with a rebalance in progress).
        if (e.generation !== generation) break;
        pendingSync -= 1;
        if (e.incarnation !== e.member.incarnation || !e.member.live) {
          shareChanged();
          break;
        }
        e.member.owned = e.owned;
        e.member.assignedAt = now;
        e.member.share.onJoin(e.owned);
        shareChanged();
        break;
      case 'notice': {
        // The dropped member's heartbeat fails: it stops its documents (its share goes) and joins
        // again, claiming what it held, with the time it got it.
        const m = e.member;
        m.zombie = false;
        m.live = true;
        m.fraction = 0;
        m.incarnation += 1;
        const before = members.filter((x) => x.live).length - 1;
        m.share.onJoin([]);
        scheduleRead(m, now + rand() * o.readMs);
        rebalance('rejoin', before);
        scaleEvents += 1;
        if (scaleEvents < o.events) timeline.push(now + expo(o.gapSeconds * 1000), { type: 'scale' });
        break;
      }
      case 'scale': {
        const group = members.filter((m) => m.live);
        const before = group.length;
        const r = rand();
        let kind: Kind;
        if (r < 0.05 && before + 3 <= o.maxMembers) kind = 'join-burst';
        else if (r < 0.1 && before - 3 >= o.minMembers) kind = 'leave-burst';
        else if (r < 0.15 && before - 1 >= o.minMembers && !members.some((m) => m.zombie)) kind = 'timeout';
        else if (before >= o.maxMembers) kind = 'leave';
        else if (before <= o.minMembers) kind = 'join';
        else kind = rand() < 0.5 ? 'join' : 'leave';
        const leave = (m: Member) => {
          m.live = false;
          m.fraction = 0;
          m.incarnation += 1;
          shareChanged();
        };
        const pickLive = () => {
          const live = members.filter((m) => m.live);
          return live[Math.floor(rand() * live.length)]!;
        };
        if (kind === 'join') newMember();
        else if (kind === 'join-burst') for (let i = 0; i < 3; i++) newMember();
        else if (kind === 'leave') leave(pickLive());
        else if (kind === 'leave-burst') for (let i = 0; i < 3; i++) leave(pickLive());
        else {
          // A session timeout: the group rebalances without it; it keeps spending its share and
          // running its documents until its next heartbeat fails, then rejoins with a stale claim.
          const z = pickLive();
          z.live = false;
          z.zombie = true;
          timeline.push(now + rand() * o.zombieMs, { type: 'notice', member: z });
        }
        rebalance(kind, before);
        scaleEvents += 1;
        if (kind !== 'timeout' && scaleEvents < o.events) {
          timeline.push(now + expo(o.gapSeconds * 1000), { type: 'scale' });
        }
        break;
      }
    }
    if (scaleEvents >= o.events && pendingSync === 0 && !members.some((m) => m.zombie)) break;
  }
  shareChanged();

  const totalMoved = rows.reduce((a, r) => a + r.moved, 0);
  const totalMin = rows.reduce((a, r) => a + r.minimum, 0);
  const totalRr = rows.reduce((a, r) => a + r.round_robin, 0);
  const worst = rows.reduce(
    (w, r) => Math.max(w, r.minimum === 0 ? (r.moved > 0 ? Infinity : 1) : r.moved / r.minimum),
    1,
  );
  const summary = {
    options: o,
    scale_events: rows.length,
    simulated_s: Math.round(now / 1000),
    moved_total: totalMoved,
    minimum_total: totalMin,
    round_robin_total: totalRr,
    worst_ratio_moved_to_minimum: worst,
    events_above_minimum: rows.filter((r) => r.moved > r.minimum).length,
    share_sum_max: Number(maxSum.toFixed(6)),
    share_time_above_whole_ms: Object.fromEntries(Object.entries(above).map(([k, v]) => [k, Math.round(v)])),
    share_intervals_above_whole: aboveCount,
    members_at_floor_max: floorsMax,
  };
  if (o.json) {
    console.log(JSON.stringify({ summary, events: rows }, null, 2));
    return;
  }
  console.log('event   at (s)  kind         members   moved  minimum  round-robin');
  for (const r of rows) {
    console.log(
      `${String(r.event).padStart(5)} ${r.at_s.toFixed(1).padStart(8)}  ${r.kind.padEnd(11)} ${`${r.members_before}→${r.members_after}`.padStart(8)} ${String(r.moved).padStart(7)} ${String(r.minimum).padStart(8)} ${String(r.round_robin).padStart(12)}`,
    );
  }
  console.log('');
  console.log(
    `${rows.length} scale events over ${summary.simulated_s} s simulated, ${o.partitions} partitions, ${o.minMembers}–${o.maxMembers} members (start ${o.members}), seed ${o.seed}`,
  );
  console.log(
    `partitions moved: ${totalMoved}, the minimum ${totalMin} (worst event ${worst === Infinity ? 'moved with a minimum of 0' : `${worst.toFixed(2)}×`}, ${summary.events_above_minimum} events above the minimum); round-robin would have moved ${totalRr}`,
  );
  console.log(
    `shares of the limit: largest sum ${maxSum.toFixed(4)} of the whole; time above the whole: join ${summary.share_time_above_whole_ms.join} ms (${aboveCount.join}×), readings ${summary.share_time_above_whole_ms.reading} ms (${aboveCount.reading}×), a timed-out member still spending ${summary.share_time_above_whole_ms.zombie} ms (${aboveCount.zombie}×); at most ${floorsMax} members at the floor at once`,
  );
}

main();
