import ipaddr from 'ipaddr.js';

/**
 * Which addresses a callback may reach (CONTRACT §9, "safe destinations"). A customer chooses the callback URL,
 * so without this check an account could make the server POST to its own loopback, the private network behind
 * it or the cloud's metadata service (server-side request forgery). Everything not listed here is public and
 * allowed.
 */

type Address = ipaddr.IPv4 | ipaddr.IPv6;

interface Rule {
  cidr: string;
  reason: string;
  range: [Address, number];
}

const rule = (cidr: string, reason: string): Rule => ({ cidr, reason, range: ipaddr.parseCIDR(cidr) });

/**
 * Instance-metadata endpoints, checked first so the reason says what they are. Most also lie in a refused range
 * below; 168.63.129.16 (Azure's platform endpoint) is a public address and refused only here.
 */
const METADATA: Rule[] = [
  rule('169.254.169.254/32', 'cloud metadata'), // AWS, GCP, Azure IMDS, OpenStack, DigitalOcean…
  rule('169.254.170.2/32', 'cloud metadata'), // AWS ECS task metadata
  rule('100.100.100.200/32', 'cloud metadata'), // Alibaba Cloud
  rule('168.63.129.16/32', 'cloud metadata'), // Azure wire server
  rule('192.0.0.192/32', 'cloud metadata'), // Oracle Cloud
  rule('fd00:ec2::254/128', 'cloud metadata'), // AWS IMDS over IPv6
];

const IPV4: Rule[] = [
  ...METADATA.filter((r) => r.range[0].kind() === 'ipv4'),
  rule('0.0.0.0/8', 'unspecified'),
  rule('127.0.0.0/8', 'loopback'),
  rule('10.0.0.0/8', 'private'),
  rule('172.16.0.0/12', 'private'),
  rule('192.168.0.0/16', 'private'),
  rule('169.254.0.0/16', 'link-local'),
  rule('100.64.0.0/10', 'CGNAT'),
  rule('224.0.0.0/4', 'multicast'),
  rule('255.255.255.255/32', 'broadcast'),
  // Not routable on the internet either: nothing legitimate to call there.
  rule('192.0.0.0/24', 'reserved (IETF protocol assignments)'),
  rule('192.0.2.0/24', 'reserved (documentation)'),
  rule('198.51.100.0/24', 'reserved (documentation)'),
  rule('203.0.113.0/24', 'reserved (documentation)'),
  rule('198.18.0.0/15', 'reserved (benchmarking)'),
  rule('240.0.0.0/4', 'reserved'),
];

const IPV6: Rule[] = [
  ...METADATA.filter((r) => r.range[0].kind() === 'ipv6'),
  rule('::/128', 'unspecified'),
  rule('::1/128', 'loopback'),
  rule('fe80::/10', 'link-local'),
  rule('fec0::/10', 'site-local'),
  rule('fc00::/7', 'unique-local'),
  rule('ff00::/8', 'multicast'),
  rule('64:ff9b:1::/48', 'local-use NAT64'),
  rule('::/96', 'IPv4-compatible (deprecated)'),
  rule('100::/64', 'reserved (discard-only)'),
  rule('2001:db8::/32', 'reserved (documentation)'),
  rule('3fff::/20', 'reserved (documentation)'),
];

/** IPv6 forms that carry an IPv4 address the packets really go to; that address is the one judged. */
interface Embedding {
  name: string;
  range: [Address, number];
  /** The embedded IPv4 address's bytes, from the IPv6 address's eight 16-bit parts. */
  v4: (parts: number[]) => number[];
}

const embedding = (cidr: string, name: string, v4: Embedding['v4']): Embedding => ({
  name,
  range: ipaddr.parseCIDR(cidr),
  v4,
});

const EMBEDDINGS: Embedding[] = [
  embedding('::ffff:0:0/96', 'IPv4-mapped IPv6', (p) => bytes(p[6], p[7])),
  embedding('::ffff:0:0:0/96', 'IPv4-translated IPv6', (p) => bytes(p[6], p[7])),
  embedding('64:ff9b::/96', 'NAT64', (p) => bytes(p[6], p[7])),
  embedding('2002::/16', '6to4', (p) => bytes(p[1], p[2])),
];

function bytes(high = 0, low = 0): number[] {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff];
}

function judge(address: Address, rules: Rule[]): string | null {
  for (const r of rules) {
    if (address.kind() === r.range[0].kind() && address.match(r.range)) return `${r.reason} (${r.cidr})`;
  }
  return null;
}

/**
 * Why a callback must not be sent to `ip`, naming the range (`"loopback (127.0.0.0/8)"`), or null when the
 * address is public. IPv4 embedded in IPv6 (`::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4) is judged as the
 * IPv4 address it reaches. Anything that is not an IP address is refused.
 */
export function refusedReason(ip: string): string | null {
  let address: Address;
  try {
    // `ipaddr.parse` would take inet_aton shorthands ("127.1"); the socket layer gives canonical text, and
    // a zone index ("fe80::1%eth0") is dropped: the address alone decides.
    address = ipaddr.parse(ip.replace(/%.*$/, ''));
  } catch {
    return 'not an IP address';
  }
  if (address.kind() === 'ipv4') return judge(address, IPV4);
  const v6 = address as ipaddr.IPv6;
  for (const e of EMBEDDINGS) {
    if (v6.match(e.range)) {
      const reason = judge(new ipaddr.IPv4(e.v4(v6.parts)), IPV4);
      return reason === null ? null : `${reason} via ${e.name}`;
    }
  }
  return judge(v6, IPV6);
}

/** How every refusal starts, in the attempt's `error` (the deliveries API shows it) and in the log. */
export const REFUSED_DESTINATION = 'refused destination';

/**
 * The refusal as the attempt records it: the destination and why, and the setting that allows it, since a
 * developer testing against a local receiver otherwise learns only that loopback is refused.
 */
export const refusalMessage = (why: string): string =>
  `${why}; WAYBILL_CALLBACK_ALLOW_PRIVATE=true allows it (development only)`;

/**
 * Remembers which accounts already had a refused destination logged, so that the relay warns at the first
 * refusal of each account (a developer's local callback URL says so at once, not when the delivery dies after
 * its retries), once per account per process, not at every attempt.
 */
export class RefusalWarnings {
  readonly #warned = new Set<string>();

  /** True the first time `error` is a refusal for `accountId`. */
  first(accountId: string, error: string | null): boolean {
    if (error === null || !error.startsWith(REFUSED_DESTINATION) || this.#warned.has(accountId)) return false;
    this.#warned.add(accountId);
    return true;
  }
}
