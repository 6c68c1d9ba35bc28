import ipaddr from 'ipaddr.js';

/**
 * Whether an address may receive a webhook without BERTH_OUTBOUND_ALLOW_PRIVATE: only
 * global unicast. ipaddr.js names every special range (loopback, link-local, RFC 1918,
 * ULA, CGNAT, 0.0.0.0/8, multicast, broadcast, reserved, the IPv6 forms that carry an IPv4
 * address), so anything it does not call `unicast` is refused; an IPv4-mapped IPv6
 * address is judged as the IPv4 address it maps.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

/** The URL's host as an address literal (brackets of IPv6 removed), or undefined for a name. */
export function addressLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}
