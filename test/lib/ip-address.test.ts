// Which addresses a webhook may not reach, IPv4 and IPv6 (IPv4 inside IPv6 as itself).
import t from 'tap'
import { forbiddenKind } from '../../lib/ip-address.ts'

t.test('loopback, private, link-local, unspecified and the like are forbidden, with their kind', async (t) => {
  const cases: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['::1', 'loopback'], ['[::1]', 'loopback'],
    ['0.0.0.0', 'unspecified'], ['0.1.2.3', 'unspecified'], ['::', 'unspecified'],
    ['10.0.0.1', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.100.1', 'private'],
    ['fc00::1', 'private'], ['fdff:ffff::1', 'private'],
    ['169.254.169.254', 'link-local'], ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'], ['febf::1', 'link-local'],
    ['100.64.0.1', 'shared (carrier-grade NAT)'], ['100.127.255.255', 'shared (carrier-grade NAT)'],
    ['224.0.0.1', 'multicast'], ['ff02::1', 'multicast'], ['255.255.255.255', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:10.1.2.3', 'private'], ['::ffff:169.254.0.1', 'link-local'],
    ['64:ff9b::a00:1', 'private'], ['not an address', 'reserved']
  ]
  for (const [address, kind] of cases) t.equal(forbiddenKind(address), kind, address)
})

t.test('public addresses pass', async (t) => {
  for (const address of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '172.15.255.255', '100.128.0.1', '11.0.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '2001:4860:4860::8888']) {
    t.equal(forbiddenKind(address), null, address)
  }
})
