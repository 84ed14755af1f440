/**
 * `docstream topology`: the topics, subjects and ACLs to provision for a configuration, printed
 * (nothing is connected to): text, a kafka-topics.sh/kafka-acls.sh script, Strimzi manifests or JSON
 * (`src/operator/provisioning.ts`).
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_PRINCIPALS } from '../../connector/acls.js';
import {
  formatTopologyScript,
  formatTopologyStrimzi,
  formatTopologyText,
  topologyOf,
  type StrimziOptions,
} from '../../operator/provisioning.js';
import { addConfigOption, configOf, type ConfigFlags } from '../config-option.js';
import { UsageError } from '../exit-codes.js';
import { examples } from '../help.js';

const FORMATS = ['text', 'script', 'strimzi', 'json'] as const;
const AUTHENTICATIONS = ['scram-sha-512', 'tls', 'tls-external', 'none'] as const;

interface TopologyFlags extends ConfigFlags {
  format: (typeof FORMATS)[number];
  connectorPrincipal: string;
  operatorPrincipal: string;
  inputPartitions?: number;
  strimziCluster: string;
  strimziAuthentication: StrimziOptions['authentication'];
}

function parsePrincipal(value: string): string {
  if (!/^[A-Za-z]+:\S+$/.test(value))
    throw new InvalidArgumentError('must be a Kafka principal, <type>:<name> (e.g. User:docstream)');
  return value;
}

function parsePartitions(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

export function registerTopologyCommand(program: Command): void {
  const command = program
    .command('topology')
    .summary('Print the topics, schema subjects and ACLs to provision, from the configuration.')
    .description(
      'Print what a platform team provisions for this configuration: every topic with its partitions, ' +
        'replication factor and configs, the schema registry subjects and who registers them, and the ' +
        "Kafka ACLs of the connector's principal (run) and of an operator's (send, inspect, status, dlq, " +
        'replay); the transactional ids only with connector.delivery exactly-once. Nothing is connected to.',
    )
    .addOption(
      new Option(
        '--format <format>',
        'text; script (kafka-topics.sh and kafka-acls.sh); strimzi (KafkaTopic and KafkaUser, kafka.strimzi.io/v1beta2); json',
      )
        .choices(FORMATS)
        .default('text'),
    )
    .option(
      '--connector-principal <principal>',
      "the connector's Kafka principal",
      parsePrincipal,
      DEFAULT_PRINCIPALS.connector,
    )
    .option(
      '--operator-principal <principal>',
      "the operator's Kafka principal",
      parsePrincipal,
      DEFAULT_PRINCIPALS.operator,
    )
    .option(
      '--input-partitions <n>',
      "the input topic's partitions, which the state topic must match (default: topics.outputPartitions)",
      parsePartitions,
    )
    .option(
      '--strimzi-cluster <name>',
      'strimzi: the Kafka resource (label strimzi.io/cluster)',
      'my-cluster',
    )
    .addOption(
      new Option('--strimzi-authentication <type>', "strimzi: the KafkaUsers' authentication")
        .choices(AUTHENTICATIONS)
        .default('scram-sha-512'),
    );
  addConfigOption(command).action((flags: TopologyFlags) => {
    const config = configOf(flags);
    if (flags.connectorPrincipal === flags.operatorPrincipal)
      throw new UsageError(
        `--connector-principal and --operator-principal are both ${flags.connectorPrincipal}: give two principals`,
      );
    const topology = topologyOf(config, {
      principals: { connector: flags.connectorPrincipal, operator: flags.operatorPrincipal },
      ...(flags.inputPartitions !== undefined ? { inputPartitions: flags.inputPartitions } : {}),
    });
    let out: string;
    if (flags.format === 'script') out = formatTopologyScript(topology, config.kafka.brokers.join(','));
    else if (flags.format === 'json') out = JSON.stringify(topology, null, 2);
    else if (flags.format === 'strimzi') {
      try {
        out = formatTopologyStrimzi(topology, {
          cluster: flags.strimziCluster,
          authentication: flags.strimziAuthentication,
        });
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
    } else out = formatTopologyText(topology);
    process.stdout.write(`${out}\n`);
  });
  examples(
    command,
    'docstream topology -c prod.json',
    'docstream topology -c prod.json --format script > provision.sh',
    'docstream topology -c prod.json --format strimzi --strimzi-cluster kafka-prod | kubectl apply -f -',
  );
}
