/**
 * A first start on an input topic that already holds history, on the real stack: nothing of it is
 * submitted unless the configuration says so.
 */
import { jest } from '@jest/globals';
import { BacklogRefusedError } from '../../src/connector/first-contact.js';
import { StartupError } from '../../src/connector/connector.js';
import { arrival, E2E, waitFor } from '../harness/e2e.js';

jest.setTimeout(120_000);

describe('a first start on a topic with history', () => {
  const env = new E2E(3);
  let file: string;

  beforeAll(async () => {
    await env.start();
    file = await env.writeFile('id.pdf', Buffer.from('%PDF-1.4 id card'));
    // A year of events in miniature: 10,000 arrivals the group has never read.
    const history = Array.from({ length: 10_000 }, (_, i) => arrival(`old-${i}`, file));
    await env.produce(history, (i) => `k${i}`);
    await env.collect();
  });
  afterAll(() => env.stop());

  const created = async () => {
    const res = await fetch(`${env.sandbox.baseUrl}/_sandbox/stats`);
    return ((await res.json()) as { submissionsCreated: number }).submissionsCreated;
  };

  it('refuses, unasked, with the count and the ways on, and submits nothing', async () => {
    const start = env.startConnector();
    await expect(start).rejects.toThrow(StartupError);
    const err = (await start.catch((e: unknown) => e)) as StartupError;
    expect(err.cause).toBeInstanceOf(BacklogRefusedError);
    expect(err.message).toMatch(/holds 10000 record\(s\) on 3 partition\(s\)/);
    expect(err.message).toMatch(/connector\.startFrom .*earliest.*latest/);
    expect(await created()).toBe(0);
  });

  it('starts after the history with startFrom latest: only what arrives then is analysed', async () => {
    await env.startConnector({ connector: { startFrom: 'latest' } });
    await env.produce([arrival('new-1', file)], () => 'k-new');
    await env.waitForResults('new-1');
    await waitFor('the new document handled', () => env.forEvent('new-1').length > 0);
    expect(await created()).toBe(1);
    expect(env.outputs.filter((o) => o.headers.event_id?.startsWith('old-'))).toEqual([]);
  });
});
