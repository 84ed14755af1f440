import { withReprocess } from './redrive.js';

const noRegistry = {
  writerType: () => Promise.reject(new Error('no registry needed for JSON')),
};

describe('withReprocess', () => {
  it('sets reprocess on a JSON event', async () => {
    const out = await withReprocess(Buffer.from('{"event_id":"e","reprocess":false}'), noRegistry);
    expect(JSON.parse(out.toString('utf8'))).toEqual({ event_id: 'e', reprocess: true });
  });

  it('sends a value nested too deep back as it was instead of overflowing the stack', async () => {
    const deep = Buffer.from(`{"event_id":"e","x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`);
    await expect(withReprocess(deep, noRegistry)).resolves.toBe(deep);
  });
});
