import { silentLogger } from '../../observability/logger.js';
import { PollScheduler } from '../../util/scheduler.js';
import { InFlight } from './in-flight.js';
import { IllegalTransition, Run, type RunPhase } from './run.js';
import type { UnfinishedState } from '../state/document-state.js';

function run(): Run {
  const state: UnfinishedState = {
    v: 2,
    event_id: 'e-1',
    submission_id: 's-1',
    status: 'UPLOADED',
    input: { topic: 'documents.arrived', partition: 0, offset: '7' },
    awaited: ['fraud'],
    published: [],
    created_at: 0,
    updated_at: 0,
  };
  const identity = {
    submission_id: 's-1',
    event_id: 'e-1',
    query_id: null,
    attributes: {},
    traceparent: null,
  };
  return new Run(state, 'process', identity, null, null, 0);
}

/** A run moved along `path` from running. */
function at(...path: RunPhase[]): Run {
  const r = run();
  for (const phase of path) r.transitionTo(phase);
  return r;
}

describe('a document’s lifecycle state', () => {
  it('starts running: every step may go on, no end began', () => {
    const r = run();
    expect([r.phase, r.running, r.cancelled, r.endStarted]).toEqual(['running', true, false, false]);
  });

  it('running → finishing: no step goes on, its end began', () => {
    const r = at('finishing');
    expect([r.phase, r.running, r.cancelled, r.endStarted]).toEqual(['finishing', false, false, true]);
  });

  it('finishing → ended', () => {
    const r = at('finishing', 'ended');
    expect([r.phase, r.running, r.cancelled, r.endStarted]).toEqual(['ended', false, false, true]);
  });

  it('running → stopped: cancelled, no end began', () => {
    const r = at('stopped');
    expect([r.phase, r.running, r.cancelled, r.endStarted]).toEqual(['stopped', false, true, false]);
  });

  it('running → revoked: cancelled, no end began', () => {
    const r = at('revoked');
    expect([r.phase, r.running, r.cancelled, r.endStarted]).toEqual(['revoked', false, true, false]);
  });

  it('finishing → stopped: cancelled, and its end had begun', () => {
    const r = at('finishing', 'stopped');
    expect([r.phase, r.cancelled, r.endStarted]).toEqual(['stopped', true, true]);
  });

  it('finishing → revoked: cancelled, and its end had begun', () => {
    const r = at('finishing', 'revoked');
    expect([r.phase, r.cancelled, r.endStarted]).toEqual(['revoked', true, true]);
  });

  it.each<[RunPhase[], RunPhase]>([
    [[], 'ended'],
    [[], 'running'],
    [['finishing'], 'finishing'],
    [['finishing'], 'running'],
    [['finishing', 'ended'], 'stopped'],
    [['finishing', 'ended'], 'running'],
    [['stopped'], 'running'],
    [['stopped'], 'finishing'],
    [['stopped'], 'revoked'],
    [['revoked'], 'finishing'],
    [['revoked'], 'stopped'],
  ])('refuses an illegal move: after %j, to %s', (path, to) => {
    const r = at(...path);
    const from = r.phase;
    expect(() => r.transitionTo(to)).toThrow(IllegalTransition);
    expect(r.phase).toBe(from);
  });
});

describe('InFlight.remove moves the run', () => {
  const inFlight = () => new InFlight(new PollScheduler(), silentLogger, () => undefined);

  it.each<['stopped' | 'revoked', RunPhase]>([
    ['stopped', 'stopped'],
    ['revoked', 'revoked'],
  ])('%s', (how, phase) => {
    const r = run();
    const f = inFlight();
    f.add(r);
    f.remove(r, how);
    expect([r.phase, f.size]).toEqual([phase, 0]);
  });

  it('ended, once its end began', () => {
    const r = run();
    const f = inFlight();
    f.add(r);
    r.transitionTo('finishing');
    f.remove(r, 'ended');
    expect([r.phase, f.size]).toEqual(['ended', 0]);
  });

  it('keeps a run stopped during its end stopped when that end then leaves', () => {
    const r = run();
    const f = inFlight();
    f.add(r);
    r.transitionTo('finishing');
    f.remove(r, 'stopped');
    f.remove(r, 'ended');
    expect(r.phase).toBe('stopped');
  });

  it('refuses to end a run whose end never began', () => {
    const r = run();
    const f = inFlight();
    f.add(r);
    expect(() => f.remove(r, 'ended')).toThrow(IllegalTransition);
  });
});
