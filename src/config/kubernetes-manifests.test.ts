/**
 * The Kubernetes manifests (deploy/kubernetes) against what docstream needs at run time: the schema
 * validation (`npm run k8s:validate`) says they are well-formed objects, this says they run this
 * program correctly — its configuration loads, the probes hit its endpoints, secrets stay files, the
 * autoscaler never outgrows the input's partitions and sees the metric docstream exports, and a stop
 * is never cut short.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { checkConfigFile } from './check.js';
import { loadConfig } from './load.js';
import { CONFIG_SPEC, envName, type Config, type FieldSpec } from './spec.js';
import { ConnectorMetrics } from '../observability/metrics.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DIR = path.join(ROOT, 'deploy/kubernetes');

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function load(): Obj[] {
  const out: Obj[] = [];
  for (const file of fs.readdirSync(DIR).filter((f) => f.endsWith('.yaml'))) {
    // YAML 1.1, as kubectl reads it (sigs.k8s.io/yaml).
    for (const doc of parseAllDocuments(fs.readFileSync(path.join(DIR, file), 'utf8'), { version: '1.1' })) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      const value = doc.toJS() as Obj | null;
      if (value) out.push({ ...value, __file: file });
    }
  }
  return out;
}

const objects = load();
function one(kind: string): Obj {
  const found = objects.filter((o) => o.kind === kind);
  expect(found).toHaveLength(1);
  return found[0]!;
}

const deployment = one('Deployment');
const configMap = one('ConfigMap');
const scaledObject = one('ScaledObject');
const triggerAuth = one('TriggerAuthentication');
const pod = deployment.spec.template.spec as Obj;
const container = pod.containers[0] as Obj;
const env = new Map<string, Obj>((container.env as Obj[]).map((e) => [e.name as string, e]));
/** The Kafka CA's path (kafka.sslCaFile): not a secret, but shipped in the Kafka Secret. */
const kafkaCaFile = env.get('DOCSTREAM_KAFKA_SSL_CA_FILE')?.value as string;
const configFileName = Object.keys(configMap.data as Obj)[0]!;
const configJson = JSON.parse((configMap.data as Record<string, string>)[configFileName]!) as Record<
  string,
  Record<string, unknown>
>;

const sections = CONFIG_SPEC as unknown as Record<string, Record<string, FieldSpec>>;
const secretFields = Object.entries(sections).flatMap(([section, fields]) =>
  Object.entries(fields)
    .filter(([, spec]) => spec.secret)
    .map(([key]) => ({ section, key, variable: envName(section, key) })),
);

/** The effective configuration of the pod: the ConfigMap's file, then the Deployment's environment. */
function podConfig(): Config {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-k8s-'));
  try {
    const file = path.join(tmp, configFileName);
    fs.writeFileSync(file, JSON.stringify(configJson));
    const podEnv: NodeJS.ProcessEnv = {};
    for (const [name, e] of env) {
      if (!name.startsWith('DOCSTREAM_') || name === 'DOCSTREAM_CONFIG') continue;
      // A secret's file exists in the pod, not here: stand it in with a placeholder.
      if (secretFields.some((s) => name === `${s.variable}_FILE`)) {
        const stand = path.join(tmp, name);
        // Webhook secrets are checked for their form (whsec_ and a base64 key).
        fs.writeFileSync(stand, name.includes('WEBHOOKS') ? 'whsec_cGxhY2Vob2xkZXI=\n' : 'placeholder\n');
        podEnv[name] = stand;
      } else {
        podEnv[name] = e.value as string;
      }
    }
    return loadConfig({ env: podEnv, files: [file], cwd: tmp });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

describe('deploy/kubernetes', () => {
  // A test that reads the configuration fails, naming the variable or key, when the manifests set
  // one the spec does not know: such a pod would exit at start-up.
  let loaded: Config | undefined;
  const cfg = (): Config => (loaded ??= podConfig());

  it('has a configuration that loads, with every DOCSTREAM_* variable known to the spec', () => {
    expect(env.get('DOCSTREAM_CONFIG')?.value).toBe(`/etc/docstream/${configFileName}`);
    const mount = (container.volumeMounts as Obj[]).find((m) => m.mountPath === '/etc/docstream');
    const volume = (pod.volumes as Obj[]).find((v) => v.name === mount?.name);
    expect(volume?.configMap?.name).toBe(configMap.metadata.name);
    expect(cfg().kafka.groupId).toBe('docstream');
    expect(cfg().topics.arrived).toBe('documents.arrived');
    expect(cfg().http.host).toBe('0.0.0.0');
  });

  it("passes `docstream config check` with no error and no warning (no secret in the ConfigMap's file)", () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-k8s-'));
    try {
      const file = path.join(tmp, configFileName);
      fs.writeFileSync(file, JSON.stringify(configJson));
      const result = checkConfigFile(file);
      expect(result.errors).toEqual([]);
      expect(result.warnings).toEqual([]);
      expect(result.keys).toBeGreaterThan(10);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('keeps every secret out of ConfigMaps and out of the environment: files from mounted Secrets only', () => {
    for (const s of secretFields) {
      expect(configJson[s.section]?.[s.key]).toBeUndefined();
      expect(env.has(s.variable)).toBe(false);
    }
    for (const cm of objects.filter((o) => o.kind === 'ConfigMap')) {
      expect(JSON.stringify(cm.data)).not.toMatch(/whsec_|-----BEGIN|password"\s*:/i);
    }
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    for (const e of container.env as Obj[]) {
      expect(e.valueFrom?.secretKeyRef).toBeUndefined();
    }
    expect((container.envFrom as Obj[] | undefined) ?? []).toEqual([]);
    const secretMounts = (container.volumeMounts as Obj[]).filter((m) =>
      (pod.volumes as Obj[]).some((v) => v.name === m.name && v.secret),
    );
    expect(secretMounts.length).toBeGreaterThanOrEqual(2);
    for (const m of secretMounts) expect(m.readOnly).toBe(true);
    const fileVars = [...env.keys()].filter((n) => secretFields.some((s) => n === `${s.variable}_FILE`));
    expect(fileVars).toEqual(
      expect.arrayContaining([
        'DOCSTREAM_KAFKA_SASL_PASSWORD_FILE',
        'DOCSTREAM_API_CLIENT_SECRET_FILE',
        'DOCSTREAM_REGISTRY_PASSWORD_FILE',
        'DOCSTREAM_WEBHOOKS_SECRETS_FILE',
      ]),
    );
    for (const name of fileVars) {
      const file = env.get(name)!.value as string;
      expect(secretMounts.some((m) => file.startsWith(`${m.mountPath}/`))).toBe(true);
    }
    // The Kafka CA (not a secret, but in the Kafka Secret) is read from the same mount.
    expect(secretMounts.some((m) => kafkaCaFile.startsWith(`${m.mountPath}/`))).toBe(true);
  });

  it('probes /healthz (startup, liveness) and /readyz (readiness) on http.port, which listens beyond loopback', () => {
    const port = (container.ports as Obj[]).find((p) => p.name === container.livenessProbe.httpGet.port);
    expect(port?.containerPort).toBe(cfg().http.port);
    expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: port?.name });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: port?.name });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: port?.name });
    // /readyz asks the API with a 2 s timeout.
    expect(container.readinessProbe.timeoutSeconds).toBeGreaterThan(2);
    expect(cfg().http.host).not.toMatch(/^127\.|^localhost$|^::1$/);
    const annotations = deployment.spec.template.metadata.annotations as Record<string, string>;
    expect(annotations['prometheus.io/scrape']).toBe('true');
    expect(Number(annotations['prometheus.io/port'])).toBe(cfg().http.port);
    expect(annotations['prometheus.io/path']).toBe('/metrics');
  });

  it('gives a stop more time than the preStop pause and connector.shutdownTimeoutMs take', () => {
    const preStop = container.lifecycle.preStop.exec.command as string[];
    expect(preStop[0]).toBe('sleep');
    const pause = Number(preStop[1]);
    expect(pause).toBeGreaterThan(0);
    expect(pause * 1000 + cfg().connector.shutdownTimeoutMs).toBeLessThan(
      pod.terminationGracePeriodSeconds * 1000,
    );
    // At least 5 s of margin for the process to flush and exit after the bounded stop.
    expect(
      pod.terminationGracePeriodSeconds - pause - cfg().connector.shutdownTimeoutMs / 1000,
    ).toBeGreaterThanOrEqual(5);
  });

  it('runs as uid 1000, non-root, on a read-only root with an emptyDir for the temp directory', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    const tmp = (container.volumeMounts as Obj[]).find(
      (m) => m.mountPath === os.tmpdir() || m.mountPath === '/tmp',
    );
    expect((pod.volumes as Obj[]).find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
    expect(container.resources.requests.memory).toBeDefined();
    expect(container.resources.limits.memory).toBeDefined();
  });

  it("scales on the group's lag of the input, never past the input's declared partitions", () => {
    const partitions = Number(scaledObject.metadata.annotations['docstream/input-partitions']);
    expect(Number.isInteger(partitions) && partitions > 0).toBe(true);
    expect(scaledObject.spec.maxReplicaCount).toBeLessThanOrEqual(partitions);
    expect(scaledObject.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    // An input that docstream creates itself gets topics.outputPartitions partitions.
    expect(cfg().topics.outputPartitions).toBe(partitions);
    expect(scaledObject.spec.scaleTargetRef.name).toBe(deployment.metadata.name);
    expect(deployment.spec.replicas).toBeUndefined();
    const triggers = scaledObject.spec.triggers as Obj[];
    expect(triggers.map((t) => t.type as string).sort()).toEqual(['kafka', 'prometheus']);
    const trigger = triggers.find((t) => t.type === 'kafka');
    expect(trigger!.type).toBe('kafka');
    const m = trigger!.metadata as Record<string, string>;
    expect(m.topic).toBe(cfg().topics.arrived);
    expect(m.consumerGroup).toBe(cfg().kafka.groupId);
    expect(m.bootstrapServers!.split(',')).toEqual(cfg().kafka.brokers);
    expect(m.allowIdleConsumers).toBe('false');
    // KEDA refuses the two together.
    expect(m.allowIdleConsumers === 'true' && m.limitToPartitionsWithLag === 'true').toBe(false);
    // docstream reads a new group from the beginning.
    expect(m.offsetResetPolicy).toBe('earliest');
    expect(Number(m.lagThreshold)).toBeGreaterThan(0);
    // The scaler connects as the connector does.
    expect(m.tls === 'enable').toBe(cfg().kafka.ssl);
    expect(m.sasl).toBe(cfg().kafka.saslMechanism.replace('scram-sha-', 'scram_sha'));
    expect(trigger!.authenticationRef.name).toBe(triggerAuth.metadata.name);
  });

  it('scales on the documents in flight per instance, by the metric docstream exports, below the in-flight limit', async () => {
    const trigger = (scaledObject.spec.triggers as Obj[]).find((t) => t.type === 'prometheus');
    const m = trigger!.metadata as Record<string, string>;
    // The metric the query reads is the gauge the connector exports (renaming it breaks this test).
    const exported = new ConnectorMetrics({ defaultMetrics: false });
    const { name } = await exported.inFlight.get();
    const queried = m.query!.match(/\bdocstream_[a-z_]+/g);
    expect(queried).toEqual([name]);
    expect(exported.registry.getSingleMetric(queried![0]!)).toBe(exported.inFlight);
    // Summed over the instances of the job the alert rules assume, divided per replica by KEDA.
    expect(m.query).toBe(`sum(${name}{job="docstream"})`);
    expect(trigger!.metricType).toBe('AverageValue');
    // Below connector.maxInFlight: an instance at its limit (input paused) makes the group scale out.
    const threshold = Number(m.threshold);
    expect(threshold).toBeGreaterThan(0);
    expect(threshold).toBeLessThan(cfg().connector.maxInFlight);
    expect(threshold).toBe(cfg().connector.maxInFlight * 0.8);
    expect(m.serverAddress).toMatch(/^https?:\/\/[^/\s]+/);
  });

  it('authenticates KEDA with the Secret the pods mount for Kafka', () => {
    const kafkaVolume = (pod.volumes as Obj[]).find((v) =>
      (container.volumeMounts as Obj[]).some(
        (m) => m.name === v.name && kafkaCaFile.startsWith(`${m.mountPath}/`),
      ),
    );
    const refs = triggerAuth.spec.secretTargetRef as Obj[];
    expect(refs.map((r) => r.parameter).sort()).toEqual(['ca', 'password', 'username']);
    for (const r of refs) expect(r.name).toBe(kafkaVolume?.secret?.secretName);
    expect(refs.find((r) => r.parameter === 'ca')?.key).toBe(path.basename(kafkaCaFile));
    expect(refs.find((r) => r.parameter === 'password')?.key).toBe(
      path.basename(env.get('DOCSTREAM_KAFKA_SASL_PASSWORD_FILE')!.value as string),
    );
  });

  it('rolls one pod at a time without surge, and a budget of one voluntary disruption', () => {
    expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 0, maxUnavailable: 1 });
    const pdb = one('PodDisruptionBudget');
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    const service = one('Service');
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    const names = (container.ports as Obj[]).map((p) => p.name as string);
    for (const p of service.spec.ports as Obj[]) expect(names).toContain(p.targetPort);
    const webhooks = (container.ports as Obj[]).find((p) => p.name === 'webhooks');
    expect(webhooks?.containerPort).toBe(cfg().webhooks.port);
  });

  it('lists every manifest in the kustomization', () => {
    const kustomization = one('Kustomization');
    const files = [
      ...new Set(objects.filter((o) => o.kind !== 'Kustomization').map((o) => o.__file as string)),
    ];
    expect([...(kustomization.resources as string[])].sort()).toEqual(files.sort());
  });
});
