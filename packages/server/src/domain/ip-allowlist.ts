import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * Checks one whitelist entry (an IPv4/IPv6 address or CIDR range). Returns null when valid, else why not.
 * A range with host bits set (10.0.0.1/8) is refused: it almost always hides a typo.
 */
export function allowlistEntryProblem(entry: string): string | null {
  const slash = entry.indexOf('/');
  // ipaddr.js also reads inet_aton forms ("10.1" is 10.0.0.1, "010.0.0.1" is 8.0.0.1): a typo there would
  // silently let in someone else, so only the standard notations are taken.
  if (isIP(slash < 0 ? entry : entry.slice(0, slash)) === 0) {
    return slash < 0 ? `"${entry}" is not an IP address` : `"${entry}" is not a CIDR range`;
  }
  if (slash < 0) return null;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(entry.slice(slash + 1))) return `"${entry}" is not a CIDR range`;
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
    const [address, bits] = entry.includes('/')
      ? ipaddr.parseCIDR(entry)
      : ([ipaddr.parse(entry), entry.includes(':') ? 128 : 32] as Range);
    // Callers in ::ffff:a.b.c.d form are matched as IPv4, so such an entry must be IPv4 too or it never matches.
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    return [address, bits];
  });
}

/** Whether a caller address may use an account: its IP whitelist, compiled (see {@link allowlistCheck}). */
export type CallerCheck = (callerIp: string) => boolean;

const everyone: CallerCheck = () => true;

// Whitelists are short and shared by all requests of an account: compile each distinct list once.
const compiled = new Map<string, Range[]>();
const MAX_CACHED = 10_000;

function rangesOf(whitelist: readonly string[]): Range[] {
  const cacheKey = whitelist.join(',');
  let ranges = compiled.get(cacheKey);
  if (!ranges) {
    ranges = compile(whitelist);
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(cacheKey, ranges);
  }
  return ranges;
}

/**
 * The whitelist as a check of caller addresses, compiled once: an empty whitelist allows everyone. The account
 * cache keeps one per account, so a request pays only for parsing its caller's address.
 */
export function allowlistCheck(whitelist: readonly string[]): CallerCheck {
  if (whitelist.length === 0) return everyone;
  const ranges = rangesOf(whitelist);
  return (callerIp) => {
    const caller = parseCaller(callerIp);
    if (!caller) return false;
    return ranges.some(([address, bits]) => address.kind() === caller.kind() && caller.match(address, bits));
  };
}

/** True when the caller may use an account with this whitelist (an empty whitelist allows everyone). */
export function ipAllowed(whitelist: readonly string[], callerIp: string): boolean {
  return allowlistCheck(whitelist)(callerIp);
}
