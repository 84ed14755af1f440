/**
 * Adapts the API client to the workflow's port: result getters by kind, "not ready" as one signal,
 * and uploads that re-open the blob on every attempt so a retried upload sends the whole file again
 * (from what admission read or fetched: the blob source never fetches it a second time).
 */
import { PassThrough, pipeline, type Readable } from 'node:stream';
import type { DocumentAnalysisClient } from '../../client/client.js';
import { NotFoundError } from '../../client/errors.js';
import { ResultNotReady, type ApiPort } from './ports.js';
import type { Awaitable, OpenedBlob } from '../types.js';

export function apiPort(client: DocumentAnalysisClient, options: { withMetadata: boolean }): ApiPort {
  const getters: Record<Awaitable, (id: string, spare: boolean) => Promise<unknown>> = {
    fraud: (id, spare) => client.getFraud(id, { withMetadata: options.withMetadata, spare }),
    quality: (id, spare) => client.getQuality(id, { spare }),
    classification: (id, spare) => client.getClassification(id, { spare }),
    decision: (id, spare) => client.getDecision(id, { spare }),
  };
  return {
    createSubmission: (req, options) => client.createSubmission(req, options),
    async upload(uploadUrl: string, blob: OpenedBlob): Promise<void> {
      // A small blob read at admission goes as one buffer (resent as is on a retry).
      const bytes = blob.bytes;
      if (bytes !== undefined) return client.upload(uploadUrl, bytes);
      // The client asks for a synchronous stream factory (called again on a retry); the blob opens
      // asynchronously, so each call hands out a pass-through that the freshly opened blob feeds.
      const fresh = (): Readable => {
        const pass = new PassThrough();
        // The blob can fail to open before the HTTP client listens to the stream (a cancelled run's
        // blob is already cleaned up, a file vanished): the consumer still sees the error through
        // the destroyed stream, but an 'error' event with no listener would end the process.
        pass.on('error', () => undefined);
        blob.open().then(
          (source) => pipeline(source, pass, () => undefined),
          (err: unknown) => pass.destroy(err as Error),
        );
        return pass;
      };
      await client.upload(uploadUrl, fresh, blob.size !== undefined ? { contentLength: blob.size } : {});
    },
    async putCharacteristics(submissionId, url, body) {
      await client.putCharacteristics(url ?? submissionId, body);
    },
    async getResult(kind, submissionId, call) {
      try {
        return (await getters[kind](submissionId, call?.spare ?? false)) as Record<string, unknown>;
      } catch (err) {
        // The result endpoints answer 404 until processing has finished (decision: until the verdict).
        if (err instanceof NotFoundError) throw new ResultNotReady(`${kind} of ${submissionId} not ready`);
        throw err;
      }
    },
    async getReportUrl(submissionId) {
      return (await client.getReport(submissionId)).report_url;
    },
    deleteSubmission: (id) => client.deleteSubmission(id),
  };
}
