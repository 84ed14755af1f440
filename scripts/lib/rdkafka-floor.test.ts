import { missingDebianPackages } from './rdkafka-floor.js';

describe('missingDebianPackages (the rdkafka floor’s build)', () => {
  const path = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path;
  });

  it('names the packages of the commands it cannot find, in the order to install them', () => {
    process.env.PATH = '/nonexistent';
    const missing = missingDebianPackages();
    expect(missing.slice(0, 2)).toEqual(['build-essential', 'python3']);
  });

  it('names only Debian packages the build uses', () => {
    process.env.PATH = '/nonexistent';
    for (const pkg of missingDebianPackages())
      expect([
        'build-essential',
        'python3',
        'libssl-dev',
        'zlib1g-dev',
        'libzstd-dev',
        'liblz4-dev',
        'libsasl2-dev',
        'libcurl4-openssl-dev',
      ]).toContain(pkg);
  });
});
