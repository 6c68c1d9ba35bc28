import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { lastOutputLine, runTool } from '../containers/commands.js';

/** The nftables table Berth owns; nothing else of the host's rules is touched. */
export const FIREWALL_TABLE = 'berth_build_sandbox';

/**
 * The rules that keep builds off this host's services. Every packet a process of the build
 * user sends is matched by its owner (`meta skuid`): buildah, and slirp4netns, which carries
 * a build step's connections out of its network namespace as ordinary sockets of that user.
 * So a step reaches the internet (dependency installs) but not an address of this host
 * (loopback included, which slirp4netns would otherwise offer at 10.0.2.2), not a
 * link-local address (cloud metadata services), and not the operator's denied networks.
 * Lookups go to the host's resolvers even when one listens on loopback (systemd-resolved).
 */
export function firewallRules(uid: number, options: { loopbackResolvers: readonly string[]; denyNetworks: readonly string[] }): string {
  const v4 = options.denyNetworks.filter((network) => net.isIPv4(network.split('/')[0] ?? ''));
  const v6 = options.denyNetworks.filter((network) => net.isIPv6(network.split('/')[0] ?? ''));
  const resolvers = options.loopbackResolvers.flatMap((address) => {
    const family = net.isIPv6(address) ? 'ip6' : 'ip';
    return [`    ${family} daddr ${address} udp dport 53 accept`, `    ${family} daddr ${address} tcp dport 53 accept`];
  });
  return [
    // Declaring and deleting first makes the load one atomic replacement, whether or not it existed.
    `table inet ${FIREWALL_TABLE}`,
    `delete table inet ${FIREWALL_TABLE}`,
    `table inet ${FIREWALL_TABLE} {`,
    '  chain output {',
    '    type filter hook output priority 0; policy accept;',
    // Only packets of a socket the build user owns. Packets without a socket (the resets and
    // ICMP errors the kernel itself answers with, to anyone) must never reach the refusals.
    `    meta skuid ${uid} jump build_user`,
    '  }',
    '  chain build_user {',
    ...resolvers,
    '    fib daddr type local reject with tcp reset',
    '    fib daddr type local reject',
    '    ip daddr { 127.0.0.0/8, 169.254.0.0/16 } reject with tcp reset',
    '    ip daddr { 127.0.0.0/8, 169.254.0.0/16 } reject',
    '    ip6 daddr { ::1/128, fe80::/10 } reject with tcp reset',
    '    ip6 daddr { ::1/128, fe80::/10 } reject',
    ...(v4.length > 0 ? [`    ip daddr { ${v4.join(', ')} } reject with tcp reset`, `    ip daddr { ${v4.join(', ')} } reject`] : []),
    ...(v6.length > 0 ? [`    ip6 daddr { ${v6.join(', ')} } reject with tcp reset`, `    ip6 daddr { ${v6.join(', ')} } reject`] : []),
    '  }',
    '}',
    '',
  ].join('\n');
}

/** The loopback name servers of resolv.conf, which builds still need for lookups. */
export async function loopbackResolvers(resolvConf = '/etc/resolv.conf'): Promise<string[]> {
  const text = await readFile(resolvConf, 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1] ?? '')
    .filter((address) => (net.isIPv4(address) && address.startsWith('127.')) || address === '::1');
}

/** Loads the rules (idempotent, atomic); returns why it could not, or null. */
export async function applyFirewall(nft: string, rules: string): Promise<string | null> {
  const result = await runTool({ binary: nft, env: { PATH: process.env.PATH ?? '' } }, ['-f', '-'], { input: rules, timeoutMs: 15_000 });
  return result.code === 0 ? null : `nft could not load the build firewall: ${lastOutputLine(result)}`;
}
