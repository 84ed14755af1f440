/**
 * `npm run kafka:clients`: what docstream needs from a Kafka client, tried on each candidate against
 * the real local stack (its plain and secured listeners), one program per client, and the table of
 * the outcomes: kafkajs (the project's), @platformatic/kafka (installed into .cache/platformatic-floor)
 * and @confluentinc/kafka-javascript (built into .cache/rdkafka-floor, when this machine can build it).
 * ACLs are tried on a private broker with Kafka's authorizer on, started here and removed after.
 *
 *   npm run kafka:clients -- [--clients kafkajs,platformatic,confluent] [--check-timeout-s 45] [--no-acls]
 *     [--only group.assignor,txn.fencing]
 *
 * Bounded: each check by --check-timeout-s, each program by the sum of its checks' bounds; every
 * topic and group a program makes carries a prefix of this run and is deleted after it, by the
 * program and again here. Prints a Markdown table and writes it with the details to
 * bench-results/kafka-client-checks-<time>.json.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import { defaultStackOptions, readSecureListeners, startOidcServer } from '../../src/stack/index.js';
import { startPrivateKafka, type PrivateKafka } from '../../test/harness/private-kafka.js';
import { installPlatformaticFloor } from '../lib/platformatic-floor.js';
import { installRdkafkaFloor } from '../lib/rdkafka-floor.js';
import { CHECKS, type CheckResult, type CheckSettings, type ClientReport } from './check.js';

const CLIENTS = ['kafkajs', 'platformatic', 'confluent'] as const;
type Client = (typeof CLIENTS)[number];

const PACKAGES: Record<Client, string> = {
  kafkajs: 'kafkajs',
  platformatic: '@platformatic/kafka',
  confluent: '@confluentinc/kafka-javascript',
};

function args() {
  const argv = process.argv.slice(2);
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const clients = (value('--clients') ?? CLIENTS.join(',')).split(',').map((c) => c.trim());
  for (const c of clients)
    if (!(CLIENTS as readonly string[]).includes(c)) throw new Error(`--clients: unknown client ${c}`);
  return {
    clients: clients as Client[],
    checkTimeoutMs: Number(value('--check-timeout-s') ?? 45) * 1000,
    acls: !argv.includes('--no-acls'),
    only: value('--only')?.split(','),
  };
}

/** Installs a client that is not one of docstream's dependencies; returns its module, or why not. */
function install(client: Client, log: (line: string) => void): { module?: string; error?: string } {
  try {
    if (client === 'platformatic') return { module: installPlatformaticFloor(log) };
    if (client === 'confluent') return { module: installRdkafkaFloor(log) };
    return {};
  } catch (err) {
    return { error: (err as Error).message.split('\n')[0] };
  }
}

function runProgram(client: Client, settingsFile: string, boundMs: number): Promise<ClientReport> {
  const program = fileURLToPath(new URL(`./${client}.js`, import.meta.url));
  const child = spawn(process.execPath, [program, settingsFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => {
    process.stderr.write(c);
    stderr = (stderr + c.toString('utf8')).slice(-4000);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), boundMs);
  return new Promise((resolve, reject) => {
    child.once('close', (code) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').at(-1);
      try {
        resolve(JSON.parse(last ?? '') as ClientReport);
      } catch {
        reject(
          new Error(
            `the ${client} program ended (${code ?? 'killed'}) without a report: ${stderr.slice(-600)}`,
          ),
        );
      }
    });
  });
}

/** Deletes what a program left: topics and groups carrying its prefix. */
async function sweep(brokers: string[], prefix: string): Promise<string[]> {
  const admin = new kafkajs.Kafka({ brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (topics.length) await admin.deleteTopics({ topics });
    const groups = (await admin.listGroups()).groups
      .map((g) => g.groupId)
      .filter((g) => g.startsWith(prefix));
    if (groups.length) await admin.deleteGroups(groups).catch(() => undefined);
    return topics;
  } finally {
    await admin.disconnect();
  }
}

function table(reports: ClientReport[]): string {
  const head = `| check | ${reports.map((r) => `${r.client} ${r.version}`).join(' | ')} |`;
  const rule = `|---|${reports.map(() => '---').join('|')}|`;
  const rows = CHECKS.map(([id]) => {
    const cells = reports.map((r) => r.results.find((x) => x.id === id)?.status ?? 'not run');
    return `| ${id} | ${cells.join(' | ')} |`;
  });
  return [head, rule, ...rows].join('\n');
}

function notes(reports: ClientReport[]): string {
  return reports
    .flatMap((r) =>
      r.results.filter((x) => x.reason).map((x) => `- ${r.client}, ${x.id} (${x.status}): ${x.reason}`),
    )
    .join('\n');
}

async function main() {
  const o = args();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const secure = readSecureListeners(defaultStackOptions());
  if (!secure) throw new Error('the local stack has no secured listeners: `docstream stack up` first');
  const brokers = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');
  const run = randomBytes(3).toString('hex');
  const dir = fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'client-checks-'));
  const oidc = await startOidcServer({ oauth: secure.oauth });
  let aclKafka: PrivateKafka | null = null;
  const reports: ClientReport[] = [];
  try {
    if (o.acls && (!o.only || o.only.includes('admin.acls'))) {
      log('starting a private broker with the authorizer on, for the ACL checks');
      aclKafka = await startPrivateKafka({ authorizer: true });
    }
    for (const client of o.clients) {
      const prefix = `client-checks-${run}-${client}-`;
      const installed = install(client, log);
      if (installed.error) {
        const results: CheckResult[] = CHECKS.map(([id]) => ({
          id,
          status: 'fail',
          reason: `not run: ${installed.error}`,
          ms: 0,
        }));
        reports.push({ client, version: 'not installed', results });
        continue;
      }
      const settings: CheckSettings = {
        brokers,
        ...(aclKafka ? { aclBrokers: aclKafka.brokers } : {}),
        prefix,
        secure,
        tokenUrl: oidc.tokenUrl,
        checkTimeoutMs: o.checkTimeoutMs,
        ...(installed.module ? { module: installed.module } : {}),
        ...(o.only ? { only: o.only } : {}),
      };
      const file = path.join(dir, `${client}.json`);
      fs.writeFileSync(file, JSON.stringify(settings), { mode: 0o600 });
      log(`${client} (${PACKAGES[client]}): ${CHECKS.length} checks`);
      try {
        reports.push(await runProgram(client, file, o.checkTimeoutMs * (CHECKS.length + 2)));
      } catch (err) {
        const reason = (err as Error).message;
        reports.push({
          client,
          version: '?',
          results: CHECKS.map(([id]) => ({ id, status: 'fail', reason, ms: 0 })),
        });
      } finally {
        const left = await sweep(brokers, prefix).catch(() => []);
        if (left.length) log(`${client}: deleted ${left.length} topics it left`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await oidc.close();
    await aclKafka
      ?.remove()
      .catch((err: unknown) => log(`removing the private broker: ${(err as Error).message}`));
  }
  const out = `${table(reports)}\n\n${notes(reports)}\n`;
  process.stdout.write(out);
  fs.mkdirSync('bench-results', { recursive: true });
  const file = path.join(
    'bench-results',
    `kafka-client-checks-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
  );
  fs.writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), reports }, null, 2));
  log(`written to ${file}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`kafka:clients failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
