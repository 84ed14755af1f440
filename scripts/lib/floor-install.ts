/**
 * A floor's own client library, installed from its own lock into its directory under `.cache/`:
 * the lock's two files copied in, then `npm ci` with the npm that runs the bench (npm run bench),
 * else the one on PATH, and the running node first on PATH (a native addon is built for it).
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export function npmCiInto(
  sourceDir: string,
  installDir: string,
  extraEnv: Record<string, string> = {},
): SpawnSyncReturns<string> {
  fs.rmSync(installDir, { recursive: true, force: true });
  fs.mkdirSync(installDir, { recursive: true });
  for (const file of ['package.json', 'package-lock.json'])
    fs.copyFileSync(path.join(sourceDir, file), path.join(installDir, file));
  const npm = process.env.npm_execpath
    ? { file: process.execPath, args: [process.env.npm_execpath] }
    : { file: 'npm', args: [] };
  return spawnSync(npm.file, [...npm.args, 'ci', '--no-audit', '--no-fund'], {
    cwd: installDir,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: {
      ...process.env,
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      ...extraEnv,
    },
  });
}
