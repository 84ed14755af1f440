import { nodeFitsPlatformatic } from './platformatic-floor.js';

describe('nodeFitsPlatformatic (the platformatic floor’s engines)', () => {
  it('takes node 22 from 22.22 and node 24 from 24.6', () => {
    expect(nodeFitsPlatformatic('22.22.0')).toBe(true);
    expect(nodeFitsPlatformatic('v22.23.1')).toBe(true);
    expect(nodeFitsPlatformatic('24.6.0')).toBe(true);
    expect(nodeFitsPlatformatic('24.21.0')).toBe(true);
    expect(nodeFitsPlatformatic('25.0.0')).toBe(true);
  });

  it('refuses what the package’s engines refuse', () => {
    expect(nodeFitsPlatformatic('22.15.0')).toBe(false);
    expect(nodeFitsPlatformatic('22.21.9')).toBe(false);
    expect(nodeFitsPlatformatic('24.5.0')).toBe(false);
    expect(nodeFitsPlatformatic('20.20.0')).toBe(false);
  });
});
