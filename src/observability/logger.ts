/**
 * Logging with pino: JSON by default, human-readable on a terminal (pino-pretty).
 * Secrets and submission characteristics (personal data) are redacted wherever they appear
 * in a logged object, so a log line can never carry them: by key (pino's `redact`), and by value
 * in every string of the line, the message included (`redact.ts`: URL passwords, echoed
 * credentials, the configuration's secret values).
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { redactText, redactValue } from './redact.js';
import { colourWanted } from '../util/progress.js';

export type { Logger } from 'pino';

type LogFormat = 'auto' | 'json' | 'pretty';

/** Keys whose values never reach a log line, at any depth up to four levels. */
const REDACTED_KEYS = [
  'client_secret',
  'clientSecret',
  'secret',
  'secrets',
  'password',
  'authorization',
  'Authorization',
  'access_token',
  'accessToken',
  'token',
  'client_assertion',
  'privateKey',
  'private_key',
  'webhookSecret',
  'secretAccessKey',
  'submission_characteristics',
  'characteristics',
  'identity_characteristics',
  'device_characteristics',
  'document_characteristics',
  'claims_characteristics',
  'email_characteristics',
  'transaction_characteristics',
  'upload_url',
  'uploadUrl',
];

function redactPaths(): string[] {
  const paths: string[] = [];
  for (const key of REDACTED_KEYS) {
    paths.push(key, `*.${key}`, `*.*.${key}`, `*.*.*.${key}`);
  }
  return paths;
}

interface LoggerSettings {
  level?: string;
  format?: LogFormat;
  name?: string;
  /** Where to write; defaults to stderr so stdout stays free for command output. */
  destination?: number;
  /** A stream to write JSON lines to instead of a file descriptor (tests). */
  stream?: DestinationStream;
}

export function createLogger(settings: LoggerSettings = {}): Logger {
  const destination = settings.destination ?? 2;
  const format = settings.format ?? 'auto';
  const pretty =
    format === 'pretty' || (format === 'auto' && destination === 2 && process.stderr.isTTY === true);
  const options: LoggerOptions = {
    name: settings.name ?? 'docstream',
    level: settings.level ?? process.env.DOCSTREAM_LOG_LEVEL ?? 'info',
    redact: { paths: redactPaths(), censor: '[redacted]' },
    formatters: { log: (object) => redactValue(object) as Record<string, unknown> },
    hooks: {
      logMethod(args, method) {
        const scrubbed = args.map((a: unknown) => (typeof a === 'string' ? redactText(a) : a));
        method.apply(this, scrubbed as Parameters<typeof method>);
      },
    },
  };
  if (settings.stream) return pino(options, settings.stream);
  if (pretty) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: {
          destination,
          colorize: colourWanted(process.stderr, process.env),
          translateTime: 'SYS:HH:MM:ss.l',
        },
      },
    });
  }
  return pino(options, pino.destination({ dest: destination, sync: false }));
}

/** A logger that discards everything, for tests and library use without a logger. */
export const silentLogger: Logger = pino({ level: 'silent' });
