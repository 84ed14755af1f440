/**
 * Classification of IP addresses for the http(s) blob check. Embedded IPv4 forms
 * (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are classified by the IPv4 address they carry,
 * since a request to them can reach that address.
 */
import net from 'node:net';

export type AddressClass =
  | 'public'
  | 'private'
  | 'loopback'
  | 'link-local'
  | 'unique-local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved'
  | 'invalid';

/**
 * Cloud instance-metadata and credential endpoints: AWS/GCP/Azure/OpenStack (169.254.169.254),
 * AWS ECS and EKS pod identity (169.254.170.2, 169.254.170.23), Alibaba (100.100.100.200),
 * Azure wire server (168.63.129.16), AWS IPv6 (fd00:ec2::254, fd00:ec2::23).
 */
const METADATA_V4 = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '169.254.170.23',
  '100.100.100.200',
  '168.63.129.16',
]);
const METADATA_V6 = ['fd00:ec2::254', 'fd00:ec2::23'];

/** Classes never fetched from, whatever `allowPrivateNetworks` says. */
const ALWAYS_REFUSED: ReadonlySet<AddressClass> = new Set([
  'metadata',
  'unspecified',
  'multicast',
  'reserved',
  'invalid',
]);

export function isAddressAllowed(cls: AddressClass, allowPrivateNetworks: boolean): boolean {
  if (cls === 'public') return true;
  if (ALWAYS_REFUSED.has(cls)) return false;
  return allowPrivateNetworks;
}

type V4Rule = [base: number, prefix: number, cls: AddressClass];

const V4_RULES: V4Rule[] = [
  [v4('0.0.0.0'), 8, 'unspecified'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'private'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'private'],
  [v4('192.0.2.0'), 24, 'reserved'],
  [v4('192.88.99.0'), 24, 'reserved'],
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'private'],
  [v4('198.51.100.0'), 24, 'reserved'],
  [v4('203.0.113.0'), 24, 'reserved'],
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved'],
];

function v4(text: string): number {
  const parts = text.split('.').map(Number);
  return (((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0) as number;
}

function inV4(addr: number, base: number, prefix: number): boolean {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return (addr & mask) >>> 0 === (base & mask) >>> 0;
}

function classifyV4(addr: number): AddressClass {
  const text = [addr >>> 24, (addr >>> 16) & 255, (addr >>> 8) & 255, addr & 255].join('.');
  if (METADATA_V4.has(text)) return 'metadata';
  for (const [base, prefix, cls] of V4_RULES) {
    if (inV4(addr, base, prefix)) return cls;
  }
  return 'public';
}

/** Eight 16-bit groups of a valid IPv6 address (zone id already removed). */
function v6Groups(text: string): number[] {
  let head = text;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const embedded = v4(text.slice(lastColon + 1));
    tail.push(embedded >>> 16, embedded & 0xffff);
    head = text.slice(0, lastColon + 1);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const [left = '', right] = head.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const leftGroups = parse(left);
  const rightGroups = [...(right === undefined ? [] : parse(right)), ...tail];
  if (right === undefined) return [...leftGroups, ...rightGroups];
  const zeros = new Array<number>(8 - leftGroups.length - rightGroups.length).fill(0);
  return [...leftGroups, ...zeros, ...rightGroups];
}

function prefixEquals(groups: number[], expected: number[]): boolean {
  return expected.every((g, i) => groups[i] === g);
}

function embeddedV4(hi: number, lo: number): number {
  return ((hi << 16) | lo) >>> 0;
}

const METADATA_V6_GROUPS = METADATA_V6.map(v6Groups);

function classifyV6(g: number[]): AddressClass {
  if (METADATA_V6_GROUPS.some((m) => prefixEquals(g, m))) return 'metadata';
  const first = g[0]!;
  const upperZero = prefixEquals(g, [0, 0, 0, 0, 0]);
  if (upperZero && g[5] === 0 && g[6] === 0) {
    if (g[7] === 0) return 'unspecified';
    if (g[7] === 1) return 'loopback';
  }
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated).
  if (upperZero && (g[5] === 0xffff || g[5] === 0)) return classifyV4(embeddedV4(g[6]!, g[7]!));
  // 64:ff9b::/96, the well-known NAT64 prefix, reaches the embedded IPv4 address.
  if (prefixEquals(g, [0x64, 0xff9b, 0, 0, 0, 0])) return classifyV4(embeddedV4(g[6]!, g[7]!));
  if (prefixEquals(g, [0x64, 0xff9b, 1])) return 'private';
  // 2002::/16 (6to4) carries the IPv4 address in the next 32 bits.
  if (first === 0x2002) return classifyV4(embeddedV4(g[1]!, g[2]!));
  // Teredo (2001::/32) obfuscates its IPv4 endpoints; nothing legitimate serves blobs there.
  if (first === 0x2001 && g[1] === 0) return 'reserved';
  if (first === 0x2001 && g[1] === 0xdb8) return 'reserved';
  if (prefixEquals(g, [0x100, 0, 0, 0])) return 'reserved';
  if ((first & 0xfe00) === 0xfc00) return 'unique-local';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xffc0) === 0xfec0) return 'private';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  return 'public';
}

/** Accepts `a.b.c.d`, IPv6 text with or without brackets, and IPv6 with a `%zone`. */
export function classifyAddress(address: string): AddressClass {
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const family = net.isIP(text);
  if (family === 4) return classifyV4(v4(text));
  if (family === 6) return classifyV6(v6Groups(text.toLowerCase()));
  return 'invalid';
}
