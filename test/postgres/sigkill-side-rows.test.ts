import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { type BuiltServer, startBuiltServer } from '../load/harness'
import { backgroundResponder, type Answers } from '../providers/background-support'
import { postJson } from '../support/http'
import { localRows, until, usePostgres } from '../support/pg-harness'

// On PostgreSQL an instance keeps a key's rule patterns in its own SQLite file, and the thresholds
// it announced in PostgreSQL. While PostgreSQL was away both waited in memory (the patterns for the
// ledger's next batch, the announcements for a retry), so an instance killed outright then
// (SIGKILL, an OOM kill) lost them: after its restart the key, known only by hash, was under no
// rule until its next call, and a threshold could be announced a second time in its period. They
// are kept in the instance's own file as soon as they are learnt. Against the built server.

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })

const KEY = 'sk-pgside-aaaaaaaaaaaa-0001'
const AWAY_KEY = 'sk-pgside-bbbbbbbbbbbb-0002'
// A queued deep-research job is recorded at its prompt's estimate ($0.00012): 60% of this limit.
const config = (url: string) => ({
  timezone: 'UTC',
  pricing: { auto_update: false },
  storage: { url },
  budgets: { rules: [{ api_key_pattern: 'sk-pgside-*', daily_limit_usd: 0.0002, action: 'warn' }] },
})

const job = (t: BuiltServer, id: string, key: string) =>
  postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters in space.', background: true, metadata: { id } }, { authorization: `Bearer ${key}` })

describe('SIGKILL while PostgreSQL is away', () => {
  it("keeps the key's rule patterns and the thresholds announced: the restarted instance has them", async () => {
    const url = h.database()
    const store = h.store(url)
    const first = await startBuiltServer(config(url), h.upstream.url)
    let again: BuiltServer | null = null
    let stopped = false
    try {
      // The meters read from PostgreSQL before it goes: a threshold of one key announced there.
      expect((await job(first, 'resp_pgside_a', KEY)).status).toBe(200)
      await until('a first threshold announced in PostgreSQL', async () => (await store.all('SELECT id FROM budget_announced').catch(() => [])).length > 0)
      h.pg.stopServer()
      stopped = true
      // Another key's first call, and its threshold, while PostgreSQL is away.
      expect((await job(first, 'resp_pgside_b', AWAY_KEY)).status).toBe(200)
      await until('the pattern and the announcement in the instance\'s own file', () => {
        const patterns = localRows<{ api_key_hash: string }>(first.dbFile, 'SELECT api_key_hash FROM key_patterns')
        const announced = localRows(first.dbFile, 'SELECT id FROM budget_announced')
        return patterns.some((p) => p.api_key_hash === hashKey(AWAY_KEY)) && announced.length > 1
      }, 20_000)
      await first.kill('SIGKILL')
      h.pg.startServer()
      stopped = false
      again = await startBuiltServer(config(url), h.upstream.url, first.dataDir)
      expect(localRows(first.dbFile, 'SELECT api_key_hash, pattern FROM key_patterns')).toContainEqual({ api_key_hash: hashKey(AWAY_KEY), pattern: 'sk-pgside-*' })
      // Written to PostgreSQL with the restarted instance's first read of the meters.
      const local = localRows<{ id: string }>(first.dbFile, 'SELECT id FROM budget_announced').map((r) => r.id)
      await until('the announcement in PostgreSQL', async () => {
        const shared = (await store.all<{ id: string }>('SELECT id FROM budget_announced')).map((r) => r.id)
        return local.every((id) => shared.includes(id))
      })
    } finally {
      if (stopped) h.pg.startServer()
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 120_000)
})
