import { jest } from '@jest/globals';
import { silentLogger } from '../../observability/logger.js';
import { CreateGate, RevocationInProgressError } from '../document/create-gate.js';
import { leaseMarginMs, MembershipLease } from './membership-lease.js';

describe('MembershipLease', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function leaseOn(gate: CreateGate, sessionTimeoutMs: number) {
    const lease = new MembershipLease({
      sessionTimeoutMs,
      hold: () => gate.membershipUnsure(true),
      resume: () => gate.membershipUnsure(false),
      logger: silentLogger,
    });
    lease.start();
    return lease;
  }

  it('holds creates once the coordinator has not answered for the session less its margin, and lets them go at the next answer', () => {
    const gate = new CreateGate();
    gate.assigned([0, 1]);
    const lease = leaseOn(gate, 10_000);
    expect(leaseMarginMs(10_000)).toBe(3333);
    // Heartbeats answered every 3 s: the lease never runs low.
    for (let i = 0; i < 5; i++) {
      jest.advanceTimersByTime(3000);
      lease.renewed();
    }
    expect(gate.holds(0)).toBe(true);
    // Cut off from the coordinator: no answer from here on.
    jest.advanceTimersByTime(6000);
    expect(gate.holds(0)).toBe(true);
    jest.advanceTimersByTime(1000);
    expect(lease.holding).toBe(true);
    expect(gate.holds(0)).toBe(false);
    expect(() => gate.check(1)).toThrow(RevocationInProgressError);
    lease.renewed();
    expect(gate.holds(0)).toBe(true);
    expect(gate.holds(2)).toBe(false); // still only the partitions assigned
    lease.stop();
  });

  it('keeps a revocation closed when the coordinator answers during it', () => {
    const gate = new CreateGate();
    gate.assigned([0]);
    const lease = leaseOn(gate, 30_000);
    expect(leaseMarginMs(30_000)).toBe(5000);
    jest.advanceTimersByTime(26_000);
    expect(gate.holds(0)).toBe(false);
    gate.revokeAll();
    lease.renewed();
    expect(gate.holds(0)).toBe(false);
    gate.assigned([0]);
    expect(gate.holds(0)).toBe(true);
    lease.stop();
  });
});
