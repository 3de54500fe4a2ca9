import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * Checks one whitelist entry (an IPv4/IPv6 address or CIDR range). Returns null when valid, else why not.
 * A range with host bits set (10.0.0.1/8) is refused: it almost always hides a typo.
 */
export function allowlistEntryProblem(entry: string): string | null {
  if (!entry.includes('/')) return ipaddr.isValid(entry) ? null : `"${entry}" is not an IP address`;
  let range: Range;
  try {
    range = ipaddr.parseCIDR(entry);
  } catch {
    return `"${entry}" is not a CIDR range`;
  }
  const [address, bits] = range;
  const network =
    address.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(entry)
      : ipaddr.IPv6.networkAddressFromCIDR(entry);
  if (network.toString() !== address.toString()) {
    return `"${entry}" has host bits set; the range is ${network.toString()}/${bits}`;
  }
  return null;
}

/** Normalizes a caller address: IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is matched as IPv4. */
function parseCaller(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  try {
    const parsed = ipaddr.parse(ip);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      return (parsed as ipaddr.IPv6).toIPv4Address();
    }
    return parsed;
  } catch {
    return null;
  }
}

function compile(entries: readonly string[]): Range[] {
  return entries.map((entry) => {
    if (entry.includes('/')) return ipaddr.parseCIDR(entry);
    const address = ipaddr.parse(entry);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  });
}

// Whitelists are short and shared by all requests of an account: compile each distinct list once.
const compiled = new Map<string, Range[]>();
const MAX_CACHED = 10_000;

/** True when the caller may use an account with this whitelist (an empty whitelist allows everyone). */
export function ipAllowed(whitelist: readonly string[], callerIp: string): boolean {
  if (whitelist.length === 0) return true;
  const caller = parseCaller(callerIp);
  if (!caller) return false;
  const cacheKey = whitelist.join(',');
  let ranges = compiled.get(cacheKey);
  if (!ranges) {
    ranges = compile(whitelist);
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(cacheKey, ranges);
  }
  return ranges.some(([address, bits]) => address.kind() === caller.kind() && caller.match(address, bits));
}
