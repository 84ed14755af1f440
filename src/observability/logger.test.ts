import { Writable } from 'node:stream';
import { createLogger } from './logger.js';

function capture(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { stream, lines };
}

describe('logger redaction', () => {
  it('removes secrets and characteristics at any depth', () => {
    const { stream, lines } = capture();
    const log = createLogger({ stream });
    log.info(
      {
        clientSecret: 'sandbox-secret',
        request: { headers: { authorization: 'Bearer abc' } },
        event: { submission_characteristics: { identity_characteristics: { first_name: 'Ada' } } },
      },
      'hello',
    );
    const out = lines.join('');
    expect(out).not.toContain('sandbox-secret');
    expect(out).not.toContain('Bearer abc');
    expect(out).not.toContain('Ada');
    expect(out).toContain('[redacted]');
  });
});
