/**
 * The Go floor (scripts/go-floor, issue 31): builds it on demand into .cache/go-floor (only when a
 * source is newer than the binary; Go's own build cache does the rest), registers the connector's
 * result schemas for the floor's topics so that it can frame its Avro records as the connector
 * does, and starts it. The Go toolchain is needed by `npm run bench -- --floor go|both` only, not
 * by docstream, its tests or CI.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Config } from '../../src/config/index.js';
import type { AvroSchemaName } from '../../src/serde/avro-schemas.js';
import { valueSubject } from '../../src/serde/registry.js';
import type { FloorReport } from '../floor.js';
import { REGISTRY_URL, RESULT_KINDS, type ResultKind } from './harness.js';

const SOURCE_DIR = path.resolve('scripts/go-floor');
const BINARY = path.resolve('.cache/go-floor/go-floor');

const SCHEMAS: Record<ResultKind, AvroSchemaName> = {
  fraud: 'FraudResult',
  quality: 'QualityResult',
  classification: 'ClassificationResult',
};

export type ResultSchemas = Record<ResultKind, { id: number; file: string }>;

/** Builds the Go floor unless the binary is newer than every source; returns the binary's path. */
export function buildGoFloor(log: (line: string) => void): string {
  const sources = fs
    .readdirSync(SOURCE_DIR)
    .filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum')
    .map((f) => fs.statSync(path.join(SOURCE_DIR, f)).mtimeMs);
  const built = fs.existsSync(BINARY) ? fs.statSync(BINARY).mtimeMs : 0;
  if (built > Math.max(...sources)) return BINARY;
  log('go floor: building scripts/go-floor (go build)');
  const build = spawnSync('go', ['build', '-o', BINARY, '.'], {
    cwd: SOURCE_DIR,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if ((build.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error(
      '--floor go needs the Go toolchain (go 1.26 or later on PATH) to build scripts/go-floor: ' +
        '`go` was not found; install Go or run with --floor node',
    );
  }
  if (build.error) throw build.error;
  if (build.status !== 0) throw new Error(`go build of scripts/go-floor failed (exit ${build.status})`);
  return BINARY;
}

/**
 * Registers the result schemas under the floor's topics, as the connector does at start. Over the
 * registry's API directly: src/serde/registry.ts reads the schemas beside its own module, which the
 * scripts' compiled copy (.cache/scripts) does not have.
 */
export async function registerResultSchemas(topics: Config['topics']): Promise<ResultSchemas> {
  const out: Partial<ResultSchemas> = {};
  for (const kind of RESULT_KINDS) {
    const file = path.resolve('avro', `${SCHEMAS[kind]}.avsc`);
    const subject = encodeURIComponent(valueSubject(topics[kind]));
    const res = await fetch(`${REGISTRY_URL}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schemaType: 'AVRO', schema: fs.readFileSync(file, 'utf8') }),
    });
    const answer = (await res.json().catch(() => null)) as { id?: unknown } | null;
    if (!res.ok || typeof answer?.id !== 'number') {
      throw new Error(
        `registering ${SCHEMAS[kind]} for the Go floor: HTTP ${res.status} ${JSON.stringify(answer)}`,
      );
    }
    out[kind] = { id: answer.id, file };
  }
  return out as ResultSchemas;
}

/**
 * Starts the Go floor; its reports ({ type: 'warm' }, FloorReport) come as JSON lines on stdout. Its
 * stdin is a pipe: ending it releases a floor that holds after its report (holdAfterReport).
 */
export function startGoFloor(
  binary: string,
  settingsFile: string,
  onMessage: (m: FloorReport | { type: 'warm' }) => void,
): ChildProcess {
  const child = spawn(binary, [settingsFile], { stdio: ['pipe', 'pipe', 'pipe'] });
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    let message: FloorReport | { type: 'warm' };
    try {
      message = JSON.parse(line) as FloorReport | { type: 'warm' };
    } catch {
      return; // not a report: the floor's exit without one then says what it wrote on stderr
    }
    onMessage(message);
  });
  return child;
}
