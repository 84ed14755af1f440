/**
 * `npm run stack:images`: builds (or finds, unchanged) the Kafka and schema-registry images the
 * testcontainers harness and the compose check run (scripts/lib/stack-images.ts), and prints their
 * names and how long it took. `--s3` adds moto's image, which only the compose check runs.
 */
import { ensureStackImages } from './lib/stack-images.js';

const log = (line: string) =>
  process.stderr.write(`[images ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const started = Date.now();
try {
  const images = await ensureStackImages(log, { s3: process.argv.includes('--s3') });
  log(`${images.kafka} and ${images.registry} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (err) {
  log((err as Error).message);
  process.exitCode = 1;
}
