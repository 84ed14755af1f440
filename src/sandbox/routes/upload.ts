/**
 * `PUT /_upload/:id`: the pre-signed upload URL. A small body is kept in memory; a larger one
 * streams to disk through the scanner, which hashes and inspects it on the way, so a large file
 * is never held whole (see upload-store.ts).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import { EMPTY_METADATA, type FileFacts } from '../analysis/inspect.js';
import type { SandboxContext } from '../context.js';
import { HttpError, mediaType } from '../http.js';
import { UploadSink } from '../upload-store.js';

function unsupportedFacts(sha256: string, size: number): FileFacts {
  return {
    sha256,
    size,
    fileType: 'unsupported',
    mimeType: 'application/octet-stream',
    numPages: 0,
    metadata: { ...EMPTY_METADATA },
    creationDate: null,
    modDate: null,
    eofCount: 0,
    parseFailed: false,
    pageText: [],
    image: null,
  };
}

export function registerUploadRoute(app: FastifyInstance, ctx: SandboxContext): void {
  app.put('/_upload/:id', async (request, reply) => {
    const { id } = request.params as { id: string };
    const query = request.query as Record<string, unknown>;
    const check = ctx.signer.check('upload', id, query.expires, query.sig);
    if (check === 'expired') throw new HttpError(403, 'upload URL expired; create a new submission');
    if (check === 'forged') throw new HttpError(403, 'upload URL signature does not match');
    if (mediaType(request) !== 'application/octet-stream') {
      throw new HttpError(
        415,
        `Content-Type: must be application/octet-stream, got ${request.headers['content-type'] ?? 'none'}`,
      );
    }
    const submission = ctx.submissions.get(id);
    // An upload URL is its cell's: another cell's listener has no such object.
    if (!submission || submission.cell !== ctx.cell)
      throw new HttpError(404, `submission ${id} does not exist`);
    if (submission.upload !== 'none') {
      throw new HttpError(
        409,
        `submission ${id} already has ${submission.upload === 'done' ? 'a file' : 'an upload in progress'}`,
      );
    }
    const config = ctx.config();
    const max = config.maxUploadBytes;
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > max) {
      reply.header('connection', 'close');
      throw new HttpError(
        413,
        `file: ${declared} bytes exceed the sandbox limit of ${max} bytes (maxUploadBytes)`,
      );
    }

    submission.upload = 'uploading';
    const path = join(ctx.storageDir, `${id}.bin`);
    const sink = new UploadSink({
      path,
      maxMemoryBytes: config.inMemoryUploads.maxFileBytes,
      declaredBytes: request.headers['content-length'] === undefined ? null : declared,
      budget: ctx.uploadMemory,
      maxBytes: max,
      tooLarge: () =>
        new HttpError(413, `file: more than ${max} bytes exceed the sandbox limit (maxUploadBytes)`),
    });
    const source = request.body instanceof Readable ? request.body : request.raw;
    try {
      await pipeline(source, sink);
    } catch (err) {
      submission.upload = 'none';
      await rm(path, { force: true });
      if (err instanceof HttpError) {
        reply.header('connection', 'close');
        throw err;
      }
      throw new HttpError(
        400,
        `file: upload interrupted (${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const stored = sink.result();
    if (ctx.submissions.get(id) !== submission) {
      // Deleted or evicted while the bytes were arriving.
      stored.discard();
      throw new HttpError(404, `submission ${id} does not exist`);
    }
    const facts = ctx.facts
      .facts(stored.sha256, () => {
        ctx.stats.increment('inspections');
        return stored.inspect();
      })
      .catch(() => unsupportedFacts(stored.sha256, stored.size));
    ctx.submissions.uploaded(submission, stored, facts);
    ctx.stats.increment('uploads');
    return reply
      .code(200)
      .header('etag', `"${stored.sha256.slice(0, 32)}"`)
      .send();
  });
}
