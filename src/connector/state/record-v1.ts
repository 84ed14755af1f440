/**
 * Version 1 of the state record (JSON, written by docstream up to 0.1): still read, and turned into
 * version 2 at once, so its input bytes and characteristics never stay in memory.
 */
import {
  AWAITABLE,
  STATUSES,
  type Awaitable,
  type DocumentStateV2,
  type UnfinishedState,
  StateRecordError,
} from './document-state.js';

/**
 * Version 1 as docstream 0.1 wrote it (copied from `connector/types.ts` DocumentState so this module
 * keeps reading it whatever happens to that type). Only the fields v2 keeps are typed strictly.
 */
export interface DocumentStateV1 {
  v: 1;
  event_id: string;
  submission_id: string;
  status: 'CREATED' | 'UPLOADED' | 'DONE' | 'FAILED';
  topic?: string;
  input?: { key: string | null; value: string | null };
  partition: number;
  offset: string;
  query_id: string | null;
  pipeline: string;
  enable_decision: boolean;
  attributes: Record<string, string>;
  traceparent: string | null;
  awaited: Awaitable[];
  published: Awaitable[];
  created_at: number;
  updated_at: number;
  error?: { stage: string; code: string; message: string };
  pending?: {
    blob: unknown;
    upload_url: string;
    characteristics_url: string | null;
    characteristics: unknown;
  };
}

export function parseV1(value: Buffer): DocumentStateV1 {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    throw new StateRecordError('v1 state record is not JSON');
  }
  const s = parsed as Partial<DocumentStateV1> | null;
  if (
    s === null ||
    typeof s !== 'object' ||
    s.v !== 1 ||
    typeof s.submission_id !== 'string' ||
    !STATUSES.includes(s.status as (typeof STATUSES)[number]) ||
    typeof s.partition !== 'number' ||
    typeof s.offset !== 'string' ||
    !Array.isArray(s.awaited) ||
    !Array.isArray(s.published)
  ) {
    throw new StateRecordError('v1 state record lacks required fields');
  }
  return s as DocumentStateV1;
}

const known = (list: unknown[]): Awaitable[] =>
  list.filter((k): k is Awaitable => AWAITABLE.includes(k as Awaitable));

/** The v2 view of a v1 record: input bytes and characteristics are left behind here. */
export function fromV1(old: DocumentStateV1, inputTopic: string): DocumentStateV2 {
  const common = {
    v: 2 as const,
    event_id: old.event_id,
    submission_id: old.submission_id,
    input: { topic: old.topic ?? inputTopic, partition: old.partition, offset: old.offset },
    awaited: known(old.awaited),
    published: known(old.published),
  };
  if (old.status === 'DONE' || old.status === 'FAILED') {
    return { ...common, status: old.status, finished_at: old.updated_at };
  }
  const state: UnfinishedState = {
    ...common,
    status: old.status,
    created_at: old.created_at,
    updated_at: old.updated_at,
  };
  if (old.pending) {
    state.pending = {
      // v1 dropped `pending` once the file was uploaded, so in v1 the URL is pending iff CREATED.
      upload_url: old.status === 'CREATED' ? old.pending.upload_url : null,
      characteristics_url: old.pending.characteristics_url,
      characteristics_pending:
        old.pending.characteristics !== null && old.pending.characteristics !== undefined,
    };
  }
  if (old.error) state.error = old.error;
  return state;
}
