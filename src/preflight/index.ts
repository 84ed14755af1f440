/**
 * `docstream config check --connect`: every part of a configuration reached with its real
 * settings, one finding per check (Kafka Connect's config validation and `terraform plan` are the
 * models): the files it names, the brokers and their security, each topic and ACL, the registry and
 * its subjects, the API token of each credential, the blob sources. Nothing is written; each check
 * is bounded in time, so a part that does not answer is named instead of holding the command.
 */
import fs from 'node:fs';
import { headBucket, resolveHttpHost } from '../blobs/reach.js';
import { deploymentChecks, namedFiles, readinessProblems, setValues } from '../config/check.js';
import type { Config } from '../config/index.js';
import { CONFIG_SPEC, envName, type FieldSpec } from '../config/spec.js';
import { errorText } from '../observability/redact.js';
import { checkApi, type ApiCredentials } from './api-checks.js';
import { Findings } from './findings.js';
import { checkKafka } from './kafka-checks.js';
import { checkRegistry } from './registry-checks.js';

export { findingLines, summaryOf, type Finding, type FindingStatus } from './findings.js';
export type { ApiCredentials } from './api-checks.js';

export interface ConnectCheck {
  findings: Findings;
  /** The cluster's broker count, when the brokers answered. */
  brokers?: number;
}

/** The files the configuration names, checked where the command runs. */
function checkFiles(config: Config, findings: Findings, env: NodeJS.ProcessEnv): void {
  const problems = readinessProblems(config);
  for (const problem of problems) {
    const colon = problem.indexOf(': ');
    const key = problem.slice(0, colon);
    const part = problem.includes('does not exist on this machine')
      ? 'files'
      : key.startsWith('kafka.')
        ? 'kafka'
        : 'api';
    findings.missing(part, key, problem.slice(colon + 2));
  }
  for (const [key, file] of namedFiles(config)) {
    if (file !== '' && fs.existsSync(file)) findings.ok('files', key, `${file} exists`);
  }
  // The configuration loaded, so every secret file the environment names was read.
  for (const [section, fields] of Object.entries(CONFIG_SPEC)) {
    for (const [key, spec] of Object.entries(fields as Record<string, FieldSpec>)) {
      const variable = `${envName(section, key)}_FILE`;
      const file = spec.secret ? env[variable] : undefined;
      if (file) findings.ok('files', variable, `${file} read (${section}.${key})`);
    }
  }
}

async function checkBlobs(config: Config, findings: Findings, timeoutMs: number): Promise<void> {
  const b = config.blobs;
  if (b.fileRoots.length + b.httpHosts.length + b.s3Buckets.length === 0) {
    findings.warning(
      'blobs',
      'blobs.*',
      'no blob source is allowed: every event dead-letters blob_not_allowed; set blobs.s3Buckets, blobs.httpHosts or blobs.fileRoots',
    );
    return;
  }
  for (const root of b.fileRoots) {
    let directory = false;
    try {
      directory = fs.statSync(root).isDirectory();
    } catch {
      directory = false;
    }
    if (directory) findings.ok('blobs', `file root ${root}`, 'is a directory here');
    else
      findings.missing(
        'blobs',
        `file root ${root}`,
        'is not a directory on this machine: check blobs.fileRoots',
      );
  }
  for (const host of b.httpHosts) {
    const answer = await resolveHttpHost(b, host, timeoutMs);
    if (answer.ok) findings.ok('blobs', `http host ${host}`, answer.detail);
    else findings.missing('blobs', `http host ${host}`, answer.problem);
  }
  for (const bucket of b.s3Buckets) {
    const answer = await headBucket(b, bucket, timeoutMs);
    if (answer.ok) findings.ok('blobs', `s3 bucket ${bucket}`, answer.detail);
    else findings.missing('blobs', `s3 bucket ${bucket}`, answer.problem);
  }
}

/** The key a sentence of `deploymentChecks` starts with. */
function keyOf(sentence: string): string {
  return /^(?:one of )?[\w.]+(?:, [\w.]+)*/.exec(sentence)?.[0] ?? 'config';
}

/** Reaches every part of `config`; each request waits at most `timeoutMs`. */
export async function connectCheck(
  config: Config,
  api: ApiCredentials,
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<ConnectCheck> {
  const findings = new Findings();
  const { timeoutMs } = options;
  checkFiles(config, findings, options.env ?? process.env);
  // The parts are independent: reached side by side, reported in this order.
  const parts = [new Findings(), new Findings(), new Findings(), new Findings()] as const;
  const guard = async (part: Findings, name: Parameters<Findings['missing']>[0], work: Promise<unknown>) => {
    try {
      await work;
    } catch (error) {
      part.missing(name, name, `the check failed: ${errorText(error)}`);
    }
  };
  let brokers: number | undefined;
  await Promise.all([
    guard(
      parts[0],
      'kafka',
      checkKafka(config, parts[0], timeoutMs).then((facts) => (brokers = facts.brokers)),
    ),
    guard(parts[1], 'registry', checkRegistry(config, parts[1], timeoutMs)),
    guard(parts[2], 'api', checkApi(api, parts[2], timeoutMs)),
    guard(parts[3], 'blobs', checkBlobs(config, parts[3], timeoutMs)),
  ]);
  // What the settings lack or risk, now with the cluster's size known.
  const deployment = deploymentChecks(
    setValues(config),
    brokers === undefined ? {} : { brokerCount: brokers },
  );
  for (const problem of deployment.errors) findings.missing('config', keyOf(problem), problem);
  for (const risk of deployment.warnings) findings.warning('config', keyOf(risk), risk);
  for (const part of parts) findings.all.push(...part.all);
  return brokers === undefined ? { findings } : { findings, brokers };
}
