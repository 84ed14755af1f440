/**
 * `docstream sandbox`: runs the sandbox of the Document Analysis API. Precedence: defaults, then
 * `--config <file.json>`, then flags. Bad flags or values exit with code 2 and say why.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import { CELLS } from '../../api/schemas.js';
import { createLogger } from '../../observability/logger.js';
import { readSecret, refusedSecretFlag } from '../config-option.js';
import { deprecatedOption } from '../deprecated.js';
import { millisecondsOf, secondsOption } from '../durations.js';
import { UsageError } from '../exit-codes.js';
import { examples } from '../help.js';
import {
  applyConfigPatch,
  DEFAULT_CLIENT,
  defaultConfig,
  SandboxConfigError,
  startSandbox,
  type DeepPartial,
  type SandboxConfig,
} from '../../sandbox/index.js';

function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`must be an integer, got "${value}"`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`must be between ${min} and ${max}, got ${n}`);
    return n;
  };
}

function number(min: number, max = Number.POSITIVE_INFINITY) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n))
      throw new InvalidArgumentError(`must be a number, got "${value}"`);
    if (n < min || n > max) throw new InvalidArgumentError(`must be between ${min} and ${max}, got ${n}`);
    return n;
  };
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};
function bytes(value: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = SIZE_UNITS[(m?.[2] ?? '').toLowerCase()];
  if (!m || unit === undefined)
    throw new InvalidArgumentError(`must be a size such as 1048576, 512KiB or 100MiB, got "${value}"`);
  const n = Math.floor(Number(m[1]) * unit);
  if (n < 1) throw new InvalidArgumentError('must be at least 1 byte');
  return n;
}

const FRAUD_SCORES = ['NORMAL', 'TRUSTED', 'WARNING', 'HIGH_RISK'];
function decisionRule(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const m = /^([A-Z_]+)=(\S+)$/.exec(value.trim());
  if (!m || !FRAUD_SCORES.includes(m[1] as string)) {
    throw new InvalidArgumentError(
      `must be SCORE=DECISION with SCORE one of ${FRAUD_SCORES.join(', ')}, got "${value}"`,
    );
  }
  return { ...previous, [m[1] as string]: m[2] as string };
}

/** The flags; durations in seconds, as given. */
interface Flags {
  config?: string[];
  host?: string;
  port?: number;
  tokenTtl?: number;
  processing?: 'fixed' | 'uniform' | 'exponential';
  processingMean?: number;
  processingMin?: number;
  processingMax?: number;
  seed?: number;
  rateLimit?: number;
  burst?: number;
  retryAfterFormat?: 'seconds' | 'http-date';
  errorRate?: number;
  extraLatency?: number;
  dropRate?: number;
  storm429?: number;
  pipelineFailRate?: number;
  webhookUrl?: string;
  webhookSecret?: string;
  webhookSecretFile?: string;
  webhookDuplicateRate?: number;
  webhookOutOfOrder?: boolean;
  webhookOutOfOrderWindow?: number;
  webhookMaxAttempts?: number;
  webhookRetryBase?: number;
  tenantId?: string;
  decisionRule?: Record<string, string>;
  maxUploadBytes?: number;
  maxSubmissions?: number;
  storageDir?: string;
  uploadUrlTtl?: number;
  reportUrlTtl?: number;
  serveCell?: Record<string, number>;
  logLevel?: string;
}

const CELL_NAMES: readonly string[] = CELLS;
/** `--serve-cell eu-1` or `--serve-cell eu-1=8081` (repeatable): a cell served on a listener of its own. */
function cellFlag(value: string, previous: Record<string, number> = {}): Record<string, number> {
  const m = /^([a-z0-9-]+)(?:=(\d+))?$/.exec(value.trim());
  if (!m || !CELL_NAMES.includes(m[1] as string)) {
    throw new InvalidArgumentError(
      `must be CELL or CELL=PORT with CELL one of ${CELL_NAMES.join(', ')}, got "${value}"`,
    );
  }
  const port = m[2] === undefined ? 0 : Number(m[2]);
  if (port > 65535) throw new InvalidArgumentError(`port must be between 0 and 65535, got ${port}`);
  return { ...previous, [m[1] as string]: port };
}

/** A duration flag's seconds as the config's milliseconds; not given stays not given. */
function ms(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : millisecondsOf(seconds);
}

/** A deprecated flag in milliseconds, read as the seconds of its replacement. */
function fromMs(parse: (value: string) => number): (value: string) => number {
  return (value) => parse(value) / 1000;
}

/** Turns flags into a config patch; only flags that were given appear in it. */
function flagsToPatch(f: Flags, base: SandboxConfig): DeepPartial<SandboxConfig> {
  const patch: DeepPartial<SandboxConfig> = {};
  const set = <K extends keyof SandboxConfig>(key: K, value: DeepPartial<SandboxConfig>[K] | undefined) => {
    if (value !== undefined) patch[key] = value;
  };
  set('host', f.host);
  set('port', f.port);
  set('tokenTtlSeconds', f.tokenTtl);
  set('seed', f.seed);
  set('retryAfterFormat', f.retryAfterFormat);
  set('maxUploadBytes', f.maxUploadBytes);
  set('maxSubmissions', f.maxSubmissions);
  set('storageDir', f.storageDir);
  set('uploadUrlTtlSeconds', f.uploadUrlTtl);
  set('reportUrlTtlSeconds', f.reportUrlTtl);
  set('decisionRules', f.decisionRule);
  if (f.serveCell) {
    patch.cells = Object.fromEntries(
      Object.entries(f.serveCell).map(([name, port]) => [
        name,
        { ...base.cells[name as keyof typeof base.cells], port },
      ]),
    );
  }
  const processing = {
    distribution: f.processing,
    meanMs: ms(f.processingMean),
    minMs: ms(f.processingMin),
    maxMs: ms(f.processingMax),
  };
  if (Object.values(processing).some((v) => v !== undefined)) patch.processing = processing;
  if (f.rateLimit !== undefined) {
    patch.rateLimit =
      f.rateLimit === 0
        ? null
        : {
            ratePerSecond: f.rateLimit,
            burst: f.burst ?? base.rateLimit?.burst ?? Math.max(1, Math.ceil(f.rateLimit)),
          };
  } else if (f.burst !== undefined) {
    if (!base.rateLimit)
      throw new InvalidArgumentError('--burst needs --rate-limit (or rateLimit in --config)');
    patch.rateLimit = { burst: f.burst };
  }
  const faults = {
    errorRate: f.errorRate,
    extraLatencyMs: ms(f.extraLatency),
    dropRate: f.dropRate,
    storm429: f.storm429 === undefined ? undefined : f.storm429 === 0 ? null : { durationMs: ms(f.storm429) },
    pipelineFailRate: f.pipelineFailRate,
  };
  if (Object.values(faults).some((v) => v !== undefined)) patch.faults = faults;
  const webhook = {
    url: f.webhookUrl,
    secret: f.webhookSecret,
    duplicateRate: f.webhookDuplicateRate,
    outOfOrder: f.webhookOutOfOrder,
    outOfOrderWindowMs: ms(f.webhookOutOfOrderWindow),
    maxAttempts: f.webhookMaxAttempts,
    retryBaseMs: ms(f.webhookRetryBase),
    tenantId: f.tenantId,
  };
  if (Object.values(webhook).some((v) => v !== undefined)) patch.webhook = webhook;
  return patch;
}

function loadConfigFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SandboxConfigError(`--config ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new SandboxConfigError(
      `--config ${path}: invalid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

export function registerSandboxCommand(program: Command): void {
  const d = defaultConfig();
  const cmd = program
    .command('sandbox')
    .description(
      'Run a faithful sandbox of the Document Analysis API (token endpoint, /v2, /v0, uploads, webhooks).',
    )
    .addOption(
      new Option(
        '-c, --config <file.json>',
        "the sandbox's own JSON file of SandboxConfig keys (such as clients and decisionRules; repeatable, later files win); flags override it",
      ).argParser((value: string, previous: string[] = []) => [...previous, value]),
    )
    .addOption(new Option('--host <host>', 'interface to listen on').default(d.host))
    .addOption(
      new Option('--port <port>', 'port to listen on (0 = any free port)')
        .argParser(integer(0, 65535))
        .default(d.port),
    )
    .addOption(secondsOption('--token-ttl', 'access token lifetime', { whole: true }))
    .addOption(
      new Option('--processing <distribution>', 'per-result processing time distribution').choices([
        'fixed',
        'uniform',
        'exponential',
      ]),
    )
    .addOption(secondsOption('--processing-mean', 'mean processing time per result', { zero: true }))
    .addOption(
      secondsOption('--processing-min', 'lower bound (uniform; clamp for exponential)', { zero: true }),
    )
    .addOption(
      secondsOption('--processing-max', 'upper bound (uniform; clamp for exponential)', { zero: true }),
    )
    .addOption(
      new Option('--seed <n>', 'seed for every random draw (reproducible timings and faults)').argParser(
        integer(-(2 ** 31), 2 ** 32),
      ),
    )
    .addOption(
      new Option('--rate-limit <per-second>', 'per-client token bucket refill rate; 0 = off').argParser(
        number(0),
      ),
    )
    .addOption(
      new Option('--burst <n>', 'token bucket size (default: the rate, rounded up)').argParser(integer(1)),
    )
    .addOption(
      new Option('--retry-after-format <format>', 'how 429 answers express Retry-After').choices([
        'seconds',
        'http-date',
      ]),
    )
    .addOption(
      new Option('--error-rate <0..1>', 'probability of a simulated 503 per API request').argParser(
        number(0, 1),
      ),
    )
    .addOption(secondsOption('--extra-latency', 'delay added to every API request', { zero: true }))
    .addOption(
      new Option('--drop-rate <0..1>', 'probability of dropping the connection without an answer').argParser(
        number(0, 1),
      ),
    )
    .addOption(
      secondsOption('--storm-429', 'answer every API request 429 for this long after start; 0 = off', {
        zero: true,
      }),
    )
    .addOption(
      new Option(
        '--pipeline-fail-rate <0..1>',
        'probability that a result is the PIPELINE_FAILED variant',
      ).argParser(number(0, 1)),
    )
    .addOption(
      new Option('--webhook-url <url>', 'where documents.adaptive_decision.finished events are POSTed'),
    )
    .addOption(
      new Option(
        '--webhook-secret-file <file>',
        'file holding the Standard Webhooks signing secret, whsec_<base64 key> (default: a fixed sandbox secret)',
      ),
    )
    .addOption(
      refusedSecretFlag(
        '--webhook-secret',
        'in a file with --webhook-secret-file <file>, or as webhook.secret in the --config file',
      ),
    )
    .addOption(
      new Option('--webhook-duplicate-rate <0..1>', 'probability an event is delivered twice').argParser(
        number(0, 1),
      ),
    )
    .addOption(new Option('--webhook-out-of-order', 'hold events for a window and deliver them newest first'))
    .addOption(secondsOption('--webhook-out-of-order-window', 'how long --webhook-out-of-order holds events'))
    .addOption(new Option('--webhook-max-attempts <n>', 'delivery attempts per event').argParser(integer(1)))
    .addOption(secondsOption('--webhook-retry-base', 'first retry delay, doubled per attempt (max 60 s)'))
    .addOption(new Option('--tenant-id <id>', 'tenant_id carried by webhook events'))
    .addOption(
      new Option(
        '--decision-rule <SCORE=DECISION>',
        'map a fraud score to a decision (repeatable)',
      ).argParser(decisionRule),
    )
    .addOption(
      new Option('--max-upload-bytes <size>', 'largest accepted upload, e.g. 100MiB (larger: 413)').argParser(
        bytes,
      ),
    )
    .addOption(
      new Option(
        '--max-submissions <n>',
        'submissions kept before the oldest finished ones are evicted',
      ).argParser(integer(1)),
    )
    .addOption(
      new Option('--storage-dir <dir>', 'where uploads are stored (default: a temp dir removed on exit)'),
    )
    .addOption(secondsOption('--upload-url-ttl', 'lifetime of pre-signed upload URLs', { whole: true }))
    .addOption(secondsOption('--report-url-ttl', 'lifetime of report download URLs', { whole: true }))
    .addOption(
      new Option(
        '--serve-cell <name[=port]>',
        'serve this cell on a listener of its own, with its own token endpoint (repeatable; no port or 0: a free port); tenants come from --config or POST /v0/tenants',
      ).argParser(cellFlag),
    )
    // The spellings in milliseconds of before.
    .addOption(deprecatedOption('--processing-mean-ms <ms>', '--processing-mean', fromMs(number(0))))
    .addOption(deprecatedOption('--processing-min-ms <ms>', '--processing-min', fromMs(number(0))))
    .addOption(deprecatedOption('--processing-max-ms <ms>', '--processing-max', fromMs(number(0))))
    .addOption(deprecatedOption('--extra-latency-ms <ms>', '--extra-latency', fromMs(number(0))))
    .addOption(deprecatedOption('--storm-429-ms <ms>', '--storm-429', fromMs(number(0))))
    .addOption(
      deprecatedOption(
        '--webhook-out-of-order-window-ms <ms>',
        '--webhook-out-of-order-window',
        fromMs(integer(1)),
      ),
    )
    .addOption(deprecatedOption('--webhook-retry-base-ms <ms>', '--webhook-retry-base', fromMs(integer(1))))
    .addOption(
      new Option('--log-level <level>', 'log level')
        .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .default('info'),
    )
    .addHelpText(
      'after',
      `
Defaults: processing ${d.processing.distribution} ${(d.processing.minMs ?? 0) / 1000}..${(d.processing.maxMs ?? 0) / 1000} s per result, token TTL ${d.tokenTtlSeconds} s,
no rate limit, no faults, max upload ${d.maxUploadBytes} bytes, max submissions ${d.maxSubmissions},
upload/report URL TTL ${d.uploadUrlTtlSeconds}/${d.reportUrlTtlSeconds} s, webhook ${d.webhook.maxAttempts} attempts from ${d.webhook.retryBaseMs / 1000} s,
decisions TRUSTED/NORMAL=APPROVED WARNING=MANUAL_REVIEW HIGH_RISK=DECLINED.
Default client: ${DEFAULT_CLIENT.clientId} / ${DEFAULT_CLIENT.clientSecret} (scopes ${DEFAULT_CLIENT.scopes.join(' ')}).
More clients (other scopes; private_key_jwt with publicKeyPem and kid) come from --config.
Runtime control (loopback only): GET /_sandbox/stats, GET /_sandbox/submissions?query_id=,
GET /_sandbox/calls, GET /_sandbox/tenants, PUT /_sandbox/applications/<client id>,
GET|POST /_sandbox/config, POST /_sandbox/reset. Several cells: --serve-cell eu-1 --serve-cell us-1=8082, or
"cells" and "tenants" in --config. See docs/sandbox.md.`,
    )
    .action(async (flags: Flags & { logLevel: string }) => {
      let config: SandboxConfig;
      try {
        flags.webhookSecret = await readSecret({ file: flags.webhookSecretFile }, '--webhook-secret');
        let base = defaultConfig();
        for (const file of flags.config ?? []) base = applyConfigPatch(base, loadConfigFile(file));
        config = applyConfigPatch(base, flagsToPatch(flags, base));
      } catch (err) {
        // Invalid input (2), reported by main like every command's.
        if (err instanceof SandboxConfigError || err instanceof InvalidArgumentError) {
          throw new UsageError(err.message);
        }
        throw err;
      }
      const logger = createLogger({ level: flags.logLevel, name: 'sandbox' });
      const sandbox = await startSandbox(config, { logger });
      const lines = [
        `docstream sandbox listening`,
        `  base URL:  ${sandbox.baseUrl}`,
        `  token URL: ${sandbox.tokenUrl}`,
        ...config.clients
          .filter((c) => c.clientSecret)
          .map((c) => `  client:    ${c.clientId} / ${c.clientSecret}  (scopes: ${c.scopes.join(' ')})`),
        ...config.clients
          .filter((c) => !c.clientSecret)
          .map(
            (c) =>
              `  client:    ${c.clientId}  private_key_jwt kid ${c.kid}  (scopes: ${c.scopes.join(' ')})`,
          ),
        ...Object.entries(sandbox.cells).flatMap(([name, urls]) => [
          `  cell ${name}:`,
          `    base URL:  ${urls.baseUrl}`,
          `    token URL: ${urls.tokenUrl}`,
        ]),
        // A tenant's application is named with its credential's kind, never its secret.
        ...sandbox
          .tenants()
          .flatMap((t) =>
            t.applications.map(
              (a) =>
                `  tenant:    ${t.name} (id ${t.id}, cell ${t.cell}) application ${a.clientId}  ${a.credentials}`,
            ),
          ),
        `  webhook:   ${config.webhook.url ?? 'off (set --webhook-url)'}`,
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
      const stop = (signal: string) => {
        logger.info({ signal }, 'sandbox stopping');
        sandbox.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });
  examples(
    cmd,
    'docstream sandbox',
    'docstream sandbox --port 8080 --rate-limit 20 --error-rate 0.05',
    'docstream sandbox --webhook-url http://127.0.0.1:8090/webhooks/document-analysis --webhook-secret-file whsec.txt',
  );
}
