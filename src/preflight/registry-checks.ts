/**
 * The registry part of `config check --connect`: the registry answers with the configured
 * credentials, and each subject docstream writes (`<topic>-value` of the topology's Avro topics)
 * holds docstream's schema, or will take it: the registry's own compatibility test, nothing written.
 */
import type { Config } from '../config/index.js';
import { plannedTopics } from '../connector/topology.js';
import { Registry, valueSubject } from '../serde/registry.js';
import { registryAccessOf } from '../serde/registry-access.js';
import { redactText } from '../observability/redact.js';
import { bounded, type Findings } from './findings.js';

export async function checkRegistry(config: Config, findings: Findings, timeoutMs: number): Promise<void> {
  const url = redactText(config.registry.url);
  let registry: Registry;
  try {
    registry = new Registry({
      url: config.registry.url,
      requestTimeoutMs: timeoutMs,
      ...registryAccessOf(config.registry),
    });
  } catch (error) {
    findings.missing('registry', url, `${(error as Error).message}; subjects not checked`);
    return;
  }
  const client = registry.client;
  try {
    await bounded(client.checkAvailable(), timeoutMs + 1000, `reaching ${url}`);
  } catch (error) {
    findings.missing(
      'registry',
      url,
      `${(error as Error).message}; check registry.url (and registry.caFile, the credentials); subjects not checked`,
    );
    return;
  }
  findings.ok('registry', url, 'answers with the configured credentials');
  const autoRegister = config.registry.autoRegister;
  const topics = plannedTopics(config.topics, config.connector.deadlineMs, 1);
  for (const { topic, schema } of topics) {
    if (schema === null) continue;
    const subject = valueSubject(topic);
    try {
      const versions = await bounded(client.subjectVersions(subject), timeoutMs + 1000, `reading ${subject}`);
      if (versions === null) {
        if (autoRegister) {
          findings.ok(
            'registry',
            subject,
            `not in the registry yet; docstream registers ${schema} at first start (registry.autoRegister; the right to register is not tried: that writes)`,
          );
        } else {
          findings.missing(
            'registry',
            subject,
            `not in the registry and registry.autoRegister is false: have avro/${schema}.avsc registered under ${subject}, or set registry.autoRegister to true`,
          );
        }
        continue;
      }
      const id = await bounded(
        client.lookupSchemaId(subject, schema),
        timeoutMs + 1000,
        `looking up ${subject}`,
      );
      if (id !== null) {
        findings.ok('registry', subject, `holds docstream's ${schema} (schema id ${id})`);
        continue;
      }
      const verdict = await bounded(
        client.compatibleWithLatest(subject, schema),
        timeoutMs + 1000,
        `testing compatibility under ${subject}`,
      );
      if (!verdict.compatible) {
        const why = verdict.messages.length > 0 ? `: ${verdict.messages.slice(0, 3).join('; ')}` : '';
        findings.missing(
          'registry',
          subject,
          `docstream's ${schema} is not compatible with the subject's latest version (versions ${versions.join(', ')}) under its compatibility level${why}; use another topic, or have the subject's level or schema changed`,
        );
      } else if (autoRegister) {
        findings.ok(
          'registry',
          subject,
          `docstream's ${schema} is compatible with the latest version and is registered at first start (registry.autoRegister)`,
        );
      } else {
        findings.missing(
          'registry',
          subject,
          `does not hold docstream's ${schema} (compatible with its latest version) and registry.autoRegister is false: have avro/${schema}.avsc registered under ${subject}, or set registry.autoRegister to true`,
        );
      }
    } catch (error) {
      findings.missing('registry', subject, (error as Error).message);
    }
  }
}
