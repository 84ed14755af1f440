import { jest } from '@jest/globals';
import type { Readable } from 'node:stream';
import type { DocumentAnalysisClient } from '../../client/client.js';
import { apiPort } from './api-port.js';
import type { OpenedBlob } from '../types.js';

describe('apiPort upload', () => {
  afterEach(() => jest.useRealTimers());

  it('a blob that fails to open before the client reads the stream fails the stream, not the process', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    let stream: Readable | undefined;
    const client = {
      async upload(_url: string, factory: () => Readable) {
        stream = factory();
        // No listener yet, as when the HTTP client attaches its own only once the socket is ready
        // (fake time; the event-loop turns between, where the open's failure lands, are real).
        await jest.advanceTimersByTimeAsync(20);
      },
    } as unknown as DocumentAnalysisClient;
    const blob: OpenedBlob = {
      open: () => Promise.reject(new Error('already cleaned up')),
      size: 3,
      contentType: undefined,
      cleanup: async () => undefined,
    } as unknown as OpenedBlob;
    await apiPort(client, { withMetadata: false }).upload('http://127.0.0.1/u', blob, 'id');
    expect(stream?.destroyed).toBe(true);
    expect(stream?.errored?.message).toBe('already cleaned up');
  });

  it('uploads a blob held in memory as that buffer, so a retry resends it without reopening', async () => {
    const bodies: unknown[] = [];
    const client = {
      async upload(_url: string, body: unknown) {
        bodies.push(body);
      },
    } as unknown as DocumentAnalysisClient;
    const bytes = Buffer.from('%PDF-1.4');
    const blob: OpenedBlob = {
      bytes,
      open: () => Promise.reject(new Error('must not be opened')),
      size: bytes.length,
      contentType: undefined,
      sha256: undefined,
      cleanup: async () => undefined,
    };
    await apiPort(client, { withMetadata: false }).upload('http://127.0.0.1/u', blob, 'id');
    expect(bodies).toEqual([bytes]);
  });
});
