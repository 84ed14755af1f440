import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEAD_LETTER_STAGES } from '../../serde/types.js';
import { deadLetterOf } from './dead-letters.js';
import { catalogueMarkdown, DEAD_LETTER_CODES, DEAD_LETTER_STAGE_MEANINGS } from './dead-letter-catalogue.js';

const page = readFileSync(
  join(dirname(fileURLToPath(import.meta.url)), '../../../docs/consuming.md'),
  'utf8',
);
const subject = { source: null, event_id: 'e', submission_id: null, attributes: {} };

describe('the catalogue of dead-letter stages and codes', () => {
  it('is what docs/consuming.md lists', () => {
    const section =
      /<!-- dead-letter-catalogue:start -->\n([\s\S]*?)\n<!-- dead-letter-catalogue:end -->/.exec(page);
    expect(section?.[1]).toBe(catalogueMarkdown());
  });

  it('gives every stage of the Avro enum a meaning', () => {
    expect(Object.keys(DEAD_LETTER_STAGE_MEANINGS).sort()).toEqual([...DEAD_LETTER_STAGES].sort());
  });

  it('names only stages that exist for its codes', () => {
    for (const entry of Object.values(DEAD_LETTER_CODES)) {
      for (const stage of entry.stages) expect(DEAD_LETTER_STAGES).toContain(stage);
    }
  });

  it('is where a dead letter’s code comes from: a status, a catalogue code, else the step’s fallback', () => {
    const of = (err: unknown) =>
      deadLetterOf(err, subject, { stage: 'blob', fallbackCode: 'blob_unreadable' });
    expect(of({ status: 422, message: 'no' }).error_code).toBe('api_422');
    expect(of({ code: 'sha256_mismatch', message: 'no' }).error_code).toBe('sha256_mismatch');
    expect(of(Object.assign(new Error('odd'), { code: 'not_ours' })).error_code).toBe('blob_unreadable');
    expect(of(Object.assign(new Error('reset'), { code: 'ECONNRESET' })).error_code).toBe('ECONNRESET');
  });
});
