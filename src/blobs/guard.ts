import type { Readable, Transform } from 'node:stream';

/**
 * Pipes `source` into `through` and returns `through`, so the reader sees one stream:
 * errors of the source reach it translated by `mapError` (raw transport errors can carry
 * URLs), and when the reader gives up the source is released too.
 */
export function guard(source: Readable, through: Transform, mapError: (error: unknown) => Error): Readable {
  source.once('error', (error) => through.destroy(mapError(error)));
  through.once('close', () => source.destroy());
  source.pipe(through);
  return through;
}
