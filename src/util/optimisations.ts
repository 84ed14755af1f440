/**
 * The tuning docstream does beyond plain code, each with a name, and the one switch that turns any
 * of them off: `DOCSTREAM_OPTIMISATIONS_OFF=<comma list of names>` (or `all`). Off, the code takes
 * the plain way (Node's and glibc's defaults, a Map, got, the AWS SDK, kafkajs's own code). What
 * each buys, how it was measured and which test guards it: docs/optimisations.md.
 *
 * Read from the environment, not the configuration: two of them act before any configuration is
 * read (the restart with runtime settings, the kafkajs patches put on at import).
 */
import { SettingError } from './setting-error.js';

export const OPTIMISATIONS_OFF_ENV = 'DOCSTREAM_OPTIMISATIONS_OFF';

/** Each optimisation by name, with what runs instead when it is off. */
export const OPTIMISATIONS = {
  'runtime-settings':
    "`docstream run` restarts itself with a small V8 young generation and glibc malloc settings (off: Node's and glibc's defaults)",
  'heap-compaction-after-restore':
    'one forced, compacting collection after a large restore (off: V8 collects when it decides)',
  'packed-state-index':
    'finished documents held in typed-array columns and a hash table (off: a Map of objects)',
  'http-client-wire':
    "the API client's own HTTP layer over node:http (off: got, on the same keep-alive pool)",
  's3-signed-get': "s3:// blobs as one aws4-signed GET (off: the AWS SDK's GetObject through send())",
  'kafkajs-idle-request-queues':
    "kafkajs's request queues schedule no timers while idle (off: kafkajs's 1 ms and 100 ms timers)",
  'kafkajs-paused-fetch':
    "a consumer with every partition paused waits until its next heartbeat (off: kafkajs's fetch every maxWaitTime)",
  'kafkajs-response-remainder':
    'a Kafka connection lets go of the buffer of its last response (off: kafkajs keeps it)',
  'kafkajs-group-readings':
    "the lag timer's readings as two requests on the admin's cluster (off: kafkajs's public admin calls)",
} as const;

export type Optimisation = keyof typeof OPTIMISATIONS;

export const OPTIMISATION_NAMES = Object.keys(OPTIMISATIONS) as Optimisation[];

function isName(name: string): name is Optimisation {
  return Object.hasOwn(OPTIMISATIONS, name);
}

/** The names listed in the variable (`all`: every one), and the words that name none. */
export function parseOptimisationsOff(value: string | undefined): {
  off: Optimisation[];
  unknown: string[];
} {
  const words = (value ?? '')
    .split(',')
    .map((w) => w.trim())
    .filter((w) => w !== '');
  if (words.includes('all'))
    return { off: [...OPTIMISATION_NAMES], unknown: words.filter((w) => w !== 'all' && !isName(w)) };
  const off = OPTIMISATION_NAMES.filter((name) => words.includes(name));
  return { off, unknown: words.filter((w) => !isName(w)) };
}

/** Whether `name` runs (not listed in DOCSTREAM_OPTIMISATIONS_OFF). */
export function optimisationOn(name: Optimisation, env: NodeJS.ProcessEnv = process.env): boolean {
  return !parseOptimisationsOff(env[OPTIMISATIONS_OFF_ENV]).off.includes(name);
}

/** The names switched off; a word that names no optimisation is a setting error. */
export function checkedOptimisationsOff(env: NodeJS.ProcessEnv = process.env): Optimisation[] {
  const { off, unknown } = parseOptimisationsOff(env[OPTIMISATIONS_OFF_ENV]);
  if (unknown.length > 0)
    throw new SettingError(
      OPTIMISATIONS_OFF_ENV,
      `${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not an optimisation; ` +
        `the names are ${OPTIMISATION_NAMES.join(', ')} (or all)`,
    );
  return off;
}
