import { describe, expect, it } from 'vitest'
import { SharedCallFeed } from '../../src/main/budgets/feed/listen'
import { parseSnapshot } from '../../src/main/budgets/feed/snapshot'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * A feed whose listening connection was cut misses the notifications sent until it listens again:
 * the read of the meters it makes then is what counts the calls stored meanwhile. When that read
 * failed (PostgreSQL slow or briefly away for it, the pool busy), it was tried again only if no
 * read had ever succeeded: with an earlier one, the meters kept that read's calls and never
 * counted those of the gap (warnings, alerts, rolling windows and per-minute limits short of
 * them until some rule or clock change read them again).
 */

const h = usePostgres({ upstream: false })

describe('the calls feed after a reconnection (PostgreSQL)', () => {
  it('a read after a reconnection that fails is tried again, though an earlier read succeeded', async () => {
    const url = h.database()
    const store = h.store(url)
    let reads = 0
    let failNext = false
    const feed = new SharedCallFeed(store, 'feed-under-test', {
      rows: () => {},
      known: () => {},
      moves: () => {},
      admissions: () => {},
      reload: async () => {
        reads++
        if (failNext) {
          failNext = false
          return null
        }
        return parseSnapshot((await store.get<{ s: string }>('SELECT pg_current_snapshot()::text AS s'))!.s)
      },
    })
    h.onTeardown(() => feed.close())
    feed.start()
    await eventually(() => feed.status().listening && feed.stats.reloads === 1, 20_000)
    // The listening connection is cut; the read made once it listens again fails.
    failNext = true
    await store.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND datname = current_database()")
    await eventually(() => feed.stats.connects === 2 && !failNext, 20_000)
    expect(feed.stats.reloads).toBe(1)
    // It is read again: what was stored while it did not listen reaches the meters.
    await eventually(() => feed.stats.reloads === 2, 20_000)
    expect(reads).toBe(3)
  }, 60_000)
})
