import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { type Videos, chargeOf, createVideo, pollVideo, videoResponder } from '../providers/xai-video-support'

// PostgreSQL (`storage.url`): an xAI video's expected cost is held in the shared spend rows from
// its POST until its finished poll (on any instance) settles its charge, which then counts once.

const videos: Videos = { made: new Map() }
const h = usePostgres({ upstream: videoResponder(videos) })
const KEY = 'xai-pgvid-aaaaaaaaaaaa'

/** Both instances hear each other (their feeds listen and have read the meters once). */
async function listening(...servers: TestServer[]): Promise<void> {
  for (const t of servers) {
    const feed = budgetsOf(t.server.context).feed!
    await until('the feed listens', () => feed.status().listening && feed.stats.reloads > 0)
  }
}

describe('xAI videos on PostgreSQL hold their expected cost', () => {
  it('across instances, until the finished poll on either settles the charge, once', async () => {
    const url = h.database()
    // $0.50 a day: one 6-second 480p video ($0.30) fits, not two.
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'xai-pgvid-*', daily_limit_usd: 0.5, action: 'block', reserve: 'max_tokens' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    await listening(a, b)
    const store = h.store(url)
    const held = async () => (await store.get<{ n: number }>('SELECT count(*)::int AS n FROM budget_reservations'))!.n
    const spent = async () =>
      (await store.get<{ s: number | null }>(`SELECT sum(spent_usd) AS s FROM budget_spend WHERE api_key_hash = @h AND period = 'daily'`, { h: hashKey(KEY) }))!.s ?? 0
    const call = (id: string) => store.get<{ cost_usd: number; estimated: number; priced: number }>('SELECT cost_usd, estimated, priced FROM calls WHERE response_id = @id AND endpoint = @e', { id, e: 'videos' })

    const made = await createVideo(a.url, KEY, { duration: 6, resolution: '480p' })
    expect(made.status).toBe(200)
    const id = made.json().request_id as string
    const refused = await createVideo(b.url, KEY, { duration: 6, resolution: '480p' })
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded', limit_usd: 0.5 })
    expect(await held()).toBeGreaterThan(0)

    // Finished, and polled through B (A's call stored first, for B to find), then again through both.
    expect(await a.server.ledger.flushed()).toBe(true)
    videos.made.get(id)!.done = true
    expect((await pollVideo(b.url, KEY, id)).status).toBe(200)
    const charge = chargeOf(6, '480p')
    await until('the hold is gone', async () => (await held()) === 0)
    await until('the charge is in', async () => Math.abs((await spent()) - charge) < 1e-9)
    expect((await pollVideo(a.url, KEY, id)).status).toBe(200)
    expect((await pollVideo(b.url, KEY, id)).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    expect(await b.server.ledger.flushed()).toBe(true)
    expect(await call(id)).toMatchObject({ cost_usd: charge, estimated: 0, priced: 1 })
    expect(Math.abs((await spent()) - charge)).toBeLessThan(1e-9)

    // $0.20 left: a 3-second video ($0.15) fits, a second one does not while the first is held.
    expect((await createVideo(b.url, KEY, { duration: 3, resolution: '480p' })).status).toBe(200)
    expect((await createVideo(a.url, KEY, { duration: 3, resolution: '480p' })).status).toBe(429)
  })
})
