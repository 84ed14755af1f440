/**
 * The local stack's Kafka and schema registry as container images, for the testcontainers harness
 * (scripts/lib/test-containers.ts) and the compose check (scripts/compose-check.sh). No image registry
 * is reachable here, so they are built from what the native stack already downloaded: Kafka's jars
 * (Maven Central) and the Apicurio registry (Maven Central), on a base made of the cached debootstrap
 * root file system (scripts/lib/image.ts) plus the Java >= 21 the stack uses (found on the machine or
 * installed from PyPI). They are tagged with the names docker-compose.yml uses, so compose finds them
 * in podman's storage instead of pulling. Each image carries a label with a hash of its recipe and
 * artifacts: an image whose label matches is kept (podman's storage outlives a run), so a rebuild
 * happens only once per machine or when the recipe or a version changes.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ensureApicurio,
  ensureJdk4py,
  ensureKafka,
  ensureMoto,
  jdk4pyJavaHome,
} from '../../src/stack/artifacts.js';
import { findJava } from '../../src/stack/java.js';
import { cachePaths, defaultCacheDir, VERSIONS } from '../../src/stack/paths.js';
import {
  IMAGE_CACHE_DIR,
  LIMIT_FLAGS,
  ROOTFS_DIR,
  ensureRootfs,
  ensureTools,
  must,
  podman,
  podmanEnv,
  podmanMust,
} from './image.js';

/** The names docker-compose.yml gives these services' images. */
export const KAFKA_IMAGE = `docker.io/apache/kafka:${VERSIONS.kafka}`;
export const REGISTRY_IMAGE = `docker.io/apicurio/apicurio-registry:${VERSIONS.apicurio}`;
/** The stack's S3 store (moto), for the compose check only: scripts/images/compose.check.yml. */
export const S3_IMAGE = `localhost/docstream/moto:${VERSIONS.moto}`;
const LABEL = 'io.docstream.recipe';

type Log = (line: string) => void;

/** scripts/images of the repository, from the sources or from the compiled scripts (.cache/scripts). */
function recipesDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++, dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'scripts', 'images');
    if (fs.existsSync(path.join(candidate, 'kafka', 'Containerfile'))) return candidate;
  }
  throw new Error('scripts/images/kafka/Containerfile not found above ' + fileURLToPath(import.meta.url));
}

function hashFiles(dir: string, h = createHash('sha256')): ReturnType<typeof createHash> {
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    h.update(name);
    if (fs.statSync(p).isDirectory()) hashFiles(p, h);
    else h.update(fs.readFileSync(p));
  }
  return h;
}

async function labelOf(image: string): Promise<string | undefined> {
  const r = await podman(['image', 'inspect', '--format', `{{index .Labels "${LABEL}"}}`, image]);
  return r.code === 0 ? r.stdout.trim() : undefined;
}

/** Debian bookworm (the cached debootstrap) with a Java >= 21 in /opt/java. */
async function ensureJavaBase(cacheDir: string, log: Log): Promise<string> {
  const fallback = jdk4pyJavaHome(cacheDir);
  let java: { java: string; major: number } | undefined = findJava(21, {
    extraHomes: fallback ? [fallback] : [],
  });
  if (!java) java = { java: path.join(await ensureJdk4py(cacheDir, log), 'bin', 'java'), major: 21 };
  const home = fs.realpathSync(path.dirname(path.dirname(java.java)));
  const name = `localhost/docstream/java-base:bookworm-java${java.major}`;
  const recipe = createHash('sha256').update(`${home}\n${java.major}\n`).digest('hex').slice(0, 16);
  if ((await labelOf(name)) === recipe) return name;
  await ensureRootfs(log);
  const staging = fs.mkdtempSync(path.join(IMAGE_CACHE_DIR, 'java-base-'));
  try {
    log(`java base: Debian bookworm minbase + Java ${java.major} from ${home}`);
    await must('copying the root file system', 'cp', ['-a', `${ROOTFS_DIR}/.`, staging], {
      timeoutMs: 300_000,
    });
    fs.mkdirSync(path.join(staging, 'opt'), { recursive: true });
    await must('copying Java', 'cp', ['-a', `${home}/.`, path.join(staging, 'opt', 'java')], {
      timeoutMs: 300_000,
    });
    await must(
      'podman import',
      'bash',
      [
        '-c',
        'set -o pipefail; tar -C "$1" --numeric-owner -c . | podman --runtime runc import ' +
          '--change "ENV JAVA_HOME=/opt/java" ' +
          '--change "ENV PATH=/opt/java/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" ' +
          `--change "LABEL ${LABEL}=$3" --change "CMD [\\"bash\\"]" - "$2"`,
        'import',
        staging,
        name,
        recipe,
      ],
      { timeoutMs: 300_000, env: podmanEnv() },
    );
    return name;
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Builds `image` from scripts/images/<recipe>/Containerfile with `artifact` (a directory of the
 * stack's cache) at `contextName` in its build context, unless an image with the same recipe hash is
 * there already.
 */
async function ensureImage(
  image: string,
  recipe: string,
  base: string,
  artifact: { dir: string; contextName: string },
  log: Log,
): Promise<void> {
  const recipeDir = path.join(recipesDir(), recipe);
  const hash = hashFiles(recipeDir)
    .update(`${base}\n${(await labelOf(base)) ?? ''}\n${artifact.dir}\n`)
    .digest('hex')
    .slice(0, 16);
  if ((await labelOf(image)) === hash) {
    log(`${image}: built already (recipe ${hash})`);
    return;
  }
  // Hard links: the context costs no copy of the artifacts (the cache and this folder share a disk).
  const context = fs.mkdtempSync(path.join(IMAGE_CACHE_DIR, `ctx-${recipe}-`));
  try {
    await must(
      'preparing the build context',
      'cp',
      ['-al', artifact.dir, path.join(context, artifact.contextName)],
      {
        timeoutMs: 120_000,
      },
    );
    for (const f of fs.readdirSync(recipeDir))
      fs.copyFileSync(path.join(recipeDir, f), path.join(context, f));
    for (const f of fs.readdirSync(context))
      if (f.endsWith('.sh')) fs.chmodSync(path.join(context, f), 0o755);
    log(`${image}: building (recipe ${hash})`);
    const r = await podmanMust(
      `building ${image}`,
      [
        'build',
        ...LIMIT_FLAGS,
        '--build-arg',
        `BASE=${base}`,
        '--label',
        `${LABEL}=${hash}`,
        '-t',
        image,
        '-f',
        path.join(context, 'Containerfile'),
        context,
      ],
      { timeoutMs: 900_000 },
    );
    log(`${image}: built in ${(r.ms / 1000).toFixed(0)} s`);
  } finally {
    fs.rmSync(context, { recursive: true, force: true });
  }
}

/** Builds (or finds) the Kafka and registry images (and moto's, with `s3`); returns their names. */
export async function ensureStackImages(
  log: Log,
  o: { s3?: boolean } = {},
): Promise<{ kafka: string; registry: string }> {
  await ensureTools(log);
  const cacheDir = defaultCacheDir();
  await ensureKafka(cacheDir, log);
  await ensureApicurio(cacheDir, log);
  const paths = cachePaths(cacheDir);
  const base = await ensureJavaBase(cacheDir, log);
  await ensureImage(KAFKA_IMAGE, 'kafka', base, { dir: paths.kafkaLibs, contextName: 'libs' }, log);
  await ensureImage(
    REGISTRY_IMAGE,
    'registry',
    base,
    { dir: paths.apicurioHome, contextName: 'apicurio' },
    log,
  );
  if (o.s3) {
    await ensureMoto(cacheDir, log);
    await ensureImage(S3_IMAGE, 's3', base, { dir: paths.moto, contextName: 'moto' }, log);
  }
  return { kafka: KAFKA_IMAGE, registry: REGISTRY_IMAGE };
}
