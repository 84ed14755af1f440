import { TenantShares } from './tenant-shares.js';

function setup(maxInFlight = 10, share = 0.8, maxWaiting = 100) {
  const running = new Map<string, number>();
  let waitingSignals = 0;
  const shares = new TenantShares({
    maxInFlight,
    share,
    maxWaiting,
    running: () => running,
    onWaiting: () => (waitingSignals += 1),
  });
  /** Acquires for `tenant`; the returned record says whether (and with which release) it got through. */
  const ask = (tenant: string, partition = 0) => {
    const got: { release?: () => void; error?: Error } = {};
    shares.acquire(tenant, partition).then(
      (release) => (got.release = release),
      (err: Error) => (got.error = err),
    );
    return got;
  };
  /** A document of `tenant` that got through starts running (its admission ends). */
  const start = (tenant: string, got: { release?: () => void }) => {
    running.set(tenant, (running.get(tenant) ?? 0) + 1);
    got.release!();
  };
  const finish = (tenant: string) => {
    running.set(tenant, running.get(tenant)! - 1);
    if (running.get(tenant) === 0) running.delete(tenant);
    shares.pump();
  };
  return { shares, ask, start, finish, running, signals: () => waitingSignals };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('TenantShares', () => {
  it('lets one tenant alone hold its share of the slots, and no more; the rest wait, holding none', async () => {
    const { shares, ask, start, signals } = setup(10, 0.8);
    const got = Array.from({ length: 10 }, () => ask('busy'));
    await flush();
    expect(got.filter((g) => g.release)).toHaveLength(8);
    for (const g of got.slice(0, 8)) start('busy', g);
    expect(shares.uncounted).toBe(2);
    expect(shares.waitingByTenant()).toEqual(new Map([['busy', 2]]));
    expect(signals()).toBe(2);
  });

  it("gives another tenant's document a slot at once while the first waits at its share", async () => {
    const { ask, start } = setup(10, 0.8);
    const busy = Array.from({ length: 12 }, () => ask('busy'));
    await flush();
    for (const g of busy.filter((b) => b.release)) start('busy', g);
    const calm = ask('calm');
    await flush();
    expect(calm.release).toBeDefined();
  });

  it('caps each tenant at an equal part while several have documents under way', async () => {
    const { shares, ask, start, finish, running } = setup(10, 0.8);
    const busy = Array.from({ length: 8 }, () => ask('busy'));
    await flush();
    for (const g of busy) start('busy', g);
    const calm = Array.from({ length: 4 }, () => ask('calm'));
    await flush();
    // 8 busy + 2 calm fill the 10 slots; calm's other two wait.
    expect(calm.filter((g) => g.release)).toHaveLength(2);
    for (const g of calm.filter((c) => c.release)) start('calm', g);
    expect(shares.shareNow()).toBe(5);
    // Busy finishes three: it is still above its equal part, so a new busy document waits, and
    // the freed slots go to calm's waiting ones.
    const more = ask('busy');
    for (let i = 0; i < 3; i++) finish('busy');
    await flush();
    expect(more.release).toBeUndefined();
    expect(calm.filter((g) => g.release)).toHaveLength(4);
    expect(running.get('busy')).toBe(5);
  });

  it('gives waiting documents their turn tenant by tenant, oldest first', async () => {
    const { ask, start, finish } = setup(2, 1);
    const first = [ask('a'), ask('a')];
    await flush();
    for (const g of first) start('a', g);
    const order: string[] = [];
    const waiting = [ask('a'), ask('a'), ask('b'), ask('b')];
    const names = ['a1', 'a2', 'b1', 'b2'];
    for (let round = 0; round < 4; round++) {
      finish(round < 2 ? 'a' : round === 2 ? 'a' : 'b');
      await flush();
      waiting.forEach((g, i) => {
        if (g.release && !order.includes(names[i]!)) {
          order.push(names[i]!);
          start(names[i]!.slice(0, 1), g);
        }
      });
    }
    expect(order.slice(0, 2).sort()).toEqual(['a1', 'b1']);
    expect(order.indexOf('a1')).toBeLessThan(order.indexOf('a2'));
    expect(order.indexOf('b1')).toBeLessThan(order.indexOf('b2'));
  });

  it('counts waiting documents against the slots again past maxWaiting', async () => {
    const { shares, ask } = setup(2, 0.5, 3);
    for (let i = 0; i < 6; i++) ask('busy');
    await flush();
    expect(shares.waitingByTenant().get('busy')).toBe(5);
    expect(shares.uncounted).toBe(3);
  });

  it('drops the waiting documents of revoked partitions, and all of them on stop', async () => {
    const { shares, ask } = setup(1, 1);
    const held = ask('a', 0);
    const p0 = ask('a', 0);
    const p1 = ask('a', 1);
    const p2 = ask('b', 2);
    await flush();
    expect(held.release).toBeDefined();
    shares.drop(new Set([1]), (p) => new Error(`revoked ${p}`));
    await flush();
    expect(p1.error?.message).toBe('revoked 1');
    expect(p0.error).toBeUndefined();
    shares.dropAll((p) => new Error(`stopped ${p}`));
    await flush();
    expect([p0.error?.message, p2.error?.message]).toEqual(['stopped 0', 'stopped 2']);
    expect(shares.uncounted).toBe(0);
  });

  it('an admission that ends without a run frees its slot for the next in turn', async () => {
    const { ask } = setup(1, 1);
    const a = ask('a');
    const b = ask('a');
    await flush();
    expect(b.release).toBeUndefined();
    a.release!();
    await flush();
    expect(b.release).toBeDefined();
  });
});
