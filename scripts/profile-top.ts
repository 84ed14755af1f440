/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, or `npm run bench -- --cpu-prof`): the functions
 * with the most self time, and the share of samples by package or source area (node_modules/<pkg>,
 * src/<dir>, node internals, GC), so a profile says where the CPU per document goes.
 *
 *   node .cache/scripts/scripts/profile-top.js bench-results/profiles/CPU.*.cpuprofile [top N]
 */
import fs from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const file = process.argv[2];
const top = Number(process.argv[3] ?? 25);
if (!file) {
  process.stderr.write('usage: profile-top <file.cpuprofile> [top N]\n');
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

function area(url: string, name: string): string {
  if (name === '(garbage collector)') return 'GC';
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'program (native, unattributed)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `pkg ${pkg[1]}`;
  const src = /\/dist\/([^/]+)\//.exec(url) ?? /\/src\/([^/]+)\//.exec(url);
  if (src) return `docstream ${src[1]}`;
  if (url.startsWith('node:')) return 'node internals';
  return url === '' ? 'native' : 'other';
}

const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** Node internals and native frames are charged to the nearest caller in docstream or a package. */
function owner(id: number): string {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const node = byId.get(at);
    if (!node) break;
    const a = area(node.callFrame.url, node.callFrame.functionName);
    if (a.startsWith('pkg ') || a.startsWith('docstream ') || a === 'GC') {
      if (a.startsWith('docstream ')) {
        const file = /\/dist\/(.+)\.js$/.exec(node.callFrame.url)?.[1] ?? a;
        return `docstream ${file}`;
      }
      return a;
    }
  }
  return 'unattributed (event loop, timers, I/O callbacks)';
}

let total = 0;
const owners = new Map<string, number>();
let idle = 0;
const functions = new Map<string, number>();
const areas = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id);
  if (!node) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  total += us;
  if (functionName === '(idle)') {
    idle += us;
    continue;
  }
  const short = url.replace(/^.*\/(node_modules|dist|src)\//, '$1/');
  const key = `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`;
  functions.set(key, (functions.get(key) ?? 0) + us);
  const a = area(url, functionName);
  areas.set(a, (areas.get(a) ?? 0) + us);
  const o = owner(id);
  owners.set(o, (owners.get(o) ?? 0) + us);
}
const busy = total - idle;
const pct = (us: number) => `${((100 * us) / busy).toFixed(1)}%`.padStart(6);
const lines = [
  `${file}: ${(total / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy (percentages of busy)`,
  '',
  'by area:',
  ...[...areas].sort((a, b) => b[1] - a[1]).map(([k, v]) => `  ${pct(v)}  ${k}`),
  '',
  'by owner (node internals charged to the nearest docstream module or package up the stack):',
  ...[...owners]
    .sort((a, b) => b[1] - a[1])
    .filter(([, v]) => v / busy >= 0.002)
    .map(([k, v]) => `  ${pct(v)}  ${k}`),
  '',
  `top ${top} functions by self time:`,
  ...[...functions]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => `  ${pct(v)}  ${k}`),
];
process.stdout.write(lines.join('\n') + '\n');
