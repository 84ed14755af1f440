import { LogDigest } from './log-digest.js';

describe('LogDigest', () => {
  it('folds lines of the same level and message that follow each other, across chunks', () => {
    const d = new LogDigest();
    const line = (level: number, msg: string, n: number) => JSON.stringify({ level, msg, n }) + '\n';
    d.write(line(30, 'joined', 1) + line(40, 'commit failed', 2).slice(0, 10));
    d.write(
      line(40, 'commit failed', 2).slice(10) + line(40, 'commit failed', 3) + line(40, 'commit failed', 4),
    );
    d.write(line(30, 'joined', 5) + 'not json\n');
    expect(d.text().split('\n')).toEqual([
      line(30, 'joined', 1).trim(),
      `${line(40, 'commit failed', 2).trim()} [×3]`,
      line(30, 'joined', 5).trim(),
      'not json',
    ]);
  });

  it('keeps the newest entries and cuts long lines', () => {
    const d = new LogDigest(2);
    for (const msg of ['a', 'b', 'c']) d.write(JSON.stringify({ level: 30, msg }) + '\n');
    d.write('x'.repeat(20) + '\n');
    expect(d.text(10).split('\n')).toEqual(['{"level":3…', 'xxxxxxxxxx…']);
  });
});
