import { ConnectionError, InvalidRequestError, ServerError } from '../../client/errors.js';
import { BlobError } from '../../blobs/errors.js';
import { deadLetterOf, decodeStage, failureOf } from './dead-letters.js';

const subject = { source: null, event_id: 'evt-1', submission_id: 'sub-1', attributes: { a: 'b' } };
const call = { method: 'POST', endpoint: '/v2/submission' };

describe('deadLetterOf', () => {
  it('names an API failure by its status and keeps the attempts the client made', () => {
    const err = new ServerError('upstream down', { ...call, status: 503, retriable: true });
    err.attempts = 6;
    expect(deadLetterOf(err, subject, { stage: 'create', fallbackCode: 'api_error' })).toEqual({
      ...subject,
      stage: 'create',
      error_code: 'api_503',
      message: 'upstream down',
      http_status: 503,
      attempts: 6,
    });
  });

  it('uses the code of a failure without a status (blob errors, connection errors)', () => {
    const blob = new BlobError('blob_not_allowed', 'outside the allowed roots');
    expect(deadLetterOf(blob, subject, { stage: 'blob', fallbackCode: 'blob_unreadable' })).toMatchObject({
      error_code: 'blob_not_allowed',
      http_status: null,
      attempts: 1,
    });
    const conn = new ConnectionError('reset', { ...call, code: 'ECONNRESET', requestSent: true });
    expect(deadLetterOf(conn, subject, { stage: 'upload', fallbackCode: 'upload_failed' })).toMatchObject({
      error_code: 'ECONNRESET',
    });
  });

  it('falls back to the stage code for anything else, and reads a plain { code, message }', () => {
    expect(
      deadLetterOf(new Error('boom'), subject, { stage: 'delete', fallbackCode: 'delete_failed' }),
    ).toMatchObject({
      error_code: 'delete_failed',
      message: 'boom',
    });
    expect(
      deadLetterOf({ code: 'deadline_exceeded', message: 'not final after 5 ms' }, subject, {
        stage: 'poll',
        fallbackCode: 'poll_failed',
        attempts: 4,
      }),
    ).toMatchObject({ error_code: 'deadline_exceeded', message: 'not final after 5 ms', attempts: 4 });
  });

  it("prefers the caller's count of attempts (polls) over the error's own", () => {
    const err = new InvalidRequestError('bad', { ...call, status: 400 });
    err.attempts = 1;
    expect(
      deadLetterOf(err, subject, { stage: 'poll', fallbackCode: 'poll_failed', attempts: 7 }).attempts,
    ).toBe(7);
  });
});

describe('failureOf', () => {
  it('reads only well-typed fields of foreign errors', () => {
    expect(failureOf({ status: '500', retriable: 'yes', code: 3, attempts: '2' })).toEqual({
      status: undefined,
      retriable: undefined,
      code: undefined,
      attempts: undefined,
      message: '[object Object]',
    });
    expect(failureOf(undefined).message).toBe('undefined');
  });
});

describe('decodeStage', () => {
  it('separates unreadable bytes (decode) from readable but invalid events (validate)', () => {
    expect(decodeStage('invalid_json')).toBe('decode');
    expect(decodeStage('empty_value')).toBe('decode');
    expect(decodeStage('unknown_schema')).toBe('decode');
    expect(decodeStage('schema_invalid')).toBe('validate');
    expect(decodeStage('characteristics_too_large')).toBe('validate');
  });
});
