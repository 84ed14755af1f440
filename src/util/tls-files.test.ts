import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-tls-'));
    openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'a.key',
      '-out',
      'a.crt',
      '-days',
      '2',
      '-subj',
      '/CN=a',
    );
    openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'b.key',
      '-out',
      'b.crt',
      '-days',
      '2',
      '-subj',
      '/CN=b',
    );
    openssl(
      'pkcs8',
      '-topk8',
      '-in',
      'a.key',
      '-out',
      'a-enc.key',
      '-passout',
      'pass:right-pass',
      '-v2',
      'aes-256-cbc',
    );
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
