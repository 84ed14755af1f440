import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { selfSignedCertificate } from '../stack/secure.js';
import { loadTlsFiles } from './tls-files.js';

const names = {
  caFile: 'x.caFile',
  certFile: 'x.certFile',
  keyFile: 'x.keyFile',
  keyPassword: 'x.keyPassword',
};

describe('loadTlsFiles', () => {
  let dir: string;
  const file = (name: string) => path.join(dir, name);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-tls-'));
    await selfSignedCertificate(dir, 'a', '/CN=a', 2);
    await selfSignedCertificate(dir, 'b', '/CN=b', 2);
    const encrypted = createPrivateKey(fs.readFileSync(file('a.key'))).export({
      type: 'pkcs8',
      format: 'pem',
      cipher: 'aes-256-cbc',
      passphrase: 'right-pass',
    });
    fs.writeFileSync(file('a-enc.key'), encrypted);
    fs.writeFileSync(
      file('bundle.crt'),
      fs.readFileSync(file('a.crt'), 'utf8') + fs.readFileSync(file('b.crt'), 'utf8'),
    );
    fs.writeFileSync(file('not-pem.txt'), 'hello');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads nothing when no file is named', () => {
    expect(loadTlsFiles({}, names)).toEqual({});
  });

  it('splits a CA bundle into its certificates', () => {
    expect(loadTlsFiles({ caFile: file('bundle.crt') }, names).ca).toHaveLength(2);
  });

  it('takes a certificate with its key, and an encrypted key with its passphrase', () => {
    expect(loadTlsFiles({ certFile: file('a.crt'), keyFile: file('a.key') }, names)).toMatchObject({
      cert: expect.stringContaining('BEGIN CERTIFICATE'),
      key: expect.stringContaining('PRIVATE KEY'),
    });
    expect(
      loadTlsFiles({ certFile: file('a.crt'), keyFile: file('a-enc.key'), keyPassword: 'right-pass' }, names)
        .passphrase,
    ).toBe('right-pass');
  });

  it.each([
    [{ caFile: '/nonexistent/ca.pem' }, /^x\.caFile: cannot read \/nonexistent\/ca\.pem \(ENOENT\)/],
    [{ caFile: 'not-pem.txt' }, /^x\.caFile: .*holds no PEM certificate/],
    [{ certFile: 'a.crt' }, /^x\.keyFile: is required with x\.certFile/],
    [{ keyFile: 'a.key' }, /^x\.certFile: is required with x\.keyFile/],
    [
      { certFile: 'a.crt', keyFile: 'b.key' },
      /^x\.keyFile: .* is not the key of the certificate in x\.certFile/,
    ],
    [{ certFile: 'a.crt', keyFile: 'a-enc.key' }, /^x\.keyPassword: .* is encrypted: set x\.keyPassword/],
    [{ certFile: 'a.crt', keyFile: 'a-enc.key', keyPassword: 'wrong' }, /^x\.keyPassword: does not decrypt/],
  ])('%o fails naming the setting', (files, message) => {
    const resolved = Object.fromEntries(
      Object.entries(files).map(([k, v]) => [k, k === 'keyPassword' || v.startsWith('/') ? v : file(v)]),
    );
    expect(() => loadTlsFiles(resolved, names)).toThrow(message);
  });
});
