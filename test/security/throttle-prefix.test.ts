import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Answer, Guess } from '../support/guesses-from'

/**
 * Wrong dashboard (and admin) tokens are slowed down per client. An IPv6 client is its /64, not
 * its address: a host is handed a whole /64 (SLAAC, privacy addresses, a VPS's routed prefix), so
 * counted per address it had a fresh set of free guesses at every one of its 2^64 addresses. An
 * IPv4 client, which a server listening on `::` sees as `::ffff:a.b.c.d`, is its own address.
 *
 * Other addresses than 127.0.0.1 are needed for this, so each run is a program of its own in a
 * network namespace of its own (`unshare -n`, as root), where a documentation prefix and range
 * are local to its loopback (Linux's "AnyIP" routes, with IPv6's non-local bind); the machine's own
 * network is not touched.
 */
const NAMESPACE =
  'ip link set lo up && ip -6 route add local 2001:db8:64::/48 dev lo && ip route add local 192.0.2.0/24 dev lo && ' +
  // (IPv6 binds only to an address set on an interface, unless told otherwise: in this namespace alone.)
  'echo 1 > /proc/sys/net/ipv6/ip_nonlocal_bind && exec "$0" --import tsx "$1" "$2"'
const canIsolate = process.platform === 'linux' && spawnSync('unshare', ['-n', 'true']).status === 0

function run(guesses: Guess[]): Answer[] {
  const child = join(__dirname, '..', 'support', 'guesses-from.ts')
  const r = spawnSync('unshare', ['-n', 'sh', '-c', NAMESPACE, process.execPath, child, JSON.stringify(guesses)], { cwd: join(__dirname, '..', '..'), encoding: 'utf8', timeout: 60_000 })
  if (r.status !== 0) throw new Error(`the guesses' program failed (${r.status}): ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Answer[]
}

const tooMany = (a: Answer) => a.status === 401 && /too many/i.test(a.message)
/** Wrong tokens enough for a block of several seconds (five are free, then each doubles it). */
const BLOCKING = 12

describe.skipIf(!canIsolate)('wrong tokens from IPv6 and IPv4 clients', () => {
  it('count against the /64: another address of the same /64 is refused too, another /64 is not', () => {
    const answers = run([
      ...Array.from({ length: BLOCKING }, (_, i) => ({ from: `2001:db8:64:1::${(i + 1).toString(16)}`, to: '::1' })),
      { from: '2001:db8:64:1:ffff:ffff:ffff:fffe', to: '::1' },
      { from: '2001:db8:64:2::1', to: '::1' },
    ])
    expect(answers.slice(0, 5).every((a) => a.status === 401 && !tooMany(a))).toBe(true)
    expect(tooMany(answers[BLOCKING - 1]), JSON.stringify(answers[BLOCKING - 1])).toBe(true)
    // Another address of the same /64: the same client, still refused unchecked.
    expect(tooMany(answers[BLOCKING])).toBe(true)
    // Another /64 is another client.
    expect(answers[BLOCKING + 1].status).toBe(401)
    expect(tooMany(answers[BLOCKING + 1])).toBe(false)
  }, 90_000)

  it('count an IPv4 client (::ffff:a.b.c.d on a server listening on ::) by its own address', () => {
    const answers = run([
      ...Array.from({ length: BLOCKING }, () => ({ from: '192.0.2.1', to: '192.0.2.200' })),
      { from: '192.0.2.1', to: '192.0.2.200' },
      { from: '192.0.2.2', to: '192.0.2.200' },
    ])
    expect(tooMany(answers[BLOCKING])).toBe(true)
    expect(answers[BLOCKING + 1].status).toBe(401)
    expect(tooMany(answers[BLOCKING + 1])).toBe(false)
  }, 90_000)
})
