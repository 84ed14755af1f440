/**
 * Is the API there? A circuit breaker over a transient API failure, shared by every call of a client.
 *
 * Calls report what happened: an answer (any status but 5xx, a 429 included: the API is up, only
 * busy) or transient failure (a 5xx, no answer at all, a token endpoint that failed the same way). Several
 * transient failure reports in a row over at least a second mark the API unavailable. Until it answers again:
 * - calls wait at the gate (`pass`) instead of each retrying on its own, and one of them at a time
 *   goes through as a probe, at a modest pace (1 s, doubling to 15 s, jittered);
 * - when nobody waits, the health probes by itself (`probe`, a cheap authenticated GET set by the
 *   transport), so that the owner, whose input is paused meanwhile, learns when to resume;
 * - listeners hear of the change both ways (the connector pauses and resumes its input, logs, metrics).
 */
import type { Clock } from './limiter.js';
import { systemClock } from './limiter.js';
import { backoffDelay } from '../util/backoff.js';

export interface ApiHealthOptions {
  /** Transient failure reports in a row, with no answer between, that mark the API unavailable (default 5). */
  failuresToTrip?: number;
  /** ...spanning at least this long (default 1000 ms): one burst of in-flight failures is not an outage. */
  tripAfterMs?: number;
  /** First and largest pause between probes while unavailable (defaults 1000 and 15000 ms). */
  probeMinMs?: number;
  probeMaxMs?: number;
  clock?: Clock;
  random?: () => number;
}

/** The API answered nothing useful before the caller's time ran out while it was unavailable. */
export class GateClosedError extends Error {
  override name = 'GateClosedError';
}

export type HealthListener = (available: boolean, since: number) => void;

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

export class ApiHealth {
  private readonly failuresToTrip: number;
  private readonly tripAfterMs: number;
  private readonly probeMinMs: number;
  private readonly probeMaxMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private streak = 0;
  /** When a call last got an answer (clock time); undefined before the first. */
  private lastAnswerAt: number | undefined;
  private streakSince = 0;
  /** Since when the API is unavailable (clock time); undefined while it is available. */
  private downSince: number | undefined;
  private probes = 0;
  private probeTimer: NodeJS.Timeout | undefined;
  private readonly waiters: Waiter[] = [];
  private readonly listeners: HealthListener[] = [];
  /** A call of its own to see whether the API answers, used when no waiting call can be the probe. */
  probe: (() => Promise<void>) | undefined;

  constructor(options: ApiHealthOptions = {}) {
    this.failuresToTrip = options.failuresToTrip ?? 5;
    this.tripAfterMs = options.tripAfterMs ?? 1000;
    this.probeMinMs = options.probeMinMs ?? 1000;
    this.probeMaxMs = options.probeMaxMs ?? 15_000;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
  }

  get available(): boolean {
    return this.downSince === undefined;
  }

  /** How long the API has been unavailable, in ms (0 while it is available). */
  unavailableForMs(): number {
    return this.downSince === undefined ? 0 : this.clock.now() - this.downSince;
  }

  onChange(listener: HealthListener): void {
    this.listeners.push(listener);
  }

  /** Resolves once the API is available (at once when it is). */
  whenAvailable(): Promise<void> {
    if (this.downSince === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      const listener: HealthListener = (available) => {
        if (!available) return;
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        resolve();
      };
      this.listeners.push(listener);
    });
  }

  /** Whether some call got an answer within the last `ms`: the API was reachable then. */
  answeredWithin(ms: number): boolean {
    return this.lastAnswerAt !== undefined && this.clock.now() - this.lastAnswerAt <= ms;
  }

  /** The API answered (anything but a 5xx). */
  onAnswer(): void {
    this.streak = 0;
    this.lastAnswerAt = this.clock.now();
    if (this.downSince === undefined) return;
    const since = this.downSince;
    this.downSince = undefined;
    this.probes = 0;
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.resolve();
    }
    for (const l of [...this.listeners]) l(true, since);
  }

  /** A call got no answer, or a 5xx (from the API or its token endpoint). */
  onTransientFailure(): void {
    const now = this.clock.now();
    if (this.downSince !== undefined) return;
    if (this.streak === 0) this.streakSince = now;
    this.streak += 1;
    if (this.streak < this.failuresToTrip || now - this.streakSince < this.tripAfterMs) return;
    this.downSince = now;
    for (const l of this.listeners) l(false, now);
    this.scheduleProbe();
  }

  /**
   * Before a call is sent: at once while the API is available; while it is not, when the API answers
   * again or when this call's turn as the probe comes. Rejects (GateClosedError) at `until` (clock time).
   */
  pass(until: number): Promise<void> {
    if (this.downSince === undefined) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, timer: undefined };
      const left = until - this.clock.now();
      if (left <= 0) return reject(new GateClosedError('the API is unavailable'));
      if (Number.isFinite(left)) {
        waiter.timer = setTimeout(() => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(new GateClosedError('the API is unavailable'));
        }, left);
        waiter.timer.unref?.();
      }
      this.waiters.push(waiter);
    });
  }

  /** Stops probing (the client is closing); waiting calls are refused. */
  close(): void {
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new GateClosedError('the client is closing'));
    }
  }

  /** While unavailable, one probe per tick, ticks ever further apart: a waiting call, else `probe`. */
  private scheduleProbe(): void {
    const delay = backoffDelay(
      this.probes,
      { initialMs: this.probeMinMs, maxMs: this.probeMaxMs },
      this.random,
    );
    this.probes += 1;
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      if (this.downSince === undefined) return;
      const waiter = this.waiters.shift();
      if (waiter) {
        clearTimeout(waiter.timer);
        waiter.resolve();
      } else {
        // Its outcome reaches onAnswer or onTransientFailure through the sender like any call's.
        this.probe?.().catch(() => undefined);
      }
      this.scheduleProbe();
    }, delay);
    this.probeTimer.unref?.();
  }
}
