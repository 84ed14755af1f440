import { errorText, redactText, redactValue, rememberSecrets } from './redact.js';

const SECRET = 'Zq9-secret value/+&"';

describe('redactText', () => {
  beforeAll(() => rememberSecrets([SECRET, 'short']));

  it('replaces a URL password, keeping the user and the rest of the URL', () => {
    expect(redactText('at http://alice:p4ss@registry:8081/apis failed')).toBe(
      'at http://alice:[redacted]@registry:8081/apis failed',
    );
  });

  it('replaces echoed Basic and Bearer credentials and credential fields of forms and JSON', () => {
    const basic = Buffer.from('client:anything-at-all').toString('base64');
    expect(redactText(`authorization: Basic ${basic}, then Bearer eyJhbGciOi.x.y`)).toBe(
      'authorization: Basic [redacted], then Bearer [redacted]',
    );
    expect(redactText('grant_type=client_credentials&client_secret=abc123&scope=x')).toBe(
      'grant_type=client_credentials&client_secret=[redacted]&scope=x',
    );
    expect(redactText('{"client_secret": "a\\"b", "password":"p", "user":"u"}')).toBe(
      '{"client_secret": "[redacted]", "password":"[redacted]", "user":"u"}',
    );
  });

  it('replaces remembered secrets raw and in the forms a server echoes them', () => {
    for (const form of [
      SECRET,
      encodeURIComponent(SECRET),
      encodeURIComponent(SECRET).replace(/%20/g, '+'),
      JSON.stringify(SECRET).slice(1, -1),
      Buffer.from(SECRET).toString('base64'),
    ]) {
      expect(redactText(`before ${form} after`)).toBe('before [redacted] after');
    }
  });

  it('leaves ordinary text alone, short remembered values included', () => {
    const text = 'registry.password: expected a string; a short answer; Basic auth';
    expect(redactText(text)).toBe(text);
  });

  it('reads any thrown value', () => {
    expect(errorText(new Error(`failed with ${SECRET}`))).toBe('failed with [redacted]');
    expect(errorText('http://u:pw@h')).toBe('http://u:[redacted]@h');
  });
});

describe('redactValue', () => {
  it('redacts every string of a logged value, errors included, and stops at a depth', () => {
    const err = Object.assign(new Error(`token endpoint said Basic ${'QUJDREVGRw=='}`), { body: SECRET });
    const out = redactValue({ a: [`x ${SECRET}`], err, n: 1 }) as Record<string, unknown>;
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(JSON.stringify(out)).not.toContain('QUJDREVGRw');
    expect(out.n).toBe(1);
    expect(out.err).toMatchObject({ type: 'Error', body: '[redacted]' });
    let deep: unknown = 'leaf';
    for (let i = 0; i < 20; i++) deep = { d: deep };
    expect(JSON.stringify(redactValue(deep))).toContain('[redacted]');
  });
});
