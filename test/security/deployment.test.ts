/**
 * What the deployment files expose: published ports, pinned images, the Docker build context and the
 * image's user and health check. No YAML or Docker here, only the text of the files (and the health
 * check's own command, run against a local server), so this runs anywhere. `npm run image:check`
 * builds and runs the image itself.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (name: string) => fs.readFileSync(path.join(root, name), 'utf8');

describe('docker-compose.yml', () => {
  const compose = read('docker-compose.yml');
  const published = [...compose.matchAll(/^\s*ports:\s*\[([^\]]*)\]/gm)].flatMap((m) =>
    (m[1] as string).split(',').map((p) => p.trim().replace(/^'|'$/g, '')),
  );

  it('publishes every port on 127.0.0.1 only', () => {
    expect(published.length).toBeGreaterThanOrEqual(5);
    for (const port of published) expect(port).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
  });

  it("publishes the connector's metrics and health port", () => {
    const connector = compose.slice(compose.indexOf('\n  connector:'));
    expect(connector).toMatch(/^\s*ports:\s*\['127\.0\.0\.1:9464:9464'\]/m);
  });

  it('pins every image it pulls to a release (no latest, no bare name)', () => {
    const images = [...compose.matchAll(/^\s*image:\s*(\S+)/gm)].map((m) => m[1] as string);
    const pulled = images.filter((image) => image !== 'docstream:local');
    expect(pulled.length).toBeGreaterThanOrEqual(3);
    for (const image of pulled) expect(image).toMatch(/^[\w./-]+:(?!latest$)[\w.-]*\d[\w.-]*$/);
    // The one image it does not pull is the project's own, built from the Dockerfile.
    expect(compose).toMatch(/build: \.\n\s*image: docstream:local/);
  });
});

/** The Dockerfile's instructions (continuation lines joined, comments dropped), by stage. */
function dockerStages(text: string): string[][] {
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: string[][] = [[]];
  for (const line of instructions) {
    if (/^FROM\s/i.test(line)) stages.push([]);
    stages[stages.length - 1]!.push(line);
  }
  return stages;
}

describe('Dockerfile', () => {
  const [preamble, ...stages] = dockerStages(read('Dockerfile'));
  const runtime = stages[stages.length - 1] as string[];
  const healthcheck = runtime.find((l) => l.startsWith('HEALTHCHECK')) ?? '';

  it('builds from an exact Node.js 24 (active LTS) release of the slim Debian image', () => {
    const version = /^ARG NODE_VERSION=(\S+)$/m.exec((preamble ?? []).join('\n'))?.[1];
    expect(version).toMatch(/^24\.\d+\.\d+$/);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    // Each stage starts from that image or from an earlier stage; the runtime stage from the image.
    const earlier: string[] = [];
    for (const stage of stages) {
      const [, from, alias] = /^FROM (\S+)(?: AS (\w+))?$/.exec(stage[0] as string) ?? [];
      if (!earlier.includes(from as string)) expect(from).toBe('node:${NODE_VERSION}-bookworm-slim');
      if (alias) earlier.push(alias);
    }
    expect(runtime[0]).toBe('FROM node:${NODE_VERSION}-bookworm-slim');
  });

  it("serves /metrics and the probes on every interface of the container's network (not its own loopback)", () => {
    const env = runtime.filter((l) => l.startsWith('ENV ')).join(' ');
    expect(env).toMatch(/\bDOCSTREAM_HTTP_HOST=0\.0\.0\.0\b/);
    expect(runtime.find((l) => l.startsWith('EXPOSE '))?.split(/\s+/)).toContain('9464');
  });

  it('runs as the non-root node user', () => {
    const users = runtime.filter((l) => l.startsWith('USER '));
    expect(users[users.length - 1]).toBe('USER node');
    expect(runtime.findIndex((l) => l.startsWith('USER '))).toBeLessThan(
      runtime.findIndex((l) => l.startsWith('ENTRYPOINT')),
    );
  });

  it('keeps sources and dev dependencies out of the runtime stage', () => {
    expect(runtime.some((l) => /^COPY \. /.test(l))).toBe(false);
    expect(runtime.some((l) => /npm (ci|install)/.test(l))).toBe(false);
    expect(runtime).toContain('COPY --from=deps /app/node_modules ./node_modules');
    const deps = stages.find((s) => /AS deps$/.test(s[0] as string)) ?? [];
    expect(deps.some((l) => /npm (prune|ci) --omit=dev/.test(l))).toBe(true);
  });

  it('declares a health check on /healthz, run by node (the image has no curl)', () => {
    expect(healthcheck).toMatch(/^HEALTHCHECK .*CMD \["node", "-e", ".*\/healthz/);
    expect(healthcheck).not.toMatch(/curl|wget/);
  });

  /** Runs the HEALTHCHECK's command with this environment; resolves with its exit code. */
  function runHealthcheck(env: Record<string, string>): Promise<number | null> {
    const argv = JSON.parse(/CMD (\[.*\])$/.exec(healthcheck)?.[1] ?? '[]') as string[];
    expect(argv[0]).toBe('node');
    return new Promise((resolve) => {
      const child = spawn(process.execPath, argv.slice(1), { env: { PATH: process.env.PATH ?? '', ...env } });
      child.once('exit', (code) => resolve(code));
    });
  }

  it('the health check passes on a 200 from /healthz and fails on a 503 or nothing listening', async () => {
    let status = 200;
    const paths: string[] = [];
    const server = http.createServer((req, res) => {
      paths.push(req.url ?? '');
      res.statusCode = status;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = String((server.address() as AddressInfo).port);
    try {
      expect(await runHealthcheck({ DOCSTREAM_HTTP_PORT: port })).toBe(0);
      expect(await runHealthcheck({ DOCSTREAM_HTTP_PORT: port, DOCSTREAM_HTTP_HOST: '0.0.0.0' })).toBe(0);
      status = 503;
      expect(await runHealthcheck({ DOCSTREAM_HTTP_PORT: port })).toBe(1);
      expect(paths).toEqual(['/healthz', '/healthz', '/healthz']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await runHealthcheck({ DOCSTREAM_HTTP_PORT: port })).toBe(1);
  });
});

/** A .dockerignore pattern as Docker reads it: `*` within a segment, `**` across, `!` to re-include. */
function dockerIgnored(patterns: string[], file: string): boolean {
  let ignored = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\/+/, '').replace(/\/+$/, '');
    const source = pattern
      .split(/(\*\*\/?|\*|\?)/)
      .map((part) => {
        if (part === '**/' || part === '**') return '(?:.*/)?';
        if (part === '*') return '[^/]*';
        if (part === '?') return '[^/]';
        return part.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      })
      .join('');
    // A pattern that names a directory excludes everything under it.
    if (new RegExp(`^${source}(?:/.*)?$`).test(file)) ignored = !negate;
  }
  return ignored;
}

describe('.dockerignore', () => {
  const patterns = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  it.each([
    'config/docstream.json',
    'config/production.json',
    '.env',
    '.env.local',
    '.npmrc',
    'client.pem',
    'tls.key',
  ])('keeps %s out of the build context', (file) => {
    expect(dockerIgnored(patterns, file)).toBe(true);
  });

  it.each(['package.json', 'package-lock.json', 'src/cli/index.ts', 'avro/arrival.avsc', 'stack/README.md'])(
    'still sends %s',
    (file) => {
      expect(dockerIgnored(patterns, file)).toBe(false);
    },
  );
});
