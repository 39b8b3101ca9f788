import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../shared/api'
import { keyHint } from '../../shared/key-hint'
import { PeriodClock } from '../time/zone'
import { KeyRegistry } from './key-registry'
import { type Rule, RuleIndex } from './rules'

function rule(pattern: string): Rule {
  return { ...DEFAULT_RULE_OPTIONS, api_key_pattern: pattern, daily_limit_usd: 1, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source: 'config', created_at: null }
}
const sha = (s: string) => createHash('sha256').update(s).digest('hex')
const NOW = Date.UTC(2026, 10, 15, 12)

describe('KeyRegistry', () => {
  const key = 'sk-dev-aaaaaaaaaaaa-1234'
  const exact = rule(key)
  const dev = rule('sk-dev-*')
  const any = rule('*')

  it('matches a key known only by hash: exact patterns by hash, * always, a long prefix only once seen', () => {
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    const index = new RuleIndex([], [exact, dev, any])
    const s = keys.state(sha(key), keyHint(key))
    expect(keys.matches(index, exact, s, false)).toBe(true)
    expect(keys.matches(index, exact, keys.state(sha('sk-other'), 'sk-o'), true)).toBe(false)
    expect(keys.matches(index, any, s, false)).toBe(true)
    // Not yet seen with its raw key: only `maybe` counts it under the longer prefix.
    expect(keys.matches(index, dev, s, false)).toBe(false)
    expect(keys.matches(index, dev, s, true)).toBe(true)
    expect(keys.patterns(s)).toEqual([])
  })

  it('resolves a raw key once per rule index and remembers the prefixes it matched', () => {
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    const index = new RuleIndex([], [dev, any])
    const s = keys.state(sha(key), keyHint(key))
    expect(keys.resolve(index, s, key).map((r) => r.api_key_pattern)).toEqual(['sk-dev-*', '*'])
    expect(keys.patterns(s)).toContain('sk-dev-*')
    // Resolved under this index: a pattern the key did not match is not `maybe` any more.
    expect(keys.matches(index, rule('pk-*'), s, true)).toBe(false)
    expect(keys.ruleFor(index, sha(key))?.api_key_pattern).toBe('sk-dev-*')
    // A new index resolves again.
    const next = new RuleIndex([], [any])
    expect(keys.resolve(next, s, key).map((r) => r.api_key_pattern)).toEqual(['*'])
  })

  it('learns the patterns another instance saw, ignoring what is not a string', () => {
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    const s = keys.state(sha(key), '')
    keys.learn(s, ['sk-dev-*', 3, null])
    keys.learn(s, 'sk-*')
    expect(keys.patterns(s)).toEqual(['sk-dev-*'])
    expect(keys.matches(new RuleIndex([], [dev]), dev, s, false)).toBe(true)
  })

  it('tells each pattern a key is seen to match once, and knows those kept from before a restart', () => {
    const told: [string, readonly string[]][] = []
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    keys.onLearnt = (hash, patterns) => told.push([hash, patterns])
    const index = new RuleIndex([], [dev])
    keys.resolve(index, keys.state(sha(key), keyHint(key)), key)
    keys.learn(keys.state(sha(key), ''), ['sk-dev-*', 'sk-*'])
    expect(told).toEqual([[sha(key), ['sk-dev-*']], [sha(key), ['sk-*']]])

    // After a restart: known by hash under the kept pattern, before (or after) its state exists; not told again.
    const again = new KeyRegistry(new PeriodClock('UTC', 1))
    again.onLearnt = (hash, patterns) => told.push([hash, patterns])
    again.remember([{ api_key_hash: sha(key), pattern: 'sk-dev-*' }])
    const s = again.state(sha(key), keyHint(key))
    expect(again.matches(index, dev, s, false)).toBe(true)
    again.resolve(index, s, key)
    expect(told).toHaveLength(2)
  })

  it('counts requests in the month of `now`, and the tenant of the latest call', () => {
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    const lastMonth = Date.UTC(2026, 9, 30)
    keys.seed(
      [
        { api_key_hash: 'a', key_hint: 'sk-a', tenant: 'acme', requests: 5, last_ts: NOW - 1000 },
        { api_key_hash: 'b', key_hint: 'sk-b', tenant: 'old', requests: 2, last_ts: lastMonth },
      ],
      NOW,
    )
    const a = keys.get('a')!
    keys.count(a, NOW - 5000, 'earlier', 1, NOW)
    expect(a).toMatchObject({ requestsMonth: 6, tenant: 'acme', lastSeen: NOW - 1000 })
    expect(keys.thisMonth(NOW).map((s) => s.hash)).toEqual(['a'])
    // A reseed replaces the counts with the database's, plus the calls it missed.
    const missed = { api_key_hash: 'b', key_hint: 'sk-b', ts: NOW, tenant: 'new' } as Parameters<KeyRegistry['reseed']>[1][number]
    keys.reseed([{ api_key_hash: 'a', key_hint: 'sk-a', tenant: 'acme', requests: 9, last_ts: NOW - 1000 }], [missed], NOW, NOW)
    expect(keys.get('a')!.requestsMonth).toBe(9)
    expect(keys.get('b')).toMatchObject({ requestsMonth: 1, tenant: 'new' })
    expect(keys.thisMonth(NOW).map((s) => s.hash).sort()).toEqual(['a', 'b'])
  })

  it("a call no longer a request: its key's last-seen time and tenant are its newest call's left when it was the newest, and stay otherwise", () => {
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    const s = keys.state('a', 'sk-a')
    keys.count(s, NOW - 9000, 'acme', 1, NOW)
    keys.count(s, NOW - 1000, 'beta', 1, NOW)
    // An older call taken off: the newest stays.
    keys.uncount(s, NOW - 5000, -1, { ts: NOW - 1000, tenant: 'beta' }, NOW)
    expect(s).toMatchObject({ requestsMonth: 1, tenant: 'beta', lastSeen: NOW - 1000 })
    // The newest taken off, with what is left unknown (another instance's move): it stays as well, never moved to the call's.
    keys.uncount(s, NOW, -1, undefined, NOW)
    expect(s).toMatchObject({ requestsMonth: 0, tenant: 'beta', lastSeen: NOW - 1000 })
    // The newest taken off: the key's newest call left.
    keys.count(s, NOW - 1000, 'beta', 1, NOW)
    keys.uncount(s, NOW - 1000, -1, { ts: NOW - 9000, tenant: 'acme' }, NOW)
    expect(s).toMatchObject({ requestsMonth: 0, tenant: 'acme', lastSeen: NOW - 9000 })
    // None left: not seen this month.
    keys.uncount(s, NOW - 9000, -1, null, NOW)
    expect(s.lastSeen).toBeNull()
    expect(keys.thisMonth(NOW)).toEqual([])
  })

  it("reseeds counts read for a month that has ended in that month: the new month's start from the calls after", () => {
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    const monthStart = Date.UTC(2026, 10, 1)
    const readAt = monthStart - 10
    // This month's calls (the database's) and one this instance recorded after the read's snapshot, in the next month.
    const missed = { api_key_hash: 'a', key_hint: 'sk-a', ts: monthStart + 5, tenant: 'acme' } as Parameters<KeyRegistry['reseed']>[1][number]
    keys.reseed([{ api_key_hash: 'a', key_hint: 'sk-a', tenant: 'acme', requests: 7, last_ts: readAt - 1 }], [missed], readAt, monthStart + 20)
    expect(keys.get('a')).toMatchObject({ requestsMonth: 1, monthStart, lastSeen: monthStart + 5 })
    expect(keys.thisMonth(monthStart + 20).map((s) => s.hash)).toEqual(['a'])
    // With no call in the new month, the key is not in it.
    keys.reseed([{ api_key_hash: 'a', key_hint: 'sk-a', tenant: 'acme', requests: 7, last_ts: readAt - 1 }], [], readAt, monthStart + 20)
    expect(keys.thisMonth(monthStart + 20)).toEqual([])
    expect(keys.thisMonth(readAt).map((s) => s.requestsMonth)).toEqual([7])
  })

  it('is re-read for the latest month a key has rolled into, not a clock stepped back before it', () => {
    const keys = new KeyRegistry(new PeriodClock('UTC', 1))
    const monthStart = Date.UTC(2026, 10, 1)
    const back = monthStart - 2000
    expect(keys.readAt(back)).toBe(back)
    keys.count(keys.state('a', 'sk-a'), back - 1000, '', 1, back - 1000)
    keys.count(keys.state('b', 'sk-b'), monthStart + 5000, '', 1, monthStart + 5000)
    expect(keys.readAt(back)).toBe(monthStart)
    expect(keys.readAt(monthStart + 9000)).toBe(monthStart + 9000)
  })
})
