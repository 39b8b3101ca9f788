import { describe, expect, it } from 'vitest'
import type { Request, Response } from 'express'
import { AuthThrottle, clientKey, slowDownFailures } from './throttle'

function clock() {
  let t = 1_000_000
  return { now: () => t, advance: (ms: number) => (t += ms) }
}

describe('AuthThrottle', () => {
  it('lets the first failures through at once, then doubles the wait per failure up to the cap', () => {
    const c = clock()
    const th = new AuthThrottle({ free: 3, baseMs: 100, maxMs: 800, now: c.now })
    for (let i = 0; i < 3; i++) {
      expect(th.reserve('a')).toBe(0)
      th.failed('a')
    }
    const waits: number[] = []
    for (let i = 0; i < 6; i++) {
      const w = th.reserve('a')
      waits.push(w)
      c.advance(w)
      th.failed('a')
    }
    expect(waits).toEqual([100, 200, 400, 800, 800, 800])
  })

  it('queues attempts sent at once one after another, and refuses past the longest queue', () => {
    const c = clock()
    const th = new AuthThrottle({ free: 0, baseMs: 1000, maxMs: 1000, maxQueueMs: 5000, now: c.now })
    th.failed('a')
    const waits = Array.from({ length: 8 }, () => th.reserve('a'))
    expect(waits).toEqual([1000, 2000, 3000, 4000, 5000, 6000, -1, -1])
  })

  it('keeps clients apart and forgets old failures', () => {
    const c = clock()
    const th = new AuthThrottle({ free: 1, baseMs: 100, forgetMs: 60_000, now: c.now })
    th.failed('a')
    th.failed('a')
    expect(th.reserve('a')).toBeGreaterThan(0)
    expect(th.reserve('b')).toBe(0)
    th.failed('b')
    th.failed('b')
    c.advance(60_001)
    expect(th.reserve('b')).toBe(0)
  })

  it('remembers a bounded number of clients', () => {
    const th = new AuthThrottle({ maxClients: 100 })
    for (let i = 0; i < 1000; i++) th.failed(`10.0.${i >> 8}.${i & 255}`)
    expect(th.failures('10.0.0.0')).toBe(0)
    expect(th.failures('10.0.3.231')).toBe(1)
  })
})

describe('AuthThrottle for checks that cannot wait', () => {
  it('blocks an address for a doubling delay once past the free failures', () => {
    const c = clock()
    const th = new AuthThrottle({ free: 2, baseMs: 100, maxMs: 400, now: c.now })
    th.failedAndBlock('a')
    th.failedAndBlock('a')
    expect(th.blockedFor('a')).toBe(0)
    const blocks: number[] = []
    for (let i = 0; i < 5; i++) {
      th.failedAndBlock('a')
      blocks.push(th.blockedFor('a'))
      c.advance(blocks[i])
      expect(th.blockedFor('a')).toBe(0)
    }
    expect(blocks).toEqual([100, 200, 400, 400, 400])
    expect(th.blockedFor('b')).toBe(0)
  })

  it('forgets old failures too: a typo long after a burst of wrong tokens counts as the first', () => {
    const c = clock()
    const th = new AuthThrottle({ free: 2, baseMs: 100, maxMs: 400, forgetMs: 60_000, now: c.now })
    for (let i = 0; i < 8; i++) th.failedAndBlock('a')
    expect(th.blockedFor('a')).toBe(400)
    c.advance(60_000)
    // Not yet forgotten: still counted from the burst.
    th.failedAndBlock('a')
    expect(th.failures('a')).toBe(9)
    c.advance(60_001)
    th.failedAndBlock('a')
    expect(th.failures('a')).toBe(1)
    expect(th.blockedFor('a')).toBe(0)
  })
})

describe('slowDownFailures', () => {
  it("the right token gets in at once and does not clear the wrong ones of its client (another local user's guesses share the owner's loopback)", () => {
    const c = clock()
    const th = new AuthThrottle({ free: 5, now: c.now })
    const guard = slowDownFailures((req) => req.headers.authorization === 'Bearer right', (_req, res) => res.status(401).end(), th)
    const call = (auth: string, remoteAddress: string) => {
      let passed = false
      const res = { status: () => res, set: () => res, json: () => res, end: () => res, destroyed: false }
      guard({ headers: { authorization: auth }, socket: { remoteAddress } } as unknown as Request, res as unknown as Response, () => (passed = true))
      return passed
    }
    for (let i = 0; i < 5; i++) expect(call(`Bearer guess-${i}`, '127.0.0.7')).toBe(false)
    expect(call('Bearer right', '127.0.0.1')).toBe(true)
    expect(th.failures('loopback')).toBe(5)
    expect(th.reserve('loopback')).toBeGreaterThan(0)
  })
})

describe('clientKey', () => {
  it('is one client for every loopback address, an IPv4 address for itself (mapped or not), and the /64 of an IPv6 one', () => {
    for (const a of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.5', '::FFFF:127.1.1.1']) expect(clientKey(a), a).toBe('loopback')
    expect(clientKey('192.0.2.1')).toBe('192.0.2.1')
    expect(clientKey('::ffff:192.0.2.1')).toBe('192.0.2.1')
    expect(clientKey('::ffff:192.0.2.2')).not.toBe(clientKey('::ffff:192.0.2.1'))
    for (const a of ['2001:db8:1:2::1', '2001:DB8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:9', '2001:db8:1:2:a:b:192.0.2.1', '2001:db8:1:2::192.0.2.1']) {
      expect(clientKey(a), a).toBe('2001:db8:1:2::/64')
    }
    expect(clientKey('2001:db8:1::5')).toBe('2001:db8:1:0::/64')
    expect(clientKey('2001:db8:1:3::1')).not.toBe(clientKey('2001:db8:1:2::1'))
    expect(clientKey('::2')).toBe('0:0:0:0::/64')
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
    expect(clientKey(undefined)).toBe('')
  })
})
