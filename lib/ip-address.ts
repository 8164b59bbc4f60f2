// Which IP addresses a webhook must never reach: loopback, private, link-local, unspecified
// and the like, in IPv4 and IPv6 (an IPv4 address inside IPv6 counts as itself).
import { BlockList, isIP } from 'node:net'

export type ForbiddenKind = 'loopback' | 'private' | 'link-local' | 'unspecified' | 'shared (carrier-grade NAT)' | 'multicast' | 'reserved'

const RANGES: Array<[ForbiddenKind, string, number, 'ipv4' | 'ipv6']> = [
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['shared (carrier-grade NAT)', '100.64.0.0', 10, 'ipv4'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['reserved', '192.0.0.0', 24, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['reserved', '198.18.0.0', 15, 'ipv4'],
  ['multicast', '224.0.0.0', 4, 'ipv4'],
  ['reserved', '240.0.0.0', 4, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  ['reserved', '::', 96, 'ipv6'],
  ['reserved', '100::', 64, 'ipv6'],
  ['private', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['private', 'fec0::', 10, 'ipv6'],
  ['multicast', 'ff00::', 8, 'ipv6']
]

const lists = new Map<ForbiddenKind, BlockList>()
for (const [kind, network, prefix, family] of RANGES) {
  let list = lists.get(kind)
  if (list === undefined) lists.set(kind, list = new BlockList())
  list.addSubnet(network, prefix, family)
}

/** The IPv4 address an IPv6 address carries (IPv4-mapped ::ffff:0:0/96 or NAT64 64:ff9b::/96), else null. */
function embeddedIpv4 (address: string): string | null {
  // The URL parser writes every IPv6 form the same way: `::ffff:7f00:1` for `::ffff:127.0.0.1`.
  let canonical: string
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1)
  } catch {
    return null
  }
  const match = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical)
  if (match === null) return null
  const high = parseInt(match[1]!, 16)
  const low = parseInt(match[2]!, 16)
  return [high >> 8, high & 255, low >> 8, low & 255].join('.')
}

/** Why the address is not one a webhook may reach; null when it is a public address. Not an IP address: 'reserved'. */
export function forbiddenKind (address: string): ForbiddenKind | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address
  // A zone (fe80::1%eth0) names an interface of this machine.
  const unzoned = bare.replace(/%.*$/, '')
  const family = isIP(unzoned)
  if (family === 0) return 'reserved'
  if (family === 6) {
    const ipv4 = embeddedIpv4(unzoned)
    if (ipv4 !== null) return forbiddenKind(ipv4)
  }
  for (const [kind, list] of lists) {
    if (list.check(unzoned, family === 4 ? 'ipv4' : 'ipv6')) return kind
  }
  return null
}
