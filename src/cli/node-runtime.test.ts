/**
 * The Node.js docstream runs on, named in places that must agree: package.json's devDependency `node`
 * (the release `npm run` puts first on PATH, and CI's, via scripts/project-node.sh), the Dockerfile's
 * base, `.nvmrc` (for version managers), and `engines` (the floor for those who bring their own).
 * The tests run on it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};
const pinned = pkg.devDependencies.node!;

describe('the Node.js runtime', () => {
  it('is pinned to one exact release, the image base and .nvmrc the same', () => {
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(fs.readFileSync(path.join(ROOT, '.nvmrc'), 'utf8').trim()).toBe(pinned);
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(/^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile)?.[1]).toBe(pinned);
    expect(dockerfile).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim$/m);
  });

  it('satisfies the engines floor, an even (LTS) major no higher than the pinned one', () => {
    const floor = /^>=(\d+)(?:\.\d+)?$/.exec(pkg.engines.node)?.[1];
    expect(floor).toBeDefined();
    expect(Number(floor) % 2).toBe(0);
    expect(Number(floor)).toBeLessThanOrEqual(Number(pinned.split('.')[0]));
  });

  it('is what the tests run on (npm run puts the project node first on PATH)', () => {
    expect(process.versions.node).toBe(pinned);
  });
});
