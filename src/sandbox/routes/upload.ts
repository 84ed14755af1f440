/**
 * `PUT /_upload/:id`: the pre-signed upload URL. The body streams to disk through the scanner,
 * which hashes and inspects it on the way; nothing holds the whole file in memory.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import { EMPTY_METADATA, inspectUpload, type FileFacts } from '../analysis/inspect.js';
import { UploadScanner } from '../analysis/scanner.js';
import type { SandboxContext } from '../context.js';
import { HttpError, mediaType } from '../http.js';

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
    if (!submission) throw new HttpError(404, `submission ${id} does not exist`);
    if (submission.upload !== 'none') {
      throw new HttpError(
        409,
        `submission ${id} already has ${submission.upload === 'done' ? 'a file' : 'an upload in progress'}`,
      );
    }
    const max = ctx.config().maxUploadBytes;
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
    const scanner = new UploadScanner();
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        scanner.update(chunk);
        if (scanner.bytes > max) {
          done(new HttpError(413, `file: more than ${max} bytes exceed the sandbox limit (maxUploadBytes)`));
          return;
        }
        done(null, chunk);
      },
    });
    const source = request.body instanceof Readable ? request.body : request.raw;
    try {
      await pipeline(source, meter, createWriteStream(path));
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
    if (ctx.submissions.get(id) !== submission) {
      // Deleted or evicted while the bytes were arriving.
      await rm(path, { force: true });
      throw new HttpError(404, `submission ${id} does not exist`);
    }
    const scan = scanner.finish();
    const facts = ctx.facts
      .facts(scan.sha256, () => {
        ctx.stats.increment('inspections');
        return inspectUpload(path, scan);
      })
      .catch(() => unsupportedFacts(scan.sha256, scan.size));
    ctx.submissions.uploaded(submission, path, facts, scan.sha256);
    ctx.stats.increment('uploads');
    return reply
      .code(200)
      .header('etag', `"${scan.sha256.slice(0, 32)}"`)
      .send();
  });
}
